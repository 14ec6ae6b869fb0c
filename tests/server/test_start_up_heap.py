"""The serving process puts what start-up built out of the cyclic collector's reach."""

from __future__ import annotations

import subprocess
import sys

# Serves stdio on a config with no children; stdin is at EOF, so the gateway starts, then stops.
DRIVER = """
import gc, sys
from gateway.config import parse_config
from gateway.server import run_stdio

frozen = []
real_freeze = gc.freeze

def freeze():
    real_freeze()
    frozen.append(gc.get_freeze_count())

gc.freeze = freeze
run_stdio(parse_config({"mcpServers": {}}, "<test>"))
print(*frozen, file=sys.stderr)
"""


def test_serve_freezes_the_heap_start_up_built_once_the_gateway_has_started() -> None:
    done = subprocess.run(
        [sys.executable, "-c", DRIVER], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    counts = [int(word) for word in done.stderr.strip().splitlines()[-1].split()]
    assert len(counts) == 1  # once, for the life of the process
    assert counts[0] > 50_000  # the imports, the config and the gateway: far more than a handful
