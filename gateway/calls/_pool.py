"""The child pool a config describes, and the secrets a gateway on it redacts."""

from __future__ import annotations

from gateway.children import ChildPool, ChildSettings, inherited_credentials
from gateway.config import GatewayConfig, config_secrets
from gateway.shared import Redactor

__all__ = ["child_pool", "child_settings", "gateway_secrets"]


def gateway_secrets(config: GatewayConfig) -> dict[str, str | None]:
    """Every value a gateway on `config` redacts: the config's secrets and what children inherit."""
    return {**inherited_credentials(), **config_secrets(config)}


def child_settings(config: GatewayConfig) -> ChildSettings:
    """The settings `config` gives every child that does not override them."""
    return ChildSettings(
        config.startup_timeout_seconds,
        config.restart,
        config.max_message_bytes,
        config.max_concurrent_calls,
        config.sandbox.tool_call_timeout_seconds,
    )


def child_pool(config: GatewayConfig, redactor: Redactor, *, supervise: bool = True) -> ChildPool:
    """The pool of `config`'s children; `supervise=False` tries each once, lazy ones too (for `check`)."""
    return ChildPool(
        config.mcp_servers,
        startup_timeout_seconds=config.startup_timeout_seconds,
        restart=config.restart,
        reconnect=supervise,
        start_lazy=not supervise,
        max_message_bytes=config.max_message_bytes,
        max_concurrent_calls=config.max_concurrent_calls,
        tool_call_timeout_seconds=config.sandbox.tool_call_timeout_seconds,
        redact=redactor.redact,
        unavailable=config.unavailable_servers,
    )
