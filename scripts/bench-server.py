#!/usr/bin/env python3
"""Compare the HTTP serving path of two system-simulator builds with wrk.

Starts each build in turn on a free loopback port with a server that costs next
to nothing per request (no network delay, 1 ms persist, permits never short), and
drives it with wrk: GET /healthz (the HTTP layer alone) and POST /requests (the
whole request path). Runs alternate between the builds so drift on a noisy
machine hits both; prints each run, the medians, and NEW / BASELINE.

  git worktree add ../old <commit> && (cd ../old && cargo build --release)
  python3 scripts/bench-server.py ../old/target/release/system-simulator \\
      target/release/system-simulator --runs 5 --seconds 10

Needs wrk (apt-get install wrk). Traffic goes only to 127.0.0.1.
"""

import argparse
import re
import statistics
import subprocess
import sys
import tempfile

SERVER_FLAGS = ["--permits", "100000", "--network-delay", "0", "--persist-latency", "1ms"]
ROUTES = {
    "GET /healthz": ("/healthz", None),
    "POST /requests": ("/requests", 'wrk.method = "POST"\nwrk.body = "element"\n'),
}


def requests_per_second(binary, route, seconds, connections):
    path, lua = ROUTES[route]
    server = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", *SERVER_FLAGS],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = re.search(r"http://127\.0\.0\.1:\d+", server.stdout.readline()).group(0)
        command = ["wrk", "-t", "1", "-c", str(connections), "-d", f"{seconds}s", url + path]
        with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
            if lua:
                script.write(lua)
                script.flush()
                command[1:1] = ["-s", script.name]
            out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        if errors:
            sys.exit(f"{binary}: {errors.group(1)} failed requests on {route}:\n{out}")
        return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    finally:
        server.terminate()
        server.wait(timeout=30)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("baseline")
    p.add_argument("new")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--connections", type=int, default=50)
    args = p.parse_args()
    for route in ROUTES:
        results = {"baseline": [], "new": []}
        for run in range(args.runs):
            for name in ("baseline", "new"):
                rps = requests_per_second(getattr(args, name), route, args.seconds, args.connections)
                results[name].append(rps)
                print(f"{route:15} run {run + 1} {name:8} {rps:10,.0f} req/s", flush=True)
        base, new = (statistics.median(results[n]) for n in ("baseline", "new"))
        print(f"{route:15} median baseline {base:,.0f}, new {new:,.0f} req/s: new / baseline = {new / base:.3f}")


if __name__ == "__main__":
    main()
