"""The one command an evaluated agent gets: it calls one interface's tools, prints what a client shows
the model, and logs every call with the bytes written and read.

    python -m tests.agent_eval.cli --interface gateway|direct|peer --world DIR --log LOG.jsonl COMMAND
      list-tools [SERVER]      the interface's tools (name, description, input schema), one JSON a line
      call TOOL 'JSON ARGS'    call a tool (`-` reads the arguments from stdin); direct tools are server.tool
      answer TASK 'TEXT'       record the answer to a task (not a call: nothing is sent, nothing printed)
      stop                     stop this interface's background server for the world

An interface's servers run in a background process per (world, interface), started by the first command
and reached over a unix socket in `DIR/.eval/`; `--oneshot` starts them for this command only.

Each `list-tools` and `call` appends `{interface, command, tool, bytes_written, bytes_read, ok}` to the
log: bytes_written is the arguments JSON exactly as the agent wrote it, bytes_read exactly what this
command printed (UTF-8), which is `daemon.render` of the result (what Claude Code shows the model).
This module imports no MCP code, so a command starts quickly; the servers' side is `daemon.py`.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.agent_eval.layout import INTERFACES, REPO, Interface, cli_command, socket_path, state_dir

__all__ = ["main"]

START_SECONDS = 600.0  # the first start may create the peer's venv
CALL_SECONDS = 3600.0


def _ask(path: Path, request: dict[str, Any]) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(CALL_SECONDS)
        conn.connect(str(path))
        conn.sendall(json.dumps(request).encode() + b"\n")
        chunks: list[bytes] = []
        while not chunks or not chunks[-1].endswith(b"\n"):
            chunk = conn.recv(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    return json.loads(b"".join(chunks))


def _start_server(interface: Interface, world: Path) -> None:
    log = (state_dir(world) / f"{interface}.daemon.log").open("ab")
    command = cli_command(interface, world, "serve")
    env = os.environ | {"PYTHONPATH": str(REPO)}
    subprocess.Popen(
        command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, env=env
    )


def _through_server(interface: Interface, world: Path, request: dict[str, Any]) -> dict[str, Any]:
    path = socket_path(world, interface)
    # One starter at a time: two commands run at once must not start two servers for one world.
    with (state_dir(world) / f"{interface}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            try:
                return _ask(path, request)
            except (ConnectionRefusedError, FileNotFoundError):  # a server that died left its socket behind
                path.unlink(missing_ok=True)
        _start_server(interface, world)
        deadline = time.monotonic() + START_SECONDS
        while not path.exists():
            if time.monotonic() > deadline:
                return {
                    "text": f"Error: the {interface} servers did not start in {START_SECONDS:.0f} s",
                    "ok": False,
                }
            time.sleep(0.1)
        return _ask(path, request)


def _oneshot(interface: Interface, world: Path, request: dict[str, Any]) -> dict[str, Any]:
    import anyio

    from tests.agent_eval.daemon import answer_once

    # The servers' own logs (inherited stderr) are not what a client shows the model.
    os.dup2(os.open(state_dir(world) / "oneshot.stderr.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND), 2)
    return anyio.run(answer_once, interface, world, request)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent-eval", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--interface", choices=INTERFACES, required=True)
    parser.add_argument("--world", type=Path, required=True)
    parser.add_argument("--log", type=Path, help="the JSONL log of this trial's calls and answers")
    parser.add_argument("--oneshot", action="store_true", help="start the servers for this command only")
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list-tools", help="the interface's tools")
    listing.add_argument("server", nargs="?")
    call = commands.add_parser("call", help="call a tool: TOOL 'JSON ARGUMENTS' (- reads them from stdin)")
    call.add_argument("tool")
    call.add_argument("arguments", nargs="?", default="{}")
    answer = commands.add_parser("answer", help="record the answer to a task: TASK 'TEXT'")
    answer.add_argument("task")
    answer.add_argument("text")
    commands.add_parser("stop", help="stop the background server of this interface and world")
    commands.add_parser("serve", help=argparse.SUPPRESS)
    return parser


def _request(args: argparse.Namespace) -> tuple[dict[str, Any] | None, str, str]:
    """The request of a list-tools or call command (None if the arguments are not a JSON object), the
    tool's name, and the argument text as written."""
    if args.command == "list-tools":
        return {"op": "list", "server": args.server}, "tools/list", ""
    written: str = sys.stdin.read() if args.arguments == "-" else args.arguments
    try:
        arguments = json.loads(written)
    except json.JSONDecodeError:
        arguments = None
    if not isinstance(arguments, dict):
        return None, args.tool, written
    return {"op": "call", "tool": args.tool, "arguments": arguments}, args.tool, written


def _log(path: Path, record: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


def _call(args: argparse.Namespace, world: Path, interface: Interface) -> int:
    now = datetime.now(UTC).isoformat(timespec="seconds")
    request, tool, written = _request(args)
    if request is None:
        reply: dict[str, Any] = {"text": "Error: the arguments must be a JSON object", "ok": False}
    elif args.oneshot:
        reply = _oneshot(interface, world, request)
    else:
        reply = _through_server(interface, world, request)
    printed = reply["text"] + "\n"
    sys.stdout.buffer.write(printed.encode())
    sys.stdout.flush()
    record = {
        "time": now,
        "interface": interface,
        "command": args.command,
        "tool": tool,
        "bytes_written": len(written.encode()),
        "bytes_read": len(printed.encode()),
        "ok": reply["ok"],
    }
    _log(args.log, record)
    return 0 if reply["ok"] else 1


def main(argv: list[str] | None = None) -> int:
    """Run one command of the agent's CLI."""
    args = _parser().parse_args(argv)
    world: Path = args.world.resolve()
    interface: Interface = args.interface
    if args.command == "serve":
        import anyio

        from tests.agent_eval.daemon import serve

        anyio.run(serve, interface, world)
        return 0
    if args.command == "stop":
        path = socket_path(world, interface)
        if path.exists():
            try:
                _ask(path, {"op": "stop"})
            except (ConnectionRefusedError, FileNotFoundError):
                path.unlink(missing_ok=True)
        return 0
    if args.log is None:
        print("Error: --log is required for list-tools, call and answer")
        return 2
    if args.command == "answer":
        now = datetime.now(UTC).isoformat(timespec="seconds")
        _log(
            args.log,
            {
                "time": now,
                "interface": interface,
                "command": "answer",
                "task": args.task.upper(),
                "answer": args.text,
            },
        )
        return 0
    return _call(args, world, interface)


if __name__ == "__main__":
    sys.exit(main())
