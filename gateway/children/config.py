"""The config of a child server (an `mcpServers` entry, as Claude Code writes it) and its restart policy."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from gateway.shared import as_object

__all__ = [
    "DEFAULT_MAX_CONCURRENT_CALLS",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_STARTUP_TIMEOUT_SECONDS",
    "DEFAULT_TOOL_CALL_TIMEOUT_SECONDS",
    "IGNORED_ENTRY_KEYS",
    "MAX_MAX_CONCURRENT_CALLS",
    "MAX_MAX_MESSAGE_BYTES",
    "MIN_MAX_MESSAGE_BYTES",
    "SERVER_TYPES",
    "HttpServer",
    "RestartPolicy",
    "ServerConfig",
    "SseServer",
    "StdioServer",
]

DEFAULT_STARTUP_TIMEOUT_SECONDS = 30.0

DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
"""The default cap on one message from a child. An answer near it already costs the SDK's stdio
reader about 0.2 s of CPU (its cost grows with the square of a line's length), and the sandbox takes
at most `sandbox.max_tool_result_bytes` (1 MiB) of a result anyway."""
MIN_MAX_MESSAGE_BYTES = 1024
MAX_MAX_MESSAGE_BYTES = 1024**3

DEFAULT_MAX_CONCURRENT_CALLS = 8
"""Calls to one child in flight at once, by default: enough for a snippet's `asyncio.gather` to pay
off, few enough that no snippet floods a child (a remote API's rate limit, a local process's CPU)."""
MAX_MAX_CONCURRENT_CALLS = 256

DEFAULT_TOOL_CALL_TIMEOUT_SECONDS = 30.0
"""The per-call timeout a pool assumes when not told (`sandbox.tool_call_timeout_seconds`' default)."""

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
        "0 never reconnects, null keeps trying. A command that cannot be started is never retried, and "
        "a stdio child that exits before it ever connected 3 times in a row, printing the same each time "
        "(a misspelled package), fails for good as well: fix its command, then reload.",
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


_Disabled = Annotated[
    bool,
    Field(
        default=False,
        strict=True,
        repr=False,
        description="Leave this entry out, with a note (as Cursor, Windsurf, Cline and Roo Code write it).",
    ),
]

_APPROVALS = "the gateway's policy governs calls (policy.allow, policy.deny, policy.approve)"
IGNORED_ENTRY_KEYS = {
    "autoApprove": _APPROVALS,
    "alwaysAllow": _APPROVALS,
    "timeout": "use startup_timeout_seconds to connect, sandbox.tool_call_timeout_seconds per call",
    "envFile": 'the gateway reads no env file: export the variables and write ${VAR} in "env", '
    'or list them in "env_passthrough"',
    "watchPaths": "the gateway watches no files: restart it to restart the child",
    "disabledTools": 'hide tools with policy.hidden ("server.tool")',
}
"""Keys other clients (Cline, Roo Code, Cursor, VS Code, Windsurf) write into an entry, which the
gateway accepts and ignores with a note; each maps to what to use instead."""


def _ignored(key: str) -> Any:
    return Field(
        default=None, alias=key, exclude=True, repr=False, description=f"Ignored: {IGNORED_ENTRY_KEYS[key]}."
    )


def _no_disabled_tools(tools: list[str] | None) -> list[str] | None:
    # Ignoring a non-empty list would expose tools the team turned off: refuse it instead.
    if tools:
        raise ValueError(
            "the gateway does not disable tools per entry, so these would stay callable: "
            'hide them with policy.hidden ("server.tool") instead'
        )
    return tools


_AutoApprove = Annotated[Any, _ignored("autoApprove")]
_AlwaysAllow = Annotated[Any, _ignored("alwaysAllow")]
_Timeout = Annotated[Any, _ignored("timeout")]
_EnvFile = Annotated[Any, _ignored("envFile")]
_WatchPaths = Annotated[Any, _ignored("watchPaths")]
_DisabledTools = Annotated[
    list[str] | None,
    Field(
        default=None,
        alias="disabledTools",
        exclude=True,
        repr=False,
        description='Accepted only empty: hide tools with policy.hidden ("server.tool") instead.',
    ),
]


_MaxMessageBytes = Annotated[
    int | None,
    Field(
        default=None,
        ge=MIN_MAX_MESSAGE_BYTES,
        le=MAX_MAX_MESSAGE_BYTES,
        description="Cap in bytes on one message from this child; default: the top-level one.",
    ),
]


_MaxConcurrentCalls = Annotated[
    int | None,
    Field(
        default=None,
        ge=1,
        le=MAX_MAX_CONCURRENT_CALLS,
        description="Calls to this child in flight at once, from every execution; more wait their turn "
        "(within their timeout). With `auth`, one caller holds at most all but one of them (one of one). "
        "Default: the top-level max_concurrent_calls.",
    ),
]


class _ChildSettings(BaseModel):
    """What every child entry has, whatever its transport: start-up, restarts, laziness, caps, and
    the keys other clients write that are accepted and ignored (or refused, saying what to use)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    startup_timeout_seconds: _StartupTimeout = None
    restart: _Restart = None
    lazy: _Lazy = False
    idle_seconds: _IdleSeconds = None
    max_message_bytes: _MaxMessageBytes = None
    max_concurrent_calls: _MaxConcurrentCalls = None
    disabled: _Disabled = False
    ignored_auto_approve: _AutoApprove = None
    ignored_always_allow: _AlwaysAllow = None
    ignored_timeout: _Timeout = None
    ignored_env_file: _EnvFile = None
    ignored_watch_paths: _WatchPaths = None
    disabled_tools: _DisabledTools = None

    _disabled_tools = field_validator("disabled_tools")(_no_disabled_tools)

    @model_validator(mode="after")
    def _lazy_idle(self) -> Self:
        if self.idle_seconds is not None and not self.lazy:
            raise ValueError("idle_seconds needs lazy: true (only a lazy child starts again on demand)")
        return self


class StdioServer(_ChildSettings):
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

    @property
    def transport(self) -> str:
        return "stdio"


def _remote_schema(schema: dict[str, Any]) -> None:
    """Windsurf's `serverUrl` stands for `url`: the schema takes exactly one of them."""
    properties: dict[str, Any] = {}
    for key, value in schema["properties"].items():
        properties[key] = value
        if key == "url":
            properties["serverUrl"] = {"description": "Windsurf's name for url.", "type": "string"}
    schema["properties"] = properties
    schema["required"] = [key for key in schema.get("required", []) if key != "url"]
    if not schema["required"]:
        del schema["required"]
    schema["oneOf"] = [{"required": ["url"]}, {"required": ["serverUrl"]}]


class _RemoteServer(_ChildSettings):
    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=_remote_schema)

    url: str = Field(description="The server's endpoint, http:// or https://.")
    headers: dict[str, str] = Field(
        default_factory=dict[str, str],
        repr=False,
        description="Sent with every request (e.g. Authorization).",
    )

    @model_validator(mode="before")
    @classmethod
    def _server_url(cls, data: Any) -> Any:
        # Windsurf writes `serverUrl` where the others write `url`.
        fields = as_object(data)
        if fields is None or "serverUrl" not in fields:
            return data
        if "url" in fields:
            raise ValueError('give "url" or "serverUrl" (Windsurf\'s name for it), not both')
        return {("url" if key == "serverUrl" else key): value for key, value in fields.items()}

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

    # Cursor and Windsurf write remote entries without "type"; Cline writes "streamableHttp".
    type: Literal["http", "streamable-http", "streamableHttp", "streamable_http"] = "http"

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


SERVER_TYPES = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamableHttp": "http",
    "streamable_http": "http",
    "sse": "sse",
}
"""Each `type` an entry may give, and the transport it selects."""


def _untyped_tag(fields: dict[str, Any]) -> str:
    remote = "command" not in fields and ("url" in fields or "serverUrl" in fields)
    return "http" if remote else "stdio"


def _server_tag(value: Any) -> str | None:
    # Claude Desktop writes stdio entries without "type", so no type means stdio; Cursor and Windsurf
    # write remote ones without it too, so an entry with a URL and no command means streamable HTTP.
    fields = as_object(value)
    kind = fields.get("type", _untyped_tag(fields)) if fields is not None else getattr(value, "type", None)
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
