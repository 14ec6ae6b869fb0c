"""What `serve` loads before it serves: the libraries of features the default config leaves off
(OAuth's JWTs, the HTTP transport, search's stemmer, RE2 for schema patterns) are loaded by the
feature, not by the import; and what the gateway needs only once started (the wasm runtime, the
JSON Schema validator) waits until the stdio handshake is answered."""

from __future__ import annotations

import json
import subprocess
import sys

# Libraries the default config (stdio, no `auth`) does not touch before it has an index to search or
# an argument to match against a schema's `pattern`.
OPTIONAL = ("jwt", "h11", "snowballstemmer", "re2")

# What the gateway loads once it has started: the sandbox's runtime (on the worker thread that builds
# the first sandbox), the validator of tool arguments and policy constraints, and the search.
AFTER_START = ("wasmtime", "jsonschema", "gateway.catalog._search")

# Runs FEATURE (Python source, possibly empty) in a fresh interpreter after importing the serve
# command, then prints which of the named libraries are loaded.
LOADED_AFTER = """
import json, sys
import gateway.cli._serve
exec(sys.argv[2])
print(json.dumps(sorted(name for name in json.loads(sys.argv[1]) if name in sys.modules)))
"""

# What a stdio `serve` does before the server answers the handshake (`serve_command`, then
# `serve_stdio` up to `server.run`): the config loaded and checked, the gateway built, its server built.
BEFORE_HANDSHAKE = """
from gateway.calls import Gateway
from gateway.cli._loading import load_config_for_cli
from gateway.server import build_server
from gateway.shared import redact_logs
gateway = Gateway(load_config_for_cli(None))
redact_logs(gateway.redactor)
build_server(gateway, lasting_executions=True)
"""

FIRST_SANDBOX = """
from gateway.calls import new_sandbox
from gateway.sandbox.limits import SandboxLimits
new_sandbox(SandboxLimits()).close()
"""

FIRST_SEARCH = """
from gateway.catalog import docs
docs.check_search("convert a time", None, 100)
"""

FIRST_ARGUMENTS = """
from mcp.types import Tool
from gateway.catalog import CatalogEntry, prepare_arguments
schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]}
entry = CatalogEntry.from_tool("s", "s", "count", Tool(name="count", input_schema=schema))
assert prepare_arguments(entry, {"n": 2}) == {"n": 2}
"""

OAUTH_VERIFIER = """
from gateway.auth import build_verifier
from gateway.auth.config import AuthConfig
build_verifier(AuthConfig.model_validate({"oauth": {
    "issuer": "https://issuer.example.com",
    "audience": "https://gw.example.com/mcp",
    "jwks_uri": "https://issuer.example.com/jwks.json",
}}))
"""

FIRST_STEM = """
from gateway.catalog._vocabulary import stem
assert stem("folders") == "folder"
"""

FIRST_PATTERN = """
from gateway.shared.json_schema import ecma_regex
assert ecma_regex("^[a-z]+$").search("abc")
"""


def loaded_after(feature: str, libraries: tuple[str, ...] = OPTIONAL) -> list[str]:
    """Which of `libraries` a fresh interpreter holds once it imported `serve` and ran `feature`."""
    done = subprocess.run(
        [sys.executable, "-c", LOADED_AFTER, json.dumps(libraries), feature],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_importing_serve_loads_no_library_of_a_feature_the_default_config_leaves_off() -> None:
    assert loaded_after("") == []


def test_an_oauth_section_loads_pyjwt_when_its_verifier_is_built() -> None:
    assert loaded_after(OAUTH_VERIFIER) == ["jwt"]


def test_the_first_stem_loads_the_stemmer() -> None:
    assert loaded_after(FIRST_STEM) == ["snowballstemmer"]


def test_the_first_schema_pattern_loads_re2() -> None:
    assert loaded_after(FIRST_PATTERN) == ["re2"]


def test_a_stdio_serve_reaches_the_handshake_without_the_wasm_runtime_the_schema_validator_or_search() -> (
    None
):
    assert loaded_after(BEFORE_HANDSHAKE, AFTER_START) == []


def test_the_first_sandbox_loads_the_wasm_runtime() -> None:
    assert loaded_after(FIRST_SANDBOX, AFTER_START) == ["wasmtime"]


def test_the_first_argument_check_loads_the_schema_validator() -> None:
    assert loaded_after(FIRST_ARGUMENTS, AFTER_START) == ["jsonschema"]


def test_the_first_search_loads_the_search() -> None:
    assert loaded_after(FIRST_SEARCH, AFTER_START) == ["gateway.catalog._search"]
