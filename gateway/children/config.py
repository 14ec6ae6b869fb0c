"""The config of a child server (an `mcpServers` entry, as Claude Code writes it) and its restart policy."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from gateway._json import as_object

__all__ = [
    "DEFAULT_STARTUP_TIMEOUT_SECONDS",
    "SERVER_TYPES",
    "HttpServer",
    "RestartPolicy",
    "ServerConfig",
    "SseServer",
    "StdioServer",
]

DEFAULT_STARTUP_TIMEOUT_SECONDS = 30.0

_StartupTimeout = Annotated[
    float | None,
    Field(
        default=None,
        gt=0,
        le=3600,
        description="Seconds to connect and list tools; default: the top-level one.",
    ),
]


class RestartPolicy(BaseModel):
    """How a child that exits, loses its connection or stops answering is reconnected."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="Restart policy")

    initial_seconds: float = Field(
        default=0.5,
        gt=0,
        le=3600,
        description="Delay before the first reconnect attempt; it doubles after each failed attempt, "
        "and each delay is drawn at random between half and all of it (jitter).",
    )
    max_seconds: float = Field(
        default=30.0, gt=0, le=86400, description="The cap on the delay between two attempts."
    )
    max_attempts: int | None = Field(
        default=None,
        ge=0,
        description="Failed attempts in a row before the child is marked failed for good; "
        "0 never reconnects, null keeps trying. A command that cannot be started is never retried.",
    )
    after_timeouts: int | None = Field(
        default=3,
        ge=1,
        description="Restart a child once this many calls in a row time out with no answer from it "
        "in between (it is wedged); null never restarts for timeouts.",
    )


_Restart = Annotated[
    RestartPolicy | None,
    Field(
        default=None,
        description="Overrides the keys it names of the top-level `restart`; the others come from it.",
    ),
]
_Lazy = Annotated[
    bool,
    Field(
        default=False,
        description="Start the child on first use instead of with the gateway: a call to one of its "
        "tools, or search_docs naming it as `server`. Until it first starts, its tools are not listed.",
    ),
]
_IdleSeconds = Annotated[
    float | None,
    Field(
        default=None,
        gt=0,
        le=86400 * 7,
        description="Stop a lazy child after this many seconds without calls; its tools stay "
        "listed and the next call starts it again. Needs `lazy`.",
    ),
]


def _check_lazy(server: StdioServer | _RemoteServer) -> None:
    if server.idle_seconds is not None and not server.lazy:
        raise ValueError("idle_seconds needs lazy: true (only a lazy child starts again on demand)")


class StdioServer(BaseModel):
    """A child started as a subprocess, speaking MCP on its stdin/stdout."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="Stdio server")

    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1, description="Executable to run (looked up on PATH).")
    args: list[str] = Field(default_factory=list[str])
    # Values often hold tokens: keep them out of reprs (logs, tracebacks).
    env: dict[str, str] = Field(
        default_factory=dict[str, str],
        repr=False,
        description="Added to a minimal inherited environment (PATH, HOME, proxies, CA bundles, ...).",
    )
    env_passthrough: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]] = Field(
        default_factory=list[str],
        description="Variables of the gateway's environment this child also gets; no other one reaches it.",
    )
    cwd: str | None = Field(default=None, description="Working directory of the child.")
    startup_timeout_seconds: _StartupTimeout = None
    restart: _Restart = None
    lazy: _Lazy = False
    idle_seconds: _IdleSeconds = None

    @model_validator(mode="after")
    def _lazy_idle(self) -> StdioServer:
        _check_lazy(self)
        return self

    @property
    def transport(self) -> str:
        return "stdio"


class _RemoteServer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(description="The server's endpoint, http:// or https://.")
    headers: dict[str, str] = Field(
        default_factory=dict[str, str],
        repr=False,
        description="Sent with every request (e.g. Authorization).",
    )
    startup_timeout_seconds: _StartupTimeout = None
    restart: _Restart = None
    lazy: _Lazy = False
    idle_seconds: _IdleSeconds = None

    @model_validator(mode="after")
    def _lazy_idle(self) -> _RemoteServer:
        _check_lazy(self)
        return self

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        scheme, sep, rest = url.partition("://")
        if not sep or scheme.lower() not in ("http", "https") or not rest.strip("/"):
            raise ValueError("must be an http:// or https:// URL")
        return url


class HttpServer(_RemoteServer):
    """A remote child over streamable HTTP."""

    model_config = ConfigDict(title="Streamable HTTP server")

    type: Literal["http", "streamable-http"]

    @property
    def transport(self) -> str:
        return "http"


class SseServer(_RemoteServer):
    """A legacy remote child over HTTP+SSE."""

    model_config = ConfigDict(title="SSE server (legacy)")

    type: Literal["sse"]

    @property
    def transport(self) -> str:
        return "sse"


SERVER_TYPES = {"stdio": "stdio", "http": "http", "streamable-http": "http", "sse": "sse"}
"""Each `type` an entry may give, and the transport it selects."""


def _server_tag(value: Any) -> str | None:
    # Claude Desktop writes stdio entries without "type", so no type means stdio.
    fields = as_object(value)
    kind = fields.get("type", "stdio") if fields is not None else getattr(value, "type", None)
    return SERVER_TYPES.get(kind) if isinstance(kind, str) else None


ServerConfig = Annotated[
    Annotated[StdioServer, Tag("stdio")]
    | Annotated[HttpServer, Tag("http")]
    | Annotated[SseServer, Tag("sse")],
    Discriminator(
        _server_tag,
        custom_error_type="server_type",
        custom_error_message='"type" must be "stdio" (the default), "http", "streamable-http" or "sse"',
    ),
]
