"""What the model reads of execute_code results, in bytes, as each client renders them.

    PYTHONPATH=$PWD .venv/bin/python tests/bench/result_bytes.py [GATEWAY_SOURCE_DIR]

Runs a few snippets through the real gateway process (the one under GATEWAY_SOURCE_DIR if given, so
two versions can be compared) with the SDK client, and prints each result's size as Claude Code, the
text-content clients and Codex hand it to their model (tests/e2e/client_views.py).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import anyio

from tests.e2e.client_views import VIEWS
from tests.e2e.gateway_process import TINY, WAIT, environment, sdk_client, write_config
from tests.real_servers import TRACE_SERVER

SNIPPETS = {
    "print(1)": "print(1)",
    "value {'a': 1}": '{"a": 1}',
    "print('ok')": "print('ok')",
    "100 calls, print('ok')": "for i in range(100):\n    tools.tiny.echo(text=str(i))\nprint('ok')",
    "uncaught child error": "x = 1\nfail = tools.trace.fail\nfail()",
}


async def measure(source: Path | None) -> None:
    env = environment({"PYTHONPATH": str(source)}) if source else None
    if source is not None:
        os.chdir(source)  # `python -m gateway` finds the package in its working directory first
    trace = {"command": sys.executable, "args": [str(TRACE_SERVER)]}
    with tempfile.TemporaryDirectory() as directory:
        config = write_config(Path(directory), {"mcpServers": {"tiny": TINY, "trace": trace}})
        async with sdk_client(config, env=env) as client:
            print(f"{'snippet':<24}" + "".join(f"{name:>13}" for name in VIEWS))
            for label, code in SNIPPETS.items():
                with anyio.fail_after(WAIT):
                    result = await client.call_tool("execute_code", {"code": code})
                sizes = [len(view(result).encode()) for view in VIEWS.values()]
                print(f"{label:<24}" + "".join(f"{size:>13,}" for size in sizes))


if __name__ == "__main__":
    anyio.run(measure, Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else None)
