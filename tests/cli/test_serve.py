"""What `serve` loads before it serves: the libraries of features the default config leaves off
(OAuth's JWTs, the HTTP transport, search's stemmer, RE2 for schema patterns) are loaded by the
feature, not by the import."""

from __future__ import annotations

import json
import subprocess
import sys

# Libraries the default config (stdio, no `auth`) does not touch before it has an index to search or
# an argument to match against a schema's `pattern`.
OPTIONAL = ("jwt", "h11", "snowballstemmer", "re2")

# Runs FEATURE (Python source, possibly empty) in a fresh interpreter after importing the serve
# command, then prints which of the OPTIONAL libraries are loaded.
LOADED_AFTER = """
import json, sys
import gateway.cli._serve
exec(sys.argv[2])
print(json.dumps(sorted(name for name in json.loads(sys.argv[1]) if name in sys.modules)))
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


def loaded_after(feature: str) -> list[str]:
    """Which OPTIONAL libraries a fresh interpreter holds once it imported `serve` and ran `feature`."""
    done = subprocess.run(
        [sys.executable, "-c", LOADED_AFTER, json.dumps(OPTIONAL), feature],
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
