#!/usr/bin/env python3
"""Every bundled scenario before and after each of its fixes, on a real server.

For each scenario (or those named), and each of its fixes: starts
`system-simulator serve --scenario NAME` on a free loopback port, runs the load
the scenario documents (`GET /scenarios`: its `load`, with --duration replaced),
applies the fix live with `PUT /admin/config` (its `config` for the load's
client count, `per_client` keys scaled), resets the counters, runs the same
load again, and prints one Markdown row: throughput, persists a second, blocked
and shed share, client latency p50 and p99, before and after. docs/scenarios.md
holds its output.

  cargo build --release --workspace
  python3 scripts/scenario-figures.py                       # 20 s a run, every scenario
  python3 scripts/scenario-figures.py --duration 60s sequential-persist

Traffic goes only to 127.0.0.1.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "system-simulator")


def call(method, url, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("content-type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def start(scenario):
    server = subprocess.Popen(
        [BIN, "serve", "--scenario", scenario, "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    data = re.search(r"http://127\.0\.0\.1:\d+", server.stdout.readline()).group(0)
    operator = re.search(r"http://127\.0\.0\.1:\d+", server.stdout.readline())
    return server, data, operator.group(0) if operator else data


def load(scenario_load, duration):
    words, skip = [], False
    for i, word in enumerate(scenario_load):
        if skip:
            skip = False
            continue
        if word == "--duration":
            skip = True
            continue
        words.append(word)
    return words + ["--duration", duration]


def clients_of(words):
    return int(words[words.index("--n") + 1]) if "--n" in words else 1


def run(target, words):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([BIN, "clients", "--target", target, *words, "--json", out.name],
                       check=True, stdout=subprocess.DEVNULL)
        return json.load(open(out.name))


def settle(operator):
    import time
    for _ in range(600):
        s = call("GET", operator + "/stats")
        if s["requests_in_flight"] == 0 and s["persists_in_flight"] == 0 and s["persists_queued"] == 0:
            return
        time.sleep(0.1)
    sys.exit("the server did not settle within 60 s")


def figures(report):
    server = report["server"] or {}
    seconds = report["elapsed_ns"] / 1e9
    admitted = server.get("requests_blocked", 0) + server.get("requests_nonblocked", 0)
    share = lambda n: 100.0 * n / admitted if admitted else 0.0
    return {
        "done/s": report["throughput_per_s"],
        "persists/s": server.get("persists_done", 0) / seconds,
        "blocked %": share(server.get("requests_blocked", 0)),
        "shed %": share(server.get("requests_shed", 0)),
        "p50 ms": report["latency"]["p50_ns"] / 1e6,
        "p99 ms": report["latency"]["p99_ns"] / 1e6,
    }


def cell(before, after, key):
    return f"{before[key]:,.1f} → {after[key]:,.1f}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenarios", nargs="*", help="scenario names (default: every bundled one)")
    p.add_argument("--duration", default="20s", help="each run's --duration (default 20s)")
    args = p.parse_args()
    server, data, operator = start("semaphore-starvation")
    listing = call("GET", operator + "/scenarios")
    server.terminate()
    server.wait()
    keys = ["done/s", "persists/s", "blocked %", "shed %", "p50 ms", "p99 ms"]
    print("| scenario | fix | load | " + " | ".join(keys) + " |")
    print("| --- | --- | --- | " + " | ".join("---:" for _ in keys) + " |")
    for scenario in listing:
        if args.scenarios and scenario["name"] not in args.scenarios:
            continue
        words = load(scenario["load"], args.duration)
        for fix in scenario["fixes"]:
            server, data, operator = start(scenario["name"])
            try:
                before = figures(run(data, words))
                body = dict(fix["config"])
                for key, per in fix.get("per_client", {}).items():
                    body[key] = per * clients_of(words)
                call("PUT", operator + "/admin/config", body)
                settle(operator)
                call("POST", operator + "/admin/reset")
                after = figures(run(data, words))
            finally:
                server.terminate()
                server.wait()
            print(f"| {scenario['name']} | {fix['name']} `{json.dumps(body)}` | `{' '.join(words)}` | "
                  + " | ".join(cell(before, after, k) for k in keys) + " |", flush=True)


if __name__ == "__main__":
    main()
