#!/usr/bin/env python3
"""How often `compare` tells one server from itself: the seed's server under
its own load (135 clients thinking 1 s), recorded --windows times in a row,
--seconds each (`record`), and every pair of those recordings compared
(`compare A B --json -`) with each way of drawing the interval. A pair is told
apart when any of its five figures reads `better` or `worse`. The same server
twice should be told apart in about 1 pair of 20 at most (99 % on each of five
figures): `percentile` (the plain bootstrap) is over that for short
recordings, `expanded` (the default) is not. docs/load.md ("Before and after")
quotes this script's figures.

  python3 tools/bench/compare_calibration.py [--windows 18] [--seconds 5] [--no-build]
"""

import itertools
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402


def compare(a, b, interval):
    out = subprocess.run(
        [benchlib.SERVER, "compare", a, b, "--json", "-", "--interval", interval],
        capture_output=True, text=True,
    )
    if out.returncode not in (0, 99):
        sys.exit(f"compare {a} {b}: {out.stderr}")
    rows = json.loads(out.stdout[out.stdout.index("\n{") :])["rows"]
    return [r["figure"] for r in rows if r["verdict"] != "same"]


def main():
    p = benchlib.arguments(__doc__, runs=1, seconds=5, connections=None)
    p.add_argument("--windows", type=int, default=18)
    args = p.parse_args()
    if not args.no_build:
        benchlib.build("--bins")
    print(benchlib.machine_line())
    server, url = benchlib.start([benchlib.SERVER, "serve", "--listen", "127.0.0.1:0", "--admin-listen", "off"])
    lasts = args.windows * (args.seconds + 1) + 10
    load = subprocess.Popen(
        [benchlib.SERVER, "clients", "--target", url, "--n", "135", "--duration", f"{lasts}s"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    with tempfile.TemporaryDirectory() as dir:
        try:
            time.sleep(2)  # the clients' first herd through the permits
            files = []
            for k in range(args.windows):
                path = os.path.join(dir, f"{k:02}.isim")
                subprocess.run(
                    [benchlib.SERVER, "record", "--target", url, "--seconds", str(args.seconds), "--out", path],
                    check=True, capture_output=True,
                )
                files.append(path)
        finally:
            load.kill()
            benchlib.stop(server)
        pairs = list(itertools.combinations(range(len(files)), 2))
        neighbours = [(i, i + 1) for i in range(0, len(files) - 1, 2)]
        print(f"{len(files)} recordings of {args.seconds} s, one server, its load unchanged")
        for interval in ("percentile", "expanded"):
            told = {pair: compare(files[pair[0]], files[pair[1]], interval) for pair in pairs}
            apart = [pair for pair in pairs if told[pair]]
            near = [pair for pair in neighbours if told[pair]]
            by_figure = {}
            for pair in apart:
                for figure in told[pair]:
                    by_figure[figure] = by_figure.get(figure, 0) + 1
            print(
                f"  {interval:<10}  told apart: {len(apart)} of {len(pairs)} pairs "
                f"({100 * len(apart) / len(pairs):.0f} %); of the {len(neighbours)} disjoint neighbours, "
                f"{len(near)}; by figure {by_figure}"
            )


if __name__ == "__main__":
    main()
