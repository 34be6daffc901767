#!/usr/bin/env python3
"""The event path alone (examples/event_path.rs): what one request's five events
cost with the isim probes compiled out and compiled in (not enabled), and whether
counting (the /stats counters, the lifetime counters and histograms) serializes
two threads.

  1. probes: the example built with and without the `probes` feature, alternating,
     1 thread, nothing but events: ns per request (5 events), medians of the runs,
     min, max, and the ratio (target: not enabled within 1 % of compiled out);
  2. counting: the default build on 1 and 2 threads, with 14 us of other
     work per request (about a request's CPU in the server) and with none (the
     worst case): the 2-thread / 1-thread throughput;
  3. tapped: the default build with a subscriber on every event reading the
     probe tap in a thread of its own (`--tap`): ns per request on 1 and 2
     threads, each event also sent into the tap's ring. Run at two commits to
     compare two rings (docs/performance.md, "The probe tap's cost").

  python3 tools/bench/event-path.py [--runs 5] [--requests 2000000] [--no-build]
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402

NOPROBES_DIR = os.path.join(benchlib.ROOT, "target", "noprobes")
WITH = os.path.join(benchlib.RELEASE, "examples", "event_path")
WITHOUT = os.path.join(NOPROBES_DIR, "release", "examples", "event_path")


def lines(binary, requests, work_ns, tapped=False):
    out = subprocess.run([binary, str(requests), "--work-ns", str(work_ns)] + (["--tap"] if tapped else []),
                         capture_output=True, text=True, check=True).stdout
    return {int(m.group(1)): (float(m.group(2)), float(m.group(3))) for m in re.finditer(
        r"threads=(\d+) work_ns=\d+ ns_per_request_per_thread=([\d.]+) requests_per_s=([\d.]+)", out)}


def main():
    p = benchlib.arguments(__doc__, connections=None)
    p.add_argument("--requests", type=int, default=2_000_000)
    args = p.parse_args()
    if not args.no_build:
        benchlib.build("--example", "event_path", "--example", "bare_axum")
        benchlib.build("--example", "event_path", "--no-default-features", target_dir=NOPROBES_DIR)
    benchlib.machine_limits()

    print(f"one request's events, ns, 1 thread ({args.requests:,} requests a run)")
    results = benchlib.alternate(args.runs, [
        ("compiled out", lambda: lines(WITHOUT, args.requests, 0)[1][0]),
        ("not enabled", lambda: lines(WITH, args.requests, 0)[1][0]),
    ])
    ratio = benchlib.report(results, "compiled out", " ns")["not enabled"]
    print(f"  target not enabled within 1 % of compiled out: {'met' if abs(ratio - 1) <= 0.01 else 'NOT MET'}")

    for work_ns in (14_000, 0):
        requests = args.requests // 10 if work_ns else args.requests
        print(f"\ncounting: throughput on 2 threads / 1 thread, {work_ns:,} ns of other work a request")
        scaling = {"1 thread": [], "2 threads": [], "2 / 1": []}
        for _ in range(args.runs):
            r = lines(WITH, requests, work_ns)
            scaling["1 thread"].append(r[1][1])
            scaling["2 threads"].append(r[2][1])
            scaling["2 / 1"].append(r[2][1] / r[1][1])
        for name, values in scaling.items():
            print(benchlib.summary(name, values, "" if name == "2 / 1" else " req/s"))

    print(f"\ntapped: one request's events, ns a thread, a subscriber reading every event ({args.requests // 2:,} requests a run)")
    tapped = {"1 thread": [], "2 threads": []}
    for _ in range(args.runs):
        r = lines(WITH, args.requests // 2, 0, tapped=True)
        tapped["1 thread"].append(r[1][0])
        tapped["2 threads"].append(r[2][0])
    for name, values in tapped.items():
        print(benchlib.summary(name, values, " ns"))


if __name__ == "__main__":
    main()
