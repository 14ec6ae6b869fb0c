"""The config's `state` section: the Redis (or Valkey) store that replicas share."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["StateConfig", "literal_password", "without_credentials"]

SCHEMES = ("redis", "rediss")


class StateConfig(BaseModel):
    """Where replicas keep what they must agree on: spent approvals, rate windows, per-caller caps,
    learned result shapes (the config's `state` section)."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="Shared state")

    url: str = Field(
        repr=False,
        description='The store, as "redis://host:6379/0" (or "rediss://" for TLS); a password only through '
        'a variable ("redis://:${REDIS_PASSWORD}@host:6379/0"): a password written into the URL refuses '
        "the config. Without a `state` section each process keeps its own state, as one gateway does.",
    )
    key_prefix: str = Field(
        default="codemode:",
        min_length=1,
        max_length=64,
        description="Prefix of every key the gateway writes, so that several gateways (or other "
        "applications) can share one store.",
    )
    connect_timeout_seconds: float = Field(
        default=2.0,
        gt=0,
        le=60,
        description="How long connecting to the store may take before it counts as unavailable.",
    )
    command_timeout_seconds: float = Field(
        default=1.0,
        gt=0,
        le=60,
        description="How long one round trip to the store may take; past it the call that needed it "
        "fails closed (approvals, rates, caps), and the store counts as unavailable until it answers again.",
    )
    lease_seconds: float = Field(
        default=30.0,
        ge=1,
        le=600,
        description="How long a replica's hold on a caller's execution place lasts unless renewed (a third "
        "of it before it lapses): when a replica dies, its places free themselves after this long.",
    )
    reconnect_max_seconds: float = Field(
        default=5.0,
        gt=0,
        le=300,
        description="Longest wait between attempts to reach a store that is down (the waits double from "
        "0.1 s up to this); calls that need it fail at once meanwhile.",
    )

    @field_validator("url")
    @classmethod
    def _redis_url(cls, url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme not in SCHEMES or not parts.hostname:
            raise ValueError('write the store as "redis://host:6379/0" or "rediss://host:6379/0"')
        return url


def without_credentials(url: str) -> str:
    """`url` with any user name and password left out, for messages and logs."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(an unreadable URL)"
    host = f"[{host}]" if ":" in host else host
    return urlunsplit((parts.scheme, host + port, parts.path, "", ""))


def literal_password(url: str) -> bool:
    """Whether `url` as written (before `${VAR}` expansion) holds a password other than one variable."""
    try:
        password = urlsplit(url).password
    except ValueError:
        return False
    if not password:
        return False
    return not (password.startswith("${") and password.endswith("}") and password.count("${") == 1)
