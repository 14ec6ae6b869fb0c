"""Serving MCP over streamable HTTP: the listening socket, uvicorn, and a shutdown in order.

On SIGTERM or SIGINT: new calls and sessions are refused (and `/readyz` says so) while the listener
stays open, so that calls in flight can still get their approvals and finish; after at most
`http.shutdown_grace_seconds` every open request is ended, uvicorn stops, the sessions close, and
the children are stopped as on stdio. uvicorn's own signal handling is left out: it would stop
listening at once, and re-raise the signal at the end, killing the process before its children.
"""

from __future__ import annotations

import logging
import os
import re
import socket
from collections.abc import Callable, Generator
from contextlib import contextmanager
from functools import partial

import anyio
import uvicorn

from gateway.calls import Gateway
from gateway.config import GatewayConfig
from gateway.config.server import HttpConfig
from gateway.errors import ConfigError
from gateway.reload import ReloadOptions, serve_reloads
from gateway.server._gate import session_digest
from gateway.server._server import warn_of_unidentified_callers
from gateway.server._stdio import cancel_on_signals
from gateway.shared import NOTICE, redact_logs

__all__ = ["run_http", "serve_http"]

log = logging.getLogger("gateway.server.http")

SDK_TRANSPORT_LOGGERS = ("mcp.server.streamable_http_manager", "mcp.server.streamable_http")

# After the requests are ended, how long uvicorn may take to close their connections.
_CLOSE_SECONDS = 5


class _Uvicorn(uvicorn.Server):
    """uvicorn without signal handlers of its own: the gateway's shutdown decides the order."""

    @contextmanager
    def capture_signals(self) -> Generator[None]:
        yield


def listen(http: HttpConfig) -> socket.socket:
    """A socket listening on `http.host` and `http.port` (0: a free port)."""
    host = http.host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, http.port), family=family)
    except (OSError, ValueError) as exc:
        reason = os.strerror(exc.errno) if isinstance(exc, OSError) and exc.errno else str(exc)
        raise ConfigError(
            f"cannot listen on {http.host} port {http.port} (http.host, http.port): {reason}"
        ) from exc


def _serving(listener: socket.socket, http: HttpConfig) -> dict[str, object]:
    """Where the gateway serves, as the notice logs it: the MCP URL, and the port (`--port 0` picks one)."""
    host, port = listener.getsockname()[:2]
    return {"url": f"http://{f'[{host}]' if ':' in host else host}:{port}{http.path}", "port": port}


def _configure_http_logs() -> None:
    """uvicorn's records as the gateway's: JSON lines on stderr, redacted, at the same level; and
    session ids out of the SDK transport's records."""
    ours = logging.getLogger("gateway")
    uvicorn_log = logging.getLogger("uvicorn")  # and uvicorn.error, which propagates to it
    uvicorn_log.handlers[:] = ours.handlers
    uvicorn_log.setLevel(ours.level)
    uvicorn_log.propagate = False
    _add_filter("uvicorn.error", _Uncoloured)
    for name in SDK_TRANSPORT_LOGGERS:
        _add_filter(name, _SessionIdsHidden)


def _add_filter(name: str, kind: type[logging.Filter]) -> None:
    logger = logging.getLogger(name)
    if not any(isinstance(f, kind) for f in logger.filters):
        logger.addFilter(kind())


class _SessionIdsHidden(logging.Filter):
    """The SDK's transport logs session ids, each a credential for its session: a digest replaces them."""

    _ID = re.compile(r"\b[0-9a-f]{32}\b")  # the SDK's ids: uuid4().hex

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: left for the handler to report
            return True
        hidden = self._ID.sub(lambda match: session_digest(match[0]), message)
        if hidden != message:
            record.msg, record.args = hidden, None
        return True


class _Uncoloured(logging.Filter):
    """Drops the terminal-coloured copy of the message that uvicorn attaches to its records."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.__dict__.pop("color_message", None)
        return True


async def serve_http(
    config: GatewayConfig,
    http: HttpConfig | None = None,
    reload: ReloadOptions | None = None,
    *,
    started: Callable[[], None] | None = None,
) -> None:
    """Serve MCP over streamable HTTP (`http`, else the config's `http` section, else the defaults)
    until SIGTERM or SIGINT, then shut down in order (see the module's docstring); with `reload`,
    reloading the config on SIGHUP and changes to the file (`gateway/reload/`). `started` is called
    once the gateway has started (the CLI tunes the process there)."""
    # The HTTP app and its h11 protocol load here: a gateway serving stdio never needs them.
    from gateway.server._connections import guarded_protocol
    from gateway.server._http_app import HttpApp

    http = http or config.http or HttpConfig()
    warn_of_unidentified_callers(config, "http")
    with listen(http) as listener:
        async with anyio.create_task_group() as signals:
            until_stopped = anyio.CancelScope()
            # Watching first: a signal during startup also stops every child the gateway started.
            await signals.start(cancel_on_signals, until_stopped)
            async with Gateway(config) as gateway, anyio.create_task_group() as reloads:
                redact_logs(gateway.redactor)
                if started is not None:
                    started()
                _configure_http_logs()
                reloader = await reloads.start(serve_reloads, gateway, reload) if reload is not None else None
                app = HttpApp(gateway, http, lasting_executions=True)
                if reloader is not None:
                    reloader.listeners.append(app.follow_reload)
                server = _Uvicorn(
                    uvicorn.Config(
                        app,
                        http=guarded_protocol(http),
                        ws="none",  # no WebSocket endpoint: an upgrade would leave the guarded protocol
                        lifespan="on",
                        log_config=None,
                        access_log=False,
                        proxy_headers=False,  # a forwarded address would choose the caller
                        server_header=False,
                        timeout_graceful_shutdown=_CLOSE_SECONDS,
                    )
                )
                async with anyio.create_task_group() as serving:

                    async def run() -> None:
                        try:
                            await server.serve([listener])
                        finally:
                            until_stopped.cancel()  # uvicorn stopped by itself: shut down too

                    serving.start_soon(run)
                    log.log(NOTICE, "serving MCP over HTTP", extra=_serving(listener, http))
                    with until_stopped:
                        await anyio.sleep_forever()
                    await app.drain(http.shutdown_grace_seconds)
                    server.should_exit = True
                reloads.cancel_scope.cancel()  # before the gateway stops: no reload races its shutdown
            signals.cancel_scope.cancel()
    log.log(NOTICE, "gateway stopped")


def run_http(
    config: GatewayConfig,
    http: HttpConfig | None = None,
    reload: ReloadOptions | None = None,
    *,
    started: Callable[[], None] | None = None,
) -> None:
    """Blocking entry point for `codemode-gateway serve --http`."""
    anyio.run(partial(serve_http, config, http, reload, started=started))
