#!/usr/bin/env python3
"""What the heap profiler costs the serving path: the server on the system's
allocator (glibc's malloc), on jemalloc with its sampling profiler off, and on
jemalloc with it on (the default Linux build: a sample about every 512 KiB
allocated, each with its stack), beside bare axum for the ratio the serving
path keeps to a bare server.

Builds, under the same wrk load (POST /requests, the request path at its
cheapest), alternating, 5 runs each by default:

  system malloc   cargo build --release --no-default-features --features probes
                  (target/nojemalloc): no heap profile
  jemalloc        the default build, its profiler off (_RJEM_MALLOC_CONF=prof_active:false)
  jemalloc, prof  the default build as it runs: the profiler on from the start
  bare axum       examples/bare_axum.rs, on the system's allocator

Prints requests/s and the server's CPU microseconds per request (medians, min,
max) and each one's ratio to the system allocator's build.

  python3 tools/bench/heap_profile.py [--runs 5] [--seconds 10] [--no-build]
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402

NOJEMALLOC_DIR = os.path.join(benchlib.ROOT, "target", "nojemalloc")
NOJEMALLOC = os.path.join(NOJEMALLOC_DIR, "release", "system-simulator")


def measure(command, env, args, per_request):
    """One run: the server started with `env` added, wrk against it."""
    def run():
        server, url = benchlib.start(command, env)
        try:
            return benchlib.wrk_with_cpu(server.pid, url, args, per_request)
        finally:
            benchlib.stop(server)
    return run


def main():
    args = benchlib.arguments(__doc__).parse_args()
    benchlib.need("wrk")
    if not args.no_build:
        benchlib.build("--bin", "system-simulator", "--example", "bare_axum")
        benchlib.build("--bin", "system-simulator", "--no-default-features", "--features", "probes",
                       target_dir=NOJEMALLOC_DIR)
    benchlib.machine_limits()
    serve = ["serve", "--listen", "127.0.0.1:0", *benchlib.ZERO_COST_SERVER]
    cpu = {"system malloc": [], "jemalloc": [], "jemalloc, prof": [], "bare axum": []}
    subjects = [
        ("system malloc", measure([NOJEMALLOC, *serve], {}, args, cpu["system malloc"])),
        ("jemalloc", measure([benchlib.SERVER, *serve], {"_RJEM_MALLOC_CONF": "prof_active:false"},
                             args, cpu["jemalloc"])),
        ("jemalloc, prof", measure([benchlib.SERVER, *serve], {}, args, cpu["jemalloc, prof"])),
        ("bare axum", measure([benchlib.BARE_AXUM, "127.0.0.1:0"], {}, args, cpu["bare axum"])),
    ]
    print(f"POST /requests, requests per second (wrk -t 1 -c {args.connections}, {args.seconds} s a run)")
    results = benchlib.alternate(args.runs, subjects)
    benchlib.report(results, "system malloc", " req/s")
    print("server CPU per request, microseconds:")
    benchlib.report(cpu, "system malloc", " us")


if __name__ == "__main__":
    main()
