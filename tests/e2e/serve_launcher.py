"""What an MCP client spawns for a gateway served by `serve_server.py`: `python -S serve_launcher.py SOCKET
ARGS`, ARGS as after `codemode-gateway`; or for a Python test child, `... SOCKET --script SCRIPT ARGS`
(run as it is, without the server, when none listens on SOCKET).

It hands its stdin, stdout and stderr, its environment and its directory to the server, which forks the
gateway on them; then it forwards SIGTERM, SIGINT and SIGHUP to that gateway and exits with its exit
code. It imports nothing beyond what an interpreter started with -S has at hand, so it starts in a few
milliseconds.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys


def main() -> int:
    script = sys.argv[2:3] == ["--script"]
    argv = sys.argv[3:] if script else sys.argv[2:]
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.connect(sys.argv[1])
    except OSError:
        if not script:
            raise
        # No serve server in this test process (a test that starts no gateway): the script runs as it is.
        os.execv(sys.executable, [sys.executable, *argv])
    request = {"argv": argv, "script": script, "env": dict(os.environ), "cwd": os.getcwd()}
    socket.send_fds(server, [json.dumps(request).encode()], [0, 1, 2])
    replies = server.makefile("r", encoding="utf-8")
    pid = int(replies.readline())
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda received, _: os.kill(pid, received))
    # The gateway holds the streams now: the client sees its stdout end when the gateway's does.
    for stream in (0, 1):
        os.close(stream)
    code = replies.readline()
    return int(code) if code else 1


if __name__ == "__main__":
    sys.exit(main())
