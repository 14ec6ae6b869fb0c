"""Awaiting in a sandbox with no event loop: every await completes at once.

Tool calls are synchronous host calls and the guest has one thread, so there is nothing to
overlap. The snippet compiler wraps every `await x` as `await ready(x)`, so awaiting a plain
value works; `asyncio.run/gather/sleep/create_task/wait_for` are replaced by versions that run
their awaitables one after another.
"""

import asyncio
import inspect
import time
from collections.abc import Awaitable, Coroutine, Generator
from typing import Any

__all__ = ["drive", "install", "ready"]


class _Ready:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Generator[Any, None, Any]:
        return self.value
        yield  # pragma: no cover - makes this a generator


def ready(value: Any) -> Awaitable[Any]:
    """Return `value` if it is awaitable, else an awaitable that yields it at once."""
    return value if inspect.isawaitable(value) else _Ready(value)


def drive(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine to completion without an event loop."""
    try:
        while True:
            yielded = coro.send(None)
            if yielded is not None:
                coro.throw(
                    RuntimeError(
                        "the sandbox has no event loop: "
                        "await tool calls, asyncio.sleep and asyncio.gather only"
                    )
                )
    except StopIteration as stop:
        return stop.value


async def _gather(*awaitables: Any, return_exceptions: bool = False) -> list[Any]:
    results: list[Any] = []
    for item in awaitables:
        try:
            results.append(await ready(item))
        except Exception as exc:
            if not return_exceptions:
                raise
            results.append(exc)
    return results


async def _sleep(delay: float, result: Any = None) -> Any:
    if delay > 0:
        time.sleep(delay)
    return result


async def _wait_for(awaitable: Any, timeout: float | None = None) -> Any:
    return await ready(awaitable)


def _create_task(coro: Any, **_kwargs: Any) -> Awaitable[Any]:
    # Run it now: with no concurrency to gain, eager completion keeps results and errors in order.
    return _Ready(drive(coro)) if inspect.iscoroutine(coro) else ready(coro)


def install() -> None:
    """Replace the asyncio entry points that need a running loop."""
    asyncio.run = lambda main, **_kwargs: drive(main)  # type: ignore[assignment]
    asyncio.gather = _gather  # type: ignore[assignment]
    asyncio.sleep = _sleep  # type: ignore[assignment]
    asyncio.wait_for = _wait_for  # type: ignore[assignment]
    asyncio.create_task = _create_task  # type: ignore[assignment]
    asyncio.ensure_future = _create_task  # type: ignore[assignment]
