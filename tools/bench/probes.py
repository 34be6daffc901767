#!/usr/bin/env python3
"""What the isim probes cost: compiled out, compiled in but not enabled,
enabled under scripts/count.bt, and streamed to a tap subscriber. The probe
effect is a lesson of its own.

Builds of one server under the same wrk load (POST /requests, the request path at
its cheapest), alternating, 5 runs each by default:

  compiled out   cargo build --release --no-default-features --features heap-profile
                 (target/noprobes: the same allocator as the default build):
                 no probes and no tap
  not enabled    the default build (probes and tap compiled in, nobody tracing)
  count.bt       the default build with `bpftrace -p PID scripts/count.bt` attached
                 (needs root and bpftrace; skipped with a note otherwise)
  tap, all       the default build with one subscriber on every event of the probe
                 tap (GET /admin/tap), reading as fast as it can in this process;
                 prints the events a second it read

Prints requests/s and the server's CPU microseconds per request (medians, min,
max), each mode's ratio to the compiled-out build, and from the CPU difference
the cost of one fired probe in ns (count.bt's own counts give probes per request).

  sudo python3 tools/bench/probes.py [--runs 5] [--seconds 10] [--no-build]
"""

import os
import re
import shutil
import signal
import socket
import statistics
import threading
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402

NOPROBES_DIR = os.path.join(benchlib.ROOT, "target", "noprobes")
NOPROBES = os.path.join(NOPROBES_DIR, "release", "system-simulator")
COUNT_BT = os.path.join(benchlib.ROOT, "scripts", "count.bt")


class Probes:
    """probes fired per request, from count.bt's counts, across traced runs"""
    fired = 0
    requests = 0


def attach_count_bt(pid):
    tracer = subprocess.Popen(["bpftrace", "-p", str(pid), COUNT_BT, "3600"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    # BEGIN prints "Counting ..." once every probe is attached.
    for line in tracer.stdout:
        if "Counting" in line:
            break
    else:
        sys.exit("bpftrace exited before attaching its probes")
    return tracer


def detach(tracer):
    tracer.send_signal(signal.SIGINT)
    out, _ = tracer.communicate(timeout=60)
    return sum(int(n) for n in re.findall(r"@counts\[[^\]]*\]: (\d+)", out))


class Tapped:
    """events the tap subscribers read, across runs"""
    events = 0
    seconds = 0.0


def subscribe_all(url):
    """Subscribes to every event of the tap; a thread reads and counts lines until
    the server closes the stream. Returns the thread and its socket."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    sock.sendall(f"GET /admin/tap HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    head = b""
    while b"\n# isim tap" not in head and b"\r\n\r\n" not in head:
        head += sock.recv(4096)

    def read():
        while True:
            try:
                chunk = sock.recv(1 << 20)
            except OSError:
                return
            if not chunk:
                return
            Tapped.events += chunk.count(b"\n")
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader, sock


def measure(binary, traced, args, per_request, tapped=False):
    def run():
        server, url = benchlib.start([binary, "serve", "--listen", "127.0.0.1:0",
                                      *benchlib.ZERO_COST_SERVER])
        tracer = attach_count_bt(server.pid) if traced else None
        subscriber = subscribe_all(url) if tapped else None
        try:
            rps = benchlib.wrk_with_cpu(server.pid, url, args, per_request)
            requests = rps * args.seconds
            if tracer:
                Probes.fired += detach(tracer)
                Probes.requests += requests
            if subscriber:
                Tapped.seconds += args.seconds
            return rps
        finally:
            if tracer and tracer.poll() is None:
                tracer.kill()
            if subscriber:
                subscriber[1].close()
            benchlib.stop(server)
    return run


def main():
    args = benchlib.arguments(__doc__).parse_args()
    benchlib.need("wrk")
    if not args.no_build:
        benchlib.build("--bin", "system-simulator", "--example", "bare_axum")
        benchlib.build("--bin", "system-simulator", "--no-default-features", "--features", "heap-profile",
                       target_dir=NOPROBES_DIR)
    benchlib.machine_limits()
    traced = os.geteuid() == 0 and shutil.which("bpftrace")
    if not traced:
        print("count.bt runs skipped: they need root and bpftrace")
    cpu = {"compiled out": [], "not enabled": [], "count.bt": [], "tap, all": []}
    subjects = [("compiled out", measure(NOPROBES, False, args, cpu["compiled out"])),
                ("not enabled", measure(benchlib.SERVER, False, args, cpu["not enabled"])),
                ("tap, all", measure(benchlib.SERVER, False, args, cpu["tap, all"], tapped=True))]
    if traced:
        subjects.append(("count.bt", measure(benchlib.SERVER, True, args, cpu["count.bt"])))
    print(f"POST /requests, requests per second (wrk -t 1 -c {args.connections}, {args.seconds} s a run)")
    results = benchlib.alternate(args.runs, subjects)
    benchlib.report(results, "compiled out", " req/s")
    tap_share = statistics.median(results["tap, all"]) / statistics.median(results["not enabled"]) - 1
    print(f"  tap, all vs not enabled, req/s: {100 * tap_share:+.1f} % (target: no worse than -5 %)")
    print("server CPU per request, microseconds:")
    cpu = {k: v for k, v in cpu.items() if v}
    ratios = benchlib.report(cpu, "compiled out", " us")
    print(f"  not enabled vs compiled out, CPU per request: {100 * (ratios['not enabled'] - 1):+.1f} % "
          f"(target within 1 %)")
    if Tapped.seconds:
        print(f"  tap, all: the subscriber read {Tapped.events / Tapped.seconds:,.0f} events a second")
    if traced and Probes.requests:
        per_request = Probes.fired / Probes.requests
        extra_us = statistics.median(cpu["count.bt"]) - statistics.median(cpu["not enabled"])
        print(f"  count.bt: {per_request:.2f} probes fired per request; "
              f"{extra_us * 1000 / per_request:,.0f} ns of server CPU per fired probe")


if __name__ == "__main__":
    main()
