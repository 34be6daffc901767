#!/usr/bin/env python3
"""Many clients: what 50,000 closed-loop clients cost the driver, and what an idle
keep-alive connection costs the server, against the bare axum baseline.

Two measurements, each run --runs times (the server ones alternating with the
baseline), printed per run and as medians (min, max):

  idle   N clients each send one request and then think for ten minutes, so N
         keep-alive connections sit idle at the server. Once the server holds
         them all (its open descriptors), its resident memory (VmRSS) minus what
         it held before, per connection; the same for examples/bare_axum.rs
         (axum::serve); the ratio server / bare axum. The driver's own RSS with N
         idle clients is sampled at the same moment.
  active N clients, think time --think (default 10 s, so N/10 requests a second),
         starts spread over one think time: the driver's peak RSS and CPU (GNU
         time) and how late clients woke against their schedule (the report's
         schedule_lag p99), the figure that says whether the driver keeps up.

50,000 connections to one server address need more source ports than one
loopback address has (ip_local_port_range, 28,232 by default): the driver
connects from 127.0.0.1-127.0.0.4 in turn (--bind). Both processes need 50,000+
descriptors: run as root, which may raise the hard limit (the script tries), or
raise `ulimit -Hn` first. Where neither can (a container without
CAP_SYS_RESOURCE: this machine's hard limit is 20,000), the script says so and
measures as many clients as the limit allows, less 1,000 descriptors of slack.
Memory in the kernel (socket buffers) is not in RSS.

  sudo python3 tools/bench/scale.py [--clients 50000] [--runs 5] [--seconds 30] [--no-build]
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402

SOURCES = "127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4"
# Long enough that no idle client sends again, and the server must not close the
# connections it is measuring (its header read timeout also ends idle ones).
IDLE_THINK = "600s"
IDLE_SERVER = ["--max-connections", "200000", "--header-read-timeout", "900s"]


def vm_rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def wait_for(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    sys.exit(f"timed out waiting for {what}")


def idle(command, clients):
    """(server MB per 1,000 idle connections, driver RSS MB) for one server."""
    server, url = benchlib.start(command)
    try:
        # Warm up: the allocator's arenas, the runtime's threads, the first
        # requests' one-time allocations are not per-connection costs.
        subprocess.run([benchlib.CLIENTS, "--target", url, "--n", "64", "--think-time", "0s",
                        "--duration", "2s"], stdout=subprocess.DEVNULL, check=True)
        time.sleep(0.5)
        rss0, fds0 = vm_rss_mb(server.pid), open_fds(server.pid)
        driver = subprocess.Popen([benchlib.CLIENTS, "--target", url, "--n", str(clients),
                                   "--think-time", IDLE_THINK, "--ramp-up", "5s", "--duration", "20s",
                                   "--bind", SOURCES], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, preexec_fn=benchlib.raise_fd_limit)
        try:
            wait_for(lambda: open_fds(server.pid) - fds0 >= clients, 60,
                     f"{clients} connections at {command[0]}")
            time.sleep(1)  # the last clients' first replies
            connections = open_fds(server.pid) - fds0
            per_1000 = (vm_rss_mb(server.pid) - rss0) / connections * 1000
            driver_rss = vm_rss_mb(driver.pid)
        finally:
            driver.terminate()
            driver.wait(timeout=60)
    finally:
        benchlib.stop(server)
    return per_1000, driver_rss


def active(url, clients, think, seconds):
    with tempfile.NamedTemporaryFile("r", suffix=".json") as report:
        _, cpu, rss = benchlib.timed([benchlib.CLIENTS, "--target", url, "--n", str(clients),
                                      "--think-time", think, "--ramp-up", think,
                                      "--duration", f"{seconds}s", "--bind", SOURCES,
                                      "--json", report.name])
        r = json.load(report)
    done = max(r["requests_completed"], 1)
    return {
        "completed per s": done / seconds,
        "errors": r["errors"],
        "wake-up lag p99 ms": r["schedule_lag"]["p99_ns"] / 1e6,
        "driver peak RSS MB": rss,
        "driver cpu s per 100k": cpu / done * 100_000,
    }


def main():
    p = benchlib.arguments(__doc__, runs=5, seconds=30, connections=None)
    p.add_argument("--clients", type=int, default=50_000)
    p.add_argument("--think", default="10s", help="the active run's think time")
    args = p.parse_args()
    benchlib.need("/usr/bin/time")
    limit = benchlib.raise_fd_limit(args.clients + 1000)
    if limit < args.clients + 1000:
        print(f"the descriptor limit is {limit:,} a process and cannot be raised here "
              f"(ulimit -Hn; raising it needs CAP_SYS_RESOURCE): measuring "
              f"{limit - 1000:,} clients instead of {args.clients:,}")
        args.clients = limit - 1000
    if not args.no_build:
        benchlib.build("--workspace", "--examples")
    benchlib.machine_limits()

    print(f"idle: {args.clients:,} keep-alive connections, each after one request")
    server = [benchlib.SERVER, "serve", "--listen", "127.0.0.1:0", *benchlib.ZERO_COST_SERVER, *IDLE_SERVER]
    subjects = {"system-simulator": server, "bare axum": [benchlib.BARE_AXUM]}
    per_conn = {name: [] for name in subjects}
    driver_idle = []
    for i in range(args.runs):
        for name, command in (list(subjects.items()) if i % 2 == 0 else list(subjects.items())[::-1]):
            kb, driver_rss = idle(command, args.clients)
            per_conn[name].append(kb)
            driver_idle.append(driver_rss)
            print(f"  run {i + 1} {name:<18} server {kb * 1000 / 1024:8.1f} KiB per idle connection"
                  f"   driver RSS {driver_rss:8.1f} MB", flush=True)
    for name, values in per_conn.items():
        print(benchlib.summary(f"{name} KiB/connection", [v * 1000 / 1024 for v in values]))
    print(benchlib.summary("driver RSS MB, idle", driver_idle))
    ratio = statistics.median(per_conn["system-simulator"]) / statistics.median(per_conn["bare axum"])
    print(f"  ratio system-simulator / bare axum, memory per idle connection: {ratio:.3f}")

    print(f"\nactive: {args.clients:,} closed-loop clients, think {args.think}, {args.seconds} s a run")
    server, url = benchlib.start(server)
    results = []
    try:
        for i in range(args.runs):
            r = active(url, args.clients, args.think, args.seconds)
            results.append(r)
            print(f"  run {i + 1} " + "  ".join(f"{k} {v:,.1f}" for k, v in r.items()), flush=True)
    finally:
        benchlib.stop(server)
    for key in results[0]:
        print(benchlib.summary(key, [r[key] for r in results]))


if __name__ == "__main__":
    main()
