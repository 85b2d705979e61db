#!/usr/bin/env python3
"""Where the device API lessons' own kernels (03_allreduce_lsa,
04_allreduce_fast) must print what expected_output.py says: rank counts
and counts, one "NRANKS COUNT" per line.

  properties.py quick|full

full (make test-properties): every rank count from 1 to 8 and, at each,
max(4, n) consecutive counts from BASE, so that the counts take every
remainder modulo 4 (a float4 vector's floats: lesson 04's scalar tail) and
modulo the rank count (where the ranks' slices end).
quick (make test): 5, 6 and 7 ranks (none divides lesson 03's 16 CTAs or
4), one count each, of remainder 1, 2 and 3 modulo 4 (the lessons' other
cases run counts that are multiples of 4 too).

BASE is past one stride of lesson 03's grid (16 CTAs x 512 threads = 8192
floats: a thread's second element is reached) and past one CTA of lesson
04's (8192 floats). Both lessons fill with common/src/verify.c's
pattern_value, at least 1 on every rank, so every rank's part changes
every sum, and each rank checks every element of its result.
"""
import sys

BASE = 8192 + 8  # a multiple of 4: BASE + k has remainder k modulo 4
QUICK = [(5, BASE + 1), (6, BASE + 2), (7, BASE + 3)]


def full():
    points = [(n, BASE + k) for n in range(1, 9) for k in range(max(4, n))]
    for n in range(1, 9):  # what the docstring promises
        counts = [c for m, c in points if m == n]
        assert {c % 4 for c in counts} == set(range(4)) and {c % n for c in counts} == set(range(n)), n
    return points


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ("quick", "full"):
        sys.exit("usage: properties.py quick|full")
    for n, count in QUICK if sys.argv[1] == "quick" else full():
        print(n, count)


if __name__ == "__main__":
    main()
