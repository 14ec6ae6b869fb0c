"""glibc's malloc held to hand large freed blocks back to the kernel, for a long-lived gateway process.

glibc serves a block of at least its mmap threshold (128 KiB at start) with a mapping of its own,
unmapped when freed; but each time such a block is freed it raises the threshold to that block's size
(up to 32 MiB). Loading the search model frees a few blocks of megabytes (the parsed model file among
them), so from then on blocks that size come from the heap, where freed space is handed back only from
its top and stays resident. Setting the threshold once turns that raising off: it stays at 128 KiB.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys

__all__ = ["MMAP_THRESHOLD_BYTES", "THRESHOLD_VARIABLE", "hold_mmap_threshold"]

log = logging.getLogger("gateway.cli")

MMAP_THRESHOLD_BYTES = 128 * 1024  # glibc's own starting threshold
THRESHOLD_VARIABLE = "MALLOC_MMAP_THRESHOLD_"  # glibc's variable for it: an operator's value wins
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (glibc's malloc.h)


def _glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        os.confstr("CS_GNU_LIBC_VERSION")  # musl and others have no such name
    except (OSError, ValueError):
        return None
    return ctypes.CDLL(None)  # the process's own symbols, glibc's mallopt among them


def hold_mmap_threshold() -> bool:
    """Hold glibc's mmap threshold at MMAP_THRESHOLD_BYTES; False where there is no glibc, or the
    environment sets THRESHOLD_VARIABLE (glibc has applied that one already)."""
    if THRESHOLD_VARIABLE in os.environ:
        return False
    libc = _glibc()
    if libc is None:
        return False
    held = bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
    if not held:
        log.debug("glibc refused mallopt(M_MMAP_THRESHOLD); large freed blocks may stay resident")
    return held
