"""Config reload without a restart: what changed, what applies live, what triggers a reload (SIGHUP,
a change to the file, `codemode-gateway reload` through the pid file), what only an operator may
apply, and which children may reach the gateway's own files."""

from gateway.reload._diff import LIVE_SECTIONS, ConfigDiff, applicable, diff_configs
from gateway.reload._pidfile import PidFile, request_reload
from gateway.reload._reach import OwnFile, own_files, reach_warnings
from gateway.reload._reloader import Outcome, Reloader, ReloadResult, Trigger
from gateway.reload._triggers import ReloadOptions, serve_reloads

__all__ = (
    "LIVE_SECTIONS",
    "ConfigDiff",
    "Outcome",
    "OwnFile",
    "PidFile",
    "ReloadOptions",
    "ReloadResult",
    "Reloader",
    "Trigger",
    "applicable",
    "diff_configs",
    "own_files",
    "reach_warnings",
    "request_reload",
    "serve_reloads",
)
