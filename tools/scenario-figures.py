#!/usr/bin/env python3
"""Every bundled scenario before and after each of its fixes, on a real server.

For each scenario (or those named), and each of its fixes: starts
`system-simulator serve --scenario NAME` on a free loopback port, runs the load
the scenario documents (`GET /scenarios`: its `load`, with --duration replaced),
applies the fix live with `PUT /admin/config` (its `config` for the load's
client count, `per_client` keys scaled), resets the counters, runs the same
load again, and prints one Markdown row: throughput, persists a second, blocked,
shed (503 at the gate or at a full queue) and dropped shares, the mean persist
time and the persists still in flight as the run ends, client latency p50 and
p99, and the server's timer canary p99
(how late the runtime wakes a 10 ms sleep, over the run's last 5 s), before and
after. Then the contrasts in CONTRASTS: two configurations of one scenario under
another load, for a lesson no fix row shows. docs/scenarios.md holds its output.

  cargo build --release --workspace
  python3 tools/scenario-figures.py                       # 20 s a run, every scenario
  python3 tools/scenario-figures.py --duration 60s sequential-persist

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

# (scenario, what it shows, load, configuration A, configuration B)
CONTRASTS = [
    ("blocking-runtime",
     "spawn_blocking without a limit is no fix under overload",
     ["--n", "200", "--rate", "100"],
     {"work_on": "blocking-pool", "work_limit": 1},
     {"work_on": "blocking-pool", "work_limit": 0}),
    ("size-variance",
     "byte-weighted admission alone makes small elements wait longer (a FIFO gate holds them behind a large one collecting permits)",
     ["--n", "15", "--think-time", "100ms", "--payload-size", "lognormal(256k, 1M)"],
     {},
     {"permits": 64, "permit_bytes": "256KiB"}),
    ("spawn-per-request",
     "below capacity the scheduling styles tie, as seed 002 measured",
     ["--n", "200", "--rate", "200"],
     {},
     {"persistence": "pool", "persist_workers": 16, "persist_queue": 256, "when_full": "shed"}),
]

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


def persist_sum_count(operator):
    """The persist-latency histogram's sum and count, from /metrics."""
    text = urllib.request.urlopen(operator + "/metrics", timeout=30).read().decode()
    # Absent until the first persist ends.
    found = lambda name: re.search(rf"^{name} (\S+)$", text, re.M)
    pick = lambda name: float(found(name).group(1)) if found(name) else 0.0
    return (pick("isim_persist_latency_seconds_sum"), pick("isim_persist_latency_seconds_count"))


def run(target, operator, words):
    sum0, count0 = persist_sum_count(operator)
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([BIN, "clients", "--target", target, *words, "--json", out.name],
                       check=True, stdout=subprocess.DEVNULL)
        report = json.load(open(out.name))
    stats = call("GET", operator + "/stats")
    sum1, count1 = persist_sum_count(operator)
    report["runtime"] = stats["runtime"]
    report["persists_in_flight"] = stats["persists_in_flight"]
    report["persist_mean_s"] = (sum1 - sum0) / (count1 - count0) if count1 > count0 else 0.0
    return report


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
        "shed %": share(server.get("requests_shed", 0) + server.get("queue_refused", 0)),
        "dropped %": share(server.get("queue_dropped", 0)),
        "persist ms": report["persist_mean_s"] * 1e3,
        "in flight at end": report["persists_in_flight"],
        "p50 ms": report["latency"]["p50_ns"] / 1e6,
        "p99 ms": report["latency"]["p99_ns"] / 1e6,
        "canary p99 ms": report["runtime"]["late_p99_us"] / 1e3,
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
    keys = ["done/s", "persists/s", "blocked %", "shed %", "dropped %", "persist ms",
            "in flight at end", "p50 ms", "p99 ms", "canary p99 ms"]
    print("| scenario | fix | load | " + " | ".join(keys) + " |")
    print("| --- | --- | --- | " + " | ".join("---:" for _ in keys) + " |")
    for scenario in listing:
        if args.scenarios and scenario["name"] not in args.scenarios:
            continue
        words = load(scenario["load"], args.duration)
        for fix in scenario["fixes"]:
            server, data, operator = start(scenario["name"])
            try:
                before = figures(run(data, operator, words))
                body = dict(fix["config"])
                for key, per in fix.get("per_client", {}).items():
                    body[key] = per * clients_of(words)
                call("PUT", operator + "/admin/config", body)
                settle(operator)
                call("POST", operator + "/admin/reset")
                after = figures(run(data, operator, words))
            finally:
                server.terminate()
                server.wait()
            print(f"| {scenario['name']} | {fix['name']} `{json.dumps(body)}` | `{' '.join(words)}` | "
                  + " | ".join(cell(before, after, k) for k in keys) + " |", flush=True)
    print()
    print("| scenario | contrast | load | " + " | ".join(keys) + " |")
    print("| --- | --- | --- | " + " | ".join("---:" for _ in keys) + " |")
    for name, lesson, extra, first, second in CONTRASTS:
        if args.scenarios and name not in args.scenarios:
            continue
        words = extra + ["--duration", args.duration]
        measured = []
        for config in (first, second):
            server, data, operator = start(name)
            try:
                if config:
                    call("PUT", operator + "/admin/config", config)
                measured.append(figures(run(data, operator, words)))
            finally:
                server.terminate()
                server.wait()
        print(f"| {name} | {lesson}: `{json.dumps(first)}` → `{json.dumps(second)}` | `{' '.join(words)}` | "
              + " | ".join(cell(measured[0], measured[1], k) for k in keys) + " |", flush=True)


if __name__ == "__main__":
    main()
