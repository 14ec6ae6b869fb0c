"""The environment of a stdio child: a short allow-list of the gateway's own, plus what its entry asks for.

A child never inherits the gateway's whole environment, so a token meant for one server (or for the
gateway itself) does not leak into every other child; `child_environment` builds the whole of it from
BASE_ENV_VARS (enough to run, find certificates and use a proxy), the variables an entry passes
through, and the entry's own `env`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping

__all__ = ["BASE_ENV_VARS", "child_environment"]

_POSIX_ENV = ("HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR")
_WINDOWS_ENV = (
    "APPDATA",
    "COMSPEC",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATHEXT",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "TMP",
    "USERNAME",
    "USERPROFILE",
)
_NETWORK_ENV = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
)
BASE_ENV_VARS: tuple[str, ...] = tuple(
    dict.fromkeys(
        ["PATH", *(_WINDOWS_ENV if sys.platform == "win32" else _POSIX_ENV), "TEMP", "TMP", *_NETWORK_ENV]
    )
)
"""What every stdio child inherits from the gateway: enough to run, find certificates and use a proxy."""


def child_environment(
    entry_env: Mapping[str, str],
    pass_through: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """A child's whole environment: BASE_ENV_VARS, then the variables `pass_through` names, then `entry_env`.

    Nothing else of the gateway's environment reaches a child: tokens meant for one server stay
    out of every other one.
    """
    environ = os.environ if environ is None else environ
    env: dict[str, str] = {}
    for name in BASE_ENV_VARS:
        value = environ.get(name)
        if value is not None and not value.startswith("()"):  # an exported shell function, not a setting
            env[name] = value
    for name in pass_through:
        value = environ.get(name)
        if value is not None:
            env[name] = value
    return env | dict(entry_env)
