"""The config's `state` section: the Redis that replicas share."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["StateConfig"]


class StateConfig(BaseModel):
    """Where replicas keep what they share (a Redis URL), and how long a round trip may take."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(description="The Redis URL: redis://host:6379/0, or rediss:// for TLS.")
    key_prefix: str = Field(default="codemode:", description="Prefix of every key the gateway writes.")
    connect_timeout_seconds: float = Field(
        default=2.0, gt=0, le=60, description="Seconds to connect to the store."
    )
    command_timeout_seconds: float = Field(
        default=1.0, gt=0, le=60, description="Seconds one command to the store may take."
    )
