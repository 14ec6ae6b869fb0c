"""Config reload without a restart: what changed, what applies live, what triggers a reload (SIGHUP,
a change to the file, `codemode-gateway reload` through the pid file), what only an operator may
apply, and which children may reach the gateway's own files."""

from gateway.reload._pidfile import request_reload
from gateway.reload._reach import reach_warnings
from gateway.reload._triggers import ReloadOptions, serve_reloads

__all__ = (
    "ReloadOptions",
    "reach_warnings",
    "request_reload",
    "serve_reloads",
)
