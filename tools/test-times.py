#!/usr/bin/env python3
"""Where a full test run's minutes went, from the times nextest kept.

`tools/test` (the full tier, what CI runs) writes every test's time to
target/nextest/full/junit.xml (.config/nextest.toml). This prints the tests
that run alone (`workshop::exercises::each::*` and names ending `_alone`: one after
another, the machine to themselves) and the shared ones (four at a time), each
phase's sum, and the slowest of each, so the next cut of CI's time starts from
what a run measured rather than from a guess.

  python3 tools/test-times.py                      # target/nextest/full/junit.xml
  python3 tools/test-times.py PATH/junit.xml --top 20
"""

import argparse
import re
import sys
import xml.etree.ElementTree as ET

ALONE = re.compile(r"^workshop::exercises::each::|_alone$")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("junit", nargs="?", default="target/nextest/full/junit.xml")
    p.add_argument("--top", type=int, default=12, help="the slowest tests shown of each phase")
    args = p.parse_args()
    try:
        root = ET.parse(args.junit).getroot()
    except (OSError, ET.ParseError) as e:
        sys.exit(f"{args.junit}: {e} (run the full tier first: tools/test)")
    phases = {"alone": [], "shared": []}
    failed = []
    for case in root.iter("testcase"):
        name, seconds = case.get("name", "?"), float(case.get("time", "0"))
        phases["alone" if ALONE.search(name) else "shared"].append((seconds, name))
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(name)
    print(f"{args.junit}: {sum(len(v) for v in phases.values())} tests, the run took "
          f"{float(root.get('time', '0')):.0f} s")
    for phase, cases in phases.items():
        cases.sort(reverse=True)
        how = "one after another" if phase == "alone" else "four at a time, so about a quarter of it in wall time"
        print(f"\n{phase}: {len(cases)} tests, {sum(s for s, _ in cases):.0f} s of test time ({how})")
        for seconds, name in cases[:args.top]:
            print(f"  {seconds:8.1f} s  {name}")
    if failed:
        print(f"\nfailed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
