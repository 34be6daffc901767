#!/usr/bin/env python3
"""Benchmark sim-clients against wrk on the same server in the same run.

Prints, per run and as medians, each tool's own CPU seconds per 100,000 requests
and peak RSS (from GNU time), sim-clients' wake-up lateness (p99 of how late
clients woke against their schedule, from its --json), and the ratio
sim-clients / wrk. Scenarios (issue 3):

  a  1,000 closed-loop clients, 1 s think time, all starting at once
  b  10,000 closed-loop clients, 1 s think time, starts spread over one think time

Targets: (a) <= 2 CPU-s per 100k requests and < 50 MB RSS; (b) < 200 MB RSS and
p99 lateness < 5 ms. wrk gets the same think time through scripts/wrk-think.lua.

Run from the repository root (needs wrk and GNU time: apt-get install wrk time):

  python3 scripts/bench/clients-vs-wrk.py                 # both scenarios, 3 runs, 20 s each
  python3 scripts/bench/clients-vs-wrk.py --scenario a --runs 5 --duration 30

Machines here are noisy: quote the medians and the ratios, not one run.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402
from benchlib import CLIENTS, ROOT, timed  # noqa: E402

LUA = os.path.join(ROOT, "scripts/wrk-think.lua")

SCENARIOS = {
    "a": {"clients": 1000, "ramp_up": "0s", "cpu_target": 2.0, "rss_target_mb": 50, "lag_target_ms": None},
    "b": {"clients": 10000, "ramp_up": "1s", "cpu_target": None, "rss_target_mb": 200, "lag_target_ms": 5.0},
}


def start_server():
    return benchlib.start([benchlib.SERVER, "serve", "--listen", "127.0.0.1:0", "--permits", "1000000",
                           "--network-delay", "0", "--persist-latency", "1ms"])


def run_sim(url, s, duration):
    with tempfile.NamedTemporaryFile("r", suffix=".json") as j:
        _, cpu, rss = timed([CLIENTS, "--target", url, "--n", str(s["clients"]),
                             "--think-time", "1s", "--ramp-up", s["ramp_up"],
                             "--duration", f"{duration}s", "--json", j.name])
        report = json.load(j)
    done = report["requests_completed"]
    return {
        "requests": done,
        "errors": report["errors"],
        "cpu": cpu,
        "per_100k": cpu / max(done, 1) * 100_000,
        "rss": rss,
        "lag_p99_ms": report["schedule_lag"]["p99_ns"] / 1e6,
        "late": report["sends_late"],
    }


def run_wrk(url, s, duration):
    out, cpu, rss = timed(["wrk", "-t2", f"-c{s['clients']}", f"-d{duration}s",
                           "-s", LUA, url + "/requests"],
                          env={**os.environ, "THINK_MS": "1000"})
    m = re.search(r"wrk-summary requests=(\d+) errors_status=(\d+) errors_connect=(\d+) errors_timeout=(\d+)", out)
    if not m:
        sys.exit(f"no summary from wrk:\n{out}")
    done = int(m.group(1))
    return {
        "requests": done,
        "errors": sum(int(g) for g in m.groups()[1:]),
        "cpu": cpu,
        "per_100k": cpu / max(done, 1) * 100_000,
        "rss": rss,
        "lag_p99_ms": None,
        "late": None,
    }


def row(tool, run, r):
    lag = "-" if r["lag_p99_ms"] is None else f"{r['lag_p99_ms']:.2f}"
    late = "-" if r["late"] is None else str(r["late"])
    return (f"  {tool:<11} {run:>3} {r['requests']:>9} {r['errors']:>6} {r['cpu']:>7.2f} "
            f"{r['per_100k']:>10.2f} {r['rss']:>8.1f} {lag:>9} {late:>7}")


def scenario(name, url, runs, duration):
    s = SCENARIOS[name]
    print(f"\nscenario {name}: {s['clients']} clients, think 1s, ramp-up {s['ramp_up']}, "
          f"{duration}s per run, {runs} runs")
    print(f"  {'tool':<11} {'run':>3} {'requests':>9} {'errors':>6} {'cpu_s':>7} "
          f"{'cpu/100k':>10} {'rss_MB':>8} {'lag_p99':>9} {'late':>7}")
    results = {"sim-clients": [], "wrk": []}
    for i in range(1, runs + 1):
        # Alternate the order so drift in the machine's load hits both tools alike.
        order = [("sim-clients", run_sim), ("wrk", run_wrk)]
        for tool, fn in (order if i % 2 else order[::-1]):
            r = fn(url, s, duration)
            results[tool].append(r)
            print(row(tool, i, r), flush=True)
    med = {tool: {k: statistics.median(r[k] for r in rs) if rs[0][k] is not None else None
                  for k in rs[0]} for tool, rs in results.items()}
    sim, wrk = med["sim-clients"], med["wrk"]
    print("  medians:")
    print(row("sim-clients", "", sim))
    print(row("wrk", "", wrk))
    print(f"  ratio sim-clients / wrk: cpu per 100k {sim['per_100k'] / wrk['per_100k']:.2f}, "
          f"rss {sim['rss'] / wrk['rss']:.2f}")
    verdicts = []
    if s["cpu_target"] is not None:
        verdicts.append(("cpu per 100k", sim["per_100k"], "<=", s["cpu_target"], sim["per_100k"] <= s["cpu_target"]))
    verdicts.append(("rss MB", sim["rss"], "<", s["rss_target_mb"], sim["rss"] < s["rss_target_mb"]))
    if s["lag_target_ms"] is not None:
        verdicts.append(("lag p99 ms", sim["lag_p99_ms"], "<", s["lag_target_ms"], sim["lag_p99_ms"] < s["lag_target_ms"]))
    for what, value, op, target, ok in verdicts:
        print(f"  target {what}: {value:.2f} {op} {target}: {'met' if ok else 'NOT MET'}")
    return all(v[-1] for v in verdicts)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenario", choices=["a", "b", "all"], default="all")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--duration", type=int, default=20, help="seconds per run")
    p.add_argument("--no-build", action="store_true")
    args = p.parse_args()
    benchlib.need("wrk", "/usr/bin/time")
    if not args.no_build:
        benchlib.build("--workspace")
    server, url = start_server()
    try:
        names = ["a", "b"] if args.scenario == "all" else [args.scenario]
        met = [scenario(n, url, args.runs, args.duration) for n in names]
    finally:
        benchlib.stop(server)
    print("\nall targets met" if all(met) else "\nsome targets NOT met")
    sys.exit(0 if all(met) else 1)


if __name__ == "__main__":
    main()
