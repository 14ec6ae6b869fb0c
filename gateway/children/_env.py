"""The environment of a stdio child: the SDK's safe default, a few more variables, what its entry names.

A child never inherits the gateway's whole environment, so a token meant for one server (or for the
gateway itself) does not leak into every other child. The SDK's `get_default_environment` covers
PATH, HOME and the like; children also need a locale, temp directories, proxies and CA bundles.
Every child also gets `CODEMODE_GATEWAY_PARENT` (PARENT_ENV_VAR), the gateway's pid, so that a
gateway started as its own child can tell.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import unquote, urlsplit

from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS, get_default_environment

__all__ = [
    "BASE_ENV_VARS",
    "EXTRA_ENV_VARS",
    "PARENT_ENV_VAR",
    "child_environment",
    "find_command",
    "inherited_credentials",
]

_LOCALE_AND_TEMP = ("TEMP", "TMP") if sys.platform == "win32" else ("LANG", "LC_ALL", "LC_CTYPE", "TMPDIR")
_NETWORK = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
)
EXTRA_ENV_VARS: tuple[str, ...] = (*_LOCALE_AND_TEMP, "TEMP", "TMP", *_NETWORK)
"""What every stdio child gets beyond the SDK's default: a locale, temp directories, proxies, CA bundles
(and PARENT_ENV_VAR, which is set rather than inherited)."""

BASE_ENV_VARS: tuple[str, ...] = tuple(dict.fromkeys([*DEFAULT_INHERITED_ENV_VARS, *EXTRA_ENV_VARS]))
"""Every variable a stdio child inherits from the gateway without its entry naming it; besides these,
every child gets PARENT_ENV_VAR."""

PARENT_ENV_VAR = "CODEMODE_GATEWAY_PARENT"
"""Set in every stdio child to the gateway's pid (whatever the entry says): a gateway that finds it
in its own environment was started by a gateway, as one of its children."""


def child_environment(entry_env: Mapping[str, str], pass_through: Iterable[str] = ()) -> dict[str, str]:
    """A child's whole environment: the SDK's default, EXTRA_ENV_VARS, the variables `pass_through`
    names, then `entry_env`, then PARENT_ENV_VAR.

    Nothing else of the gateway's environment reaches a child: tokens meant for one server stay
    out of every other one.
    """
    env = get_default_environment()
    for name in (*EXTRA_ENV_VARS, *pass_through):
        value = os.environ.get(name)
        if value is not None and not value.startswith("()"):  # an exported shell function, not a setting
            env[name] = value
    return env | dict(entry_env) | {PARENT_ENV_VAR: str(os.getpid())}


def inherited_credentials() -> dict[str, str]:
    """Credentials inside the variables every child inherits (a proxy's `user:password@`), by value.

    Children need their proxy, so the variable is passed on whole; what it carries is a secret all
    the same: the password, and `user:password` (whose base64 a child may echo as Basic auth).
    """
    found: dict[str, str] = {}
    for name in BASE_ENV_VARS:
        value = os.environ.get(name)
        if not value or "@" not in value:
            continue
        try:
            parts = urlsplit(value if "://" in value else f"http://{value}")
            user, password = parts.username, parts.password
        except ValueError:  # not a URL after all
            continue
        if password:
            found.setdefault(unquote(password), name)
            found.setdefault(f"{unquote(user or '')}:{unquote(password)}", name)
    return found


def _is_bare(command: str) -> bool:
    """Whether `command` is a name to look up on PATH rather than a path."""
    return not any(separator and separator in command for separator in (os.sep, os.altsep))


def find_command(command: str, path: str | None) -> str | None:
    """`command` as a child with `path` for PATH is spawned: a path, or a name found on `path`, as it
    is; a name found only beside the gateway's own Python (`uvx` in the venv of a clone's
    `.venv/bin/codemode-gateway`, not activated), that file's path; None when found nowhere."""
    if not _is_bare(command) or shutil.which(command, path=path) is not None:
        return command
    return shutil.which(command, path=str(Path(sys.executable).parent))
