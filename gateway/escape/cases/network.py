"""Reaching the network: socket imports, sockets stashed in preloaded modules, the builtin _socket."""

from __future__ import annotations

from gateway.escape.cases._model import (
    FIND_CLASS,
    LOAD_BUILTIN,
    NO_NET,
    REFUSE_OFF,
    EscapeCase,
    case_maker,
    crash,
    refused,
)

__all__ = ["CASES"]

_case = case_maker("network")
_DENIED = refused("SandboxRestriction", NO_NET)
_NOT_THERE = refused("ModuleNotFoundError", NO_NET)
_STASHED = "import asyncio.base_events as stash\n"  # asyncio kept its own reference to socket

CASES: tuple[EscapeCase, ...] = (
    _case("net-import-socket", "import socket", _NOT_THERE),
    _case("net-import-_socket", "import _socket", _NOT_THERE),
    _case("net-import-ssl", "import ssl", _NOT_THERE),
    _case("net-import-urllib-request", "import urllib.request", _NOT_THERE),
    _case("net-import-http-client", "import http.client", _NOT_THERE),
    _case("net-import-ftplib", "import ftplib", _NOT_THERE),
    _case("net-import-select", "import select", _NOT_THERE),
    _case("net-import-requests", "import requests", _NOT_THERE),
    _case("net-import-httpx", "from httpx import AsyncClient", _NOT_THERE),
    _case("net-stashed-socket", _STASHED + "stash.socket.socket()", _DENIED),
    _case(
        "net-stashed-socket-connect",
        _STASHED + "stash.socket.create_connection(('127.0.0.1', 22))",
        _DENIED,
    ),
    _case("net-stashed-getaddrinfo", _STASHED + "stash.socket.getaddrinfo('example.com', 80)", _DENIED),
    _case("net-stashed-gethostname", _STASHED + "stash.socket.gethostname()", _DENIED),
    _case("net-socket-by-subclass-walk", FIND_CLASS + "find_class('socket')()", _DENIED),
    _case("net-builtin-_socket-reloaded", LOAD_BUILTIN + "load_builtin('_socket').socket()", _DENIED),
    _case(
        "net-refusals-neutered-connect",
        _STASHED + REFUSE_OFF + "stash.socket.socket().connect(('127.0.0.1', 22))",
        refused("CapabilityDenied", "network"),
    ),
    _case(
        "net-asyncio-open-connection",
        "import asyncio\nawait asyncio.open_connection('127.0.0.1', 80)",
        _DENIED,
    ),
    # select() with a timeout reads the (stubbed) clock before any socket: still a trap.
    _case(
        "net-stashed-select",
        "import asyncio.selector_events as s\ns.selectors.select.select([], [], [], 5)",
        crash(),
    ),
)
