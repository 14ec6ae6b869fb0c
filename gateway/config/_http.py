"""The config's `http` section: serving MCP over streamable HTTP, with its caps.

The server wing runs it (`gateway/server/_http.py`), but the model lives here: the server sits above
the config in the layers, and the config must never import it.
"""

from __future__ import annotations

import ipaddress
from typing import Self, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

__all__ = [
    "AUTHENTICATED",
    "HEALTH_PATHS",
    "METRICS_PATH",
    "NO_AUTH",
    "HttpConfig",
    "is_loopback",
    "validation_context",
]

_MIB = 1024 * 1024
# A caller's requests besides its executions: its streams, searches and listings.
_REQUESTS_BESIDE_EXECUTIONS = 8

HEALTH_PATHS = ("/healthz", "/readyz")
METRICS_PATH = "/metrics"

NO_AUTH = (
    "the config has no `auth` section, so anyone who can reach the port could run code with every "
    "child's credentials"
)
AUTHENTICATED = "authenticated"
"""The validation context's key saying the config authenticates HTTP clients (has `auth`)."""


def validation_context(data: object) -> dict[str, bool]:
    """What validating the `http` section needs to know of the rest of the config: whether it has `auth`."""
    return {AUTHENTICATED: isinstance(data, dict) and cast("dict[str, object]", data).get("auth") is not None}


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine's loopback interface only (127.0.0.0/8, ::1, localhost)."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a name other than localhost: it may resolve anywhere
        return False


def _is_unspecified(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def _host_names(host: str) -> list[str]:
    """How a Host header names `host` (IPv6 in brackets), with `localhost` for the usual loopbacks."""
    literal = f"[{host.strip('[]')}]" if ":" in host else host
    names = [literal]
    if host.lower().rstrip(".") == "localhost":
        names = ["localhost", "127.0.0.1", "[::1]"]
    elif host in ("127.0.0.1", "::1", "[::1]"):
        names.append("localhost")
    return names


class HttpConfig(BaseModel):
    """Serving MCP over streamable HTTP (`codemode-gateway serve --http`; the config's `http` section)."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="HTTP serving")

    host: str = Field(
        default="127.0.0.1",
        min_length=1,
        description="Address to bind. A non-loopback address needs an `auth` section (or `allow_remote`, "
        "behind an authenticating proxy): otherwise anyone reaching the port could run code.",
    )
    port: int = Field(default=8080, ge=0, le=65535, description="TCP port; 0 takes a free one (logged).")
    path: str = Field(
        default="/mcp",
        pattern=r"^/[A-Za-z0-9._~/-]*$",
        description="The MCP endpoint's path; /healthz and /readyz are the probes'.",
    )
    allow_remote: bool = Field(
        default=False,
        description="Allow binding a non-loopback address without an `auth` section: only behind an "
        "authenticating proxy, on a network where every client may run code with the children's "
        "credentials.",
    )
    allowed_hosts: list[str] | None = Field(
        default=None,
        description="Host header values accepted (DNS rebinding protection): `name:port`, or `name:*` for "
        "any port. Default: the bound loopback address and `localhost`; a 0.0.0.0 or :: bind must list them.",
    )
    allowed_origins: list[str] | None = Field(
        default=None,
        description="Origin header values accepted, e.g. `http://localhost:*`; a request without Origin "
        "(not from a browser) is accepted. Default: `http://` and each allowed host name.",
    )
    max_body_bytes: int = Field(
        default=4 * _MIB,
        ge=64 * 1024,
        le=256 * _MIB,
        description="Cap on one request's body (a retry carries its approval state, up to about 4/3 of "
        "approvals.max_state_bytes): larger ones are refused with 413.",
    )
    max_sessions: int = Field(
        default=100,
        ge=1,
        le=100_000,
        description="Handshake-era sessions open at once (2026-07-28 has none); past it a new one is "
        "refused with 503.",
    )
    max_sessions_per_caller: int | None = Field(
        default=None,
        ge=1,
        le=100_000,
        description="Handshake-era sessions one caller may hold open (a principal of one issuer with "
        "`auth`, else a client address: behind a proxy without `auth` every client shares the proxy's); "
        "past it a new one is refused with 429. Default: a quarter of max_sessions, at least 1.",
    )
    session_idle_seconds: float = Field(
        default=1800,
        gt=0,
        le=7 * 24 * 3600,
        description="A handshake-era session with no request in flight and no open stream for this long "
        "is closed; its id then answers 404 and the client starts a new session.",
    )
    max_executions_in_flight: int = Field(
        default=16,
        ge=1,
        le=4096,
        description="execute_code and exposed-tool calls handed to the gateway at once, from every caller "
        "(runs then wait for a sandbox slot: sandbox.max_concurrent_executions).",
    )
    max_executions_queued: int = Field(
        default=32,
        ge=0,
        le=4096,
        description="Calls waiting for an in-flight place, from every caller; past it a call is refused "
        "with 503 and Retry-After.",
    )
    max_executions_in_flight_per_caller: int = Field(
        default=4,
        ge=1,
        le=4096,
        description="In-flight calls of one caller: its MCP session (handshake era), else its client "
        "address, until clients are authenticated.",
    )
    max_executions_queued_per_caller: int = Field(
        default=4,
        ge=0,
        le=4096,
        description="Waiting calls of one caller; past it a call is refused with 429 and Retry-After.",
    )
    max_requests_in_flight_per_caller: int | None = Field(
        default=None,
        ge=1,
        le=100_000,
        description="MCP requests of one caller (as the execution caps count callers) open at once, from "
        "its head to the end of its answer, streams included; past it a request is refused with 429 and "
        "Retry-After before its body is read, so one caller holds at most this many bodies "
        "(http.max_body_bytes each). Default: the per-caller execution caps (in flight + queued) plus 8.",
    )
    max_connections_per_address: int = Field(
        default=64,
        ge=1,
        le=100_000,
        description="Open connections from one client address, counted before any authentication; one "
        "past it is closed as soon as it is accepted. Behind a proxy or load balancer every connection "
        "comes from its address: raise this to what it opens.",
    )
    header_timeout_seconds: float = Field(
        default=10,
        gt=0,
        le=3600,
        description="How long a request's head (request line and headers) may take to arrive, from the "
        "connection's start or the previous answer's end; a connection still without one is closed.",
    )
    body_timeout_seconds: float = Field(
        default=30,
        gt=0,
        le=3600,
        description="How long a request's body may take to arrive in full, from the end of its head; a "
        "request still short of it is answered 408 and its connection closed, which frees the body read "
        "so far. Raise it with http.max_body_bytes for clients on slow links.",
    )
    metrics: bool = Field(
        default=True,
        description="Serve Prometheus metrics at /metrics on the same port, without a token as the probes "
        "are (a scraper has none): counts, durations and states, never arguments, results or callers. "
        "false leaves /metrics out, where untrusted clients reach the port.",
    )
    shutdown_grace_seconds: float = Field(
        default=30,
        ge=0,
        le=3600,
        description="On SIGTERM or SIGINT, how long calls in flight may take to finish (new ones are "
        "refused) before they are cancelled and the children stopped.",
    )

    @model_validator(mode="after")
    def _safe(self, info: ValidationInfo) -> Self:
        context = cast("dict[str, object]", info.context or {})
        authenticated = bool(context.get(AUTHENTICATED))
        if not is_loopback(self.host) and not self.allow_remote and not authenticated:
            raise ValueError(bind_refusal(self.host))
        if _is_unspecified(self.host) and self.allowed_hosts is None:
            raise ValueError(
                f"host {self.host} binds every interface: list the names clients reach the gateway by "
                'in allowed_hosts (e.g. ["mcp.internal:8080"])'
            )
        if self.path.rstrip("/") in HEALTH_PATHS:
            raise ValueError(f"path {self.path} is a health probe's: choose another, such as /mcp")
        if self.metrics and self.path.rstrip("/") == METRICS_PATH:
            raise ValueError(f"path {self.path} is where metrics are served: choose another, such as /mcp")
        if self.max_sessions_per_caller is not None and self.max_sessions_per_caller > self.max_sessions:
            raise ValueError(
                f"max_sessions_per_caller ({self.max_sessions_per_caller}) is above max_sessions "
                f"({self.max_sessions}): lower it"
            )
        if self.max_executions_in_flight_per_caller > self.max_executions_in_flight:
            raise ValueError(
                f"max_executions_in_flight_per_caller ({self.max_executions_in_flight_per_caller}) is "
                f"above max_executions_in_flight ({self.max_executions_in_flight}): lower it"
            )
        floor = self._executions_per_caller()
        if (
            self.max_requests_in_flight_per_caller is not None
            and self.max_requests_in_flight_per_caller < floor
        ):
            raise ValueError(
                f"max_requests_in_flight_per_caller ({self.max_requests_in_flight_per_caller}) is below "
                f"max_executions_in_flight_per_caller + max_executions_queued_per_caller ({floor}): a "
                "caller's calls would be refused before their own caps apply; raise it"
            )
        return self

    def _executions_per_caller(self) -> int:
        return self.max_executions_in_flight_per_caller + self.max_executions_queued_per_caller

    def requests_in_flight_per_caller(self) -> int:
        """The cap on one caller's MCP requests open at once: the configured one, else the per-caller
        execution caps plus room for its streams and other requests."""
        if self.max_requests_in_flight_per_caller is not None:
            return self.max_requests_in_flight_per_caller
        return self._executions_per_caller() + _REQUESTS_BESIDE_EXECUTIONS

    def sessions_per_caller(self) -> int:
        """The sessions one caller may hold: `max_sessions_per_caller`, else a quarter of `max_sessions`."""
        if self.max_sessions_per_caller is not None:
            return self.max_sessions_per_caller
        return max(1, -(-self.max_sessions // 4))

    def hosts(self) -> list[str]:
        """The Host header values accepted: the configured ones, else the bound host's names, any port."""
        if self.allowed_hosts is not None:
            return list(self.allowed_hosts)
        return [f"{name}{port}" for name in _host_names(self.host) for port in (":*", "")]

    def origins(self) -> list[str]:
        """The Origin header values accepted: the configured ones, else http:// and each allowed host."""
        if self.allowed_origins is not None:
            return list(self.allowed_origins)
        return [f"http://{host}" for host in self.hosts()]


def bind_refusal(host: str) -> str:
    """Why binding `host` is refused without `allow_remote`, and what to do instead."""
    return (
        f"host {host} is not a loopback address and {NO_AUTH}: configure `auth` (API tokens or OAuth), "
        "bind 127.0.0.1 (the default), or set http.allow_remote to true behind an authenticating proxy"
    )
