#!/usr/bin/env python3
"""Checks that every error message the C programs can print was printed by
some test case: each print_error() (and option_error()) format string in
common/ and instruments/ must match a
line of some log in LOGDIR (tests/build/logs), or be listed in
tests/checks/untested_messages.txt with the reason no test provokes it.
Prints what is missing; exits 1 if anything is.

    check_messages.py [--without-mpi] [LOGDIR]

--without-mpi: the MPI cases could not run here (no Open MPI), so the
messages only several MPI processes can print are left out, and named:
those of common/src/transport/mpi.c and those listed in
tests/checks/mpi_only_messages.txt.
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The same checkout by the path the suite's scripts give it (SUITE_ROOT,
# without spaces: tests/lib/environment.sh), when that is this one.
if os.environ.get("SUITE_ROOT") and os.path.isdir(os.environ["SUITE_ROOT"]) \
        and os.path.samefile(os.environ["SUITE_ROOT"], ROOT):
    ROOT = os.environ["SUITE_ROOT"]
CALL = re.compile(r'(?:print_error|option_error)\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')
CONVERSION = re.compile(r'%[-+ #0-9.*]*(?:zu|lld|ld|d|s|p|g|f|c|u)')


def messages():
    """(file, format string) of every print_error and option_error call in
    common/ and instruments/."""
    for path in sorted(glob.glob(os.path.join(ROOT, "common", "src", "**", "*.c"), recursive=True)
                       + glob.glob(os.path.join(ROOT, "instruments", "src", "**", "*.c"), recursive=True)):
        text = open(path).read()
        for m in CALL.finditer(text):
            fmt = "".join(LITERAL.findall(m.group(1))).replace("\\n", "").replace('\\"', '"')
            yield os.path.relpath(path, ROOT), fmt


def pattern(fmt):
    parts = CONVERSION.split(fmt)
    return re.compile(".*".join(re.escape(p) for p in parts))


def listed(name):
    """{format string: reason} of a list file in tests/ (FORMAT -- WHY)."""
    entries = {}
    for line in open(os.path.join(ROOT, "tests", "checks", name)):
        if line.strip() and not line.startswith("#"):
            fmt, _, why = line.rstrip("\n").partition(" -- ")
            entries[fmt.strip()] = why.strip()
    return entries


def main():
    args = sys.argv[1:]
    without_mpi = "--without-mpi" in args
    args = [a for a in args if a != "--without-mpi"]
    logdir = args[0] if args else os.path.join(ROOT, "tests", "build", "logs")
    logs = "\n".join(open(p, errors="replace").read() for p in glob.glob(os.path.join(logdir, "*.err"))
                     + glob.glob(os.path.join(logdir, "*.out")))
    allowed = listed("untested_messages.txt")
    mpi_only = listed("mpi_only_messages.txt")
    # A case this machine cannot run may leave out the message it would
    # print: it writes "FORMAT -- why" into the run's skipped-messages.txt.
    skipped = {}
    skipped_file = os.path.join(logdir, "skipped-messages.txt")
    if os.path.exists(skipped_file):
        for line in open(skipped_file):
            if " -- " in line:
                fmt, why = line.rstrip("\n").split(" -- ", 1)
                skipped[fmt] = why
    missing, left_out, checked, seen = [], [], 0, set()
    for path, fmt in messages():
        checked += 1
        seen.add(fmt)
        if fmt in allowed:
            continue
        if fmt in skipped:
            left_out.append(f"{path}: left out (its case was skipped here: {skipped[fmt]}): {fmt}")
            continue
        if without_mpi and (fmt in mpi_only or path.endswith("transport/mpi.c")):
            left_out.append(f"{path}: left out (only MPI cases print it): {fmt}")
            continue
        if not pattern(fmt).search(logs):
            missing.append(f"{path}: no test prints: {fmt}")
    stale = [f"tests/{name} lists a message no longer in the code: {f}"
             for name, entries in (("untested_messages.txt", allowed), ("mpi_only_messages.txt", mpi_only))
             for f in entries if f not in seen]
    for line in missing + stale + left_out:
        print(line)
    print(f"check_messages: {checked} messages, {len(allowed)} listed as untested, "
          f"{len(left_out)} left out (without MPI, or their case skipped), {len(missing) + len(stale)} problems")
    return 1 if missing or stale or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
