#!/usr/bin/env python3
"""Compare the HTTP serving path of two system-simulator builds with wrk.

Starts each build in turn on a free loopback port with the request path at its
cheapest (no simulated delay, permits never short) and drives it with wrk:
GET /healthz (the HTTP layer alone) and POST /requests (the whole request path).
Runs alternate between the builds; prints each run, the medians with min and max,
and NEW / BASELINE, for requests/s and for the server's CPU per request (the
steadier of the two on a VM the server shares with wrk). --pin puts wrk on CPU 0
and the servers on the rest.

  git worktree add ../old <commit> && (cd ../old && cargo build --release)
  python3 tools/bench/server-builds.py ../old/target/release/system-simulator \\
      target/release/system-simulator --runs 5 --seconds 10
"""

import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
import benchlib  # noqa: E402


def measure(binary, path, post, args, cpu):
    return benchlib.wrk_against(
        benchlib.pin_server([binary, "serve", "--listen", "127.0.0.1:0", *benchlib.ZERO_COST_SERVER], args.pin),
        args, path, post, cpu_per_request=cpu)


def main():
    p = benchlib.arguments(__doc__, connections=50)
    p.add_argument("baseline")
    p.add_argument("new")
    p.add_argument("--pin", action="store_true", help="wrk on CPU 0, the servers on the rest")
    args = p.parse_args()
    benchlib.need("wrk")
    benchlib.machine_limits()
    for route, path, post in (("GET /healthz", "/healthz", False), ("POST /requests", "/requests", True)):
        print(f"\n{route}, requests per second (wrk -c {args.connections})")
        cpu = {"baseline": [], "new": []}
        results = benchlib.alternate(args.runs, [("baseline", measure(args.baseline, path, post, args, cpu["baseline"])),
                                                 ("new", measure(args.new, path, post, args, cpu["new"]))])
        benchlib.report(results, "baseline", " req/s")
        print("  the server's CPU per request:")
        benchlib.report(cpu, "baseline", " us")


if __name__ == "__main__":
    main()
