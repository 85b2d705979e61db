#!/usr/bin/env python3
"""Checks a --bench CSV against the definitions, not against its own
columns: every derived number is recomputed from the raw time and size of
its row, as nccl-tests defines them (its doc/PERFORMANCE.md):

  algbw    = size_bytes / time            (GB/s: bytes / us / 1e3)
  busbw    = algbw * 2(n-1)/n              AllReduce (allreduce_sm)
           = algbw * (n-1)/n               AllGather (allgather_ce), whose
                                           size_bytes is the whole result
  count    = size_bytes / 4                AllReduce
           = size_bytes / 4 / n            AllGather (per rank)
  spread   = 100 (time_max - time_min) / time      (%)
  loops    time, time_min, time_max: the median, fastest and slowest of the
           loop times listed in loops_us; cv = 100 * sample standard
           deviation / mean of those (%), empty for one loop
  graph    the same four for graph_loops_us (--graph), or all empty
  %roof    = 100 * (n = 1 ? algbw : busbw * ranks per GPU) / roof
  L2       when every buffer the size touches on one GPU fits in the L2
           cache: ranks per GPU * (send + receive bytes) <= L2, or the
           roof's copy, 2 * size_bytes <= L2
  speedup  = time of `plain` / time of the mode, same size
  ~        (speedup_in_noise) when the mode's [min, max] and plain's meet

Usage: bench_oracle.py CSV --gpus G [--l2 BYTES]; prints one line per
problem and exits 1 if there is any.
"""
import argparse
import csv
import statistics
import sys

BUS = {"allreduce_sm": lambda n: 2 * (n - 1) / n, "allgather_ce": lambda n: (n - 1) / n}


def close(got, want, decimals=3):
    """The CSV prints 3 decimals (2 for %): equal up to that rounding,
    plus the rounding of the time it was recomputed from."""
    return abs(got - want) <= 0.6 * 10 ** -decimals + 2e-3 * abs(want)


def loop_problems(r, prefix, where):
    """The loop statistics of one row (prefix "" or "graph_") against the
    loop times it lists."""
    listed = r.get(prefix + "loops_us", "")
    names = [prefix + n for n in ("time_us", "time_min_us", "time_max_us", "cv_pct")]
    if listed == "":
        if prefix and any(r.get(n, "") != "" for n in names):
            return [f"{where}: {prefix}loops_us is empty but the {prefix} times are not"]
        return []
    times = [float(t) for t in listed.split(";")]
    want = {names[0]: statistics.median(times), names[1]: min(times), names[2]: max(times),
            names[3]: (100 * statistics.stdev(times) / statistics.mean(times)
                       if len(times) > 1 else None)}
    problems = []
    for name, value in want.items():
        got = r.get(name, "")
        if value is None:
            if got != "":
                problems.append(f"{where}: {name} is {got}, the definition gives none (one loop)")
        elif got == "" or not close(float(got), value, 2 if name.endswith("_pct") else 3):
            problems.append(f"{where}: {name} is {got or 'empty'}, the definition gives {value:.4f}")
    return problems


def check(path, gpus, l2):
    problems = []
    rows = list(csv.DictReader(open(path, newline="")))
    plain = {r["size_bytes"]: r for r in rows if r["mode"] == "plain"}
    for num, r in enumerate(rows, 2):
        if r["mode"].endswith("+gemm") or not r["time_min_us"]:
            continue  # --overlap's rows: times beside an SGEMM, nothing derived
        where = f"{path}:{num} ({r['mode']}, {r['size_bytes']} B)"
        problems += loop_problems(r, "", where) + loop_problems(r, "graph_", where)
        prog, n = r["program"], int(r["ranks"])
        size, t = int(r["size_bytes"]), float(r["time_us"])
        t_min, t_max = float(r["time_min_us"]), float(r["time_max_us"])
        per_gpu = -(-n // gpus)
        count = size // 4 if prog == "allreduce_sm" else size // 4 // n
        send = count * 4
        algbw = size / t / 1e3
        busbw = algbw * BUS[prog](n)
        roof = float(r["roof_GBps"])
        want = {
            "count": count,
            "algbw_GBps": algbw,
            "busbw_GBps": busbw,
            "spread_pct": 100 * (t_max - t_min) / t,
            "pct_roof": 100 * (algbw if n == 1 else busbw * per_gpu) / roof if roof > 0 else 0,
        }
        for col, value in want.items():
            ok = close(float(r[col]), value, 2 if col.endswith("_pct") or col == "pct_roof" else 3)
            if col == "pct_roof" and roof > 0:  # the CSV's roof is rounded to 3 decimals too
                ok = abs(float(r[col]) - value) <= 0.006 + abs(value) * (2e-3 + 0.0005 / roof)
            if not ok:
                problems.append(f"{where}: {col} is {r[col]}, the definition gives {value:.4f}")
        in_l2 = per_gpu * (send + size) <= l2 or 2 * size <= l2
        if (r["in_l2"] == "L2") != in_l2:
            problems.append(f"{where}: in_l2 is '{r['in_l2']}', the definition gives"
                            f" {'L2' if in_l2 else 'nothing'} ({per_gpu} rank(s) per GPU, L2 {l2} B)")
        base = plain.get(r["size_bytes"])
        if base is not None:
            b, b_min, b_max = float(base["time_us"]), float(base["time_min_us"]), float(base["time_max_us"])
            if not close(float(r["speedup_vs_plain"]), b / t):
                problems.append(f"{where}: speedup_vs_plain is {r['speedup_vs_plain']},"
                                f" the definition gives {b / t:.4f}")
            noise = "1" if t_min <= b_max and b_min <= t_max else "0"
            if r["speedup_in_noise"] != noise:
                problems.append(f"{where}: speedup_in_noise is {r['speedup_in_noise']},"
                                f" the definition gives {noise}")
    if not rows:
        problems.append(f"{path}: no rows")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--gpus", type=int, required=True, help="GPUs the ranks ran on")
    ap.add_argument("--l2", type=int, default=50 << 20, help="the L2 cache's bytes")
    a = ap.parse_args()
    problems = check(a.csv, a.gpus, a.l2)
    for p in problems:
        print(p)
    print(f"bench_oracle: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
