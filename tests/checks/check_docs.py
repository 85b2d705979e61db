#!/usr/bin/env python3
"""Checks that the READMEs say what the code does.

- A code block after `<!-- expected-output PROGRAM N on the simulation -->`
  must equal, whole, what the oracle says the simulation prints, What ran
  too, and, up to What ran, what the simulated program prints.
- A code block after `<!-- expected-output PROGRAM N -->` must equal what
  PROGRAM prints on N ranks and N visible GPUs, both as the oracle
  (tests/oracles/expected_output.py) says and as the simulated program prints,
  up to its last lines, the report of what ran: those must be lines that a
  recorded GPU run printed (docs/what-ran/h200-*.txt).
- The README's option table names every option the programs accept and no
  other, with the default count and NTHREADS limit of the code; its
  exit-status table lists exactly 0, 1 and the EXIT_* codes of
  common/include and instruments/include.
- Every ```c block is in the sources: its lines, stripped of leading blanks, in order,
  contiguous but where a line `/* ... */` skips any.
- A documented error line `PROG: rank R: main.c:LINE: CALL failed` must name
  a LINE of PROG's main.c that holds CALL; a watchdog line `PROG: rank R:
  in CALL(...) (main.c:LINE)` one where the statement holding CALL starts.
- A citation of a recorded fact, `[fact ID @ FILE = OUTCOME]` in any .md or
  source file, names a FILE of docs/facts with the fact ID, whose row begins
  with OUTCOME read as "RESULT, window WINDOW; DETAIL" (RESULT without
  NCCL's "(run with ...)" hint).
- docs/building.md names every target and variable `make help` lists.
- A lesson's main.c names nothing of --bench (BENCH_*, bench_*, run_bench).
- Pages and recordings speak to users (tracked .md files, docs/**/*.txt):
  no paths outside the repository, issue numbers, commit hashes as
  caveats, untracked helper scripts, or words for the machines the project
  was made on. `check_docs.py --users-text FILE...` checks only that, in
  FILE (tests/data/docs/internal-text.md is the control).
- Relative links name what exists; one from a lesson or common/ to the rest
  of the suite is written [its/path/in/the/suite](...), since a lesson is
  copied with common/ alone (`--links-as PATH FILE`: FILE's links as if
  it were PATH).
- README.md and the pages of docs/ each say where their results were run
  (`--where-run FILE...`).
The page checks are in tests/checks/page_checks.py, the tables' and lists'
checks against the code in tests/checks/code_checks.py.
Prints one line per problem; exits 1 if there is any.
"""
import difflib
import glob
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "oracles"))
import expected_output  # noqa: E402
from markdown import ROOT, code_blocks, tracked  # noqa: E402
from code_checks import (MAIN, check_glossary, check_lesson_names_no_benchmark,  # noqa: E402
                         check_lifecycle_diagram, check_make_help, check_tables)
from page_checks import (check_fact_citations, check_links, check_typed_counts,  # noqa: E402
                         check_users_text, check_where_run)

SIM = os.path.join(ROOT, "tests", "build", "sim-pthread")
LSA_SIM = os.path.join(ROOT, "tests", "build", "lsa-pthread")  # tests/Makefile: lsa-programs
FAST_SIM = os.path.join(ROOT, "tests", "build", "fast-pthread")  # tests/Makefile: fast-programs
DEVICE_API = ("allreduce_lsa", "allreduce_fast")  # built only where an nccl.h >= 2.30.7 is


def run_sim(program, nranks, count=None):
    sim = {"allreduce_lsa": LSA_SIM, "allreduce_fast": FAST_SIM}.get(program, SIM)
    if not os.path.exists(os.path.join(sim, program)):
        return [f"(not built: {sim}/{program}; run make -C tests first)"]
    with tempfile.TemporaryDirectory() as tmp:
        args = [os.path.join(sim, program)] + (["-n", str(count)] if count else [])
        out = subprocess.run(args, capture_output=True, text=True, timeout=120,
                             env=dict(os.environ, SIM_DIR=tmp, SIM_DEVICES=str(nranks), NTHREADS=str(nranks)))
    return [f"(exit status {out.returncode}: {out.stderr.strip()[-300:]})"] * (out.returncode != 0) + \
        out.stdout.rstrip("\n").split("\n")


def contains_in_order(source, chunks):
    pos = 0
    for chunk in chunks:
        n = len(chunk)
        while pos + n <= len(source) and source[pos:pos + n] != chunk:
            pos += 1
        if pos + n > len(source):
            return False
        pos += n
    return True


# Checks run alone on the files named after them (controls: tests/data/docs).
ONE_CHECK = {
    "--users-text": lambda problems, files: (check_users_text(problems, files),
                                             check_typed_counts(problems, files)),
    "--where-run": check_where_run,
    # --links-as PATH FILE: FILE's links, as if FILE were PATH in the tree
    "--links-as": lambda problems, args: check_links(problems, [(args[0], args[1])]),
}


def main():
    if sys.argv[1:2] and sys.argv[1] in ONE_CHECK:
        problems = []
        ONE_CHECK[sys.argv[1]](problems, sys.argv[2:])
        for p in problems:
            print(p)
        return 1 if problems else 0
    problems = []
    sources = {p: [l.strip() for l in open(os.path.join(ROOT, p)).read().split("\n")]
               for p in tracked("*.c") + tracked("*.h") + tracked("*.cu") + tracked("*.cuh")}
    main_lines = {prog: open(os.path.join(ROOT, path)).read().split("\n") for prog, path in MAIN.items()}
    recorded_reports = {line for path in glob.glob(os.path.join(ROOT, "docs", "what-ran", "h200-*.txt"))
                        for line in open(path).read().split("\n")}
    checked = 0
    for doc in tracked("*.md"):
        text = open(os.path.join(ROOT, doc)).read()
        for lang, lines, before, _ in code_blocks(text):
            m = re.match(r"<!-- expected-output (\S+) (\d+)(?: -n (\d+))? on the simulation -->", before.strip())
            if m:  # the whole block, What ran too, as the simulation prints it
                checked += 1
                prog, n = m.group(1), int(m.group(2))
                count = int(m.group(3)) if m.group(3) else expected_output.DEFAULT_COUNT
                if lines != (oracle := expected_output.expected(prog, n, count, measured=True)):
                    problems.append(f"{doc}: expected output of {prog} on {n} ranks (simulated) differs"
                                    " from the oracle's:")
                    problems += [f"  {line}" for line in difflib.unified_diff(
                        lines, oracle, "README", "the oracle", lineterm="", n=1)]
                got = run_sim(prog, n, m.group(3))
                if not (got[0].startswith("(not built") and prog in DEVICE_API) and \
                        expected_output.without_report(got) != expected_output.without_report(lines):
                    problems.append(f"{doc}: expected output of {prog} on {n} ranks differs from the simulated"
                                    f" program's: {[l for l in got if l not in lines][:2]}")
                continue
            m = re.match(r"<!-- expected-output (\S+) (\d+) -->", before.strip())
            if m:
                checked += 1
                prog, n = m.group(1), int(m.group(2))
                # The report of what ran (the last lines) depends on the
                # machine: the block must end with one that a recorded GPU
                # run printed (docs/what-ran/h200-*.txt), and the lines
                # before it must be what the program prints.
                lesson_lines = expected_output.without_report(lines)
                report = lines[len(lesson_lines):]
                if not report:
                    problems.append(f"{doc}: the expected output of {prog} lacks its last line, What ran")
                for line in report:
                    if line not in recorded_reports:
                        problems.append(f"{doc}: '{line}' is in no recorded GPU run (docs/what-ran/h200-*.txt)")
                for source, got in (("the oracle", expected_output.expected(prog, n, report=False)),
                                    ("the program", expected_output.without_report(run_sim(prog, n)))):
                    if got != lesson_lines:
                        problems.append(f"{doc}: expected output of {prog} on {n} ranks differs from {source}'s:")
                        problems += [f"  {line}" for line in difflib.unified_diff(
                            lesson_lines, got, "README", source, lineterm="", n=1)]
            if lang == "c":
                checked += 1
                chunks, chunk = [], []
                for l in lines:
                    if l.strip() == "/* ... */":
                        chunks.append(chunk)
                        chunk = []
                    else:
                        chunk.append(l.strip())
                chunks.append(chunk)
                if not any(contains_in_order(src, chunks) for src in sources.values()):
                    problems.append(f"{doc}: C snippet not found in the sources: {lines[0].strip()} ...")
            for l in lines:
                w = re.match(r"^(\w+): rank \d+: in ((?:cuda|nccl)\w+)\(.*\) \(main\.c:(\d+)\)", l)
                if w:
                    # The watchdog's "in CALL (main.c:LINE)": LINE is where
                    # the CHECK macro holding CALL starts.
                    checked += 1
                    prog, call, num = w.group(1), w.group(2), int(w.group(3))
                    src = main_lines.get(prog, [])
                    here = src[num - 1] if num <= len(src) else ""
                    after = src[num] if num < len(src) else ""
                    if call not in here and not (here.rstrip().endswith("CHECK(") and call in after):
                        problems.append(f"{doc}: '{prog} main.c:{num}' does not hold {call}")
                e = re.match(r"^(\w+): rank \d+: main\.c:(\d+): (.*?) failed", l)
                if e:
                    checked += 1
                    prog, num, call = e.group(1), int(e.group(2)), e.group(3)
                    src = main_lines.get(prog, [])
                    if num > len(src) or call.split("(")[0] not in src[num - 1]:
                        problems.append(f"{doc}: '{prog} main.c:{num}' does not hold {call}")
    checked += check_tables(problems)
    checked += check_fact_citations(problems)
    checked += check_lifecycle_diagram(problems)
    checked += check_links(problems)
    checked += check_where_run(problems)
    checked += check_users_text(problems)
    checked += check_glossary(problems)
    checked += check_typed_counts(problems)
    checked += check_make_help(problems)
    checked += check_lesson_names_no_benchmark(problems)
    for p in problems:
        print(p)
    print(f"check_docs: {checked} checks, {len(problems)} problems")
    return 1 if problems or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
