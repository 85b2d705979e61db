#!/usr/bin/env python3
"""Checks that the READMEs say what the code does.

- A code block after `<!-- expected-output PROGRAM N -->` must equal what
  PROGRAM prints on N ranks and N visible GPUs (run against the simulation).
- Every ```c block must appear in the sources: its lines, stripped of leading
  blanks, contiguous and in order; a line `/* ... */` skips any lines.
- A documented error line `PROG: rank R: main.c:LINE: CALL failed` must name
  a LINE of PROG's main.c that holds CALL.
Prints one line per problem; exits 1 if there is any.
"""
import difflib
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIM = os.path.join(ROOT, "tests", "build", "sim-pthread")
MAIN = {"allreduce_sm": "01_allreduce/c/main.c", "allgather_ce": "02_allgather/c/main.c"}


def tracked(pattern):
    """The repository's files matching pattern ("*.md"): git's list in a
    checkout, else every such file outside build folders."""
    out = subprocess.run(["git", "ls-files", pattern], cwd=ROOT, capture_output=True, text=True)
    if out.returncode == 0 and out.stdout.strip():
        # A copy of the tree whose git index is older may list removed files.
        return [p for p in out.stdout.split() if os.path.exists(os.path.join(ROOT, p))]
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("build", "gpu-logs")]
        found += [os.path.relpath(os.path.join(folder, f), ROOT) for f in files if f.endswith(pattern[1:])]
    return sorted(found)


def code_blocks(text):
    """Yields (language, lines, the line before the opening fence)."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if m:
            start = i + 1
            i = start
            while i < len(lines) and lines[i].rstrip() != "```":
                i += 1
            before = lines[start - 2] if start >= 2 else ""
            yield m.group(1), lines[start:i], before
        i += 1


def run_sim(program, nranks):
    if not os.path.exists(os.path.join(SIM, program)):
        return [f"(not built: {SIM}/{program}; run make -C tests first)"]
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, SIM_DIR=tmp, SIM_DEVICES=str(nranks), NTHREADS=str(nranks))
        out = subprocess.run([os.path.join(SIM, program)], env=env, capture_output=True, text=True, timeout=60)
    return out.stdout.rstrip("\n").split("\n")


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


def main():
    problems = []
    sources = {p: [l.strip() for l in open(os.path.join(ROOT, p)).read().split("\n")]
               for p in tracked("*.c") + tracked("*.h")}
    main_lines = {prog: open(os.path.join(ROOT, path)).read().split("\n") for prog, path in MAIN.items()}
    checked = 0
    for doc in tracked("*.md"):
        text = open(os.path.join(ROOT, doc)).read()
        for lang, lines, before in code_blocks(text):
            m = re.match(r"<!-- expected-output (\S+) (\d+) -->", before.strip())
            if m:
                checked += 1
                got = run_sim(m.group(1), int(m.group(2)))
                if got != lines:
                    problems.append(f"{doc}: expected output of {m.group(1)} on {m.group(2)} ranks differs from the program's:")
                    problems += [f"  {line}" for line in difflib.unified_diff(
                        lines, got, "README", "program", lineterm="", n=1)]
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
                e = re.match(r"^(\w+): rank \d+: main\.c:(\d+): (.*?) failed", l)
                if e:
                    checked += 1
                    prog, num, call = e.group(1), int(e.group(2)), e.group(3)
                    src = main_lines.get(prog, [])
                    if num > len(src) or call.split("(")[0] not in src[num - 1]:
                        problems.append(f"{doc}: '{prog} main.c:{num}' does not hold {call}")
    for p in problems:
        print(p)
    print(f"check_docs: {checked} checks, {len(problems)} problems")
    return 1 if problems or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
