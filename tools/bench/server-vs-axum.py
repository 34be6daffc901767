#!/usr/bin/env python3
"""system-simulator's serving path against a bare axum server, same load, same run.

The baseline is examples/bare_axum.rs: the least axum can do to answer
POST /requests with the same JSON. The subject is `system-simulator serve` with
the request path at its cheapest (no simulated delay, 1,000,000 permits), so the
ratio is what the simulator adds on top of HTTP: its request path, probes (compiled
in, not enabled), counters, metrics and connection limits. Runs alternate; prints
each run, the medians with min and max, and the ratio (target: at least 0.9);
then each server's CPU per request, the steadier figure on a VM shared with wrk.
--pin puts wrk on CPU 0 and the servers on the rest, so the two never share a core.
--batches N --gap M runs the whole comparison N times, M minutes apart, and ends
with each batch's ratio and how many met the target: on a shared VM the ratio
moves from one hour to the next by more than a batch's runs show
(docs/performance.md, "By VM kind"), so one batch does not settle it.

  python3 tools/bench/server-vs-axum.py                 # builds both, 5 runs of 10 s
  python3 tools/bench/server-vs-axum.py --runs 3 --seconds 5 --no-build
  python3 tools/bench/server-vs-axum.py --pin             # wrk on CPU 0, the servers on the rest
  python3 tools/bench/server-vs-axum.py --runs 7 --seconds 8 --batches 3 --gap 20
"""

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402


def main():
    parser = benchlib.arguments(__doc__)
    parser.add_argument("--pin", action="store_true", help="wrk on CPU 0, the servers on the rest")
    parser.add_argument("--batches", type=int, default=1,
                        help="run the whole comparison this many times (default 1)")
    parser.add_argument("--gap", type=float, default=0.0,
                        help="minutes between two batches, 0 to 1440 (default 0)")
    args = parser.parse_args()
    if args.batches < 1 or not 0 <= args.gap <= 1440:
        parser.error("--batches takes 1 or more, --gap 0 to 1440 minutes (a day)")
    benchlib.need("wrk")
    if not args.no_build:
        benchlib.build("--bin", "system-simulator", "--example", "bare_axum")
    benchlib.machine_limits()
    ratios = []
    for batch in range(1, args.batches + 1):
        if batch > 1:
            print(f"\nbatch {batch} of {args.batches} in {args.gap:g} min", flush=True)
            time.sleep(args.gap * 60)
        ratios.append(compare(args))
    if args.batches > 1:
        met = sum(r >= 0.9 for r in ratios)
        print(f"\nbatches: {', '.join(f'{r:.3f}' for r in ratios)}; median {statistics.median(ratios):.3f}; "
              f"target >= 0.9 met in {met} of {len(ratios)}")


def compare(args):
    """One batch: the two servers alternately, `args.runs` times each; the ratio."""
    print(f"POST /requests, requests per second (wrk -t 1 -c {args.connections}, {args.seconds} s a run)")
    cpu = {"bare axum": [], "system-simulator": []}
    results = benchlib.alternate(args.runs, [
        ("bare axum", benchlib.wrk_against(
            benchlib.pin_server([benchlib.BARE_AXUM, "127.0.0.1:0"], args.pin), args,
            cpu_per_request=cpu["bare axum"])),
        ("system-simulator", benchlib.wrk_against(
            benchlib.pin_server([benchlib.SERVER, "serve", "--listen", "127.0.0.1:0",
                                 *benchlib.ZERO_COST_SERVER], args.pin), args,
            cpu_per_request=cpu["system-simulator"])),
    ])
    ratios = benchlib.report(results, "bare axum", " req/s")
    ratio = ratios["system-simulator"]
    print(f"  target system-simulator / bare axum >= 0.9: {'met' if ratio >= 0.9 else 'NOT MET'}")
    print("the server's CPU per request (what the ratio comes from, steadier than requests/s):")
    benchlib.report(cpu, "bare axum", " us")
    return ratio


if __name__ == "__main__":
    main()
