#!/usr/bin/env python3
"""What open live views cost the serving path: wrk flat out on POST /requests with
no viewer, with --viewers pages' streams open (GET /live/events on the
operator's listener, read as a browser reads them), and with one of them asking
for the cut of each request into its waits (?waits=true: the server reads its
probe tap for it), same server build, same run.

Runs alternate; prints each run, the medians with min and max, and the ratio of
requests/s with viewers to without (target: at least 0.98, i.e. 48 viewers cost the
serving path at most 2 %). The server is at its cheapest (no simulated delay,
permits never short), so the live view's share is as large as it can be.

  python3 tools/bench/live-viewers.py                      # builds, 5 runs of 10 s, 48 viewers (the live view's most)
  python3 tools/bench/live-viewers.py --runs 5 --seconds 6 --no-build
"""

import os
import re
import selectors
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402


def start_with_operator(command):
    """The server, its data URL and its operator URL (the banner's second line)."""
    server, url = benchlib.start(command)
    second = server.stdout.readline()
    operator = re.search(r"http://127\.0\.0\.1:\d+", second)
    if not operator:
        benchlib.stop(server)
        sys.exit(f"no operator listener in {second!r}")
    return server, url, operator.group(0)


class Viewers:
    """`n` open streams, read on one thread as fast as they come; counts the
    `second` events so a run proves the viewers were served."""

    def __init__(self, operator_url, n, cutting=0):
        host, port = operator_url.removeprefix("http://").split(":")
        self.selector = selectors.DefaultSelector()
        self.seconds = 0
        self.closed = 0
        self.stop = threading.Event()
        for i in range(n):
            s = socket.create_connection((host, int(port)))
            path = b"/live/events?waits=true" if i < cutting else b"/live/events"
            s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
            s.setblocking(False)
            self.selector.register(s, selectors.EVENT_READ)
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self):
        while not self.stop.is_set():
            for key, _ in self.selector.select(timeout=0.2):
                data = key.fileobj.recv(65536)
                if not data:
                    self.selector.unregister(key.fileobj)
                    self.closed += 1
                    continue
                self.seconds += data.count(b"event: second")

    def close(self):
        self.stop.set()
        self.thread.join()
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()


def measure(args, viewers, cutting=0):
    def run():
        server, url, operator = start_with_operator(
            [benchlib.SERVER, "serve", "--listen", "127.0.0.1:0", *benchlib.ZERO_COST_SERVER])
        watching = Viewers(operator, viewers, cutting) if viewers else None
        try:
            rate = benchlib.wrk(url, seconds=args.seconds, connections=args.connections)
        finally:
            if watching:
                watching.close()
            benchlib.stop(server)
        if watching:
            # Each viewer gets about a second event a second; a dropped one would
            # make the comparison flatter than the truth.
            want = viewers * (args.seconds - 1)
            if watching.closed or watching.seconds < want:
                sys.exit(f"viewers were not served: {watching.seconds} seconds read "
                         f"(want >= {want}), {watching.closed} streams closed")
        return rate
    return run


def main():
    parser = benchlib.arguments(__doc__)
    parser.add_argument("--viewers", type=int, default=48)
    args = parser.parse_args()
    benchlib.need("wrk")
    if not args.no_build:
        benchlib.build("--bin", "system-simulator", "--example", "bare_axum")
    benchlib.machine_limits()
    print(f"POST /requests, requests per second (wrk -t 1 -c {args.connections}, {args.seconds} s a run), "
          f"with 0 and {args.viewers} live viewers")
    with_viewers = f"{args.viewers} viewers"
    cutting = f"{args.viewers} viewers, 1 cutting"
    results = benchlib.alternate(args.runs, [
        ("no viewer", measure(args, 0)),
        (with_viewers, measure(args, args.viewers)),
        (cutting, measure(args, args.viewers, cutting=1)),
    ])
    ratios = benchlib.report(results, "no viewer", " req/s")
    ratio = ratios[with_viewers]
    print(f"  target {with_viewers} / no viewer >= 0.98: {'met' if ratio >= 0.98 else 'NOT MET'}")


if __name__ == "__main__":
    main()
