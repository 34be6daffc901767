#!/usr/bin/env python3
"""sim-clients against its peers, same server, same run: oha (a Rust load
generator with a fixed-rate mode and latency correction: cargo install oha) and
wrk, against the bare axum baseline (examples/bare_axum.rs), POST /requests.

  closed loop flat out: 64 connections, no think time (sim-clients --think-time 0,
  oha -c 64, wrk -t2 -c64): requests/s and the tool's CPU per 100k requests;
  open loop at --rate (20,000/s) over 64 connections (sim-clients --rate, with
  tokio's timer, with --precise-pacing and with --precise-pacing=100us; oha -q --latency-correction; wrk has
  no fixed rate): the rate achieved, sim-clients' send lateness, CPU per 100k, and
  latency p99 two ways: "p99 ms" from the timetable (sim-clients') and "p99 woken
  ms" from the moment the pacer woke, which is what oha's latency correction
  measures (oha stamps a send with the time its pacing task woke from tokio's
  timer, not the time it was due: src/client.rs, work_until_with_qps_latency_
  correction), so its timer's lateness is in no figure it prints; for
  sim-clients that is its latency from the due time less the timer part of the
  send's lag.

Tools alternate within each round; prints every run, then medians (min, max) and
ratios to the peer. First it prints the machine's own limits
(benchlib.machine_limits: cyclictest's p99 wake-up idle and under load, bare
axum's requests/s under wrk), so the ratios read the same on any machine. --pin puts the
load tool on CPU 0 and the server on the rest.

  python3 tools/bench/peers.py [--runs 5] [--seconds 6] [--rate 20000] [--pin] [--no-build]
"""

import json
import os
import re
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402

BODY = '{"size": 1024}'


def pinned(args, command):
    return (["taskset", "-c", "0"] if args.pin else []) + command


def sim(url, args, rate, precise=False):
    with tempfile.NamedTemporaryFile("r", suffix=".json") as j:
        pacing = ["--rate", str(rate)] if rate else ["--think-time", "0"]
        if precise:
            pacing.append("--precise-pacing" if precise is True else f"--precise-pacing={precise}")
        _, cpu, _ = benchlib.timed(pinned(args, [benchlib.CLIENTS, "--target", url, "--n", "64", *pacing,
                                                 "--duration", f"{args.seconds}s", "--json", j.name]))
        r = json.load(j)
    done = max(r["requests_completed"], 1)
    return {"req/s": done / args.seconds, "cpu s/100k": cpu / done * 1e5,
            "p99 ms": r["latency"]["p99_ns"] / 1e6, "p99 woken ms": woken_p99_ms(r) if rate else None,
            "lag p99 ms": r["schedule_lag"]["p99_ns"] / 1e6, "errors": r["errors"]}


def sim_precise(url, args, rate):
    return sim(url, args, rate, precise=True)


def sim_precise_100us(url, args, rate):
    return sim(url, args, rate, precise="100us")


def woken_p99_ms(report):
    """p99 of latency from the due time less the timer part of the send's lag, the
    moment oha's correction counts from. The HDR histograms are per request, not
    paired, so this reads the latency from the send (the request's own time)
    plus the connection part of the lag, p99 for p99: an upper bound when both
    are small, as here (the connection part's p99 is 0 with 64 connections)."""
    return (report["latency_from_send"]["p99_ns"] + report["schedule_lag_connection"]["p99_ns"]) / 1e6


def oha(url, args, rate):
    command = ["oha", "-z", f"{args.seconds}s", "-c", "64", "--no-tui", "--output-format", "json",
               "-m", "POST", "-d", BODY, "-T", "application/json"]
    if rate:
        command += ["-q", str(rate), "--latency-correction"]
    out, cpu, _ = benchlib.timed(pinned(args, command + [url + "/requests"]))
    r = json.loads(out)
    done = max(r["statusCodeDistribution"].get("200", 0), 1)
    # The requests in flight when -z ends are "aborted due to deadline": not errors.
    errors = sum(n for what, n in r["errorDistribution"].items() if "deadline" not in what) + sum(
        n for code, n in r["statusCodeDistribution"].items() if code != "200")
    p99 = r["latencyPercentiles"]["p99"] * 1e3
    return {"req/s": done / args.seconds, "cpu s/100k": cpu / done * 1e5, "p99 ms": None if rate else p99,
            "p99 woken ms": p99 if rate else None, "lag p99 ms": None, "errors": errors}


def wrk(url, args, rate):
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        script.write('wrk.method = "POST"\nwrk.body = \'' + BODY + '\'\n'
                     'wrk.headers["content-type"] = "application/json"\n')
        script.flush()
        out, cpu, _ = benchlib.timed(pinned(args, ["wrk", "-t2", "-c64", f"-d{args.seconds}s", "--latency",
                                                   "-s", script.name, url + "/requests"]))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"req/s": rps, "cpu s/100k": cpu / max(rps * args.seconds, 1) * 1e5,
            "p99 ms": float(p99.group(1)) * scale[p99.group(2)] if p99 else None, "p99 woken ms": None,
            "lag p99 ms": None,
            "errors": int(errors.group(1)) if errors else 0}


def fmt(v):
    return "-" if v is None else f"{v:,.2f}"


def compare(title, url, args, tools, rate):
    print(f"\n{title}")
    results = {name: [] for name, _ in tools}
    for i in range(args.runs):
        for name, fn in (tools if i % 2 == 0 else tools[::-1]):
            r = fn(url, args, rate)
            if r["errors"]:
                sys.exit(f"{name} saw {r['errors']} errors")
            results[name].append(r)
            print(f"  run {i + 1} {name:<12} " + "  ".join(f"{k} {fmt(v)}" for k, v in r.items() if k != "errors"),
                  flush=True)
    med = {}
    for name, rs in results.items():
        med[name] = {}
        for key in rs[0]:
            values = [r[key] for r in rs if r[key] is not None]
            if not values or key == "errors":
                continue
            med[name][key] = statistics.median(values)
            print(benchlib.summary(f"{key}, {name}", values))
    for ours in (n for n in med if n.startswith("sim-clients")):
        for name in (n for n in med if not n.startswith("sim-clients")):
            ratios = ", ".join(f"{k} {med[ours][k] / med[name][k]:.3f}"
                               for k in med[name] if k in med[ours] and med[name][k])
            print(f"  ratio {ours} / {name}: {ratios}")
    return med


def main():
    p = benchlib.arguments(__doc__, runs=5, seconds=6, connections=None)
    p.add_argument("--rate", type=int, default=20_000)
    p.add_argument("--pin", action="store_true", help="load tool on CPU 0, server on the rest")
    args = p.parse_args()
    benchlib.need("wrk", "oha", "/usr/bin/time")
    if not args.no_build:
        benchlib.build("--workspace", "--examples")
    benchlib.machine_limits(args.pin)
    server, url = benchlib.start(benchlib.pin_server([benchlib.BARE_AXUM, "127.0.0.1:0"], args.pin))
    try:
        compare("closed loop flat out, 64 connections, against bare axum", url, args,
                [("sim-clients", sim), ("oha", oha), ("wrk", wrk)], None)
        compare(f"open loop at {args.rate:,}/s over 64 connections, against bare axum", url, args,
                [("sim-clients", sim), ("sim-clients precise", sim_precise),
                 ("sim-clients precise=100us", sim_precise_100us), ("oha", oha)], args.rate)
    finally:
        benchlib.stop(server)


if __name__ == "__main__":
    main()
