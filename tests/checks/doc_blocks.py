#!/usr/bin/env python3
"""The shell blocks of the READMEs and docs: marked, and run as a reader would.

A shell block is a fenced block in sh, bash, shell or console, or any fenced
block with a line that starts with "$ " (a command and what it printed).
The line above its fence says whether the test suite can run it:

  <!-- tested on the simulation -->                       make test runs it
  <!-- tested on the simulation: 8 simulated GPUs -->     ... with 8 GPUs (default 4)
  <!-- tested on the simulation; uses gnuplot -->         ... where gnuplot is installed
  <!-- needs a GPU -->, <!-- needs a cluster -->,   not run here; the text
  <!-- needs ... -->                                after "needs" says why

  doc_blocks.py --check [FILE...]  every shell block is marked (exit 1 if not)
  doc_blocks.py --files       the files with a block tested on the simulation
  doc_blocks.py --needs       the blocks marked as needing something (FILE:LINE, what)
  doc_blocks.py --missing FILE     the commands FILE's runnable blocks need
                              that this machine lacks (mpirun for MPI, and
                              those a mark names: "; uses gnuplot")
  doc_blocks.py --run FILE [--time-limit S]   runs FILE's runnable blocks
                              (exit 1 at the first that fails, or after S s)
  doc_blocks.py --script FILE NEEDS WORK   prints the script that runs
                              FILE's blocks marked <!-- needs NEEDS... -->
                              (tests/slurm.sh runs the Slurm ones)

--run copies the working tree (the files git tracks or would track: what a
fresh clone holds, with uncommitted changes) into a scratch folder, starts
one bash there, at the repository's root, and runs the file's runnable
blocks in it in order, each line as typed, so a `cd` or a build of one line
is what the next one finds. There is no GPU: the builds the blocks make link
the host simulation instead of libcudart and libnccl (make's RUNTIME_LIBS,
LDFLAGS and HAVE_CUPTI come from the environment, as tests/Makefile's
simulated variants set them; CFLAGS=-O0 -g, which compiles faster), with
SIM_DEVICES simulated GPUs. A command
fails its block when it exits non-zero; in a block of "$ " lines, when what
it prints (stdout and stderr) differs from the lines under it. The test
suite itself, when a block starts it (make test, make test-faults, make
test-without-mpi), runs only the cases of NESTED_FILTER unless the line sets
its own TEST_FILTER: the whole suite is what is running this.
"""
import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile

from markdown import ROOT, code_blocks, tracked  # noqa: E402

SHELL_LANGS = ("sh", "bash", "shell", "console")
RUNS = re.compile(r"^<!-- tested on the simulation(?:: (\d+) simulated GPUs?)?(?:; uses ([\w, -]+))? -->$")
NEEDS = re.compile(r"^<!-- needs (\S.*?) -->$")
DEFAULT_GPUS = 4
# One case of the suite and one cell of the fault matrix: what the suite
# runs when a doc block starts it without a TEST_FILTER of its own. The
# case runs the simulated build with CUPTI, which tools/simulate.sh uses
# too, so that the copy builds it once.
NESTED_FILTER = r"^(cupti/pthread/allreduce_sm-1-local-copy|fault-matrix/pthread/allreduce_sm/lesson/cudaSetDevice-fails-on-rank-0-of-1)$"
TIME_LIMIT = 300  # seconds for one file's blocks
FIXTURES = "tests/data/"  # the cases of this file's own checks
SIM_OBJECT = os.path.join(ROOT, "tests", "build", "sim-pthread", "sim.o")


def documents():
    """The Markdown files whose blocks must be marked: all but the test
    suite's own inputs (tests/data)."""
    return [d for d in tracked("*.md") if not d.startswith(FIXTURES)]


def shell_blocks(doc):
    """Yields (block, mark) for each shell block of doc; mark is ("runs",
    gpus), ("needs", what) or None (unmarked)."""
    with open(os.path.join(ROOT, doc)) as f:
        text = f.read()
    for block in code_blocks(text):
        transcript = any(l.startswith("$ ") for l in block.lines)
        if block.lang not in SHELL_LANGS and not transcript:
            continue
        before = block.before.strip()
        runs, needs = RUNS.match(before), NEEDS.match(before)
        if runs:
            uses = [c.strip() for c in (runs.group(2) or "").split(",") if c.strip()]
            mark = ("runs", int(runs.group(1) or DEFAULT_GPUS), uses)
        elif needs:
            mark = ("needs", needs.group(1))
        else:
            mark = None
        yield block, mark


# A fixed path in /tmp: on a machine shared by several users the first
# one's file is in every other's way (a folder from mktemp, or a path in
# the checkout, is each user's own).
FIXED_TMP = re.compile(r"(?<![\w$}])/tmp/")


def check(docs):
    problems, marked, unmarked = [], 0, 0
    for doc in docs:
        for block, mark in shell_blocks(doc):
            if mark is None:
                problems.append(f"{doc}:{block.line}: shell block without a mark on the line above its fence:"
                                " <!-- tested on the simulation --> or <!-- needs a GPU --> (tests/checks/doc_blocks.py)")
                unmarked += 1
            else:
                marked += 1
            for i, line in enumerate(block.lines):
                if FIXED_TMP.search(line):
                    problems.append(f"{doc}:{block.line + 1 + i}: a fixed path in /tmp, in every other user's way"
                                    " on a shared machine: use a folder from mktemp or a path in the checkout")
    for p in problems:
        print(p)
    print(f"doc_blocks: {marked} shell blocks marked, {unmarked} unmarked,"
          f" {len(problems) - unmarked} fixed paths in /tmp")
    return 1 if problems or marked == 0 else 0


def runnable(doc):
    """doc's blocks that run without a GPU: (block, simulated GPUs, the
    commands the mark says it uses)."""
    return [(b, m[1], m[2]) for b, m in shell_blocks(doc) if m and m[0] == "runs"]


def missing(doc):
    """The commands doc's runnable blocks need that this machine lacks:
    mpirun where they use MPI, and those their marks name. With
    DOC_BLOCKS_NO_MPI=1 (the suite found that Open MPI cannot run 2 ranks
    here) mpirun counts as lacking too."""
    need = []
    for block, _, uses in runnable(doc):
        if re.search(r"\bmpirun\b|\bMPI=1\b", "\n".join(block.lines)):
            need += ["mpirun", "mpicc"]
        need += uses
    no_mpi = os.environ.get("DOC_BLOCKS_NO_MPI") == "1"
    return sorted({c for c in need if shutil.which(c) is None or (no_mpi and c == "mpirun")})


HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")


def commands(lines):
    """Groups a block's lines into commands: a line ending in a backslash
    goes on with the next, and a here-document (<<'EOF') runs to the line
    that ends it. Yields (index of the first line, text, whether it has a
    here-document: its input is that, not /dev/null)."""
    i = 0
    while i < len(lines):
        start, text = i, lines[i]
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text += "\n" + lines[i]
        here = HEREDOC.search(text)
        if here:
            while i + 1 < len(lines) and lines[i].strip() != here.group(2):
                i += 1
                text += "\n" + lines[i]
        yield start, text, bool(here)
        i += 1


def needing(doc, what):
    """doc's blocks whose mark says they need something starting with what
    (such as "Slurm"), in the form runnable gives (no simulated GPU count:
    whatever runs them sets it)."""
    return [(b, None, []) for b, m in shell_blocks(doc) if m and m[0] == "needs" and m[1].startswith(what)]


def script(doc, work, blocks=None):
    """The bash script that runs doc's runnable blocks (or these blocks) in
    order."""
    out = ["doc_fail() { echo \"doc_blocks: $1: exit status $2\" >&2; exit 1; }",
           "cd \"$DOC_REPO\" || exit 1"]
    for block, gpus, _ in runnable(doc) if blocks is None else blocks:
        if gpus is not None:
            out.append(f"export SIM_DEVICES={gpus}")
        lines = block.lines
        transcript = any(l.startswith("$ ") for l in lines)
        for start, text, here in commands(lines):
            where = f"{doc}:{block.line + 1 + start}"
            if transcript:
                if not text.startswith("$ "):
                    continue  # printed by the command above
                cmd = text[2:]
                want = []
                for l in lines[start + 1:]:
                    if l.startswith("$ "):
                        break
                    want.append(l.rstrip())
                stem = os.path.join(work, f"line{block.line + 1 + start}")
                with open(stem + ".want", "w") as f:
                    f.write("\n".join(want) + "\n")
                out += [f"echo {shlex.quote('+ ' + where + ': ' + cmd)}",
                        "{ " + cmd, f"}} >{shlex.quote(stem + '.got')} 2>&1 </dev/null",
                        f"sed -i 's/[[:space:]]*$//' {shlex.quote(stem + '.got')}",
                        f"diff -u {shlex.quote(stem + '.want')} {shlex.quote(stem + '.got')} ||"
                        f" {{ echo {shlex.quote('doc_blocks: ' + where + ': the output differs from the block (- block, + printed)')} >&2; exit 1; }}"]
            elif text.strip() and not text.lstrip().startswith("#"):
                out += [f"echo {shlex.quote('+ ' + where + ': ' + text.split(chr(10))[0])}",
                        text if here else text + " </dev/null",
                        f"doc_status=$?; [ $doc_status = 0 ] || doc_fail {shlex.quote(where)} $doc_status"]
    out.append("echo \"doc_blocks: every block ran\"")
    return "\n".join(out) + "\n"


def copy_tree(dest):
    """Copies the working tree's files (those git tracks or would track)
    into dest. Outside a git checkout: every file but build folders, then
    `make clean` there removes what a build left (the programs)."""
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True)
    in_git = listed.returncode == 0 and listed.stdout
    if in_git:
        files = [p for p in listed.stdout.split("\0") if p and os.path.isfile(os.path.join(ROOT, p))]
    else:
        files = tracked("*")
    for p in files:
        os.makedirs(os.path.join(dest, os.path.dirname(p)), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, p), os.path.join(dest, p))
    if not in_git:
        print("doc_blocks: not a git checkout: copied every file but build folders, then make clean")
        subprocess.run(["make", "-s", "clean"], cwd=dest, stdout=subprocess.DEVNULL, check=True)


def run(doc, time_limit):
    if not runnable(doc):
        print(f"doc_blocks: {doc} has no block marked <!-- tested on the simulation -->", file=sys.stderr)
        return 1
    if not os.path.exists(SIM_OBJECT):
        print(f"doc_blocks: the simulation is not built ({SIM_OBJECT}): make -C tests programs-sim-pthread",
              file=sys.stderr)
        return 1
    work = tempfile.mkdtemp(prefix="doc-blocks.")
    try:
        repo = os.path.join(work, "repo")
        copy_tree(repo)
        os.makedirs(os.path.join(work, "sim"))
        env = dict(os.environ,
                   DOC_REPO=repo,
                   RUNTIME_LIBS=SIM_OBJECT,
                   LDFLAGS="-Wl,--wrap=set_error_rank",  # as tests/Makefile's SIM_WRAP
                   HAVE_CUPTI="0",
                   # unoptimised: the commands are what is checked, and the
                   # suite's own builds compile with optimisation
                   CFLAGS="-O0 -g",
                   SIM_DIR=os.path.join(work, "sim"),
                   TEST_FILTER=NESTED_FILTER,
                   # mpirun -np 4 on a machine with fewer cores
                   OMPI_MCA_rmaps_base_oversubscribe="1")
        if os.geteuid() == 0:  # as the suite does (tests/lib/programs.sh)
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        for v in ("TEST_LOGS", "TEST_LIST", "MAKEFLAGS", "MAKELEVEL", "MFLAGS", "SUITE_ROOT"):
            env.pop(v, None)
        path = os.path.join(work, "blocks.sh")
        with open(path, "w") as f:
            f.write(script(doc, work))
        proc = subprocess.Popen(["bash", path], env=env, cwd=repo, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            output, _ = proc.communicate(timeout=time_limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
            last = [l for l in output.split("\n") if l.startswith("+ ")]
            sys.stdout.write(output)
            print(f"doc_blocks: {last[-1][2:] if last else doc}: had not finished after {time_limit} s",
                  file=sys.stderr)
            return 1
        sys.stdout.write(output)
        if proc.returncode != 0:
            # The end of the output on stderr too: the suite shows it.
            tail = [l for l in output.split("\n") if l and not l.startswith("  CC")][-8:]
            print("\n".join(tail), file=sys.stderr)
            if not any(l.startswith("doc_blocks: ") for l in tail):
                print(f"doc_blocks: {doc}: bash exited {proc.returncode}", file=sys.stderr)
            return 1
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv):
    ap = argparse.ArgumentParser(description="The shell blocks of the READMEs and docs (see the module's text).")
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--check", nargs="*", metavar="FILE",
                      help="every shell block of these files (default: all but tests/data's) is marked")
    what.add_argument("--files", action="store_true", help="the files with a block tested on the simulation")
    what.add_argument("--needs", action="store_true",
                      help="the blocks marked as needing something: FILE:LINE, a tab, what they need")
    what.add_argument("--missing", metavar="FILE",
                      help="the commands FILE's runnable blocks need that are not installed (mpirun, gnuplot, ...)")
    what.add_argument("--run", metavar="FILE", help="run FILE's runnable blocks in order")
    what.add_argument("--script", nargs=3, metavar=("FILE", "NEEDS", "WORK"),
                      help="print the bash script that runs FILE's blocks marked as needing NEEDS... (such as"
                           " Slurm) in the folder $DOC_REPO, keeping its scratch files in WORK")
    ap.add_argument("--time-limit", type=int, default=TIME_LIMIT, metavar="S",
                    help=f"with --run: end the blocks after S seconds (default {TIME_LIMIT})")
    a = ap.parse_args(argv)
    if a.check is not None:
        return check(a.check or documents())
    if a.files:
        print("\n".join(d for d in documents() if runnable(d)))
        return 0
    if a.needs:
        for doc in documents():
            for block, mark in shell_blocks(doc):
                if mark and mark[0] == "needs":
                    print(f"{doc}:{block.line}\t{mark[1]}")
        return 0
    if a.missing:
        print(" ".join(missing(a.missing)))
        return 0
    if a.script:
        doc, what, work = a.script
        blocks = needing(doc, what)
        if not blocks:
            print(f"doc_blocks: {doc} has no block marked <!-- needs {what}... -->", file=sys.stderr)
            return 1
        sys.stdout.write(script(doc, work, blocks))
        return 0
    return run(a.run, a.time_limit)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
