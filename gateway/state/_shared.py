"""This process's handle on the store replicas share: one Redis client, marked down on a failure and
reached again with backoff, so that a store that is down fails calls at once instead of hanging them."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, TypeVar, cast

import anyio

from gateway.errors import StateUnavailable
from gateway.state.config import StateConfig, without_credentials

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["SharedState"]

log = logging.getLogger("gateway.state")

T = TypeVar("T")

_FIRST_BACKOFF_SECONDS = 0.1


class SharedState:
    """The per-process connection to the `state` store: `run` each operation through it."""

    def __init__(self, config: StateConfig) -> None:
        # Imported here: redis-py takes longer to import than a gateway without `state` should pay.
        from redis.asyncio import Redis
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff

        self.config = config
        self.where = without_credentials(config.url)
        # No retries inside the client: `run` bounds each operation, and the reconnect loop retries.
        self._client: Redis = Redis.from_url(  # pyright: ignore[reportUnknownMemberType]
            config.url,
            socket_connect_timeout=config.connect_timeout_seconds,
            socket_timeout=config.command_timeout_seconds,
            retry=Retry(NoBackoff(), 0),
        )
        self._healthy = False
        self._reason = "not reached yet"
        self._down = anyio.Event()
        self._down.set()

    @classmethod
    @asynccontextmanager
    async def connected(cls, config: StateConfig) -> AsyncGenerator[SharedState]:
        """A handle for the gateway's lifetime: a store that is down at start is reported, not fatal."""
        state = cls(config)
        async with state.serving():
            yield state

    @asynccontextmanager
    async def serving(self) -> AsyncGenerator[None]:
        """Reach the store, keep reaching it again whenever it is down, and close the client at the end."""
        await self._reach()
        if not self.healthy:
            log.warning("state store %s unavailable at start (%s); retrying", self.where, self._reason)
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._reconnect)
                yield
                tasks.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self._client.aclose()

    @property
    def client(self) -> Redis:
        """The Redis client; prefer `run`, which bounds the call and maps its failures."""
        return self._client

    @property
    def healthy(self) -> bool:
        """Whether the store answered the last time it was asked (for `/readyz`)."""
        return self._healthy

    def key(self, *parts: str) -> str:
        """A key under `state.key_prefix`."""
        return self.config.key_prefix + ":".join(parts)

    def unavailable(self, need: str) -> StateUnavailable:
        """The error for `need` (what could not be checked) while the store is down."""
        return StateUnavailable(
            f"the state store {self.where} is unavailable ({self._reason}), so {need} cannot be checked "
            "and the call is refused; check that the store is running and that this replica reaches it "
            "(state.url), then try again"
        )

    async def run(self, need: str, operation: Callable[[Redis], Awaitable[T]]) -> T:
        """`operation` within `state.command_timeout_seconds`, or StateUnavailable naming `need`."""
        if not self._healthy:
            raise self.unavailable(need)
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import RedisError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        timeout = self.config.command_timeout_seconds
        try:
            with anyio.fail_after(timeout):
                return await operation(self._client)
        except TimeoutError:
            self._mark_down(f"no answer within state.command_timeout_seconds of {timeout:g} s")
            raise self.unavailable(need) from None
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            self._mark_down(_reason(exc))
            raise self.unavailable(need) from None
        except RedisError as exc:  # the store answered, with an error: it is up, the operation failed
            raise StateUnavailable(
                f"the state store {self.where} refused an operation ({_reason(exc)}), so {need} cannot be "
                "checked and the call is refused; check the store's version (Redis 7 or Valkey) and logs"
            ) from None

    def _mark_down(self, reason: str) -> None:
        self._reason = reason
        if self._healthy:
            self._healthy = False
            self._down.set()
            log.warning("state store %s unavailable: %s", self.where, reason)

    async def _reach(self) -> None:
        from redis.exceptions import RedisError

        try:
            with anyio.fail_after(self.config.connect_timeout_seconds + self.config.command_timeout_seconds):
                await cast("Awaitable[object]", self._client.ping())  # pyright: ignore[reportUnknownMemberType]
        except TimeoutError:
            self._reason = "no answer to PING"
            return
        except (RedisError, OSError) as exc:
            self._reason = _reason(exc)
            return
        if not self._healthy:
            self._healthy = True
            self._down = anyio.Event()
            log.info("state store %s reached", self.where)

    async def _reconnect(self) -> None:
        """While the store is down, try it again, each wait twice the last, up to reconnect_max_seconds."""
        wait = _FIRST_BACKOFF_SECONDS
        while True:
            await self._down.wait()
            await anyio.sleep(wait)
            await self._reach()
            wait = (
                _FIRST_BACKOFF_SECONDS if self._healthy else min(wait * 2, self.config.reconnect_max_seconds)
            )


def _reason(exc: BaseException) -> str:
    """A short reason from a client error, without addresses the URL does not already show."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text.split(". ", 1)[0].rstrip(".")[:160]  # the client's first sentence says it
