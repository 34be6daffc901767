#!/usr/bin/env python3
"""What a recording costs and weighs (`system-simulator record`).

1. Its size: the demo's scenario (semaphore-starvation) under the demo's load
   (135 clients thinking 1 s) for --size-seconds, recorded whole, before its fix
   and after it: the file's bytes, bytes a request and bytes an event; and the
   size of its Perfetto export.
2. Its cost on the serving path at that load: the server's CPU per request
   with the recorder attached and without, alternating runs of --seconds.
3. Its cost flat out: wrk on POST /requests at the request path's cheapest, the
   recorder attached and not, alternating: requests/s and the server's CPU per
   request (the recorder takes every event, five or six a request).

Prints each run, then medians with min and max and the ratio to no recording.

  python3 tools/bench/recording.py                 # builds; 5 runs of 10 s; 60 s of size
  python3 tools/bench/recording.py --runs 3 --seconds 8 --size-seconds 20 --no-build
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402

DEMO_LOAD = ["--n", "135", "--think-time", "1s"]


def stats(url):
    with urllib.request.urlopen(url + "/stats", timeout=10) as r:
        return json.load(r)


def fix_of(url):
    """The scenario's first fix, as its PUT /admin/config body."""
    return json.dumps(stats(url)["fixes"][0]["config"]).encode()


def apply(url, body):
    request = urllib.request.Request(url + "/admin/config", data=body, method="PUT",
                                     headers={"content-type": "application/json"})
    urllib.request.urlopen(request, timeout=10).read()


def start_recorder(url, out, seconds=3600):
    """The recorder, once subscribed (its BEGIN line on stdout)."""
    recorder = subprocess.Popen([benchlib.SERVER, "record", "--target", url, "--seconds", str(seconds),
                                 "--out", out], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True)
    first = recorder.stdout.readline()
    if not first.startswith("Recording"):
        recorder.kill()
        sys.exit(f"the recorder did not begin: {first!r}")
    return recorder


def stop_recorder(recorder):
    """Ctrl-C; returns the counts its summary line gives: (events, requests)."""
    recorder.send_signal(2)
    out = recorder.communicate(timeout=60)[0]
    found = re.search(r"Recorded (\d+) events \((\d+) requests done\)", out)
    if not found:
        sys.exit(f"no summary from the recorder:\n{out}")
    return int(found.group(1)), int(found.group(2))


def clients(url, seconds):
    subprocess.run([benchlib.SERVER, "clients", "--target", url, *DEMO_LOAD, "--duration", f"{seconds}s"],
                   check=True, stdout=subprocess.DEVNULL)


def size(args):
    print(f"\n1. Size: the demo's load ({' '.join(DEMO_LOAD)}) for {args.size_seconds} s, recorded whole")
    server, url = benchlib.start([benchlib.SERVER, "serve", "--listen", "127.0.0.1:0",
                                  "--scenario", "semaphore-starvation"])
    try:
        fix = fix_of(url)
        for phase in ("before the fix", "after the fix"):
            if phase == "after the fix":
                apply(url, fix)
            with tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "run.isim")
                recorder = start_recorder(url, out)
                clients(url, args.size_seconds)
                events, requests = stop_recorder(recorder)
                size = os.path.getsize(out)
                timeline = os.path.join(d, "run.json")
                subprocess.run([benchlib.SERVER, "export", out, "--out", timeline], check=True,
                               stderr=subprocess.DEVNULL)
                exported = os.path.getsize(timeline)
            print(f"  {phase:<15} {size:>12,} bytes  {requests:>8,} requests  {events:>9,} events  "
                  f"{size / max(requests, 1):7.1f} bytes a request  {size / max(events, 1):5.1f} an event")
            print(f"  {'':<15} its Perfetto export (export --format perfetto) {exported:>12,} bytes, "
                  f"{exported / max(requests, 1):7.1f} a request, {exported / max(size, 1):5.1f} x the recording")
    finally:
        benchlib.stop(server)


def cpu_per_request_at_demo_load(args, recording):
    def run():
        server, url = benchlib.start([benchlib.SERVER, "serve", "--listen", "127.0.0.1:0",
                                      "--scenario", "semaphore-starvation"])
        try:
            apply(url, fix_of(url))
            with tempfile.TemporaryDirectory() as d:
                recorder = start_recorder(url, os.path.join(d, "run.isim")) if recording else None
                before, done = benchlib.cpu_seconds(server.pid), stats(url)["requests_done"]
                clients(url, args.seconds)
                used = benchlib.cpu_seconds(server.pid) - before
                requests = stats(url)["requests_done"] - done
                if recorder:
                    stop_recorder(recorder)
            return used / max(requests, 1) * 1e6
        finally:
            benchlib.stop(server)
    return run


def flat_out(args, recording, cpu):
    def run():
        server, url = benchlib.start([benchlib.SERVER, "serve", "--listen", "127.0.0.1:0",
                                      *benchlib.ZERO_COST_SERVER])
        try:
            with tempfile.TemporaryDirectory() as d:
                recorder = start_recorder(url, os.path.join(d, "run.isim")) if recording else None
                rps = benchlib.wrk_with_cpu(server.pid, url, args, cpu)
                if recorder:
                    stop_recorder(recorder)
            return rps
        finally:
            benchlib.stop(server)
    return run


def main():
    parser = benchlib.arguments(__doc__)
    parser.add_argument("--size-seconds", type=int, default=60)
    args = parser.parse_args()
    benchlib.need("wrk")
    if not args.no_build:
        benchlib.build("--bin", "system-simulator")
    size(args)

    print(f"\n2. The server's CPU per request at the demo's load, after its fix, {args.seconds} s a run")
    results = benchlib.alternate(args.runs, [
        ("no recording", cpu_per_request_at_demo_load(args, False)),
        ("recording", cpu_per_request_at_demo_load(args, True)),
    ])
    benchlib.report(results, "no recording", " us")

    print(f"\n3. Flat out: wrk -c {args.connections} on POST /requests, {args.seconds} s a run")
    cpu = {"no recording": [], "recording": []}
    results = benchlib.alternate(args.runs, [
        ("no recording", flat_out(args, False, cpu["no recording"])),
        ("recording", flat_out(args, True, cpu["recording"])),
    ])
    benchlib.report(results, "no recording", " req/s")
    benchlib.report(cpu, "no recording", " us CPU a request")


if __name__ == "__main__":
    main()
