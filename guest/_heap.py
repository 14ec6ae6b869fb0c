"""The snapshot heap, settled so that a run writes as few of its pages as it can.

A run's allocations otherwise land in the free chunks that building the snapshot left all over the
heap (malloc reuses the holes before it extends the heap), so even `print(1)` would write pages
everywhere in the image, and every page a run writes is copied on its first write and reset after.
Filling those holes with inert bytes objects, once, at build time, makes a run's allocations come
from the end of the heap instead: a few contiguous pages rather than pages spread over megabytes.
"""

import gc
import sys
from array import array

__all__ = ["settle"]

# Bytes objects of each chunk size, largest first: big ones fill big holes, the small ones what is
# left. Below 1 KiB every size the allocator keeps apart (16-byte steps); above, halving sizes.
_LARGEST_HOLE_FILLED = 1 << 19
_SMALL_STEP = 16
_SMALLEST_CHUNK = 32  # the smallest chunk a bytes object takes
_CHUNK_OVERHEAD = 4  # the allocator's size word before each chunk's payload (wasm32)
_BYTES_HEADER = sys.getsizeof(b"")  # what a bytes object of length 0 asks for
_MAX_FILLERS = 32_768
_TINY_BUFFER = b"\0"  # an array's item buffer this small takes the smallest chunk there is

# Referenced for the snapshot's lifetime: they keep the holes filled.
_fillers: list[bytes | array[int] | None] = []
_stdio: list[object] = []  # the build's stdio objects: replaced by every run, and never freed by one


def _chunk_sizes() -> list[int]:
    sizes: list[int] = []
    size = _LARGEST_HOLE_FILLED
    while size > 1024:
        sizes.append(size)
        size //= 2
    sizes.extend(range(1024, _SMALLEST_CHUNK - 1, -_SMALL_STEP))
    return sizes


def _filler(chunk: int) -> bytes:
    """A fresh bytes object whose allocation takes exactly a `chunk`-byte chunk."""
    return bytes(chunk - _CHUNK_OVERHEAD - _BYTES_HEADER)


def _fill_holes(heap_end: int) -> int:
    """Take every free chunk below `heap_end` with a filler; how many were taken."""
    taken = 0
    for chunk in _chunk_sizes():
        while taken < _MAX_FILLERS:
            filler = _filler(chunk)
            if id(filler) >= heap_end:  # no hole of this size is left: it came from the heap's end
                break
            _fillers[taken] = filler
            taken += 1
    return taken


def _fill_smallest_holes(heap_end: int, taken: int) -> int:
    """Take the holes too small for any object with an array's item buffer (its object comes from
    the heap's end); how many fillers there are then."""
    while taken < _MAX_FILLERS:
        filler = array("B", _TINY_BUFFER)
        if filler.buffer_info()[0] >= heap_end:
            break
        _fillers[taken] = filler
        taken += 1
    return taken


def settle() -> None:
    """Collect and freeze the snapshot's objects, then fill the holes its heap was left with."""
    _stdio.extend((sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__))
    gc.collect()
    gc.freeze()  # a collection during a run then walks only the run's own objects
    _fillers.extend([None] * _MAX_FILLERS)  # room made first: a growing list would leave holes behind
    # An object larger than any hole comes from the end of the heap: anything below it filled a hole.
    end_marker = bytes(2 * _LARGEST_HOLE_FILLED)
    heap_end = id(end_marker)
    del end_marker
    _fill_smallest_holes(heap_end, _fill_holes(heap_end))
