"""Shared parts of the Python examples: options, the MPI ranks, ordered
output, requirement checks and verification. The NCCL lifecycle itself stays
in the example scripts, as in the C programs (common/ holds the same parts
in C).

Exit statuses are the C programs': 0 success, 1 run-time failure (no GPU, a
failing call, NCCL too old, a wrong result), 2 usage error (bad option, more
ranks on a node than GPUs without NCCL_MULTI_RANK_GPU_ENABLE=1 and NCCL >= 2.30).
"""
import argparse
import sys

EXIT_FAILURE = 1
EXIT_USAGE = 2
DEFAULT_COUNT = 1024 * 1024  # floats per rank: 4 MB
TOLERANCE = 1e-3

# Which GPU each rank uses, and ranks sharing one: gpu_choice.py, under
# the names the examples know.
import gpu_choice  # noqa: E402

SHARED_GPU_MIN = gpu_choice.SHARED_GPU_MIN
DOCUMENTED_RANKS_PER_GPU = gpu_choice.DOCUMENTED_RANKS_PER_GPU
strtoll = gpu_choice.strtoll
multi_rank_gpu_requested = gpu_choice.multi_rank_gpu_requested
gpu_name = gpu_choice.gpu_name
gpu_load = gpu_choice.gpu_load
select_gpu = gpu_choice.select_gpu


def parse_args(description):
    """Returns the parsed command line (.count). argparse exits with status 2
    and a message naming the bad value on bad input."""

    def positive(text):
        if not text.isdigit() or int(text) == 0:
            raise argparse.ArgumentTypeError(f"invalid count '{text}': use a whole number from 1 up")
        return int(text)

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("-n", "--count", type=positive, default=DEFAULT_COUNT,
                        help=f"floats per rank (default {DEFAULT_COUNT})")
    return parser.parse_args()


INSTALL_HINT = "install the requirements, e.g. pip install -r requirements-cu13.txt"


class Ranks:
    """This process's place in the MPI job: one rank per GPU, the GPU being
    the node-local rank mod the GPUs it sees. Collective methods must be
    called by every rank."""

    def __init__(self, prog):
        try:
            from mpi4py import MPI
        except ImportError as e:  # no MPI yet: this process speaks for itself
            print(f"{prog}: {e}: {INSTALL_HINT}", file=sys.stderr, flush=True)
            sys.exit(EXIT_FAILURE)

        self.prog = prog
        self.world = MPI.COMM_WORLD
        self.rank = self.world.Get_rank()
        self.size = self.world.Get_size()
        self.node = self.world.Split_type(MPI.COMM_TYPE_SHARED, key=self.rank)
        self.local_rank = self.node.Get_rank()
        self.local_size = self.node.Get_size()
        # An exception on one rank must end the whole job, not leave the
        # other ranks waiting in a collective.
        default_hook = sys.excepthook

        def abort_job(kind, value, traceback):
            default_hook(kind, value, traceback)
            sys.stderr.flush()
            self.world.Abort(EXIT_FAILURE)

        sys.excepthook = abort_job

    def error(self, message):
        print(f"{self.prog}: rank {self.rank}: {message}", file=sys.stderr, flush=True)

    def print_root(self, text):
        if self.rank == 0:
            print(text, flush=True)

    def print_banner(self):
        """NCCL's examples' framework lines (docs/examples/common), as the C
        programs' MPI build prints them: every rank has initialized MPI."""
        title = "NCCL Example: One Device per Process"
        self.print_root(f"Number of processes: {self.size}")
        for r in range(self.size):
            self.print_root(f"MPI initialized: rank {r} of {self.size}")
        self.print_root(title)
        self.print_root("=" * len(title))

    def all_ranks_print(self, text):
        """Collective: rank 0 prints every rank's text in rank order; an
        empty text prints nothing."""
        texts = self.world.gather(text, root=0)
        if self.rank == 0:
            for t in texts:
                if t:
                    print(t, flush=True)

    def node_gather(self, value):
        """Collective: every rank of this node gets the node's values, in
        node-local rank order, each with its world rank: [(rank, value)]."""
        return self.node.allgather((self.rank, value))

    def worst(self, status):
        """Collective: the largest status any rank passed."""
        from mpi4py import MPI

        return self.world.allreduce(status, op=MPI.MAX)

    def all_ok(self, ok):
        return self.worst(0 if ok else 1) == 0

    def finish(self, status):
        """Collective: every process exits with the worst status."""
        status = self.worst(status)
        if status == 0:
            self.print_root("\nAll NCCL communicators finalized successfully!")
        sys.exit(status)


def import_gpu_libraries(ranks):
    """Returns (nccl.core, cupy), or ends the job with a message saying what
    to install."""
    try:
        import cupy
        import nccl.core
    except ImportError as e:
        ranks.error(f"{e}: {INSTALL_HINT}")
        sys.exit(EXIT_FAILURE)
    return nccl.core, cupy


def require_nccl(ranks, nccl, minimum, feature):
    """Collective: stops the job if the loaded libnccl is older than
    `minimum` (a "2.27.0" string), naming both versions."""
    from packaging.version import Version

    info = nccl.get_version().libnccl
    ok = info is not None and info.version >= Version(minimum)
    if not ok:
        have = info.version if info is not None else "unknown"
        ranks.error(f"NCCL {have} is too old for {feature}: needs NCCL >= {minimum}")
    if not ranks.all_ok(ok):
        sys.exit(EXIT_FAILURE)


# ncclInProgress in nccl.h: what a non-blocking communicator reports while
# an operation, a window registration among them, has not completed.
NCCL_IN_PROGRESS = 7


def window_state(comm, window):
    """What a register_window result holds: "window", "none" or "pending".

    nccl4py 0.6 returns a handle object whose .handle is 0 both when NCCL
    gives no window and while a grouped or non-blocking registration has
    not completed (its register_window docstring); a version on NCCL's
    master branch returned None for no window. A 0 handle is "pending" only
    while the communicator still reports ncclInProgress."""
    if window is None:
        return "none"
    if getattr(window, "handle", 0) != 0:
        return "window"
    if comm is not None and int(comm.get_async_error()) == NCCL_IN_PROGRESS:
        return "pending"
    return "none"


def all_ranks_report_windows(ranks, comm, *windows):
    """Collective: a rank without a symmetric window says so, once; the run
    goes on, on NCCL's regular path. A registration still pending (grouped
    or non-blocking) is said as such: its handle is written later."""
    states = [window_state(comm, w) for w in windows]
    line = ""
    if "pending" in states:
        line = (f"  Rank {ranks.rank}: window registration still pending: the handle is"
                " written when the group or the non-blocking communicator completes")
    elif "none" in states:
        line = (f"  Rank {ranks.rank}: no symmetric window: the handle is NULL after"
                " ncclCommWindowRegister; the collective runs on NCCL's regular path")
    ranks.all_ranks_print(line)


def close_windows(*windows):
    """Deregisters each window that is there (None is no window: nothing to
    close)."""
    for w in windows:
        if w is not None:
            w.close()


def mismatches(values, expected):
    """(number of elements farther than TOLERANCE from expected, index of the
    first); NaN counts as a mismatch."""
    import numpy

    bad = ~(numpy.abs(values - expected) <= TOLERANCE)
    n = int(bad.sum())
    return n, int(numpy.argmax(bad)) if n else -1


def combine(ranks, line, ok):
    """Collective: prints each wrong rank's line, then the outcome."""
    ranks.all_ranks_print(line)
    all_ok = ranks.all_ok(ok)
    ranks.print_root("Results verified correctly" if all_ok else "Results verification failed")
    return all_ok


def verify_allreduce(ranks, result, expected):
    ranks.print_root(f"Verification - Expected: {expected:.1f}, Got: {result[0]:.1f}")
    n, first = mismatches(result, expected)
    line = (f"  Rank {ranks.rank}: {n} of {result.size} elements wrong; first at index {first}:"
            f" Expected {expected:.1f}, Got {result[first]:.1f}") if n else ""
    return combine(ranks, line, n == 0)


def verify_allgather_segments(ranks, result, count):
    total, first_bad = 0, None
    for r in range(ranks.size):
        segment = result[r * count:(r + 1) * count]
        ranks.print_root(f"Verification - Segment {r}: Expected: {r:.1f}, Got: {segment[0]:.1f}")
        n, first = mismatches(segment, float(r))
        if n and first_bad is None:
            first_bad = (r, first, segment[first])
        total += n
    line = ""
    if first_bad is not None:
        r, i, got = first_bad
        line = (f"  Rank {ranks.rank}: {total} of {result.size} elements wrong; first in segment {r}"
                f" at index {i}: Expected {r:.1f}, Got {got:.1f}")
    return combine(ranks, line, total == 0)
