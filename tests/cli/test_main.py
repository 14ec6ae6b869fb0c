"""What a command imports before it runs: its arguments are parsed, and refused, without the SDK."""

from __future__ import annotations

import json
import sys

import anyio
import pytest

pytestmark = pytest.mark.anyio

WAIT = 60
HEAVY = ("mcp", "gateway.sandbox", "gateway.catalog", "gateway.children", "gateway.server")

# Runs `python -m gateway ARGS` as the console script does, then prints which heavy modules it imported.
RUN_AND_LIST_IMPORTS = """
import json, runpy, sys
heavy = json.loads(sys.argv[2])
sys.argv = ["codemode-gateway", *json.loads(sys.argv[1])]
try:
    runpy.run_module("gateway", run_name="__main__")
except SystemExit as exit:
    code = exit.code
print(json.dumps([code, sorted(m for m in heavy if m in sys.modules)]))
"""


async def imports_of(*args: str) -> tuple[int, list[str], str]:
    """Run the command in a fresh interpreter: (exit code, the heavy modules it imported, stderr)."""
    with anyio.fail_after(WAIT):
        done = await anyio.run_process(
            [sys.executable, "-c", RUN_AND_LIST_IMPORTS, json.dumps(args), json.dumps(HEAVY)],
            check=False,
        )
    code, imported = json.loads(done.stdout.decode().splitlines()[-1])
    return code, imported, done.stderr.decode()


async def test_help_imports_neither_the_sdk_nor_any_wing_that_serves() -> None:
    code, imported, _ = await imports_of("--help")
    assert (code, imported) == (0, [])


async def test_an_unknown_command_is_refused_before_the_sdk_is_imported() -> None:
    code, imported, err = await imports_of("frobnicate")
    assert (code, imported) == (2, [])
    assert "invalid choice: 'frobnicate'" in err


async def test_exec_without_a_snippet_is_refused_before_the_sandbox_is_imported() -> None:
    code, imported, err = await imports_of("exec")
    assert (code, imported) == (2, [])
    assert "one of the arguments -c file is required" in err


async def test_children_given_to_a_command_that_takes_none_are_refused_before_the_sdk_is_imported() -> None:
    code, imported, err = await imports_of("schema", "--", "time", "uvx", "mcp-server-time")
    assert (code, imported) == (2, [])
    assert "children after '--' are taken by serve, check, exec, not by schema" in err


async def test_a_command_imports_the_wings_it_runs_on_when_it_runs() -> None:
    # The opposite case, so the tests above could fail: `precompile --help` is parsed, `schema` runs.
    code, imported, _ = await imports_of("schema")
    assert code == 0
    assert "mcp" in imported
