#!/usr/bin/env python3
"""What the server costs while it is out of descriptors: started under `ulimit
-n 64`, it is sent 80 idle connections, so its accept(2) fails with EMFILE for
as long as they are held. Measured against the same server idle, same run: its
CPU over --seconds each (the operator's /healthz asked once a second on a new
connection in both), whether each of those asks was answered within 1 s, and
whether the data port answers again once the connections close.

Runs alternate; prints each run, the medians with min and max, and the ratio of
the CPU out of descriptors to idle. A loop that retried accept at once would use
a whole core (tokio#3529); this one waits 100 ms between tries
(simulator-service/src/serving/accept_failures.rs).

  python3 tools/bench/out-of-descriptors.py                 # builds, 3 runs of 60 s
  python3 tools/bench/out-of-descriptors.py --runs 1 --seconds 10 --no-build
"""

import os
import re
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402

LIMIT = 64
HELD = 80


def address(url):
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def ask(addr, path, within=1.0):
    """GET on a connection of its own: its status line, or None without one in time."""
    try:
        with socket.create_connection(addr, timeout=within) as s:
            s.settimeout(within)
            s.sendall(f"GET {path} HTTP/1.1\r\nhost: bench\r\nconnection: close\r\n\r\n".encode())
            reply = b""
            while chunk := s.recv(65536):
                reply += chunk
            return reply.split(b"\r\n", 1)[0].decode()
    except OSError:
        return None


class Server:
    """The release server under `ulimit -n 64`, with its operator listener."""

    def __init__(self):
        command = ["bash", "-c", f"ulimit -n {LIMIT} && exec \"$0\" \"$@\"", benchlib.SERVER,
                   "serve", "--listen", "127.0.0.1:0", "--header-read-timeout", "600s"]
        self.process, url = benchlib.start(command)
        operator = re.search(r"http://127\.0\.0\.1:\d+", self.process.stdout.readline())
        if not operator:
            benchlib.stop(self.process)
            sys.exit("no operator listener in the banner")
        self.data, self.operator = address(url), address(operator.group(0))

    def cores_over(self, seconds):
        """CPU per second of wall time over `seconds`, asking /healthz once a second."""
        before, began, missed = benchlib.cpu_seconds(self.process.pid), time.monotonic(), 0
        while time.monotonic() - began < seconds:
            if ask(self.operator, "/healthz") != "HTTP/1.1 200 OK":
                missed += 1
            time.sleep(1.0)
        if missed:
            sys.exit(f"the operator's /healthz went unanswered {missed} times")
        return (benchlib.cpu_seconds(self.process.pid) - before) / (time.monotonic() - began)


def idle(server, seconds):
    return server.cores_over(seconds)


def out_of_descriptors(server, seconds):
    held = [socket.create_connection(server.data) for _ in range(HELD)]
    time.sleep(0.5)
    if ask(server.data, "/healthz", within=0.5) is not None:
        sys.exit("the data port still took a connection: not out of descriptors")
    cores = server.cores_over(seconds)
    for s in held:
        s.close()
    if ask(server.data, "/healthz", within=2.0) != "HTTP/1.1 200 OK":
        sys.exit("the data port did not answer again once the connections closed")
    return cores


def main():
    args = benchlib.arguments(__doc__, runs=3, seconds=60, connections=None).parse_args()
    if not args.no_build:
        benchlib.build("--bin", "system-simulator")
    server = Server()
    try:
        results = benchlib.alternate(args.runs, [
            ("idle (cores)", lambda: idle(server, args.seconds)),
            ("out of descriptors (cores)", lambda: out_of_descriptors(server, args.seconds)),
        ])
    finally:
        benchlib.stop(server.process)
    benchlib.report(results, "idle (cores)")


if __name__ == "__main__":
    main()
