#!/usr/bin/env python3
"""A discrete-event model of the original simulator's closed loop: which client behaviour gives the seed's blocked shares.

USAGE: python3 tools/seed-model.py [--seconds 180] [--clients 1,15,125,135,1000]

The seed (003) measured 15 clients 31 % blocked, 125 clients 39 %, 135 and 1000
clients 99.9 %; this answers, without a server, which way of waiting the think time
gives those shares. It plays the design's model exactly (../shared/design.md, "The model of
the original simulator"): each client sends, traverses 500 us + Normal(1 ms,
100 us), meets a FIFO semaphore of 8 permits (a permit held for the whole persist
of 50 ms + Normal(10 ms, 5 ms)), traverses back, and waits its think time of 1 s;
all clients start at the same instant. Every simulated delay may end on a 1 ms
grid (`timer_tick`, the original's tokio timer), and a request costs 80 us of
HTTP each way. Three ways of waiting the think time are compared:

- after:    1 s after the reply, on the client's own 1 ms timer (sim-clients);
- cadence:  every 1 s from the common start, whatever the reply time (a timetable);
- grid G:   1 s after the reply, rounded up to a shared grid of G ms.

It prints the blocked share over the whole run, over its first and its last
minute, and requests a minute. Nothing here is measured: `sim-clients sweep`
measures the real server (docs/workshop/01-throughput-plateau.md).
"""

import argparse
import heapq
import math
import random

PERMITS = 8


def run(clients, think, seconds, tick=1.0, grid=0.0, seed=1):
    rnd = random.Random(seed)

    def on_tick(t, step=tick, offset=0.0):
        if step == 0:
            return t
        return offset + math.ceil((t - offset) / step - 1e-9) * step

    events, order = [], 0

    def at(t, kind, client):
        nonlocal order
        order += 1
        heapq.heappush(events, (t, order, kind, client))

    free, waiting = PERMITS, []
    blocked = [0] * (seconds + 2)
    admitted = [0] * (seconds + 2)
    first_send = {}
    for client in range(clients):
        at(0.0, "send", client)
    while events:
        t, _, kind, client = heapq.heappop(events)
        if kind == "send":
            if t > seconds * 1000:
                continue
            first_send.setdefault(client, t)
            at(on_tick(t + 0.08 + 0.5 + rnd.gauss(1.0, 0.1)), "gate", client)
        elif kind == "gate":
            second = int(t / 1000)
            admitted[second] += 1
            if free > 0:
                free -= 1
                at(t, "permit", client)
            else:
                blocked[second] += 1
                waiting.append(client)
        elif kind == "permit":
            at(on_tick(t + 50 + rnd.gauss(10, 5)), "release", -1)
            at(on_tick(t + 0.5 + rnd.gauss(1.0, 0.1)) + 0.08, "reply", client)
        elif kind == "release":
            if waiting:
                at(t, "permit", waiting.pop(0))
            else:
                free += 1
        elif kind == "reply":
            if think == "after":
                # The client's own 1 ms timer, not in step with the server's grid.
                nxt = on_tick(t + 1000 + 0.05 * rnd.random(), tick, 0.37)
            elif think == "cadence":
                start = first_send[client]
                nxt = start + math.ceil((t - start) / 1000) * 1000
            else:
                nxt = on_tick(t + 1000, grid)
            at(nxt + 0.05 * rnd.random(), "send", client)

    def share(a, b):
        return sum(blocked[a:b]) / max(1, sum(admitted[a:b]))

    minute = min(60, seconds)
    return (
        share(0, seconds),
        share(0, minute),
        share(seconds - minute, seconds),
        sum(admitted[:seconds]) / seconds * 60,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=int, default=180)
    parser.add_argument("--clients", default="1,15,125,135,1000")
    parser.add_argument("--grids", default="16,64", help="grid G values in ms")
    args = parser.parse_args()
    counts = [int(c) for c in args.clients.split(",")]
    print("think    tick   clients  blocked: run  1st min  last min   req/min")
    ways = [("after", 0.0, 0.0), ("after", 1.0, 0.0), ("cadence", 1.0, 0.0)]
    ways += [(f"grid {g}", 1.0, float(g)) for g in args.grids.split(",")]
    for think, tick, grid in ways:
        for n in counts:
            whole, first, last, rate = run(n, think.split()[0], args.seconds, tick, grid)
            print(
                f"{think:8s} {tick:4.0f}ms {n:8d}  {whole:12.1%} {first:8.1%} {last:9.1%} {rate:9.0f}"
            )


if __name__ == "__main__":
    main()
