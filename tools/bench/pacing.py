#!/usr/bin/env python3
"""How exactly sim-clients keeps an open loop's timetable, and at what CPU: tokio's
1 ms timer (the default) against --precise-pacing (one timerfd for the run, each
wait ending at most a slack late) at each of --slacks, all against the machine's
own limit measured beside them.

An open loop at --rate R (default 20,000/s) over 64 connections against a server
at zero simulated cost, the pacings alternating. Prints per run and as medians
(min, max): how late sends left against their schedule (p50, p99; the report's
schedule_lag) and its two parts' p99 (the timer waking late; waiting for a free
connection), the driver's CPU seconds per 100,000 requests (GNU time), and the
ratios to tokio's timer. Beside every run, cyclictest (Debian's rt-tests) wakes
every 50 us on the driver's core for the run's length: the p99 the kernel's timer
achieves under the same load, the limit to compare with (cyclictest at normal
priority sleeps with the kernel's default 50 us timer slack, as any program
does). Once before the runs it measures the same idle. Target: the timer part's
p99 within 2x cyclictest's beside it (a ratio, so it means the same on any
machine). When oha is installed (cargo install oha --locked) it runs in the same
rounds at the same rate (oha -q R -c 64 --latency-correction, as peers.py runs it),
and the CPU of each pacing is printed as a ratio to oha's; target: no more.

  python3 tools/bench/pacing.py [--rate 20000] [--slacks 0s,50us,100us] [--runs 5] [--seconds 10] [--pin] [--no-build]
"""

import json
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402
import peers  # noqa: E402


def run(url, args, slack):
    with tempfile.NamedTemporaryFile("r", suffix=".json") as report:
        command = (["taskset", "-c", "0"] if args.pin else []) + [benchlib.CLIENTS, "--target", url, "--rate", str(args.rate), "--n", "64",
                   "--duration", f"{args.seconds}s", "--json", report.name]
        if slack is not None:
            command.append(f"--precise-pacing={slack}")
        beside = benchlib.cyclictest(args.seconds, args.pin)
        _, cpu, rss = benchlib.timed(command)
        limit = benchlib.cyclictest_p99(beside)
        r = json.load(report)
    sent = max(r["requests_sent"], 1)
    timer = r["schedule_lag_timer"]["p99_ns"] / 1e3
    return {
        "lag p50 us": r["schedule_lag"]["p50_ns"] / 1e3,
        "lag p99 us": r["schedule_lag"]["p99_ns"] / 1e3,
        "timer lag p99 us": timer,
        "connection lag p99 us": r["schedule_lag_connection"]["p99_ns"] / 1e3,
        # The part of all lateness spent waiting for a free connection (means).
        "connection share of lag": r["schedule_lag_connection"]["mean_ns"] / max(r["schedule_lag"]["mean_ns"], 1),
        "cyclictest p99 us": limit,
        "timer / cyclictest": timer / max(limit, 1.0),
        "cpu s per 100k": cpu / sent * 100_000,
        "sent per s": sent / args.seconds,
        "missed": r["sends_missed"],
    }


def main():
    p = benchlib.arguments(__doc__, connections=None)
    p.add_argument("--rate", type=int, default=20_000)
    p.add_argument("--slacks", default="0s,50us,100us",
                   help="--precise-pacing's slacks to measure, comma-separated (default: 0s,50us,100us)")
    p.add_argument("--pin", action="store_true",
                   help="the driver on CPU 0, the server on the others (taskset), so the "
                        "server's threads do not preempt the driver")
    args = p.parse_args()
    benchlib.need("/usr/bin/time")
    if not shutil.which("cyclictest"):
        sys.exit("cyclictest is missing: apt-get install rt-tests (the machine's own limit)")
    if not args.no_build:
        benchlib.build("--workspace", "--examples")
    idle = benchlib.machine_limits(args.pin)["cyclictest idle us"]
    server, url = benchlib.start(benchlib.pin_server(
        [benchlib.SERVER, "serve", "--listen", "127.0.0.1:0", *benchlib.ZERO_COST_SERVER], args.pin))
    modes = [("tokio timer", None)] + [(f"precise {slack}", slack) for slack in args.slacks.split(",")]
    results = {name: [] for name, _ in modes}
    oha_cpu = []
    if shutil.which("oha"):
        modes.append(("oha", "oha"))
    else:
        print("  oha is missing (cargo install oha --locked): no CPU comparison with it")
    try:
        for i in range(args.runs):
            for name, slack in (modes if i % 2 == 0 else modes[::-1]):
                if slack == "oha":
                    r = peers.oha(url, args, args.rate)
                    oha_cpu.append(r["cpu s/100k"])
                    print(f"  run {i + 1} oha            cpu s per 100k {r['cpu s/100k']:,.2f}  "
                          f"sent per s {r['req/s']:,.1f}", flush=True)
                    continue
                r = run(url, args, slack)
                results[name].append(r)
                print(f"  run {i + 1} {name:<14} " + "  ".join(f"{k} {v:,.2f}" for k, v in r.items()),
                      flush=True)
    finally:
        benchlib.stop(server)
    print(f"open loop at {args.rate:,}/s over 64 connections, {args.seconds} s a run:")
    for key in results["tokio timer"][0]:
        for name, rs in results.items():
            print(benchlib.summary(f"{key}, {name}", [r[key] for r in rs]))
    med = {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in results.items()}
    tokio = med["tokio timer"]
    for name in med:
        if name != "tokio timer":
            print(f"  ratio {name} / tokio timer: lag p99 {med[name]['lag p99 us'] / tokio['lag p99 us']:.3f}, "
                  f"cpu per 100k {med[name]['cpu s per 100k'] / tokio['cpu s per 100k']:.3f}")
    if oha_cpu:
        print(benchlib.summary("cpu s per 100k, oha", oha_cpu))
        oha = statistics.median(oha_cpu)
        for name in med:
            ratio = med[name]["cpu s per 100k"] / oha
            print(f"  target {name}: CPU per 100k no more than oha's: {'met' if ratio <= 1 else 'NOT MET'} ({ratio:.3f})")
    print(f"  the machine's limit: cyclictest p99 {idle:.0f} us idle, "
          + ", ".join(f"{med[n]['cyclictest p99 us']:.0f} us beside {n}" for n in med))
    for name in med:
        ratio = med[name]["timer / cyclictest"]
        print(f"  target {name}: timer lag p99 within 2x cyclictest's beside it: "
              f"{'met' if ratio <= 2 else 'NOT MET'} ({ratio:.1f}x)")


if __name__ == "__main__":
    main()
