#!/usr/bin/env python3
"""Side by side: this suite's --bench and NVIDIA's nccl-tests on the same
NCCL, sizes and iteration counts, one table per mode.

  NCCL_TESTS_HOME=dir tools/compare_nccl_tests.py PROGRAM [options]

PROGRAM is ./allreduce_sm, ./allgather_ce, ./allreduce_lsa or
./allreduce_fast (built). The modes and the nccl-tests flags that match
them:
  plain  <->  -R 0        (buffers not registered)
  sym    <->  -R 2        (symmetric windows)
  ce     <->  -R 2 -x 2   (windows and CTA policy ZERO; allgather_ce only)
  lsa    <->  -R 2 -D 1   (allreduce_lsa's kernel; nccl-tests' LSA kernel)
  vec, grid, 1shot, 2shot, fast  <->  -R 2 -D 2   (allreduce_fast's stages;
                          nccl-tests' vectorized LSA kernel)
nccl-tests moves its buffers each iteration (its buffers hold -e, and
iteration k works on part k mod P of them): this bench runs with --cold,
which does the same. nccl-tests runs once per distinct set of flags.

Each tool runs --repeat times (default 2); a size's time is the median of
its runs and its noise the larger of the two tools' spreads (max - min over
median). The verdict says whether the two differ by more than that noise.

With --graph N, each mode is compared launch-free too, as MODE-graph:
this bench's --graph times (each loop one CUDA graph replay) against
nccl-tests -G N (its -n operations captured into one graph, replayed N
times: the first replay, which uploads the graph, is timed with the rest).

Options: -b -e -f (sizes, as both tools take them), -w (warm-up), -n
(timed iterations), --ranks N (threads: NTHREADS=N, nccl-tests -t N -g 1),
--graph N (also compare graph replays, above),
--repeat R, --timeout S (each run; a run that takes longer is reported as
hung, and that tool's mode is not run again), --keep DIR (every run's
output, and this bench's CSV, kept there), --theirs-args "ARGS" (more nccl-tests options, e.g.
"-c 0"), --ours-args "ARGS" (more options for this bench, e.g. "-r 1").
Both tools get the caller's environment (NCCL_* variables included), and
the tables' heading names the NCCL each loaded.
Without a GPU, recorded outputs can be compared instead of runs:
--ours CSV (this bench's --csv file, once per repeat) and --theirs
MODE:FILE (nccl-tests' output, once per mode and repeat).

Exit status: 0, or 2 for a usage error, 1 if nothing could be compared.
"""
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

TESTS = {"allreduce_sm": "all_reduce_perf", "allgather_ce": "all_gather_perf",
         "allreduce_lsa": "all_reduce_perf", "allreduce_fast": "all_reduce_perf"}
FAST_STAGES = ["vec", "grid", "1shot", "2shot", "fast"]
MODES = {"allreduce_sm": ["sym", "plain"], "allgather_ce": ["ce", "sym", "plain"],
         "allreduce_lsa": ["lsa", "sym", "plain"], "allreduce_fast": FAST_STAGES + ["sym", "plain"]}
FLAGS = {"plain": ["-R", "0"], "sym": ["-R", "2"], "ce": ["-R", "2", "-x", "2"],
         "lsa": ["-R", "2", "-D", "1"], **{m: ["-R", "2", "-D", "2"] for m in FAST_STAGES}}


def usage(why):
    sys.stderr.write(f"compare_nccl_tests: {why}\n{__doc__.split(chr(10) + chr(10))[1]}\n")
    sys.exit(2)


def read_ours(path, in_l2):
    """{mode: {size: time_us}} from this bench's CSV, and {MODE-graph:
    {size: graph_time_us}} where it has graph times; adds to the set in_l2
    the sizes it marks as fitting in the L2 cache."""
    times = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            try:
                times.setdefault(row["mode"], {})[int(row["size_bytes"])] = float(row["time_us"])
            except (KeyError, ValueError):
                continue  # a row of another kind (the --overlap rows)
            if row.get("graph_time_us"):
                times.setdefault(row["mode"] + "-graph", {})[int(row["size_bytes"])] = float(row["graph_time_us"])
            if row.get("in_l2") == "L2":
                in_l2.add(int(row["size_bytes"]))
    return times


def read_theirs(text):
    """{size: out-of-place time_us} from nccl-tests' output: the data lines
    are 'size count type redop root time algbw busbw #wrong ...'."""
    times = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 9 or line.lstrip().startswith("#"):
            continue
        try:
            times[int(fields[0])] = float(fields[5])
        except ValueError:
            continue
    return times


def run(cmd, env, limit, keep, rows=None):
    """(output, None) for a run that succeeded, else (None, why): it ran
    past limit seconds (hung; rows, if given, reads the sizes it finished
    from its output, for the why) or exited non-zero. keep: a file for the
    output (stdout, then stderr), or None."""
    why = None
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=limit)
        out, err = done.stdout, done.stderr
        if done.returncode != 0:
            why = f"exited {done.returncode}"
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        why = f"hung: ran past --timeout {limit} s, killed"
        done_rows = rows(out) if rows else {}
        if done_rows:
            why += f" after its {max(done_rows)} B row"
    if keep:
        with open(keep, "w") as f:
            f.write(f"$ {' '.join(cmd)}\n{out}{err}")
    if why:
        sys.stderr.write(f"compare_nccl_tests: {' '.join(cmd)}: {why}\n{err[-2000:] if 'exited' in why else ''}")
        return None, why
    return out, None


def loaded_nccl(text, ours):
    """The NCCL a run loaded, as its output says: this bench's
    '# NCCL 2.30.7 loaded ...', nccl-tests' '... nccl-library=23007'."""
    pattern = r"^# NCCL (\S+) loaded" if ours else r"nccl-library=(\d+)"
    found = re.search(pattern, text, re.M)
    if not found:
        return None
    if ours:
        return found.group(1)
    code = int(found.group(1))  # NCCL_VERSION_CODE: major*10000 + minor*100 + patch
    return f"{code // 10000}.{code // 100 % 100}.{code % 100}"


def spread(values):
    med = statistics.median(values)
    return (max(values) - min(values)) / med if med > 0 else 0.0


def flags(mode, graphs):
    """nccl-tests' flags for a mode (MODE-graph: the mode's, and -G)."""
    if mode.endswith("-graph"):
        return FLAGS[mode[:-len("-graph")]] + ["-G", graphs]
    return FLAGS[mode]


def table(program, ranks, mode, ours, theirs, failed, in_l2, graphs):
    """Prints one mode's table; returns the number of sizes compared.
    failed: {"this bench"/"nccl-tests": [why, ...]} for runs without a result."""
    print(f"\n{program}, {ranks} rank(s), mode {mode} <-> nccl-tests {' '.join(flags(mode, graphs))}")
    for tool, got in (("this bench", ours), ("nccl-tests", theirs)):
        whys = failed.get(tool, [])
        if whys:
            print(f"  {tool}: {len(whys)} run(s) without a result: {'; '.join(sorted(set(whys)))}")
        if not got and not whys:
            print(f"  no result from {tool}")
    sizes = sorted(set.intersection(*(set(r) for r in ours + theirs))) if ours and theirs else []
    if not sizes:
        return 0
    print(f"{'size(B)':>12} {'L2':>2} {'ours(us)':>10} {'nccl-tests(us)':>15} {'ours/theirs':>12} {'noise':>7}  verdict")
    for size in sizes:
        l2 = "L2" if size in in_l2 else ""
        a = [r[size] for r in ours]
        b = [r[size] for r in theirs]
        mine, ref = statistics.median(a), statistics.median(b)
        ratio = mine / ref if ref > 0 else float("inf")
        differ = f"this bench {abs(ratio - 1) * 100:.1f}% {'slower' if ratio > 1 else 'faster'}"
        if len(a) < 2 or len(b) < 2:  # one run: no spread to judge by
            print(f"{size:>12} {l2:>2} {mine:>10.2f} {ref:>15.2f} {ratio:>11.2f}x {'n/a':>7}  {differ}"
                  " (one run each: noise not measured)")
            continue
        noise = max(spread(a), spread(b))
        verdict = "the same within the noise" if abs(ratio - 1) <= noise else differ
        print(f"{size:>12} {l2:>2} {mine:>10.2f} {ref:>15.2f} {ratio:>11.2f}x {noise * 100:>6.1f}%  {verdict}")
    return len(sizes)


def main(argv):
    args = {"-b": "1M", "-e": "1G", "-f": "8", "-w": "5", "-n": "20", "--ranks": "1",
            "--repeat": "2", "--timeout": "120", "--keep": "", "--theirs-args": "", "--ours-args": "",
            "--graph": ""}
    ours_files, theirs_files, program = [], [], None
    if "-h" in argv or "--help" in argv:
        print(__doc__.strip())
        return 0
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in args and i + 1 < len(argv):
            args[a] = argv[i + 1]
            i += 2
        elif a == "--ours" and i + 1 < len(argv):
            ours_files.append(argv[i + 1])
            i += 2
        elif a == "--theirs" and i + 1 < len(argv) and ":" in argv[i + 1]:
            theirs_files.append(argv[i + 1].split(":", 1))
            i += 2
        elif not a.startswith("-") and program is None:
            program = a
            i += 1
        else:
            usage(f"unknown or incomplete argument '{a}'")
    if program is None:
        usage("name the program: ./allreduce_sm, ./allgather_ce, ./allreduce_lsa or ./allreduce_fast")
    name = os.path.basename(program)
    if name not in TESTS:
        usage(f"'{name}' is not allreduce_sm, allgather_ce, allreduce_lsa or allreduce_fast")
    for key in ("--ranks", "--repeat", "--timeout"):
        if not args[key].isdigit() or int(args[key]) < 1:
            usage(f"{key} takes a whole number from 1, not '{args[key]}'")
    graphs = args["--graph"]
    if graphs and (not graphs.isdigit() or int(graphs) < 1):
        usage(f"--graph takes a whole number from 1 (nccl-tests' -G), not '{graphs}'")
    ranks, repeat, limit, keep = int(args["--ranks"]), int(args["--repeat"]), int(args["--timeout"]), args["--keep"]
    if keep:
        os.makedirs(keep, exist_ok=True)

    modes = MODES[name] + ([m + "-graph" for m in MODES[name]] if graphs else [])
    ours = {m: [] for m in modes}
    theirs = {m: [] for m in modes}
    failed = {m: {} for m in modes}  # mode -> tool -> [why, ...]
    loaded = {}  # tool -> the NCCL versions its runs loaded
    in_l2 = set()  # sizes this bench marks as fitting in the L2 cache
    if ours_files or theirs_files:  # recorded outputs
        for path in ours_files:
            for mode, times in read_ours(path, in_l2).items():
                if mode in ours:
                    ours[mode].append(times)
        for mode, path in theirs_files:
            if mode not in theirs:
                usage(f"--theirs {mode}: {name} has the modes {', '.join(modes)}"
                      f"{'' if graphs else ' (MODE-graph with --graph)'}")
            with open(path) as f:
                text = f.read()
            theirs[mode].append(read_theirs(text))
            loaded.setdefault("nccl-tests", set()).add(loaded_nccl(text, ours=False) or "not said")
    else:
        home = os.environ.get("NCCL_TESTS_HOME")
        binary = os.path.join(home or "", "build", TESTS[name])
        if not home or not os.access(binary, os.X_OK):
            usage(f"set NCCL_TESTS_HOME to an nccl-tests build (no {binary})")
        sizes = ["-b", args["-b"], "-e", args["-e"], "-f", args["-f"]]
        env = dict(os.environ, NTHREADS=str(ranks))
        hung = set()  # (tool, mode) that ran past --timeout: not run again

        def attempt(tool, mode, cmd, env, kept, rows=None):
            """Runs cmd unless it hung before; its output, or None with
            the why recorded for every mode it stands for."""
            out, why = None, "not run again after it hung"
            if (tool, mode) not in hung:
                out, why = run(cmd, env, limit, keep and os.path.join(keep, kept), rows)
            if out is None:
                if why.startswith("hung"):
                    hung.add((tool, mode))
                for m in ([mode] if mode else modes):
                    failed[m].setdefault(tool, []).append(why)
                return None
            loaded.setdefault(tool, set()).add(loaded_nccl(out, ours=tool == "this bench") or "not said")
            return out

        for k in range(1, repeat + 1):
            with tempfile.NamedTemporaryFile(suffix=".csv") as tmp:
                cmd = [program, "--bench", *sizes, "-w", args["-w"], "-i", args["-n"], "--csv", tmp.name,
                       "--cold", *(["--graph"] if graphs else []), *args["--ours-args"].split()]
                if attempt("this bench", None, cmd, env, f"{name}-{k}.txt") is not None:
                    if keep:
                        shutil.copyfile(tmp.name, os.path.join(keep, f"{name}-{k}.csv"))
                    for mode, times in read_ours(tmp.name, in_l2).items():
                        if mode in ours:
                            ours[mode].append(times)
            runs = {}  # nccl-tests' flags -> its times this repeat (None: failed)
            for mode in modes:
                key = tuple(flags(mode, graphs))
                if key not in runs:
                    cmd = [binary, *sizes, "-w", args["-w"], "-n", args["-n"], "-t", str(ranks), "-g", "1",
                           *key, *args["--theirs-args"].split()]
                    out = attempt("nccl-tests", mode, cmd, os.environ, f"{TESTS[name]}-{mode}-{k}.txt",
                                  read_theirs)
                    runs[key] = read_theirs(out) if out is not None else None
                elif runs[key] is None:
                    failed[mode].setdefault("nccl-tests", []).append(
                        f"its run with {' '.join(key)} failed (mode {next(m for m in modes if tuple(flags(m, graphs)) == key)})")
                if runs[key] is not None:
                    theirs[mode].append(runs[key])
    if loaded:
        print("NCCL loaded: " + "; ".join(f"{tool} {', '.join(sorted(v))}" for tool, v in sorted(loaded.items())))
    if in_l2:
        print("L2: this bench marks the size as fitting in the GPU's L2 cache (its times are the cache's)")
    compared = sum(table(name, ranks, m, ours[m], theirs[m], failed[m], in_l2, graphs) for m in modes)
    return 0 if compared else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
