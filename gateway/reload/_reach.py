"""Which children may reach the gateway's own files: its config, lockfile, audit log, middleware, pid
file and cache (the compiled sandbox, the background runs' store). A snippet drives a child's tools,
so a child that can write one of them lets a snippet change what the gateway runs next, or forge what
it records; one that can read the audit log or the background runs shows it other callers' work.

A heuristic, as `check` and `serve` word it: a child reaches a path that lies under its working
directory, under a path-like argument (server-filesystem's directories, mcp-server-git's
`--repository`), or under a path-like value of its environment. A path is never printed from a child's
entry (it may come from a secret variable): only where it was found, and the gateway's own file.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from gateway.catalog.lockfile import lock_path
from gateway.children.config import HttpServer, SseServer, StdioServer
from gateway.config import GatewayConfig
from gateway.sandbox.component import default_cache_dir

__all__ = ["OwnFile", "own_files", "reach_warnings"]

STORE_RISK = (
    "a snippet could read and forge what every replica shares: every caller's background runs, spent "
    "approvals, rate windows and result shapes (give the gateway a store of its own)"
)
_LOOPBACK = {"localhost", "127.0.0.1", "::1"}


@dataclass(frozen=True, slots=True)
class OwnFile:
    """One of the gateway's own files or directories, and what a snippet could do by writing it."""

    path: Path
    what: str
    risk: str


def own_files(config: GatewayConfig, pid_file: Path | None = None) -> list[OwnFile]:
    """The files the gateway reads or writes as its own (for `config`, served with `pid_file`)."""
    files: list[OwnFile] = []
    if (config_file := config.config_file) is not None:
        runs = "what the gateway runs at its next start or operator reload"
        files.append(
            OwnFile(config_file, f"the gateway's config {config_file}", f"a snippet could change {runs}")
        )
        lock = lock_path(config_file)
        files.append(
            OwnFile(lock, f"the lockfile {lock}", "a snippet could admit unreviewed tools at the next start")
        )
    if config.audit is not None:
        audit = config.base_dir / Path(config.audit.path).expanduser()
        risk = "a snippet could read or rewrite the audit log"
        files.append(OwnFile(audit, f"the audit log {audit}", risk))
    for module in _middleware_files(config.middleware):
        risk = "a snippet could change host code the gateway imports at its next start"
        files.append(OwnFile(module, f"the middleware module {module}", risk))
    if pid_file is not None:
        risk = "a snippet could forge what `codemode-gateway reload` reports"
        files.append(OwnFile(pid_file, f"the pid file {pid_file}", risk))
    cache = default_cache_dir()  # also where finished background runs are kept (server/_execution_store.py)
    risk = (
        "a snippet could plant native code the gateway loads at its next start, "
        "or read and forge every caller's kept background results"
    )
    files.append(OwnFile(cache, f"the gateway's cache {cache} (the compiled sandbox, background runs)", risk))
    return files


def reach_warnings(config: GatewayConfig, pid_file: Path | None = None) -> list[str]:
    """One line for each child that may reach one of the gateway's own files, or its state store,
    naming both."""
    own = [(_resolved(item.path), item) for item in own_files(config, pid_file)]
    store = _redis_address(config.state.url) if config.state is not None else None
    warnings: list[str] = []
    for name, server in config.mcp_servers.items():
        if store is not None:
            warnings += [
                f"child {name!r} may reach the gateway's state store (state.url), by {where}: {STORE_RISK}"
                for where, value in _values_of(server)
                if _redis_address(value) == store
            ]
        if not isinstance(server, StdioServer):
            continue  # a remote child reaches no file here
        for where, reached in _reached_paths(server):
            for path, item in own:
                if path == reached or reached in path.parents:
                    warnings.append(
                        f"child {name!r} may write under a path ({where}) that holds {item.what}: {item.risk}"
                    )
    return list(dict.fromkeys(warnings))


def _redis_address(value: str) -> tuple[str, int] | None:
    """The host and port of a `redis://` or `rediss://` URL in `value`, loopback names as one."""
    start = max(value.find("redis://"), value.find("rediss://"))
    if start < 0:
        return None
    try:
        url = urlsplit(value[start:].split()[0])
        host, port = url.hostname or "localhost", url.port or 6379
    except ValueError:
        return None
    return ("localhost" if host in _LOOPBACK else host, port)


def _values_of(server: StdioServer | HttpServer | SseServer) -> Iterator[tuple[str, str]]:
    """What a child's entry gives it that may name a store: its URL, arguments and environment."""
    if isinstance(server, StdioServer):
        yield from ((f"its argument {index}", arg) for index, arg in enumerate(server.args, start=1))
        yield from ((f"its env {key}", value) for key, value in _environment(server).items())
    else:
        yield "its url", server.url


def _environment(server: StdioServer) -> dict[str, str]:
    """The variables a stdio child is given: those passed through from the gateway's, then its own."""
    return {**{name: os.environ.get(name, "") for name in server.env_passthrough}, **server.env}


def _resolved(path: Path) -> Path:
    try:
        return path.expanduser().resolve()
    except (OSError, RuntimeError):  # a symlink loop: compare as written
        return path.absolute()


def _middleware_files(paths: list[str]) -> Iterator[Path]:
    """The source files of the middleware modules (imported already, as the config loaded)."""
    for path in paths:
        name = path.partition(":")[0]
        module = sys.modules.get(name)
        origin = getattr(module, "__file__", None)
        if origin is None:
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                continue
            origin = spec.origin if spec is not None else None
        if isinstance(origin, str) and origin not in ("built-in", "frozen"):
            yield Path(origin)


def _is_path_like(value: str) -> bool:
    return value.startswith(("/", "~", "./", "../")) or value in (".", "..")


def _reached_paths(server: StdioServer) -> Iterator[tuple[str, Path]]:
    """Each path the child's entry names (its cwd, path-like arguments and environment values),
    resolved as the child would, with where it was found."""
    base = Path(server.cwd).expanduser() if server.cwd else Path.cwd()
    if server.cwd:
        yield "its cwd", _resolved(base)
    for index, arg in enumerate(server.args, start=1):
        value = arg.partition("=")[2] if arg.startswith("-") and "=" in arg else arg
        if _is_path_like(value):
            yield f"its argument {index}", _resolved(base / Path(value).expanduser())
    for key, value in _environment(server).items():
        for part in value.split(os.pathsep):
            if part.startswith(("/", "~")):
                yield f"its env {key}", _resolved(Path(part))
