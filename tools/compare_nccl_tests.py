#!/usr/bin/env python3
"""Side by side: this suite's --bench and NVIDIA's nccl-tests on the same
NCCL, sizes and iteration counts, one table per mode.

  NCCL_TESTS_HOME=dir tools/compare_nccl_tests.py PROGRAM [options]

PROGRAM is ./allreduce_sm or ./allgather_ce (built). The modes and the
nccl-tests flags that match them:
  plain  <->  -R 0        (buffers not registered)
  sym    <->  -R 2        (symmetric windows)
  ce     <->  -R 2 -x 2   (windows and CTA policy ZERO; allgather_ce only)

Each tool runs --repeat times (default 2); a size's time is the median of
its runs and its noise the larger of the two tools' spreads (max - min over
median). The verdict says whether the two differ by more than that noise.

Options: -b -e -f (sizes, as both tools take them), -w (warm-up), -n
(timed iterations), --ranks N (threads: NTHREADS=N, nccl-tests -t N -g 1),
--repeat R, --timeout S (each run; a run that takes longer is reported as
hung). Without a GPU, recorded outputs can be compared instead of runs:
--ours CSV (this bench's --csv file, once per repeat) and --theirs
MODE:FILE (nccl-tests' output, once per mode and repeat).

Exit status: 0, or 2 for a usage error, 1 if nothing could be compared.
"""
import csv
import os
import statistics
import subprocess
import sys
import tempfile

TESTS = {"allreduce_sm": "all_reduce_perf", "allgather_ce": "all_gather_perf"}
MODES = {"allreduce_sm": ["sym", "plain"], "allgather_ce": ["ce", "sym", "plain"]}
FLAGS = {"plain": ["-R", "0"], "sym": ["-R", "2"], "ce": ["-R", "2", "-x", "2"]}


def usage(why):
    sys.stderr.write(f"compare_nccl_tests: {why}\n{__doc__.split(chr(10) + chr(10))[1]}\n")
    sys.exit(2)


def read_ours(path):
    """{mode: {size: time_us}} from this bench's CSV."""
    times = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            try:
                times.setdefault(row["mode"], {})[int(row["size_bytes"])] = float(row["time_us"])
            except (KeyError, ValueError):
                continue  # a row of another kind (the --overlap rows)
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


def run(cmd, env, limit):
    """Output of cmd, or None if it ran past limit seconds or failed."""
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        sys.stderr.write(f"compare_nccl_tests: {' '.join(cmd)} ran past --timeout {limit} s: killed\n")
        return None
    if done.returncode != 0:
        sys.stderr.write(f"compare_nccl_tests: {' '.join(cmd)} exited {done.returncode}:\n{done.stderr[-2000:]}")
        return None
    return done.stdout


def spread(values):
    med = statistics.median(values)
    return (max(values) - min(values)) / med if med > 0 else 0.0


def table(program, ranks, mode, ours, theirs):
    """Prints one mode's table; returns the number of sizes compared."""
    print(f"\n{program}, {ranks} rank(s), mode {mode} <-> nccl-tests {' '.join(FLAGS[mode])}")
    if not ours:
        print("  no result from this bench (hung or failed)")
    if not theirs:
        print("  no result from nccl-tests (hung or failed)")
    sizes = sorted(set.intersection(*(set(r) for r in ours + theirs))) if ours and theirs else []
    if not sizes:
        return 0
    print(f"{'size(B)':>12} {'ours(us)':>10} {'nccl-tests(us)':>15} {'ours/theirs':>12} {'noise':>7}  verdict")
    for size in sizes:
        a = [r[size] for r in ours]
        b = [r[size] for r in theirs]
        mine, ref = statistics.median(a), statistics.median(b)
        ratio = mine / ref if ref > 0 else float("inf")
        differ = f"this bench {abs(ratio - 1) * 100:.1f}% {'slower' if ratio > 1 else 'faster'}"
        if len(a) < 2 or len(b) < 2:  # one run: no spread to judge by
            print(f"{size:>12} {mine:>10.2f} {ref:>15.2f} {ratio:>11.2f}x {'n/a':>7}  {differ}"
                  " (one run each: noise not measured)")
            continue
        noise = max(spread(a), spread(b))
        verdict = "the same within the noise" if abs(ratio - 1) <= noise else differ
        print(f"{size:>12} {mine:>10.2f} {ref:>15.2f} {ratio:>11.2f}x {noise * 100:>6.1f}%  {verdict}")
    return len(sizes)


def main(argv):
    args = {"-b": "1M", "-e": "1G", "-f": "8", "-w": "5", "-n": "20", "--ranks": "1",
            "--repeat": "2", "--timeout": "120"}
    ours_files, theirs_files, program = [], [], None
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
        usage("name the program: ./allreduce_sm or ./allgather_ce")
    name = os.path.basename(program)
    if name not in TESTS:
        usage(f"'{name}' is not allreduce_sm or allgather_ce")
    for key in ("--ranks", "--repeat", "--timeout"):
        if not args[key].isdigit() or int(args[key]) < 1:
            usage(f"{key} takes a whole number from 1, not '{args[key]}'")
    ranks, repeat, limit = int(args["--ranks"]), int(args["--repeat"]), int(args["--timeout"])

    ours = {m: [] for m in MODES[name]}
    theirs = {m: [] for m in MODES[name]}
    if ours_files or theirs_files:  # recorded outputs
        for path in ours_files:
            for mode, times in read_ours(path).items():
                if mode in ours:
                    ours[mode].append(times)
        for mode, path in theirs_files:
            if mode not in theirs:
                usage(f"--theirs {mode}: {name} has the modes {', '.join(MODES[name])}")
            with open(path) as f:
                theirs[mode].append(read_theirs(f.read()))
    else:
        home = os.environ.get("NCCL_TESTS_HOME")
        binary = os.path.join(home or "", "build", TESTS[name])
        if not home or not os.access(binary, os.X_OK):
            usage(f"set NCCL_TESTS_HOME to an nccl-tests build (no {binary})")
        sizes = ["-b", args["-b"], "-e", args["-e"], "-f", args["-f"]]
        env = dict(os.environ, NTHREADS=str(ranks))
        for _ in range(repeat):
            with tempfile.NamedTemporaryFile(suffix=".csv") as tmp:
                cmd = [program, "--bench", *sizes, "-w", args["-w"], "-i", args["-n"], "--csv", tmp.name]
                if run(cmd, env, limit) is not None:
                    for mode, times in read_ours(tmp.name).items():
                        if mode in ours:
                            ours[mode].append(times)
            for mode in MODES[name]:
                cmd = [binary, *sizes, "-w", args["-w"], "-n", args["-n"], "-t", str(ranks), "-g", "1",
                       *FLAGS[mode]]
                out = run(cmd, os.environ, limit)
                if out is not None:
                    theirs[mode].append(read_theirs(out))
    compared = sum(table(name, ranks, m, ours[m], theirs[m]) for m in MODES[name])
    return 0 if compared else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
