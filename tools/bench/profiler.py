#!/usr/bin/env python3
"""What profiling costs the serving path: frame pointers (which the workspace
builds with, so the kernel's stack walkers walk our frames: .cargo/config.toml),
and the server's own sampler at 99 Hz (GET /admin/profile) while it serves.

Three subjects under the same wrk load (POST /requests, the request path at its
cheapest), alternating, 5 runs each by default:

  no frame pointers   the release build without -C force-frame-pointers
                      (target/no-frame-pointers; RUSTFLAGS replaces the config's)
  frame pointers      the release build as the workspace makes it, nobody profiling
  sampling at 99 Hz   the same build with GET /admin/profile asked for back to back
                      for the whole run (folded stacks, so no drawing)

Prints requests/s and the server's CPU microseconds per request (medians, min,
max), each subject's ratio to the build without frame pointers.

  python3 tools/bench/profiler.py [--runs 5] [--seconds 10] [--no-build]
"""

import os
import subprocess
import sys
import threading
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402

NO_FP_DIR = os.path.join(benchlib.ROOT, "target", "no-frame-pointers")
NO_FP = os.path.join(NO_FP_DIR, "release", "system-simulator")
# The config's other flag, kept: RUSTFLAGS replaces the config's rustflags whole.
NO_FP_FLAGS = "-C link-arg=-Wl,-z,separate-loadable-segments"


def build_without_frame_pointers():
    env = dict(os.environ, RUSTFLAGS=NO_FP_FLAGS)
    subprocess.run(["cargo", "build", "--release", "--locked", "--bin", "system-simulator",
                    "--target-dir", NO_FP_DIR], cwd=benchlib.ROOT, env=env, check=True)


def keep_profiling(url, stop):
    """Asks for 2 s profiles one after another until `stop` is set."""
    def run():
        while not stop.is_set():
            with urllib.request.urlopen(f"{url}/admin/profile?seconds=2&format=folded", timeout=30) as r:
                r.read()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def measure(binary, args, per_request, profiled=False):
    def run():
        server, url = benchlib.start([binary, "serve", "--listen", "127.0.0.1:0",
                                      *benchlib.ZERO_COST_SERVER])
        stop = threading.Event()
        profiler = keep_profiling(url, stop) if profiled else None
        try:
            return benchlib.wrk_with_cpu(server.pid, url, args, per_request)
        finally:
            stop.set()
            if profiler:
                profiler.join(timeout=30)
            benchlib.stop(server)
    return run


def main():
    args = benchlib.arguments(__doc__).parse_args()
    benchlib.need("wrk")
    if not args.no_build:
        benchlib.build("--bin", "system-simulator")
        build_without_frame_pointers()
    benchlib.machine_limits()
    cpu = {"no frame pointers": [], "frame pointers": [], "sampling at 99 Hz": []}
    subjects = [("no frame pointers", measure(NO_FP, args, cpu["no frame pointers"])),
                ("frame pointers", measure(benchlib.SERVER, args, cpu["frame pointers"])),
                ("sampling at 99 Hz", measure(benchlib.SERVER, args, cpu["sampling at 99 Hz"], True))]
    print(f"POST /requests, requests per second (wrk -t 1 -c {args.connections}, {args.seconds} s a run)")
    results = benchlib.alternate(args.runs, subjects)
    benchlib.report(results, "no frame pointers", " req/s")
    print("server CPU per request, microseconds:")
    benchlib.report(cpu, "no frame pointers", " us")


if __name__ == "__main__":
    main()
