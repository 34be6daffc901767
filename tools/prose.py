#!/usr/bin/env python3
"""How long the sentences are where a person reads: each Markdown file's mean
words a sentence, its sentences over 40 words, and its longest.

Prose only: code blocks (fenced or indented by four spaces), tables, headings,
HTML comments and list markers are left out; inline code counts as one word.
A sentence ends at `.`, `?` or `!` followed by a space and a capital, a
backtick or the end of a paragraph, or at a paragraph's end. The target (issue
80): a mean of 20 or less and none over 40.

  python3 tools/prose.py                        # README.md, docs/**/*.md
  python3 tools/prose.py README.md docs/workshop/*.md
  python3 tools/prose.py --long README.md       # and print each sentence over 40 words
"""

import argparse
import glob
import os
import re
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIMIT = 40


def paragraphs(text):
    """The file's prose, a paragraph a string."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    out, current = [], []
    for line in text.split("\n"):
        prose = line.strip() and not (
            line.startswith("    ") and not current
            or line.lstrip().startswith("|")
            or line.startswith("#")
        )
        if not prose:
            if current:
                out.append(" ".join(current))
            current = []
            continue
        item = re.match(r"^\s*([-*]|\d+\.)\s+", line)
        if item and current:
            out.append(" ".join(current))
            current = []
        current.append(line[item.end():] if item else line.strip())
    if current:
        out.append(" ".join(current))
    return out


def sentences(paragraph):
    """A paragraph's sentences, inline code as one word each."""
    paragraph = re.sub(r"`[^`]*`", "CODE", paragraph)
    paragraph = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", paragraph)
    parts = re.split(r"(?<=[.?!])\s+(?=[A-Z(\"'`]|CODE)", paragraph)
    return [p for p in (part.strip() for part in parts) if len(p.split()) > 1]


def measure(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    said = [s for p in paragraphs(text) for s in sentences(p)]
    lengths = [len(s.split()) for s in said]
    return said, lengths


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*")
    parser.add_argument("--long", action="store_true", help="print each sentence over 40 words")
    args = parser.parse_args()
    files = args.files or [os.path.join(ROOT, "README.md")] + sorted(
        glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    print(f"{'file':<44} {'sentences':>9} {'mean':>6} {'over 40':>8} {'longest':>8}")
    every = []
    for path in files:
        said, lengths = measure(path)
        if not lengths:
            continue
        every.extend(lengths)
        over = [s for s, n in zip(said, lengths) if n > LIMIT]
        name = os.path.relpath(path, ROOT)
        print(f"{name:<44} {len(lengths):>9} {statistics.mean(lengths):>6.1f} {len(over):>8} {max(lengths):>8}")
        if args.long:
            for s in over:
                print(f"    ({len(s.split())}) {s}")
    if every:
        print(f"{'all':<44} {len(every):>9} {statistics.mean(every):>6.1f} "
              f"{sum(n > LIMIT for n in every):>8} {max(every):>8}")


if __name__ == "__main__":
    sys.exit(main())
