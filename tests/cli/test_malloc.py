"""A serving gateway's large freed blocks go back to the kernel: glibc's mmap threshold is held."""

from __future__ import annotations

import json
import os
import sys

import anyio
import pytest

from gateway.cli._malloc import THRESHOLD_VARIABLE

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc is Linux's"),
]

WAIT = 60
MIB = 1 << 20

# In a fresh interpreter: free an 8 MiB block (which raises an unheld threshold to 8 MiB), then
# allocate, touch and free a 4 MiB one, and print how much of it stayed resident.
FREE_TWO_BLOCKS = """
import json, sys
from gateway.cli._malloc import hold_mmap_threshold
held = hold_mmap_threshold() if sys.argv[1] == "hold" else False
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
block = bytearray(8 << 20)
del block
before = rss()
block = bytearray(4 << 20)
del block
print(json.dumps([held, rss() - before]))
"""


async def kept_after_free(mode: str, env: dict[str, str] | None = None) -> tuple[bool, int]:
    """(whether the threshold was held, bytes the freed 4 MiB block left resident)."""
    with anyio.fail_after(WAIT):
        done = await anyio.run_process([sys.executable, "-c", FREE_TWO_BLOCKS, mode], env=env, check=True)
    held, kept = json.loads(done.stdout.decode().splitlines()[-1])
    return held, kept


def without_threshold_variable() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != THRESHOLD_VARIABLE}


async def test_a_block_freed_after_a_larger_one_goes_back_to_the_kernel_once_the_threshold_is_held() -> None:
    held, kept = await kept_after_free("hold", without_threshold_variable())
    assert held
    assert kept < MIB


async def test_without_the_hold_the_same_freed_block_stays_resident() -> None:
    held, kept = await kept_after_free("leave", without_threshold_variable())
    assert not held
    assert kept >= 3 * MIB  # the 4 MiB came from the heap, whose top is not handed back


async def test_an_operators_threshold_in_the_environment_is_left_as_glibc_applied_it() -> None:
    held, kept = await kept_after_free("hold", without_threshold_variable() | {THRESHOLD_VARIABLE: "131072"})
    assert not held
    assert kept < MIB  # glibc held the operator's 128 KiB itself
