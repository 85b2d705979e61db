#!/usr/bin/env python3
"""Checks that every error message the C programs can print was printed by
some test case: each print_error() format string in common/ must match a
line of some log in LOGDIR (tests/build/logs), or be listed in
tests/untested_messages.txt with the reason no test provokes it.
Prints what is missing; exits 1 if anything is.
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CALL = re.compile(r'print_error\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')
CONVERSION = re.compile(r'%[-+ #0-9.]*(?:zu|lld|ld|d|s|p|g|f|c|u)')


def messages():
    """(file, format string) of every print_error call in common/."""
    for path in sorted(glob.glob(os.path.join(ROOT, "common", "src", "**", "*.c"), recursive=True)):
        text = open(path).read()
        for m in CALL.finditer(text):
            fmt = "".join(LITERAL.findall(m.group(1))).replace("\\n", "").replace('\\"', '"')
            yield os.path.relpath(path, ROOT), fmt


def pattern(fmt):
    parts = CONVERSION.split(fmt)
    return re.compile(".*".join(re.escape(p) for p in parts))


def main():
    logdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "build", "logs")
    logs = "\n".join(open(p, errors="replace").read() for p in glob.glob(os.path.join(logdir, "*.err"))
                     + glob.glob(os.path.join(logdir, "*.out")))
    allowed = {}
    for line in open(os.path.join(ROOT, "tests", "untested_messages.txt")):
        if line.strip() and not line.startswith("#"):
            fmt, _, why = line.rstrip("\n").partition(" -- ")
            allowed[fmt.strip()] = why.strip()
    missing, checked, seen_allowed = [], 0, set()
    for path, fmt in messages():
        checked += 1
        if fmt in allowed:
            seen_allowed.add(fmt)
            continue
        if not pattern(fmt).search(logs):
            missing.append(f"{path}: no test prints: {fmt}")
    stale = [f"tests/untested_messages.txt lists a message no longer in the code: {f}"
             for f in allowed if f not in seen_allowed]
    for line in missing + stale:
        print(line)
    print(f"check_messages: {checked} messages, {len(allowed)} listed as untested, "
          f"{len(missing) + len(stale)} problems")
    return 1 if missing or stale or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
