"""The snapshot heap (guest/_heap.py): a run's new objects are packed together at the heap's end,
not spread over the holes the build left, so a run writes few of the snapshot's pages."""

from __future__ import annotations

from gateway import Sandbox

# Bytes objects of 250 sizes from 28 to 2,000 bytes (about 250 KB in all), then how many places of
# the heap they landed in: runs of addresses more than 64 KiB apart.
FRESH_OBJECTS = """
fresh = [bytes(size) for size in range(11, 2000, 8)]
addresses = sorted(map(id, fresh))
print(1 + sum(later - earlier > 65536 for earlier, later in zip(addresses, addresses[1:])))
"""
# Allocating from holes, they landed in 44 places of the 15 MiB heap; from its end in 5 (a few
# objects of the build's last steps are freed after the holes were filled).
MOST_PLACES = 8


def test_a_runs_new_objects_are_packed_together_not_spread_over_the_snapshot_heap(sandbox: Sandbox) -> None:
    result = sandbox.execute_sync(FRESH_OBJECTS)
    assert result.ok, result.summary()
    assert 1 <= int(result.stdout) <= MOST_PLACES
