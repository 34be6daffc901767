#!/usr/bin/env python3
"""Soak the server: a long run at saturation with faults on, then check the books.

Starts `system-simulator serve` with injected faults (failing and stalling
persists, a persist timeout), drives it past saturation with `system-simulator
clients`, samples the server's RSS every few seconds, drains, shuts it down and
checks:

  - RSS growth from the end of the warm-up to the end of the load is under
    --max-rss-growth (10 % by default); the warm-up (a tenth of the run, at least
    10 s) is when the allocator and tokio grow to their working size;
  - after the drain, permits_available == permits_total, requests started ==
    done and persists started == done, in /stats and in the final report;
  - the server's log (at its default level) has no panic.

Prints a summary and, with --json FILE, every figure. Exits 1 when a check fails.

  python3 tools/soak.py                      # 30 minutes, release build (not in CI)
  python3 tools/soak.py --duration 2m        # what tests/suite/server/soak.rs runs in CI

Run from the repository root after `cargo build --release` (or pass --bin).
Traffic goes only to 127.0.0.1.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def duration(text):
    """`90`, `90s`, `30m` or `1h` in seconds."""
    m = re.fullmatch(r"(\d+)(s|m|h)?", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"`{text}` is not a duration: write e.g. 120s, 30m")
    return int(m.group(1)) * {"s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


def final_count(printed, label):
    for line in printed.splitlines():
        if line.strip().startswith(label):
            return int(line.split()[-1])
    raise RuntimeError(f"no `{label}` line in the final report:\n{printed}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", type=duration, default=duration("30m"), help="load time (default 30m)")
    p.add_argument("--clients", type=int, default=400, help="closed-loop clients (default 400: 3x saturation)")
    p.add_argument("--bin", default=os.path.join(ROOT, "target/release/system-simulator"))
    p.add_argument("--persist-error-rate", default="0.05")
    p.add_argument("--persist-stall-rate", default="0.01")
    p.add_argument("--persist-timeout", default="1s")
    p.add_argument("--sample-every", type=float, default=5.0, help="RSS sample interval in seconds")
    p.add_argument("--max-rss-growth", type=float, default=0.10)
    p.add_argument("--json", help="write every figure here")
    args = p.parse_args()

    if not os.access(args.bin, os.X_OK):
        sys.exit(f"{args.bin} is not built: run `cargo build --release` or pass --bin")
    warmup = max(10.0, args.duration / 10)
    if warmup >= args.duration:
        sys.exit("--duration must be longer than the warm-up (10 s or a tenth of the run)")

    work = tempfile.mkdtemp(prefix="isim-soak-")
    log_path = os.path.join(work, "server.log")
    env = {k: v for k, v in os.environ.items() if k != "RUST_LOG"}
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [args.bin, "serve", "--listen", "127.0.0.1:0",
             "--persist-error-rate", args.persist_error_rate,
             "--persist-stall-rate", args.persist_stall_rate,
             "--persist-timeout", args.persist_timeout],
            stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, env=env, text=True)
    banner = server.stdout.readline()
    m = re.search(r"(http://127\.0\.0\.1:\d+)", banner)
    if not m:
        server.kill()
        sys.exit(f"no address in the server's first line: {banner!r}")
    url = m.group(1)
    # The rest of stdout is only read at exit; keep the pipe from filling meanwhile.
    printed = []
    reader = threading.Thread(target=lambda: printed.extend(server.stdout), daemon=True)
    reader.start()

    report_path = os.path.join(work, "clients.json")
    clients = subprocess.Popen(
        [args.bin, "clients", "--target", url, "--n", str(args.clients),
         "--duration", f"{args.duration}s", "--json", report_path],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)

    started = time.monotonic()
    samples = []  # (seconds since start, RSS KiB)
    while clients.poll() is None:
        samples.append((round(time.monotonic() - started, 1), rss_kib(server.pid)))
        time.sleep(args.sample_every)
    samples.append((round(time.monotonic() - started, 1), rss_kib(server.pid)))
    if clients.returncode != 0:
        server.kill()
        sys.exit(f"the clients failed:\n{clients.stderr.read()}")
    with open(report_path) as f:
        load = json.load(f)

    # Drain: stalled persists end at the persist timeout.
    deadline = time.monotonic() + 60
    while True:
        stats = get_json(f"{url}/stats")
        if stats["requests_in_flight"] == 0 and stats["persists_in_flight"] == 0:
            break
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)

    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()
    reader.join(timeout=10)
    final = "".join(printed)
    with open(log_path) as f:
        log_text = f.read()

    after_warmup = [rss for t, rss in samples if t >= warmup]
    rss_start = after_warmup[0] if after_warmup else samples[0][1]
    rss_end = samples[-1][1]
    growth = (rss_end - rss_start) / rss_start
    checks = {
        f"RSS growth {growth:+.1%} is under {args.max_rss_growth:.0%}": growth < args.max_rss_growth,
        "permits_available == permits_total": stats["permits_available"] == stats["permits_total"],
        "requests started == done (/stats)": stats["requests_started"] == stats["requests_done"],
        "persists started == done (/stats)": stats["persists_started"] == stats["persists_done"],
        "requests started == done (final report)":
            final_count(final, "requests started") == final_count(final, "requests done"),
        "persists started == done + abandoned (final report)":
            final_count(final, "persistent writes started")
            == final_count(final, "persistent writes done")
            + final_count(final, "persistent writes abandoned at shutdown"),
        "the server exited cleanly": server.returncode == 0,
        "no panic in the log": "panicked" not in log_text,
        "the clients saw no errors": load["errors"] == 0,
    }

    minutes = args.duration / 60
    print(f"soak: {args.clients} clients for {args.duration} s against {url}, faults: "
          f"error rate {args.persist_error_rate}, stall rate {args.persist_stall_rate}, "
          f"timeout {args.persist_timeout}")
    print(f"  RSS        start (after {warmup:.0f} s warm-up) {rss_start / 1024:.1f} MiB, "
          f"end {rss_end / 1024:.1f} MiB, peak {max(r for _, r in samples) / 1024:.1f} MiB, "
          f"growth {growth:+.1%}")
    print(f"  requests   {stats['requests_started']} started, {stats['requests_done']} done "
          f"({stats['requests_done'] / minutes:,.0f}/min), {stats['requests_blocked']} blocked")
    print(f"  persists   {stats['persists_started']} started, {stats['persists_done']} done, "
          f"{stats['persists_failed']} failed of which {stats['persists_timed_out']} timed out")
    print(f"  permits    {stats['permits_available']} free of {stats['permits_total']}")
    print(f"  clients    {load['requests_completed']} completed, {load['errors']} errors")
    failed = [name for name, ok in checks.items() if not ok]
    for name, ok in checks.items():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"duration_s": args.duration, "clients": args.clients, "warmup_s": warmup,
                       "rss_kib": samples, "rss_start_kib": rss_start, "rss_end_kib": rss_end,
                       "rss_growth": growth, "stats": stats, "clients_report": load,
                       "checks": checks, "log": log_path}, f, indent=2)
    print(f"  log        {log_path}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
