#!/usr/bin/env python3
"""What a plan of stages costs the driver: an open loop ramped from 0 to 2R a
second (`--stages 'ramp 2R/s Ds'`, a mean of R) against a constant R a second
(`--rate R`) for the same D seconds, so both send the same requests. Against a
server at zero simulated cost over 64 connections, the two alternating, each
--runs times. Prints per run and as medians (min, max): the driver's CPU
seconds per 100,000 requests (GNU time), the sends' lag behind the timetable
at p99 (the report's schedule_lag), and the ramp's ratios to the constant.
Target: the ramp costs no more CPU a request than the constant rate (ratio at
most 1.05: the runs' own spread on one VM is about that) and keeps its
timetable as well (lag p99 ratio at most 1.5).

  python3 tools/bench/stages.py [--rate 20000] [--runs 5] [--seconds 10] [--no-build]
"""

import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402


def run(url, args, pacing):
    with tempfile.NamedTemporaryFile("r", suffix=".json") as report:
        command = [benchlib.CLIENTS, "--target", url, "--n", "64", "--json", report.name, *pacing]
        _, cpu, _ = benchlib.timed(command)
        r = json.load(report)
    sent = max(r["requests_sent"], 1)
    return {
        "cpu s per 100k": cpu / sent * 100_000,
        "lag p99 us": r["schedule_lag"]["p99_ns"] / 1e3,
        "sent": sent,
        "late": r["sends_late"],
    }


def main():
    p = benchlib.arguments(__doc__, connections=None)
    p.add_argument("--rate", type=int, default=20_000)
    args = p.parse_args()
    benchlib.need("/usr/bin/time")
    if not args.no_build:
        benchlib.build("--workspace")
    print(benchlib.machine_line())
    server, url = benchlib.start([benchlib.SERVER, "serve", "--listen", "127.0.0.1:0", *benchlib.ZERO_COST_SERVER])
    subjects = [
        ("constant", ["--rate", str(args.rate), "--duration", f"{args.seconds}s"]),
        ("ramp", ["--stages", f"ramp {2 * args.rate}/s {args.seconds}s"]),
    ]
    results = {name: [] for name, _ in subjects}
    try:
        for i in range(args.runs):
            for name, pacing in (subjects if i % 2 == 0 else subjects[::-1]):
                r = run(url, args, pacing)
                results[name].append(r)
                print(f"  run {i + 1} {name:<9} " + "  ".join(f"{k} {v:,.2f}" for k, v in r.items()), flush=True)
    finally:
        benchlib.stop(server)
    print(f"open loop, a mean of {args.rate:,}/s for {args.seconds} s over 64 connections:")
    for key in results["constant"][0]:
        for name, rs in results.items():
            print(benchlib.summary(f"{key}, {name}", [r[key] for r in rs]))
    med = {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in results.items()}
    cpu = med["ramp"]["cpu s per 100k"] / med["constant"]["cpu s per 100k"]
    lag = med["ramp"]["lag p99 us"] / max(med["constant"]["lag p99 us"], 1.0)
    print(f"  ratio ramp / constant: cpu per 100k {cpu:.3f}, lag p99 {lag:.3f}")
    print(f"  target: the ramp's CPU a request no more than the constant's: {'met' if cpu <= 1.05 else 'NOT MET'} ({cpu:.3f})")
    print(f"  target: the ramp keeps its timetable as well: {'met' if lag <= 1.5 else 'NOT MET'} ({lag:.3f})")


if __name__ == "__main__":
    main()
