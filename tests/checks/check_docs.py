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
The page checks are in tests/checks/page_checks.py.
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
from page_checks import (check_fact_citations, check_links, check_typed_counts,  # noqa: E402
                         check_users_text, check_where_run)

SIM = os.path.join(ROOT, "tests", "build", "sim-pthread")
LSA_SIM = os.path.join(ROOT, "tests", "build", "lsa-pthread")  # tests/Makefile: lsa-programs
FAST_SIM = os.path.join(ROOT, "tests", "build", "fast-pthread")  # tests/Makefile: fast-programs
MAIN = {"allreduce_sm": "01_allreduce/c/main.c", "allgather_ce": "02_allgather/c/main.c",
        "allreduce_lsa": "03_allreduce_lsa/c/main.cu", "allreduce_fast": "04_allreduce_fast/c/main.cu"}
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


def table(text, heading):
    """The rows (lists of cells) of the Markdown table whose first heading
    cell is `heading`."""
    rows, inside = [], False
    for line in text.split("\n"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells and cells[0] == heading:
            inside = True
        elif inside and cells is None:
            break
        elif inside and not set(cells[0]) <= set("- "):
            rows.append(cells)
    return rows


def code_options():
    """The options the programs accept: the lesson's (common/src/options.c:
    its getopt string and option table) and the instruments'
    (instruments/src/options.c: the letters and long options of its
    instruments_options table)."""
    lesson = open(os.path.join(ROOT, "common", "src", "options.c")).read()
    tools = open(os.path.join(ROOT, "instruments", "src", "options.c")).read()
    short = re.search(r'snprintf\(shorts, size, "([^"%]+)', lesson).group(1)
    short += re.search(r'instruments_option_set instruments_options = \{\s*"([^"]*)"', tools).group(1)
    opts = {"-" + c for c in short if c.isalpha()}
    for text in (lesson, tools):
        opts |= {"--" + name for name in re.findall(r'\{"([a-z-]+)",\s*\w+_argument', text)}
    return opts


def header_value(name):
    for path in glob.glob(os.path.join(ROOT, "common", "include", "*.h")) + \
            glob.glob(os.path.join(ROOT, "instruments", "include", "*.h")):
        m = re.search(r"#define " + name + r"\s+(.+)", open(path).read())
        if m:
            return re.sub(r"/\*.*", "", m.group(1)).strip()
    return None


def check_tables(problems):
    """The README's option and exit-status tables (and the --bench usage
    line of docs/bench/README.md) against the code."""
    readme = open(os.path.join(ROOT, "README.md")).read()
    checks = 0
    options = table(readme, "option")
    # The --bench options: in the usage line of docs/bench/README.md.
    bench_doc = open(os.path.join(ROOT, "docs", "bench", "README.md")).read()
    bench = re.search(r"\./allreduce_sm --bench (.*)", bench_doc)
    documented = set()
    for row in options:
        documented |= set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", row[0]))
    bench_documented = set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", bench.group(0))) if bench else set()
    accepted = code_options()
    checks += 1
    for opt in sorted(accepted - documented - bench_documented):
        problems.append(f"README.md: option {opt} is accepted by the programs (common/src/options.c, instruments/src/options.c) but not in the option table"
                        " or docs/bench/README.md's --bench usage line")
    for opt in sorted(documented - accepted):
        problems.append(f"README.md: the option table lists {opt}, which the programs do not accept")
    if not options:
        problems.append("README.md: no table with the heading 'option'")
    # The defaults and limits the table states.
    count = header_value("DEFAULT_COUNT")
    nthreads = header_value("NTHREADS_MAX")
    for key, value, where in (("--count", count, "default"), ("NTHREADS", nthreads, "up to")):
        checks += 1
        try:
            number = eval(re.sub(r"\(size_t\)", "", value), {}) if value else None
        except (SyntaxError, NameError):
            number = None
        row = next((r for r in options if key in r[0]), None)
        if number is None or row is None or f"{where} {number}" not in row[1]:
            problems.append(f"README.md: the option table's {key} row does not say '{where} {number}'"
                            " (the code's value)")
    # Exit statuses: 0, 1 and every EXIT_* code of common/ and instruments/.
    checks += 1
    codes = {"0": "EXIT_SUCCESS", "1": "EXIT_FAILURE"}
    for path in glob.glob(os.path.join(ROOT, "common", "include", "*.h")) + \
            glob.glob(os.path.join(ROOT, "instruments", "include", "*.h")):
        for name, value in re.findall(r"#define (EXIT_\w+)\s+(\d+)", open(path).read()):
            codes[value] = name
    listed = {row[0] for row in table(readme, "status")}
    for value in sorted(set(codes) - listed):
        problems.append(f"README.md: exit status {value} ({codes[value]}) is missing from the exit-status table")
    for value in sorted(listed - set(codes)):
        problems.append(f"README.md: the exit-status table lists {value}, which no EXIT_* code in common/include or instruments/include has")
    return checks


def check_lifecycle_diagram(problems):
    """The README's Mermaid lifecycle names NCCL calls in the order both
    main.c files make them ("A / B": either)."""
    readme = open(os.path.join(ROOT, "README.md")).read()
    m = re.search(r"```mermaid\n(.*?)```", readme, re.S)
    if not m:
        problems.append("README.md: no ```mermaid block (the lifecycle diagram)")
        return 0
    steps = [item.replace(" ", "").split("/")
             for item in re.findall(r"nccl\w+(?:\s*/\s*nccl\w+)*", m.group(1))]
    checked = 0
    for prog, path in MAIN.items():
        calls = [l for l in open(os.path.join(ROOT, path)).read().split("\n") if "NCCLCHECK(" in l or "ncclComm" in l]
        code = "\n".join(calls)
        at = 0
        for alternatives in steps:
            found = [code.find(name, at) for name in alternatives]
            found = [f for f in found if f >= 0]
            checked += 1
            if not found:
                problems.append(f"README.md: the lifecycle diagram's {' / '.join(alternatives)} is not in {path}"
                                " after the steps before it")
                break
            at = min(found) + 1
    return checked


def check_make_help(problems):
    """docs/building.md names every target and variable `make help` lists
    (the top-level Makefile's help recipe)."""
    makefile = open(os.path.join(ROOT, "Makefile")).read()
    recipe = makefile[makefile.index("\nhelp:"):]
    targets = set(re.findall(r'@echo "make ([a-z0-9_-]+)', recipe)) - {"MPI"}
    variables = set(re.findall(r"([A-Z_]+)=", re.search(r'@echo "variables: (.*)"', recipe).group(1)))
    doc = open(os.path.join(ROOT, "docs", "building.md")).read()
    for name in sorted(targets | variables):
        if f"`{name}" not in doc:
            problems.append(f"docs/building.md: `make help` lists {name}, which it does not name")
    return len(targets) + len(variables)


def check_lesson_names_no_benchmark(problems):
    """A lesson's main.c uses nothing of --bench: its descriptor names the
    collective it teaches (COLLECTIVE_*), the driver maps it to a benchmark."""
    for path in MAIN.values():
        for number, line in enumerate(open(os.path.join(ROOT, path)).read().split("\n"), 1):
            code = re.sub(r"/\*.*?\*/|^\s*\*.*", "", line)
            if re.search(r"\b(BENCH_\w+|bench_\w+|run_bench)\b", code):
                problems.append(f"{path}:{number}: the lesson names the benchmark: {line.strip()}")
    return len(MAIN)


GLOSSARY_TERMS = ["CUPTI", "NVLS", "VMM", "lesson", "[fact", "CTA", "LSA team", "LSA barrier", "session", "epoch"]


def check_glossary(problems):
    """README.md's "Words used here" table explains the words the pages
    use without explaining them each time."""
    rows = table(open(os.path.join(ROOT, "README.md")).read(), "word")
    words = " ".join(row[0] for row in rows)
    for term in GLOSSARY_TERMS:
        if term not in words:
            problems.append(f"README.md: the 'word' table does not explain {term}")
    return len(GLOSSARY_TERMS)


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
