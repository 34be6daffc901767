#!/usr/bin/env python3
"""How exactly sim-clients keeps an open loop's timetable, and at what CPU: tokio's
1 ms timer (the default) against --precise-pacing (a timerfd per connection).

An open loop at --rate R (default 20,000/s) over 64 connections against a server
at zero simulated cost, both pacings alternating. Prints per run and as medians
(min, max): how late sends left against their schedule (p50, p99; the report's
schedule_lag), the driver's CPU seconds per 100,000 requests (GNU time), and the
ratios precise / tokio. Target: p99 lateness at most 250 us.

  python3 scripts/bench/pacing.py [--rate 20000] [--runs 5] [--seconds 10] [--no-build]
"""

import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402


def run(url, args, precise):
    with tempfile.NamedTemporaryFile("r", suffix=".json") as report:
        command = (["taskset", "-c", "0"] if args.pin else []) + [benchlib.CLIENTS, "--target", url, "--rate", str(args.rate), "--n", "64",
                   "--duration", f"{args.seconds}s", "--json", report.name]
        if precise:
            command.append("--precise-pacing")
        _, cpu, rss = benchlib.timed(command)
        r = json.load(report)
    sent = max(r["requests_sent"], 1)
    return {
        "lag p50 us": r["schedule_lag"]["p50_ns"] / 1e3,
        "lag p99 us": r["schedule_lag"]["p99_ns"] / 1e3,
        "cpu s per 100k": cpu / sent * 100_000,
        "sent per s": sent / args.seconds,
        "missed": r["sends_missed"],
    }


def main():
    p = benchlib.arguments(__doc__, connections=None)
    p.add_argument("--rate", type=int, default=20_000)
    p.add_argument("--pin", action="store_true",
                   help="the driver on CPU 0, the server on the others (taskset), so the "
                        "server's threads do not preempt the driver")
    args = p.parse_args()
    benchlib.need("/usr/bin/time")
    if not args.no_build:
        benchlib.build("--workspace")
    pin_server = ["taskset", "-c", f"1-{os.cpu_count() - 1}"] if args.pin else []
    server, url = benchlib.start(pin_server + [benchlib.SERVER, "serve", "--listen", "127.0.0.1:0",
                                               *benchlib.ZERO_COST_SERVER])
    results = {"tokio timer": [], "precise": []}
    try:
        for i in range(args.runs):
            order = [("tokio timer", False), ("precise", True)]
            for name, precise in (order if i % 2 == 0 else order[::-1]):
                r = run(url, args, precise)
                results[name].append(r)
                print(f"  run {i + 1} {name:<12} " + "  ".join(f"{k} {v:,.1f}" for k, v in r.items()),
                      flush=True)
    finally:
        benchlib.stop(server)
    print(f"open loop at {args.rate:,}/s over 64 connections, {args.seconds} s a run:")
    for key in results["precise"][0]:
        by_mode = {name: [r[key] for r in rs] for name, rs in results.items()}
        for name, values in by_mode.items():
            print(benchlib.summary(f"{key}, {name}", values))
    med = {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in results.items()}
    print(f"  ratio precise / tokio timer: lag p99 {med['precise']['lag p99 us'] / med['tokio timer']['lag p99 us']:.3f}, "
          f"cpu per 100k {med['precise']['cpu s per 100k'] / med['tokio timer']['cpu s per 100k']:.3f}")
    ok = med["precise"]["lag p99 us"] <= 250
    print(f"  target precise lag p99 <= 250 us: {'met' if ok else 'NOT MET'} ({med['precise']['lag p99 us']:.0f} us)")


if __name__ == "__main__":
    main()
