"""Fresh instances made ahead of demand: each is used for exactly one execution, then retired.

Making an instance and freeing a used one (the pooling allocator resets the memory it dirtied) both
take time, so one background thread per pool does both, off every execution's critical path, and
no instance ever serves a second execution.

The thread waits for `replenish`, which the sandbox calls once an execution's result has reached
its caller, so that it never competes with an execution, or its result's way back to the event
loop, for the CPU and the GIL.

The engine holds at most `capacity` instances at once (its pooling allocator's slots), and
back-to-back runs can outpace the thread. So the pool counts the instances alive, from each one's
making to the moment its `key` object is freed, wherever that happens: the thread makes one only
while there is room, and `take` frees the retired ones itself before it makes one into a full
engine, because instantiating into a full engine fails, which costs a pause and a garbage collection.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["InstancePool"]

log = logging.getLogger("gateway.sandbox")

T = TypeVar("T")
_RETRY_SECONDS = 1.0
_ROOM_WAIT_SECONDS = 5.0
"""How long `take` waits for the thread's frees under way when the engine is full: a free takes
milliseconds, so this bounds a bug, not a normal wait."""


class InstancePool(Generic[T]):
    """Keeps up to `size` unused instances ready and frees retired ones; `take` waits for the pool's
    thread only while it is freeing or making one and the engine holds `capacity` instances (None: no
    bound).

    With a capacity, `key(item)` is the object whose freeing frees the instance (the item itself by
    default): it must take weak references. A `dormant` pool prewarms nothing until its first `take`."""

    def __init__(
        self,
        make: Callable[[], T],
        size: int,
        capacity: int | None = None,
        key: Callable[[T], object] = lambda item: item,
        *,
        dormant: bool = False,
    ) -> None:
        self._make = make
        self._size = size
        self._capacity = capacity
        self._key = key
        self._live = 0  # with a capacity: made (or being made) and not yet freed, wherever they are
        self._freeing = 0  # handed to `_free` and not yet dropped
        self._making = 0  # being made by the pool's thread, to be ready soon
        self._ready: deque[T] = deque()
        self._retired: list[T] = []
        self._changed = threading.Condition()
        self._stopped = False
        self._awake = not dormant
        self._filler: threading.Thread | None = None
        if size > 0:
            self._filler = threading.Thread(target=self._fill, name="codemode-prewarm", daemon=True)
            self._filler.start()

    def take(self) -> T:
        """A never-used instance: a prewarmed one if ready, else one made now on this thread."""
        retired: list[T] = []
        with self._changed:
            self._awake = True
            if self._ready:
                return self._ready.popleft()
            if self._full():
                retired, self._retired = self._retired, []
                if not retired:  # the thread may be freeing them, or making one (milliseconds)
                    self._changed.wait_for(self._ready_room_or_idle, _ROOM_WAIT_SECONDS)
                    if self._ready:
                        return self._ready.popleft()
            self._reserve()  # this one's room, taken before the lock is let go
        self._free(retired)
        return self._made_here()

    def retire(self, item: T) -> None:
        """Hand over a used instance to be freed on the pool's thread at the next `replenish` (a pool
        without one, or closed, drops it here); the caller must keep no reference to it."""
        with self._changed:
            if self._filler is None or self._stopped:
                return
            self._retired.append(item)

    def replenish(self) -> None:
        """Let the pool's thread free the retired instances and make up for the ones taken, now."""
        with self._changed:
            self._changed.notify()

    def free_retired(self) -> None:
        """Free the retired instances now, on this thread: needed when the engine's pool is full."""
        with self._changed:
            retired, self._retired = self._retired, []
        self._free(retired)

    def _free(self, retired: list[T]) -> None:
        if not retired:
            return
        with self._changed:
            self._freeing += 1
        try:
            retired.clear()  # the last references: each instance is freed here, and counted out
        finally:
            with self._changed:
                self._freeing -= 1
                self._changed.notify_all()  # a `take` may be waiting for it

    def _reserve(self) -> None:
        if self._capacity is not None:
            self._live += 1

    def _freed_one(self) -> None:
        with self._changed:
            self._live -= 1
            self._changed.notify_all()

    def _full(self) -> bool:
        return self._capacity is not None and self._live >= self._capacity

    def _ready_room_or_idle(self) -> bool:
        return bool(self._ready) or not self._full() or not (self._freeing or self._making)

    def _can_prewarm(self) -> bool:
        return self._awake and len(self._ready) < self._size and not self._full()

    def _has_work(self) -> bool:
        return self._stopped or bool(self._retired) or self._can_prewarm()

    def _made_here(self) -> T:
        """`make()`, in the room already counted for it: counted out again when it fails, or once
        its key is freed."""
        try:
            item = self._make()
        except BaseException:
            if self._capacity is not None:
                self._freed_one()
            raise
        if self._capacity is not None:
            weakref.finalize(self._key(item), self._freed_one).atexit = False
        return item

    def _fill(self) -> None:
        _lower_priority()
        while True:
            with self._changed:
                self._changed.wait_for(self._has_work)
                if self._stopped:
                    return
            self.free_retired()  # before the next one is made: the engine's room is bounded
            with self._changed:
                if not self._can_prewarm():
                    continue
                self._reserve()
                self._making += 1
            self._add_one()

    def _add_one(self) -> None:
        try:
            item = self._made_here()
        except Exception:
            log.exception("prewarming an instance failed; executions will instantiate inline")
            with self._changed:
                self._making -= 1
                self._changed.notify_all()
                self._changed.wait_for(lambda: self._stopped, _RETRY_SECONDS)
            return
        with self._changed:
            self._making -= 1
            if not self._stopped:
                self._ready.append(item)
            self._changed.notify_all()  # a `take` may be waiting for it

    def close(self) -> None:
        """Stop the pool's thread and drop the instances never used or not yet freed."""
        with self._changed:
            self._stopped = True
            self._changed.notify_all()
        if self._filler is not None:
            self._filler.join(timeout=2)
        with self._changed:
            self._ready.clear()
            self._retired.clear()


PREWARM_NICE = 10
"""How much lower the pool's thread runs than the gateway's others (a thread's own nice, on Linux)."""


def _lower_priority() -> None:
    """Let the calling thread yield a core to any other of the process: it works between executions,
    while the last one's answer is still on its way to the client."""
    if sys.platform == "linux":  # elsewhere setpriority's id is a process's, never a thread's
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), PREWARM_NICE)
