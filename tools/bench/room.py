#!/usr/bin/env python3
"""What a workshop room costs its facilitator's machine: `system-simulator room`
(the release build, with a --state file, as a facilitator runs it) with --seats
seats each reporting once a second as `workshop check` does (a new connection a
report, a check of 10 reports ending in a verdict, then the next), and the pages
a room has open: the facilitator's, the projector's, and every seat's own
(GET /room/events, read as a browser reads them).

After a few seconds of warm-up, measures the room's CPU (from /proc, user +
system) over --seconds and its memory (VmRSS at the end, VmHWM the peak), in
--runs fresh rooms; prints each run and the medians (target: under 1 % of a
core and 50 MiB at 30 seats). Also counts the reports the room took and the
boards it sent, so a run proves the load was real.

  python3 tools/bench/room.py                          # builds; 3 runs of 60 s, 30 seats
  python3 tools/bench/room.py --runs 3 --seconds 30 --seats 30 --no-build
"""

import http.client
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402

WARM_UP_S = 5
EXERCISE = "sequential-persist"


def start_room(state):
    room = subprocess.Popen([benchlib.SERVER, "room", "--listen", "127.0.0.1:0", "--state", state],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "RUST_LOG": "warn"})
    banner = ""
    while "every `workshop check`" not in banner:
        line = room.stdout.readline()
        if not line:
            sys.exit(f"the room exited: {banner}")
        banner += line
    addr = re.search(r"listening on (\S+)", banner).group(1)
    key = re.search(r"with the key (\w+)", banner).group(1)
    password = re.search(r"/join/(\S+)", banner).group(1)
    return room, addr, key, password


def call(addr, method, path, body=None, token=None):
    host, port = addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    headers = {"content-type": "application/json"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    answer = conn.getresponse()
    text = answer.read()
    conn.close()
    if answer.status >= 300:
        raise RuntimeError(f"{method} {path}: {answer.status} {text!r}")
    return json.loads(text) if text else None


def progress(second, attempt):
    """The report a sequential-persist check sends `second` s into its window."""
    done = second == 10
    passed = done and attempt % 3 == 0
    p99 = 9.0 if passed else 1100.0
    conditions = [
        {"label": "persists a second", "bound": "> 100", "limit": 100.0,
         "value": 190.0 if passed else 19.0, "holds": passed},
        {"label": "request latency p99 (ms)", "bound": "< 50", "limit": 50.0,
         "value": p99 if done else None, "holds": (p99 < 50) if done else None},
    ]
    return {"scenario": EXERCISE, "window_s": 10.0, "elapsed_s": float(second),
            "conditions": conditions, "verdict": ("solved" if passed else "not yet") if done else None,
            "passed": passed if done else None}


class Seat(threading.Thread):
    def __init__(self, addr, name, token, stop):
        super().__init__(daemon=True)
        self.addr, self.name, self.token, self.stop = addr, name, token, stop
        self.sent = 0

    def run(self):
        attempt, second = 1, 0
        next_at = time.monotonic()
        while not self.stop.is_set():
            second += 1
            report = {"seat": self.name, "attempt": attempt, "progress": progress(second, attempt)}
            call(self.addr, "POST", "/room/report", report, self.token)
            self.sent += 1
            if second == 10:
                attempt, second = attempt + 1, 0
            next_at += 1.0
            self.stop.wait(max(0.0, next_at - time.monotonic()))


class Page(threading.Thread):
    """One page's stream, read as it comes; counts its boards."""

    def __init__(self, addr, secret, stop):
        super().__init__(daemon=True)
        self.addr, self.secret, self.stop = addr, secret, stop
        self.boards = 0

    def run(self):
        host, port = self.addr.rsplit(":", 1)
        with socket.create_connection((host, int(port))) as s:
            # The key or a seat's token in a header: the room refuses one in a URL.
            auth = f"Authorization: Bearer {self.secret}\r\n" if self.secret else ""
            s.sendall(f"GET /room/events HTTP/1.1\r\nHost: {self.addr}\r\n{auth}"
                      "Accept: text/event-stream\r\n\r\n".encode())
            s.settimeout(1.0)
            while not self.stop.is_set():
                try:
                    chunk = s.recv(65536)
                except socket.timeout:
                    continue
                if not chunk:
                    return
                self.boards += chunk.count(b"event: board")


def memory_mib(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            fields[name] = value.strip()
    kib = lambda name: int(fields[name].split()[0]) / 1024  # noqa: E731
    return kib("VmRSS"), kib("VmHWM")


def one_run(args):
    with tempfile.TemporaryDirectory() as dir:
        room, addr, key, password = start_room(os.path.join(dir, "room.json"))
        stop = threading.Event()
        try:
            seats = []
            for i in range(args.seats):
                name = f"seat-{i + 1}"
                token = call(addr, "POST", "/room/join", {"seat": name, "password": password})["token"]
                seats.append(Seat(addr, name, token, stop))
            pages = [Page(addr, key, stop), Page(addr, None, stop)]
            pages += [Page(addr, s.token, stop) for s in seats]
            for t in seats + pages:
                t.start()
            time.sleep(WARM_UP_S)
            cpu0, sent0, boards0, t0 = (benchlib.cpu_seconds(room.pid), sum(s.sent for s in seats),
                                        sum(p.boards for p in pages), time.monotonic())
            time.sleep(args.seconds)
            cpu1, sent1, boards1, t1 = (benchlib.cpu_seconds(room.pid), sum(s.sent for s in seats),
                                        sum(p.boards for p in pages), time.monotonic())
            rss, peak = memory_mib(room.pid)
        finally:
            stop.set()
            benchlib.stop(room)
    elapsed = t1 - t0
    return {"cpu_pct": 100 * (cpu1 - cpu0) / elapsed, "rss_mib": rss, "peak_mib": peak,
            "reports_per_s": (sent1 - sent0) / elapsed, "boards_per_s": (boards1 - boards0) / elapsed}


def main():
    parser = benchlib.arguments(__doc__, runs=3, seconds=60, connections=None)
    parser.add_argument("--seats", type=int, default=30)
    args = parser.parse_args()
    if not args.no_build:
        benchlib.build("--bin", "system-simulator")
    print(f"room: {args.seats} seats reporting once a second, {args.seats + 2} pages open, "
          f"{args.runs} runs of {args.seconds} s (after {WARM_UP_S} s of warm-up)")
    runs = []
    for i in range(args.runs):
        r = one_run(args)
        runs.append(r)
        print(f"  run {i + 1}: CPU {r['cpu_pct']:.2f} % of a core, RSS {r['rss_mib']:.1f} MiB "
              f"(peak {r['peak_mib']:.1f}), {r['reports_per_s']:.1f} reports/s taken, "
              f"{r['boards_per_s']:.1f} boards/s sent", flush=True)
    for name, unit in [("cpu_pct", " % of a core"), ("rss_mib", " MiB"), ("peak_mib", " MiB"),
                       ("reports_per_s", "/s"), ("boards_per_s", "/s")]:
        print(benchlib.summary(name, [r[name] for r in runs], unit))


if __name__ == "__main__":
    main()
