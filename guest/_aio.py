"""The snippet's event loop: asyncio's own, whose only I/O is the tool calls the host runs for it.

A tool call the snippet awaits, or hands to asyncio (`gather`, `create_task`, `TaskGroup`, `wait`,
`as_completed`, `wait_for`), is a coroutine: it asks the host to start the call (`@start`) and waits
on a future. When every task waits, the loop asks the host (`@wait`) for whichever of its calls
finish first, or for its next timer to come due. So calls run side by side on the host while the
guest keeps its one thread, and asyncio's own semantics hold: `return_exceptions`, cancellation,
timeouts, task groups. A task cancelled while its call is in flight cancels the call (`@cancel`).

The snippet compiler wraps every `await x` as `await ready(x)`, so awaiting a plain value (the result
of a blocking tool call) works too.
"""

import asyncio
import inspect
from collections.abc import Awaitable, Coroutine, Generator, Iterable
from typing import Any

from guest._blob import revive_blobs
from guest._hostcall import ToolError, host_call

__all__ = ["SandboxLoop", "install", "ready", "run", "tool_call"]

# With callbacks always ready (a task that only yields), finished calls are still collected every
# this many turns of the loop, so that a busy task cannot starve the calls' waiters.
_POLL_EVERY = 64


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


class _HostCalls:
    """The loop's selector: instead of sockets, the tool calls in flight on the host."""

    def __init__(self) -> None:
        self.pending: dict[int, tuple[str, asyncio.Future[Any]]] = {}
        self._turns = 0

    def select(self, timeout: float | None) -> list[dict[str, Any]]:
        if timeout == 0:
            self._turns += 1
            if not self.pending or self._turns < _POLL_EVERY:
                return []
        self._turns = 0
        if timeout is None and not self.pending:
            raise RuntimeError(
                "every task is waiting and nothing can wake them: no tool call is in flight and no "
                "timer is set (an await on a future or event that nothing completes)"
            )
        return host_call("@wait", {"ids": list(self.pending), "timeout": timeout})["done"]

    def close(self) -> None:
        self.pending.clear()


class SandboxLoop(asyncio.BaseEventLoop):
    """asyncio's event loop with the host's tool calls as its only I/O."""

    def __init__(self) -> None:
        super().__init__()
        self._selector = _HostCalls()

    def _process_events(self, event_list: list[dict[str, Any]]) -> None:
        for event in event_list:
            name, future = self._selector.pending.pop(event["id"], (None, None))
            if future is None or future.done():
                continue
            if event["ok"]:
                future.set_result(revive_blobs(event["value"]))
            else:
                error = event["error"]
                future.set_exception(ToolError(error["message"], tool=name or "", kind=error["type"]))

    def start_tool_call(self, name: str, arguments: dict[str, Any]) -> tuple[int, asyncio.Future[Any]]:
        """Have the host start a call (a refusal raises ToolError here); its future and id."""
        call_id: int = host_call("@start", {"name": name, "arguments": arguments})["id"]
        future = self.create_future()
        self._selector.pending[call_id] = (name, future)
        return call_id, future

    def cancel_tool_call(self, call_id: int) -> None:
        """Stop a call whose waiter was cancelled."""
        if self._selector.pending.pop(call_id, None) is not None:
            host_call("@cancel", {"ids": [call_id]})

    def close(self) -> None:
        for call_id in list(self._selector.pending):
            self.cancel_tool_call(call_id)
        super().close()
        self._selector.close()


async def tool_call(name: str, arguments: dict[str, Any]) -> Any:
    """Make one tool call as a coroutine, so that asyncio can run it beside others."""
    loop = asyncio.get_running_loop()
    if not isinstance(loop, SandboxLoop):  # pragma: no cover - only SandboxLoop runs in the sandbox
        raise RuntimeError("tool calls run on the sandbox's event loop only")
    call_id, future = loop.start_tool_call(name, arguments)
    try:
        return await future
    except asyncio.CancelledError:
        loop.cancel_tool_call(call_id)
        raise


def run(main: Coroutine[Any, Any, Any], *, debug: bool | None = None, **_ignored: Any) -> Any:
    """`asyncio.run` on a SandboxLoop: run `main`, then cancel the tasks it left behind."""
    if not inspect.iscoroutine(main):
        raise ValueError(f"a coroutine was expected, got {main!r}")
    if asyncio.events._get_running_loop() is not None:  # pyright: ignore[reportPrivateUsage]
        main.close()
        raise RuntimeError(
            "asyncio.run() cannot start a second event loop: this snippet already runs in one (it "
            "awaits at the top level), so write `await main()` instead of `asyncio.run(main())`"
        )
    loop = SandboxLoop()
    if debug is not None:
        loop.set_debug(debug)
    try:
        return loop.run_until_complete(main)
    finally:
        try:
            _cancel_left_behind(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


def _cancel_left_behind(loop: SandboxLoop) -> None:
    left = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in left:
        task.cancel()
    if left:
        loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))


_asyncio_wait = asyncio.wait


async def _wait(awaitables: Iterable[Any], **options: Any) -> Any:
    """`asyncio.wait` that also takes coroutines (tool calls), as tasks, as it did before 3.11."""
    return await _asyncio_wait([asyncio.ensure_future(item) for item in awaitables], **options)


def _get_event_loop() -> asyncio.AbstractEventLoop:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        loop = SandboxLoop()
        asyncio.set_event_loop(loop)
        return loop


def install() -> None:
    """Make asyncio's entry points use the sandbox's loop."""
    asyncio.run = run  # type: ignore[assignment]
    asyncio.new_event_loop = SandboxLoop  # type: ignore[assignment]
    asyncio.get_event_loop = _get_event_loop  # type: ignore[assignment]
    asyncio.wait = _wait  # type: ignore[assignment]
