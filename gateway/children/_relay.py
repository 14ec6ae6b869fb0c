"""A stdio child's stdout, relayed one line at a time with a cap on each line: what the SDK gets to read.

The SDK's stdio client reads a child's stdout in 64 KiB chunks and joins the pending line again per
chunk, so its cost grows with the square of a line's length: measured, a line of 16 MB takes 2.3 s
of the event loop's CPU and one of 32 MB 9 s, before anything could refuse it. So a stdio child
runs as `python -I -S _relay.py --max-line-bytes N -- command args...`: the relay starts the real
command with stdin and stderr inherited and copies its stdout to its own, line by line. A line past
the cap is read and dropped in bounded memory; if its head or tail shows a JSON-RPC response, an
error response for that id takes its place, so the waiting call fails at once, naming the size and
the cap. Anything else past the cap is dropped with a line on stderr (which the gateway logs as
the child's).

The relay is run as a script, stdlib only (importing the `gateway` package would cost a second and
70 MB per child), without `site`: it starts in about 20 ms, holds about 10 MB, and adds 0.1-0.2 ms
to a short answer, a process's wake-up (`make bench` measures it per call), and about 1 ms to one of
1 MB. It relays until the child's stdout ends, then reaps the child and exits with its status, so
the SDK's shutdown (close stdin, wait, signal the process group) reaches both. A command that cannot
be started is reported on stderr with `SPAWN_FAILED` and exit status 127. The same message analysis
(`error_reply`) caps the answers of HTTP children (`_http_cap`).
"""

from __future__ import annotations

import os
import signal
import sys

__all__ = [
    "ANSWER_TOO_LARGE_CODE",
    "EDGE_BYTES",
    "RELAY_PREFIX",
    "SPAWN_FAILED",
    "LineCap",
    "error_reply",
    "main",
    "message_kind",
    "relay_command",
    "too_large",
]

RELAY_PREFIX = "codemode-gateway relay: "
"""What each line the relay itself writes to stderr starts with."""
SPAWN_FAILED = RELAY_PREFIX + "cannot start "
"""What the relay's stderr line starts with when the child's command cannot be started."""

ANSWER_TOO_LARGE_CODE = -32603  # JSON-RPC "internal error": the child's answer cannot be delivered
EDGE_BYTES = 4096  # of an oversized message's head and tail, kept to find out what it was
_READ_BYTES = 64 * 1024
_CAP_OPTION = "--max-line-bytes"
_LC_CTYPE_OPTION = "--lc-ctype"


def too_large(size: int | None, cap: int) -> str:
    """The error a call gets for an answer past the cap (its size, if known)."""
    amount = f"{size} bytes" if size is not None else f"more than {cap} bytes"
    return (
        f"the child's answer is {amount}, over the {cap}-byte cap on a child's message "
        "(max_message_bytes); ask the tool for less (filters, pagination)"
    )


def relay_command(command: str, args: list[str], cap: int, env: dict[str, str]) -> tuple[str, list[str]]:
    """The executable and arguments that run `command` behind the relay, for the child's `env`."""
    # Python coerces a C locale by setting LC_CTYPE in its own environment, which the child would
    # inherit: the relay is told what the child's LC_CTYPE is (absent: none) and restores it.
    lc_ctype = [_LC_CTYPE_OPTION, env["LC_CTYPE"]] if "LC_CTYPE" in env else []
    script = os.path.abspath(__file__)
    return sys.executable, ["-I", "-S", script, _CAP_OPTION, str(cap), *lc_ctype, "--", command, *args]


# ---- what an oversized message was ---------------------------------------------------------------


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _leading_members(text: str) -> tuple[dict[str, object], str | None]:
    """The whole top-level members at the start of a JSON object's text, and the key whose value is cut."""
    import json  # only for an oversized message: the relay starts without it

    decoder = json.JSONDecoder()
    members: dict[str, object] = {}
    at = _skip_space(text, 0)
    if not text.startswith("{", at):
        return members, None
    at += 1
    while True:
        at = _skip_space(text, at)
        try:
            key, at = decoder.raw_decode(text, at)
        except ValueError:
            return members, None
        at = _skip_space(text, at)
        if not isinstance(key, str) or not text.startswith(":", at):
            return members, None
        at = _skip_space(text, at + 1)
        try:
            members[key], at = decoder.raw_decode(text, at)
        except ValueError:
            return members, key
        at = _skip_space(text, at)
        if not text.startswith(",", at):
            return members, None
        at += 1


def message_kind(head: bytes, tail: bytes) -> tuple[str, object]:
    """What a message too large to parse is, from its first and last bytes, and its id (or None).

    "response" (with its id), "request", "notification" or "unknown". The Python SDK writes the id
    before the result, the TypeScript SDK after it (`{"result": ..., "jsonrpc": "2.0", "id": 7}`),
    so the id is looked for in the head, then as the last member of the tail.
    """
    import json  # only for an oversized message: the relay starts without them
    import re

    members, cut = _leading_members(head.decode("utf-8", "replace"))
    if "method" in members:
        return ("request" if "id" in members else "notification"), members.get("id")
    if cut not in ("result", "error") and not {"result", "error"} & set(members):
        return "unknown", None
    if isinstance(members.get("id"), int | str):
        return "response", members["id"]
    last = re.search(
        r'[,{]\s*"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$',
        tail.decode("utf-8", "replace"),
    )
    if last is None:
        return "unknown", None
    return "response", json.loads(last.group(1))


def error_reply(
    head: bytes, tail: bytes, size: int | None, cap: int, fallback_id: object = None
) -> bytes | None:
    """A JSON-RPC error response standing in for an oversized response, or None if it is not one.

    `fallback_id` is the id to answer when the message cannot be told apart (an HTTP response to a
    known request); a notification or a request from the child is never answered.
    """
    import json  # only for an oversized message: the relay starts without it

    kind, message_id = message_kind(head, tail)
    if kind == "unknown" and fallback_id is not None:
        kind, message_id = "response", fallback_id
    if kind != "response":
        return None
    error = {"code": ANSWER_TOO_LARGE_CODE, "message": too_large(size, cap)}
    return json.dumps({"jsonrpc": "2.0", "id": message_id, "error": error}).encode()


# ---- the relay -----------------------------------------------------------------------------------


class LineCap:
    """Splits a byte stream into lines, passing on those within `cap` bytes and standing in for the rest.

    Memory stays within the cap plus a read: a line past it is counted and dropped, keeping only its
    first and last EDGE_BYTES, from which `error_reply` makes its stand-in. What is dropped without a
    stand-in is described in `dropped`, for the caller to report (and clear).
    """

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.dropped: list[str] = []
        self._line = bytearray()  # the pending line, while within the cap
        self._over = -1  # the size of the pending line once past the cap, else -1
        self._head = b""
        self._tail = b""

    def feed(self, data: bytes) -> bytes:
        """What to pass on after `data`: every line it completes (or its stand-in)."""
        out: list[bytes | bytearray | memoryview] = []
        view = memoryview(data)
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            if not self._line and self._over < 0 and end - start <= self.cap:
                out.append(view[start : end + 1])  # the usual case: a whole line in one read
            else:
                self._add(view[start:end])
                out.append(self._finish())
            start = end + 1
        if start < len(data):
            self._add(view[start:])
        if len(out) == 1 and isinstance(out[0], memoryview) and len(out[0]) == len(data):
            return data  # exactly one whole line, read as it was written
        return b"".join(out)

    def end(self) -> bytes:
        """What to pass on at the end of the stream: an unfinished line, as it was (the SDK drops it)."""
        if self._over >= 0:
            self.dropped.append(
                f"dropped an unfinished message of {self._over} bytes, over the {self.cap}-byte cap "
                "(max_message_bytes)"
            )
            self._over = -1
            return b""
        line, self._line = bytes(self._line), bytearray()
        return line

    def _add(self, piece: memoryview) -> None:
        if self._over >= 0:
            self._over += len(piece)
            self._tail = (self._tail + piece[-EDGE_BYTES:].tobytes())[-EDGE_BYTES:]
        elif len(self._line) + len(piece) > self.cap:
            self._over = len(self._line) + len(piece)
            self._head = (bytes(self._line[:EDGE_BYTES]) + piece[:EDGE_BYTES].tobytes())[:EDGE_BYTES]
            self._tail = (bytes(self._line[-EDGE_BYTES:]) + piece[-EDGE_BYTES:].tobytes())[-EDGE_BYTES:]
            self._line = bytearray()
        else:
            self._line += piece

    def _finish(self) -> bytes | bytearray:
        if self._over < 0:
            line, self._line = self._line, bytearray()
            line += b"\n"
            return line
        size, self._over = self._over, -1
        reply = error_reply(self._head, self._tail, size, self.cap)
        if reply is None:
            kind, _ = message_kind(self._head, self._tail)
            self.dropped.append(
                f"dropped a message ({kind}) of {size} bytes, "
                f"over the {self.cap}-byte cap (max_message_bytes)"
            )
            return b""
        return reply + b"\n"


def _say(text: str) -> None:
    try:  # noqa: SIM105 - contextlib would cost the relay's start-up an import
        os.write(2, f"{RELAY_PREFIX}{text}\n".encode("utf-8", "replace"))
    except OSError:
        pass


def _report(dropped: list[str]) -> None:
    for text in dropped:
        _say(text)
    dropped.clear()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _arguments(argv: list[str]) -> tuple[int, str | None, list[str]]:
    cap, lc_ctype, at = 0, None, 0
    while at < len(argv) and argv[at] != "--":
        if argv[at] == _CAP_OPTION:
            cap = int(argv[at + 1])
        elif argv[at] == _LC_CTYPE_OPTION:
            lc_ctype = argv[at + 1]
        else:
            raise SystemExit(f"usage: _relay.py {_CAP_OPTION} N [{_LC_CTYPE_OPTION} VALUE] -- command [args]")
        at += 2
    command = argv[at + 1 :]
    if cap <= 0 or not command:
        raise SystemExit(f"usage: _relay.py {_CAP_OPTION} N [{_LC_CTYPE_OPTION} VALUE] -- command [args]")
    return cap, lc_ctype, command


def main(argv: list[str]) -> int:
    """Run the command in `argv` and relay its stdout; the child's exit status (127: not started)."""
    cap, lc_ctype, command = _arguments(argv)
    if lc_ctype is None:
        os.environ.pop("LC_CTYPE", None)
    else:
        os.environ["LC_CTYPE"] = lc_ctype
    read_end, write_end = os.pipe()  # both close on exec; the child gets a dup as its stdout
    # The child starts with the signal dispositions a fresh process has (Python ignores SIGPIPE).
    defaults = [getattr(signal, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(signal, name)]
    try:
        pid = os.posix_spawnp(
            command[0],
            command,
            os.environ,
            file_actions=[(os.POSIX_SPAWN_DUP2, write_end, 1)],
            setsigdef=defaults,
        )
    except OSError as exc:
        _say(f"cannot start {command[0]!r}: {exc.strerror or exc}")  # a line starting with SPAWN_FAILED
        return 127
    os.close(write_end)
    os.close(0)  # the child's stdin is its own: once the child is gone, writes to it fail at once
    lines = LineCap(cap)
    try:
        while data := os.read(read_end, _READ_BYTES):
            if out := lines.feed(data):
                _write_all(1, out)
            _report(lines.dropped)
        _write_all(1, lines.end())
        _report(lines.dropped)
        os.close(1)  # the end of the child's stdout is the end of ours, whatever the child does next
    except BrokenPipeError:
        return 0  # the gateway stopped reading: it is ending the child's process group
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
