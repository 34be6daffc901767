#!/usr/bin/env python3
"""How much room every exercise's win condition has, measured.

A bound of a `[[check]]` must sit between the worst "before" and the worst
"after" ever seen, with room on both sides (issue 41): a check that passes a
cure by 2 % fails it on the next, slower machine. This script gathers the
figures that `workshop figures` measures (a fresh server per fix, the win
condition before and after it), on the whole machine, on one core and at half a
core, and prints:

- per exercise, the least clear failure of its check before a fix: in each
  measured block the condition that fails by most decides (one failing
  condition fails the check), and the worst block is the one shown;
- per condition, the worst value after a cure (every condition must hold) and,
  for a fix the page marks as a trade-off, how clearly its check still fails;
- each as a margin, the ratio by which the value stays on its side of the
  bound, with where it was seen (the confinement) and after which fix.

A margin under 1.0 is a value on the wrong side of the bound: a red run.
docs/workshop/reference.md ("Appendix: every bound's room, measured") holds its output; each bound in
scenarios/*.toml names its margins beside it.

  cargo build --release
  python3 tools/margins.py --runs 2                   # whole machine, one core, half a core
  python3 tools/margins.py --from target/tmp/figures-*.txt   # what the tests measured
  python3 tools/margins.py --rebound scenarios --from F...   # old figures, today's bounds
  python3 tools/margins.py --from F... --write-release scenarios --note "..."
      # each scenario file's "Margins on the release build" paragraph, rewritten

The test that measures the figures (tests/suite/workshop/exercises.rs: each exercise on
the whole machine, on one core and at half a core) saves what
`workshop figures` printed under target/tmp/, so every run of the full test
tier adds to the spread. Half a core needs root (a cgroup of our own).
Traffic goes only to 127.0.0.1.
"""

import argparse
import glob
import math
import os
import re
import subprocess
import sys
import tomllib

CONFINEMENTS = {
    "whole": [],
    "one-core": ["--server-cpus", "0"],
    # As tests/suite/workshop/exercises.rs confines it: on CPU 1, capped at half of it.
    "half-core": ["--server-cpus", "1", "--server-cpu-quota", "0.5"],
}

FIX = re.compile(r"^Fix `([^`]+)`")
ROW = re.compile(r"^\| (.+?) \| ([<>]) ([0-9.]+) \| (-?[0-9.naNinf]+) (pass|FAIL) \| (-?[0-9.naNinf]+) (pass|FAIL) \|$")
NAME = re.compile(r"figures (\S+) --write")
# The confinement as the block names it: `server on CPU 0 only`, `server on CPU 1
# only, server capped at 0.5 cores`, `server on the whole machine`.
WHERE = re.compile(r"\((server (?:on CPU \S+ only(?:, server capped at [0-9.]+ cores)?|capped at [0-9.]+ cores|on the whole machine))")


def parse(text, source):
    """The figures blocks in `text`: (block, scenario, fix, trade_off, label, op,
    bound, before, before_ok, after, after_ok, where) rows, `block` a number that
    tells one measured block from another."""
    rows = []
    for block in text.split("<!-- figures:end -->"):
        parse.blocks += 1
        name = NAME.search(block)
        if not name:
            continue
        scenario = name.group(1)
        where = source
        for line in block.splitlines():
            if line.startswith("Measured on"):
                found = WHERE.search(line)
                if found:
                    where = found.group(1)
        fix, trade_off, index = None, False, 0
        for line in block.splitlines():
            m = FIX.match(line)
            if m:
                fix, trade_off, index = m.group(1), "a trade-off" in line, 0
                continue
            m = ROW.match(line.strip())
            if m and fix:
                label, op, bound, before, bok, after, aok = m.groups()
                op, bound, trade_off = rebound(scenario, fix, index, op, float(bound), trade_off)
                before, after = float(before), float(after)
                rows.append((parse.blocks, scenario, fix, trade_off, label, op, bound,
                             before, holds(op, bound, before), after, holds(op, bound, after), where))
                index += 1
    return rows


parse.blocks = 0


def holds(op, bound, value):
    return value < bound if op == "<" else value > bound


def rebound(scenario, fix, index, op, bound, trade_off):
    """The bound and trade-off as the scenario now has them (`--rebound DIR`), so
    figures measured before a bound moved are judged by the new one: a block's
    rows are its `[[check]]`s in order."""
    if not rebound.dir:
        return op, bound, trade_off
    with open(os.path.join(rebound.dir, f"{scenario}.toml"), "rb") as f:
        toml = tomllib.load(f)
    check = toml["check"][index]
    op, bound = ("<", check["below"]) if "below" in check else (">", check["above"])
    fixes = {f["name"]: f for f in toml.get("fixes", [])}
    return op, float(bound), "trade_off" in fixes.get(fix, {})


rebound.dir = None


def margin(op, bound, value, should_hold, label=""):
    """How far `value` is on its side of the bound, as a ratio: over 1.0 when it
    is on the side it should be (meets the bound when it should hold, misses it
    when it should not), under 1.0 when it is on the wrong side. A rate (its
    label says "a second") is never a share, whatever its size. A value on the
    other side of zero from its bound (a pile that shrank, against a bound on
    its growth) has no ratio: it is as far as it can be, on one side or the
    other. NaN (a figure with nothing to measure: a killed neighbour's share)
    fails every bound, as the check judges it, as far as it can."""
    if math.isnan(value):
        return 0.0 if should_hold else float("inf")
    if value == 0 or bound == 0 or (value < 0) != (bound < 0):
        meets = value < bound if op == "<" else value > bound
        return float("inf") if meets == should_hold else 0.0
    if op == ">" and 0 < bound < 1 and value <= 1 and "a second" not in label:
        # A share that must stay high (answered 2xx above 0.99): the room is in
        # what is missing, 1 % allowed against 0.2 % seen, not 0.998 / 0.99.
        missing, allowed = 1.0 - value, 1.0 - bound
        ratio = allowed / missing if missing > 0 else float("inf")
    else:
        ratio = bound / value if op == "<" else value / bound
    return ratio if should_hold else 1.0 / ratio


def summarise(rows):
    """Per exercise, how clearly its check fails before a fix: in each block, the
    condition that fails by most decides (one failing condition fails the
    check), and the least clear block is the worst. Per condition, how clearly
    each cure meets it (every condition must hold after), and for a fix the page
    marks as a trade-off, how clearly its check still fails."""
    before, after, wrong = {}, {}, []
    blocks = {}
    for (n, scenario, fix, trade_off, label, op, bound, b, bok, a, aok, where) in rows:
        blocks.setdefault((n, scenario, where), []).append((fix, trade_off, label, op, bound, b, bok, a, aok))
    for (_, scenario, where), block in blocks.items():
        # One "before" serves every fix of a block: judge it once.
        first_fix = block[0][0]
        conditions = [r for r in block if r[0] == first_fix]
        clearest = max(((margin(op, bound, b, False, label), label, b) for (_, _, label, op, bound, b, _, _, _) in conditions),
                       default=None)
        if clearest and (scenario not in before or clearest[0] < before[scenario][0]):
            before[scenario] = (clearest[0], f"{clearest[1]} {clearest[2]:g}", where)
        fixes = {}
        for r in block:
            fixes.setdefault(r[0], []).append(r)
        for fix, rs in fixes.items():
            trade_off = rs[0][1]
            if trade_off:
                clearest = max((margin(op, bound, a, False, label), label, a) for (_, _, label, op, bound, _, _, a, _) in rs)
                key = (scenario, f"(trade-off {fix} still fails)")
                if key not in after or clearest[0] < after[key][0]:
                    after[key] = (clearest[0], f"{clearest[1]} {clearest[2]:g}", where, "", "")
                if clearest[0] <= 1.0:
                    wrong.append(f"{scenario}: the trade-off {fix} passed ({where})")
                continue
            for (_, _, label, op, bound, _, _, a, aok) in rs:
                m = margin(op, bound, a, True, label)
                key = (scenario, label)
                if key not in after or m < after[key][0]:
                    after[key] = (m, f"{a:g}", where, fix, f"{op} {bound:g}")
                if not aok:
                    wrong.append(f"{scenario}: {label} {a:g} after {fix} ({where})")
    return before, after, wrong


def ratio_text(m):
    return "inf" if m == float("inf") else f"{m:.2f}x"


def report(summary, blocks):
    before, after, wrong = summary
    print(f"{blocks} figures block(s) read. A margin is how far the worst value seen stays on its side of "
          "the bound: 1.00x is on it, under 1.00x is a red run.\n")
    print("Before a fix, the check must fail: the condition that fails by most decides.\n")
    print("| exercise | least clear failure before a fix | margin | seen |")
    print("| --- | --- | ---: | --- |")
    for scenario, (m, what, where) in sorted(before.items()):
        print(f"| {scenario} | {what} | {ratio_text(m)} | {where} |")
    print("\nAfter each fix, every condition must hold (a trade-off's check must still fail).\n")
    print("| exercise | condition | bound | worst after | margin | seen |")
    print("| --- | --- | --- | ---: | ---: | --- |")
    for (scenario, label), (m, value, where, fix, bound) in sorted(after.items()):
        seen = f"{where}, {fix}" if fix else where
        print(f"| {scenario} | {label} | {bound} | {value} | {ratio_text(m)} | {seen} |")
    if wrong:
        print("\nOn the wrong side of a bound:")
        for w in wrong:
            print(f"- {w}")


def measure(binary, confinement, duration, save):
    args = [binary, "workshop", "figures", "--duration", duration] + CONFINEMENTS[confinement]
    print(f"== {' '.join(args)}", file=sys.stderr, flush=True)
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"workshop figures ({confinement}) failed: {out.stderr.strip()}")
    if save:
        os.makedirs(save, exist_ok=True)
        n = len(glob.glob(os.path.join(save, f"figures-{confinement}-*.txt")))
        with open(os.path.join(save, f"figures-{confinement}-{n + 1}.txt"), "w") as f:
            f.write(out.stdout)
    return out.stdout


RELEASE_HEAD = "# Margins on the release build"


def release_paragraph(scenario, summary, note):
    """The comment paragraph a scenario file keeps of its margins on the release
    build an attendee runs (issue 99): how clearly its check fails before a fix,
    and each condition's least room after a cure, with where it was seen."""
    before, after, _ = summary
    lines = [f"{RELEASE_HEAD.removeprefix('# ')} ({note}; a margin is how far the worst value stays on its side of the bound)."]
    if scenario in before:
        m, what, where = before[scenario]
        lines.append(f"Before a fix, {what} at the least clear: {ratio_text(m)} ({short(where)}).")
    for (name, label), (m, value, where, fix, bound) in sorted(after.items()):
        if name != scenario:
            continue
        if fix:
            lines.append(f"After a cure, {label} {bound}: {value} at worst, {ratio_text(m)} ({fix}, {short(where)}).")
        else:
            trade_off = label.removeprefix("(trade-off ").removesuffix(" still fails)")
            lines.append(f"The trade-off {trade_off} still fails: {value}, {ratio_text(m)} ({short(where)}).")
    text = " ".join(lines)
    out, line = [], "#"
    for word in text.split(" "):
        if len(line) + 1 + len(word) > 79 and line != "#":
            out.append(line)
            line = "#"
        line += " " + word
    out.append(line)
    return out


def short(where):
    """A confinement as a paragraph names it."""
    if "capped at" in where:
        return "half a core"
    if "CPU" in where:
        return "one core"
    return "whole machine" if "whole" in where else where


def write_release(directory, summary, note):
    """Puts each measured scenario's release paragraph in its file, before the
    comments of its first `[[check]]`, replacing the one it had."""
    measured = set(summary[0]) | {name for (name, _) in summary[1]}
    for scenario in sorted(measured):
        path = os.path.join(directory, f"{scenario}.toml")
        lines = open(path).read().split("\n")
        if any(l.startswith(RELEASE_HEAD) for l in lines):
            start = next(i for i, l in enumerate(lines) if l.startswith(RELEASE_HEAD))
            end = start
            while end < len(lines) and lines[end].startswith("#"):
                end += 1
            del lines[start:end + 1]  # and the blank line after it
        first = next(i for i, l in enumerate(lines) if l.strip() == "[[check]]")
        while first > 0 and lines[first - 1].startswith("#"):
            first -= 1
        lines[first:first] = release_paragraph(scenario, summary, note) + [""]
        with open(path, "w") as f:
            f.write("\n".join(lines))
        print(f"wrote the release margins of {path}", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--from", dest="files", nargs="+", metavar="FILE",
                   help="read saved `workshop figures` output instead of measuring")
    p.add_argument("--runs", type=int, default=1, help="rounds of every confinement (default 1)")
    p.add_argument("--duration", default="6s", help="each window (default 6s, the tests' runs, and the shortest: "
                        "the runtime canary's figures cover 5 s, so a shorter one is measured as 6 s)")
    p.add_argument("--bin", default="target/release/system-simulator")
    p.add_argument("--confinements", default="whole,one-core,half-core",
                   help="which of whole, one-core, half-core (comma separated)")
    p.add_argument("--save", metavar="DIR", help="keep each run's figures in DIR (figures-CONFINEMENT-N.txt)")
    p.add_argument("--rebound", metavar="DIR",
                   help="judge by the bounds and trade-offs of the scenarios in DIR (e.g. scenarios/), "
                        "not the ones printed when the figures were measured")
    p.add_argument("--write-release", metavar="DIR",
                   help="write each scenario's margins into DIR/NAME.toml as its release-build paragraph")
    p.add_argument("--note", default="tools/margins.py",
                   help="how the figures were measured, for --write-release (command, date, machine)")
    args = p.parse_args()
    rebound.dir = args.rebound

    rows, blocks = [], 0
    if args.files:
        for path in args.files:
            text = open(path).read()
            blocks += text.count("<!-- figures:end -->")
            rows += parse(text, os.path.basename(path))
    else:
        confinements = args.confinements.split(",")
        for c in confinements:
            if c not in CONFINEMENTS:
                sys.exit(f"unknown confinement `{c}` (whole, one-core, half-core)")
        if "half-core" in confinements and os.geteuid() != 0:
            sys.exit("half a core is a cgroup quota of our own: run as root, or leave half-core out")
        for _ in range(args.runs):
            for c in confinements:
                text = measure(args.bin, c, args.duration, args.save)
                blocks += text.count("<!-- figures:end -->")
                rows += parse(text, c)
    if not rows:
        sys.exit("no figures found")
    summary = summarise(rows)
    report(summary, blocks)
    if args.write_release:
        write_release(args.write_release, summary, args.note)


if __name__ == "__main__":
    main()
