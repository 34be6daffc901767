#!/usr/bin/env python3
"""The request path of two builds, without HTTP: examples/request_path.rs of each.

Each run is a fresh process of one build's `request_path` example: 3 rounds of
--requests requests awaited one after another on one thread, at the serving-path
benchmark's zero simulated cost; a run's figure is its rounds' median, in
nanoseconds a request. Runs alternate between the builds; prints each run, the
medians with min and max, and NEW / BASELINE. On a VM one process can run 1.5x
slower than the next for its whole life, so judge by the median of many runs.

  git worktree add ../old <commit> && (cd ../old && cargo build --release --example request_path)
  python3 tools/bench/request-path.py ../old/target/release/examples/request_path \\
      target/release/examples/request_path --runs 15
"""

import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402


def measure(binary, requests):
    def run():
        out = subprocess.run([binary, str(requests), "--rounds", "3"], capture_output=True,
                             text=True, check=True).stdout
        return float(re.search(r"median (\d+) ns", out).group(1))
    return run


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=15, help="processes of each build")
    p.add_argument("--requests", type=int, default=100_000, help="requests a round")
    p.add_argument("baseline")
    p.add_argument("new")
    args = p.parse_args()
    print(f"the request path, ns a request (median of 3 rounds of {args.requests:,} a run)")
    results = benchlib.alternate(args.runs, [("baseline", measure(args.baseline, args.requests)),
                                             ("new", measure(args.new, args.requests))])
    benchlib.report(results, "baseline", " ns")


if __name__ == "__main__":
    main()
