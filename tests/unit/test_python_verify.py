"""The Python variants' verification without a GPU: numpy arrays stand in
for the results copied back from the GPU, and a stand-in for the job's
ranks collects what rank 0 would print. Each expected line is written out
from the definition: AllReduce of ranks' values 0..n-1 gives n(n-1)/2 in
every element; AllGather's segment r holds r."""
import math

import numpy

from expect import expect, finish
import example_utils as ex  # noqa: E402 (common/python, put on the path by expect)


class Ranks:
    """One rank of `size`; the others' verdicts are `others_ok`."""
    def __init__(self, rank, size, others_ok=True):
        self.rank, self.size, self.others_ok = rank, size, others_ok
        self.printed = []

    def print_root(self, text):
        self.printed.append(text)

    def all_ranks_print(self, text):
        if text:
            self.printed.append(text)

    def all_ok(self, ok):
        return ok and self.others_ok


# AllReduce (sum) over 4 ranks of values 0, 1, 2, 3: 6 everywhere.
good = numpy.full(1000, 6.0, dtype=numpy.float32)
r = Ranks(0, 4)
expect(ex.verify_allreduce(r, good, 6.0) is True, "a right AllReduce passes")
expect(r.printed == ["Verification - Expected: 6.0, Got: 6.0", "Results verified correctly"], f"{r.printed}")

for bad_value, shown in [(math.nan, "nan"), (5.0, "5.0"), (6.01, "6.0")]:
    wrong = good.copy()
    wrong[417] = bad_value
    r = Ranks(2, 4)
    ok = ex.verify_allreduce(r, wrong, 6.0)
    want = f"  Rank 2: 1 of 1000 elements wrong; first at index 417: Expected 6.0, Got {shown}"
    expect(ok is False and want in r.printed and r.printed[-1] == "Results verification failed",
           f"element 417 = {bad_value}: {ok} {r.printed}")

near = good.copy()
near[3] = 6.0 + ex.TOLERANCE / 2  # within the tolerance: right
expect(ex.verify_allreduce(Ranks(0, 4), near, 6.0) is True, "a difference within the tolerance passes")
expect(ex.verify_allreduce(Ranks(0, 4, others_ok=False), good, 6.0) is False, "another rank's failure fails the job")

# AllGather over 3 ranks, 5 elements each: segment r holds r.
count = 5
gathered = numpy.repeat(numpy.arange(3, dtype=numpy.float32), count)
r = Ranks(0, 3)
expect(ex.verify_allgather_segments(r, gathered, count) is True, "a right AllGather passes")
expect(r.printed == ["Verification - Segment 0: Expected: 0.0, Got: 0.0",
                     "Verification - Segment 1: Expected: 1.0, Got: 1.0",
                     "Verification - Segment 2: Expected: 2.0, Got: 2.0",
                     "Results verified correctly"], f"{r.printed}")
wrong = gathered.copy()
wrong[count + 2] = numpy.nan  # segment 1, index 2
wrong[2 * count + 4] = 7.0  # segment 2, index 4
r = Ranks(1, 3)
ok = ex.verify_allgather_segments(r, wrong, count)
want = "  Rank 1: 2 of 15 elements wrong; first in segment 1 at index 2: Expected 1.0, Got nan"
expect(ok is False and want in r.printed, f"two wrong elements: {ok} {r.printed}")

finish()
