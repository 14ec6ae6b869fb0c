"""One process's handle on the shared store: a `redis.asyncio` client."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

from redis.asyncio import Redis

from gateway.errors import GatewayError
from gateway.state.config import StateConfig

__all__ = ["SharedState", "StateUnavailable"]


class StateUnavailable(GatewayError):
    """The state store could not be reached."""


class SharedState:
    """The process's one Redis client, and the config it was made from."""

    def __init__(self, config: StateConfig, redis: Redis) -> None:
        self.config = config
        self.redis = redis

    def key(self, *parts: str) -> str:
        """A key under the configured prefix."""
        return self.config.key_prefix + ":".join(parts)

    @classmethod
    @asynccontextmanager
    async def connected(cls, config: StateConfig) -> AsyncGenerator[SharedState]:
        """A handle whose client is closed on leaving."""
        redis = Redis.from_url(  # pyright: ignore[reportUnknownMemberType]
            config.url,
            socket_connect_timeout=config.connect_timeout_seconds,
            socket_timeout=config.command_timeout_seconds,
        )
        try:
            yield cls(config, redis)
        finally:
            await redis.aclose()
