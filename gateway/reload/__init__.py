"""Config reload without a restart: what changed, what applies live, and what triggers a reload
(SIGHUP, a change to the file, `codemode-gateway reload` through the pid file)."""

from gateway.reload._diff import LIVE_SECTIONS, ConfigDiff, applicable, diff_configs
from gateway.reload._pidfile import PidFile, request_reload
from gateway.reload._reloader import Outcome, Reloader, ReloadResult, Trigger
from gateway.reload._triggers import ReloadOptions, serve_reloads

__all__ = (
    "LIVE_SECTIONS",
    "ConfigDiff",
    "Outcome",
    "PidFile",
    "ReloadOptions",
    "ReloadResult",
    "Reloader",
    "Trigger",
    "applicable",
    "diff_configs",
    "request_reload",
    "serve_reloads",
)
