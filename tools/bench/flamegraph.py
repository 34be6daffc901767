#!/usr/bin/env python3
"""A flamegraph of the serving path: `system-simulator serve` with the request path
at its cheapest (no simulated delay, permits never short) under wrk's POST
/requests, sampled by perf (cpu-clock, DWARF call graphs), folded and drawn by
inferno. Writes docs/performance/serving-path.svg and a PNG beside it, or where
--out says; --server draws another build (an older commit's, for a before and
after).

Needs perf (apt-get install linux-perf), wrk, inferno (cargo install inferno) and
rsvg-convert (apt-get install librsvg2-bin).

  python3 tools/bench/flamegraph.py [--seconds 5] [--no-build] [--server BINARY] [--out SVG]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402

OUT = os.path.join(benchlib.ROOT, "docs", "performance", "serving-path.svg")

# Where the CPU goes, by a frame each stack holds: what docs/performance.md quotes.
SHARES = [
    ("kernel: TCP send (writev)", "do_writev"),
    ("kernel: TCP receive (recv)", "__libc_recv"),
    ("epoll wait and wake-ups", "epoll_wait"),
    ("the axum handler (request path)", "axum::handler::Handler"),
    ("  the data processor", "simulator_service::request_path::DataProcessor"),
    ("  events: probes, /stats, metrics", "simulator_service::observe::events"),
    ("  the persist (inline, or its task)", "simulator_service::request_path::persistence"),
    ("  the body, read with its deadline", "simulator_service::serving::body"),
    ("timers (wheel insert, clear, Sleep)", "tokio::runtime::time::"),
    ("hyper's header read timeout", "TokioTimer as hyper::rt::timer::Timer"),
    ("task spawn and release", "tokio::runtime::task::list::OwnedTasks"),
    ("malloc and free", "malloc"),
]


def shares(folded):
    """Each SHARES frame's fraction of the samples whose stack holds it."""
    total = 0
    counts = {frame: 0 for _, frame in SHARES}
    for line in folded.splitlines():
        stack, _, n = line.rpartition(" ")
        total += int(n)
        for frame in counts:
            if frame in stack:
                counts[frame] += int(n)
    for label, frame in SHARES:
        print(f"  {label:<40} {100 * counts[frame] / max(total, 1):5.1f} %")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--no-build", action="store_true")
    p.add_argument("--server", default=benchlib.SERVER, help="the system-simulator binary to profile")
    p.add_argument("--out", default=OUT, help="the SVG to write (a PNG beside it)")
    args = p.parse_args()
    benchlib.need("wrk", "perf", "inferno-collapse-perf", "inferno-flamegraph", "rsvg-convert")
    if not args.no_build:
        benchlib.build("--bin", "system-simulator", "--example", "bare_axum")
    benchlib.machine_limits()
    server, url = benchlib.start([args.server, "serve", "--listen", "127.0.0.1:0",
                                  *benchlib.ZERO_COST_SERVER])
    try:
        load = threading.Thread(target=benchlib.wrk,
                                args=(url, "/requests", True, args.seconds + 3, 64))
        load.start()
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "perf.data")
            subprocess.run(["sleep", "1"], check=True)
            subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "299",
                            "--call-graph", "dwarf,32768", "-p", str(server.pid), "-o", data,
                            "--", "sleep", str(args.seconds)], check=True)
            load.join()
            script = subprocess.run(["perf", "script", "-i", data], capture_output=True,
                                    text=True, check=True).stdout
        folded = subprocess.run(["inferno-collapse-perf"], input=script, capture_output=True,
                                text=True, check=True).stdout
        print("share of the server's CPU samples, by a frame on the stack:")
        shares(folded)
        svg = subprocess.run(["inferno-flamegraph", "--title",
                              "system-simulator serve, POST /requests at zero simulated cost (wrk -c 64)",
                              "--width", "1600"],
                             input=folded, capture_output=True, text=True, check=True).stdout
    finally:
        benchlib.stop(server)
    out = os.path.abspath(args.out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        f.write(svg)
    png = os.path.splitext(out)[0] + ".png"
    subprocess.run(["rsvg-convert", "-w", "1600", "-b", "white", "-o", png, out], check=True)
    print(f"wrote {out} and {png}")


if __name__ == "__main__":
    main()
