#!/usr/bin/env python3
"""The simulated samples of the docs, against a fresh run.

A fenced block whose line above is

  <!-- simulated output of: COMMAND -->

shows lines that COMMAND prints on the simulation (stdout and stderr
together). The check runs COMMAND with bash at the repository's root and
wants every line of the block among what it printed, in the block's order;
durations ("2.2 s", "5.1 ms") match any duration, since they are the
machine's.

  doc_samples.py --list             the samples: FILE:LINE, a tab, COMMAND
  doc_samples.py --check FILE:LINE  runs that one (exit 1 if it differs)
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MARK = re.compile(r"^<!-- simulated output of: (.+) -->$")
LIMIT_S = 240
DURATION = re.compile(r"\b\d+(\.\d+)? (s|ms|us)\b")


def documents():
    out = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True)
    return [p for p in out.stdout.split() if not p.startswith("tests/data/")]


def samples(doc):
    """(line number of the mark, command, the block's lines)."""
    lines = open(os.path.join(ROOT, doc)).read().split("\n")
    for i, line in enumerate(lines):
        m = MARK.match(line.strip())
        if not m or i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            continue
        block = []
        for text in lines[i + 2:]:
            if text.startswith("```"):
                break
            block.append(text)
        yield i + 1, m.group(1), block


def normal(text):
    return DURATION.sub("<duration>", text.rstrip())


def check(doc, line):
    for at, command, block in samples(doc):
        if at != line:
            continue
        try:
            run = subprocess.run(["bash", "-c", command], cwd=ROOT, capture_output=True,
                                 text=True, timeout=LIMIT_S)
        except subprocess.TimeoutExpired:
            print(f"doc_samples: {doc}:{at}: '{command}' had not finished after {LIMIT_S} s")
            return 1
        got = [normal(l) for l in (run.stdout + run.stderr).split("\n")]
        i = 0
        for want in block:
            w = normal(want)
            while i < len(got) and got[i] != w:
                i += 1
            if i == len(got):
                print(f"doc_samples: {doc}:{at}: the run of '{command}' did not print, in order: {want}")
                print("doc_samples: what it printed:\n" + run.stdout + run.stderr)
                return 1
            i += 1
        print(f"doc_samples: {doc}:{at}: the {len(block)} lines of the sample printed, in order")
        return 0
    print(f"doc_samples: {doc}:{line}: no sample there")
    return 1


def main(argv):
    if argv[:1] == ["--list"]:
        for doc in documents():
            for at, command, _ in samples(doc):
                print(f"{doc}:{at}\t{command}")
        return 0
    if len(argv) == 2 and argv[0] == "--check" and ":" in argv[1]:
        doc, line = argv[1].rsplit(":", 1)
        return check(doc, int(line))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
