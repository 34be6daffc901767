#!/usr/bin/env python3
"""Benchmark sim-clients against wrk on the same server in the same run.

Prints, per run and as medians, each tool's own CPU seconds per 100,000 requests
and peak RSS (from GNU time), sim-clients' wake-up lateness (p99 of how late
clients woke against their schedule, from its --json), and the ratio
sim-clients / wrk. Scenarios (issue 3):

  a  1,000 closed-loop clients, 1 s think time, all starting at once
  b  10,000 closed-loop clients, 1 s think time, starts spread over one think time
  c  50 closed-loop clients, no think time, as fast as they go, against the bare
     axum baseline (examples/bare_axum.rs) so the driver is what is measured;
     sim-clients --threads 2 against wrk -t2 (issue 15)

Targets: (a) <= 2 CPU-s per 100k requests and < 50 MB RSS; (b) < 200 MB RSS and
p99 lateness < 5 ms; (c) at least 0.9x wrk's requests/s at no more CPU per 100k
requests than wrk. wrk gets the same think time through scripts/wrk-think.lua.

Run from the repository root (needs wrk and GNU time: apt-get install wrk time):

  python3 tools/bench/clients-vs-wrk.py                 # every scenario, 5 runs, 20 s each
  python3 tools/bench/clients-vs-wrk.py --scenario c --runs 5 --duration 10
  python3 tools/bench/clients-vs-wrk.py --scenario a --runs 5 --duration 30

Machines here are noisy: quote the medians and the ratios, not one run.
"""

import argparse
import json
import os
import re
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402
from benchlib import CLIENTS, ROOT, timed  # noqa: E402

LUA = os.path.join(ROOT, "tools/wrk-think.lua")

SCENARIOS = {
    "a": {"clients": 1000, "think_ms": 1000, "ramp_up": "0s", "threads": 1, "server": "simulator",
          "cpu_target": 2.0, "rss_target_mb": 50, "lag_target_ms": None, "vs_wrk": False},
    "b": {"clients": 10000, "think_ms": 1000, "ramp_up": "1s", "threads": 1, "server": "simulator",
          "cpu_target": None, "rss_target_mb": 200, "lag_target_ms": 5.0, "vs_wrk": False},
    "c": {"clients": 50, "think_ms": 0, "ramp_up": "0s", "threads": 2, "server": "bare-axum",
          "cpu_target": None, "rss_target_mb": None, "lag_target_ms": None, "vs_wrk": True},
}


def start_server(kind):
    if kind == "bare-axum":
        return benchlib.start([benchlib.BARE_AXUM])
    return benchlib.start([benchlib.SERVER, "serve", "--listen", "127.0.0.1:0", "--permits", "1000000",
                           "--network-delay", "0", "--persist-latency", "1ms"])


def run_sim(url, s, duration):
    with tempfile.NamedTemporaryFile("r", suffix=".json") as j:
        _, cpu, rss = timed([CLIENTS, "--target", url, "--n", str(s["clients"]),
                             "--think-time", f"{s['think_ms']}ms", "--ramp-up", s["ramp_up"],
                             "--threads", str(s["threads"]),
                             "--duration", f"{duration}s", "--json", j.name])
        report = json.load(j)
    done = report["requests_completed"]
    return {
        "requests": done,
        "per_s": done / duration,
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
                          env={**os.environ, "THINK_MS": str(s["think_ms"])})
    m = re.search(r"wrk-summary requests=(\d+) errors_status=(\d+) errors_connect=(\d+) errors_timeout=(\d+)", out)
    if not m:
        sys.exit(f"no summary from wrk:\n{out}")
    done = int(m.group(1))
    return {
        "requests": done,
        "per_s": done / duration,
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
    return (f"  {tool:<11} {run:>3} {r['requests']:>9} {r['per_s']:>9.0f} {r['errors']:>6} {r['cpu']:>7.2f} "
            f"{r['per_100k']:>10.2f} {r['rss']:>8.1f} {lag:>9} {late:>7}")


def scenario(name, runs, duration):
    s = SCENARIOS[name]
    server, url = start_server(s["server"])
    try:
        return measure(name, s, url, runs, duration)
    finally:
        benchlib.stop(server)


def measure(name, s, url, runs, duration):
    print(f"\nscenario {name}: {s['clients']} clients, think {s['think_ms']}ms, ramp-up {s['ramp_up']}, "
          f"sim-clients --threads {s['threads']}, wrk -t2, server {s['server']}, "
          f"{duration}s per run, {runs} runs")
    print(f"  {'tool':<11} {'run':>3} {'requests':>9} {'per_s':>9} {'errors':>6} {'cpu_s':>7} "
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
    print(f"  ratio sim-clients / wrk: requests/s {sim['per_s'] / wrk['per_s']:.3f}, "
          f"cpu per 100k {sim['per_100k'] / wrk['per_100k']:.3f}, rss {sim['rss'] / wrk['rss']:.2f}")
    verdicts = []
    if s["vs_wrk"]:
        verdicts.append(("requests/s ratio to wrk", sim["per_s"] / wrk["per_s"], ">=", 0.9,
                         sim["per_s"] >= 0.9 * wrk["per_s"]))
        verdicts.append(("cpu per 100k ratio to wrk", sim["per_100k"] / wrk["per_100k"], "<=", 1.0,
                         sim["per_100k"] <= wrk["per_100k"]))
    if s["cpu_target"] is not None:
        verdicts.append(("cpu per 100k", sim["per_100k"], "<=", s["cpu_target"], sim["per_100k"] <= s["cpu_target"]))
    if s["rss_target_mb"] is not None:
        verdicts.append(("rss MB", sim["rss"], "<", s["rss_target_mb"], sim["rss"] < s["rss_target_mb"]))
    if s["lag_target_ms"] is not None:
        verdicts.append(("lag p99 ms", sim["lag_p99_ms"], "<", s["lag_target_ms"], sim["lag_p99_ms"] < s["lag_target_ms"]))
    for what, value, op, target, ok in verdicts:
        print(f"  target {what}: {value:.3f} {op} {target}: {'met' if ok else 'NOT MET'}")
    return all(v[-1] for v in verdicts)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenario", choices=[*SCENARIOS, "all"], default="all")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--duration", type=int, default=20, help="seconds per run")
    p.add_argument("--no-build", action="store_true")
    args = p.parse_args()
    benchlib.need("wrk", "/usr/bin/time")
    if not args.no_build:
        benchlib.build("--workspace", "--examples")
    benchlib.machine_limits()
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    met = [scenario(n, args.runs, args.duration) for n in names]
    print("\nall targets met" if all(met) else "\nsome targets NOT met")
    sys.exit(0 if all(met) else 1)


if __name__ == "__main__":
    main()
