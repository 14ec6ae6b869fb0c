"""The serving process puts what start-up built out of the cyclic collector's reach: the CLI does it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# Serves stdio through the CLI on a config with no children; stdin is at EOF, so the gateway starts,
# then stops. Each freeze is counted as it happens.
DRIVER = """
import gc, sys

frozen = []
real_freeze = gc.freeze

def freeze():
    real_freeze()
    frozen.append(gc.get_freeze_count())

gc.freeze = freeze
from gateway.cli import main
try:
    main(["serve", "--config", sys.argv[1]])
except SystemExit:
    pass
print(*frozen, file=sys.stderr)
"""

EMBEDDED = """
import gc, sys
from gateway.config import parse_config
from gateway.server import run_stdio

run_stdio(parse_config({"mcpServers": {}}, "<test>"))
print(gc.get_freeze_count(), file=sys.stderr)
"""


def test_serve_freezes_the_heap_after_the_import_and_once_the_gateway_has_started(tmp_path: Path) -> None:
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {}}))
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(config)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    counts = [int(word) for word in done.stderr.strip().splitlines()[-1].split()]
    assert len(counts) == 2  # the import's heap, then what starting the gateway added
    assert 50_000 < counts[0] <= counts[1]


def test_serving_from_the_library_leaves_the_embedders_heap_unfrozen() -> None:
    done = subprocess.run(
        [sys.executable, "-c", EMBEDDED], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == "0"
