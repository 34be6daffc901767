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
  python3 tools/prose.py --help-of target/debug/system-simulator target/debug/sim-clients

With --help-of, the files are binaries: every `--help` of each and of each of
its subcommands, read as prose. An option's or a value's name and a
subcommand's name start a paragraph and are left out; each one's text is a
paragraph of its own. A sentence met twice (a flag two commands share) counts
once.
"""

import argparse
import glob
import os
import re
import statistics
import subprocess
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


def help_texts(binary, path=()):
    """`binary`'s `--help` and each subcommand's, depth first."""
    out = subprocess.run([binary, *path, "--help"], capture_output=True, text=True).stdout
    yield out
    listed = re.search(r"^Commands:\n(.*?)(?:\n\n|\Z)", out, re.S | re.M)
    for line in (listed.group(1).split("\n") if listed else []):
        name = line.split()[0] if line.strip() else ""
        if name and name != "help":
            yield from help_texts(binary, path + (name,))


def help_paragraphs(text):
    """A help text's prose: the text of each option, value and subcommand."""
    out, current = [], []
    for line in text.split("\n"):
        s = line.strip()
        named = re.match(r"^(-{1,2}[a-zA-Z]|<|\[|Usage:|Options:|Commands:|Arguments:|Possible values:)", s)
        listed = re.match(r"^([a-z][a-z-]*)\s{2,}(.*)", s)
        if not s or named or listed or s.startswith("- "):
            if current:
                out.append(" ".join(current))
            current = []
            if listed:
                current = [listed.group(2)]
            elif s.startswith("- "):
                current = [s[2:].split(": ", 1)[-1]]
            continue
        current.append(s)
    if current:
        out.append(" ".join(current))
    return out


def measure_help(binary):
    said = []
    for text in help_texts(binary):
        for paragraph in help_paragraphs(text):
            said.extend(s for s in sentences(paragraph) if s not in said)
    return said, [len(s.split()) for s in said]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*")
    parser.add_argument("--long", action="store_true", help="print each sentence over 40 words")
    parser.add_argument("--help-of", action="store_true", help="the files are binaries: read their --help")
    args = parser.parse_args()
    files = args.files or [os.path.join(ROOT, "README.md")] + sorted(
        glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    print(f"{'file':<44} {'sentences':>9} {'mean':>6} {'over 40':>8} {'longest':>8}")
    every = []
    for path in files:
        said, lengths = measure_help(path) if args.help_of else measure(path)
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
