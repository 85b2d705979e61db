"""Shared parts of the Python examples: options, the MPI ranks, ordered
output, requirement checks and verification. The NCCL lifecycle itself stays
in the example scripts, as in the C programs (common/ holds the same parts
in C).

Exit statuses are the C programs': 0 success, 1 run-time failure (no GPU, a
failing call, NCCL too old, a wrong result), 2 usage error (bad option, more
ranks on a node than GPUs without NCCL_MULTI_RANK_GPU_ENABLE=1 and NCCL >= 2.30).
"""
import argparse
import os
import sys

EXIT_FAILURE = 1
EXIT_USAGE = 2
DEFAULT_COUNT = 1024 * 1024  # floats per rank: 4 MB
TOLERANCE = 1e-3


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


SHARED_GPU_MIN = "2.30.0"  # the first NCCL that lets ranks share a GPU
# The ranks per GPU NCCL 2.30 documents with its default settings (its
# docs/userguide/source/env.rst, NCCL_MULTI_RANK_GPU_ENABLE: experimental).
DOCUMENTED_RANKS_PER_GPU = 2


def strtoll(text):
    """C's strtoll(text, &end, 0), which NCCL reads its integer variables
    with (src/misc/param.cc): (value, characters read, out of range). A
    leading 0x is hex and a leading 0 octal ("010" is 8); what follows the
    number is ignored ("1abc" is 1); no number at all is 0, nothing read."""
    i, n = 0, len(text)
    while i < n and text[i] in " \t\n\v\f\r":
        i += 1
    sign = 1
    if i < n and text[i] in "+-":
        sign = -1 if text[i] == "-" else 1
        i += 1
    if text[i:i + 2].lower() == "0x" and i + 2 < n and text[i + 2] in "0123456789abcdefABCDEF":
        base, i = 16, i + 2
    elif text[i:i + 1] == "0":
        base = 8
    else:
        base = 10
    digits = "0123456789abcdef"[:base]
    start = i
    while i < n and text[i].lower() in digits:
        i += 1
    if i == start:
        return 0, 0, False
    value = sign * int(text[start:i], base)
    if not -2**63 <= value < 2**63:
        return (2**63 - 1 if sign > 0 else -2**63), i, True
    return value, i, False


def multi_rank_gpu_requested():
    """NCCL_MULTI_RANK_GPU_ENABLE as NCCL reads it (strtoll, out of range
    meaning unset): (1 on, 0 off or unset, -1 read as 0 but not a plain
    number: most likely a mistake, said rather than ignored), and the
    text. The C programs read it the same way (common/src/requirements.c)."""
    text = os.environ.get("NCCL_MULTI_RANK_GPU_ENABLE", "")
    if text == "":
        return 0, text
    value, read, out_of_range = strtoll(text)
    if value != 0 and not out_of_range:
        return 1, text
    return (0 if read == len(text) else -1), text


def gpu_name(props):
    """The name of the GPU behind a cudaGetDeviceProperties result, the same
    in every process whatever it sees as its device 0: its UUID as
    nvidia-smi -L prints it (GPU-...), or its PCI address where CuPy gives
    no UUID."""
    uuid = props.get("uuid")
    if isinstance(uuid, (bytes, bytearray)) and len(uuid) == 16:
        h = uuid.hex()
        return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    return f"PCI {props['pciDomainID']:04x}:{props['pciBusID']:02x}:{props['pciDeviceID']:02x}"


def gpu_load(picks):
    """From the node's [(rank, GPU name)]: how many ranks use the busiest
    GPU, and which ranks share which GPU ("ranks 0 and 1 use GPU-...; ranks
    2 and 3 use GPU-...", as the C programs say it), or "" if none do."""
    users = {}
    for rank, gpu in sorted(picks):
        users.setdefault(gpu, []).append(rank)
    shared = []
    for gpu, rs in users.items():
        if len(rs) > 1:
            shared.append(f"ranks {', '.join(str(r) for r in rs[:-1])} and {rs[-1]} use {gpu}")
    return max((len(rs) for rs in users.values()), default=0), "; ".join(shared)


def select_gpu(ranks, cupy, nccl):
    """Every rank picks a GPU (node-local rank mod the GPUs it sees: under
    Slurm's --gpus-per-task=1 each sees its own as device 0), and the ranks
    of each node compare the GPUs they picked by name. A GPU used by two
    ranks needs NCCL >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE=1; if any rank
    may not go on, it says why (the node's first rank for the node's GPUs)
    and the job stops. Ranks sharing a GPU get NCCL_MAX_CTAS as in the C
    programs (common/src/requirements.c says why), and rank 0 prints the two
    lines that say so."""
    problem, message, name, node_verdict = 0, "", "", False
    try:
        ngpus = cupy.cuda.runtime.getDeviceCount()
        device = ranks.local_rank % ngpus if ngpus > 0 else 0
        if ngpus > 0:
            name = gpu_name(cupy.cuda.runtime.getDeviceProperties(device))
    except cupy.cuda.runtime.CUDARuntimeError as e:
        ngpus, problem = 0, EXIT_FAILURE
        message = f"no usable GPU: {e}"
    if problem == 0 and ngpus == 0:
        problem, message = EXIT_FAILURE, "no usable GPU: this process sees none"
    # Collective from here on: every rank takes part, whatever it found.
    per_gpu, who = gpu_load([(r, g) for r, g in ranks.node_gather(name) if g])
    shared = False
    if problem == 0 and per_gpu > 1:
        node_verdict = True
        asked, text = multi_rank_gpu_requested()
        info = nccl.get_version().libnccl
        from packaging.version import Version
        if asked == 0:
            problem = EXIT_USAGE
            message = (f"{ranks.local_size} ranks on {os.uname().nodename} share GPUs ({who}); one rank per GPU:"
                       " give each rank a GPU of its own (Slurm's --gpus-per-task=1, or CUDA_VISIBLE_DEVICES),"
                       f" or start at most {ngpus} rank(s) per node where each process sees {ngpus} GPU(s);"
                       " with NCCL >= 2.30, NCCL_MULTI_RANK_GPU_ENABLE=1 lets ranks share a GPU")
        elif asked < 0:
            problem = EXIT_USAGE
            message = (f"invalid NCCL_MULTI_RANK_GPU_ENABLE='{text}': NCCL ignores a value that is"
                       f" not a number; use 1 to let ranks share a GPU ({who}), or unset it")
        elif info is None or info.version < Version(SHARED_GPU_MIN):
            problem = EXIT_USAGE
            have = info.version if info is not None else "unknown"
            message = (f"NCCL_MULTI_RANK_GPU_ENABLE={text}: ranks may share a GPU only with NCCL >= 2.30,"
                       f" and the loaded NCCL is {have}; use a newer NCCL or at most {ngpus} rank(s) here"
                       f" ({who})")
        else:
            shared = True
    worst = ranks.worst(problem)
    if worst:
        # A verdict on the node's GPUs is the same on each of its ranks:
        # said once, by its first rank.
        if message and (ranks.local_rank == 0 or not node_verdict):
            ranks.error(message)
        sys.exit(worst)
    cupy.cuda.Device(device).use()
    if shared:
        fit_shared_gpu_kernels(ranks, cupy, per_gpu, ngpus, device)
    return device


def fit_shared_gpu_kernels(ranks, cupy, per_gpu, ngpus, device):
    """Caps NCCL_MAX_CTAS so that the kernels of the per_gpu ranks on the
    busiest GPU fit on it at once, unless the user set it; rank 0 says which
    holds."""
    ranks.print_root(f"{ranks.local_size} ranks share {ngpus} GPU{'' if ngpus == 1 else 's'}"
                     " (NCCL_MULTI_RANK_GPU_ENABLE=1): results are real NCCL; bandwidths are one"
                     " GPU's, not a link's")
    if per_gpu > DOCUMENTED_RANKS_PER_GPU and ranks.rank == 0:
        ranks.error(f"NCCL_MULTI_RANK_GPU_ENABLE is experimental, and NCCL 2.30 documents up to"
                    f" {DOCUMENTED_RANKS_PER_GPU} ranks per GPU with its default settings; {per_gpu} share"
                    " one here: if a collective hangs, use fewer ranks per GPU or a lower NCCL_MAX_CTAS")
    own = os.environ.get("NCCL_MAX_CTAS", "")
    if own:
        ranks.print_root(f"NCCL_MAX_CTAS={own} (yours): with {per_gpu} ranks per GPU it must leave"
                         " every rank's kernels room on the GPU at once, or collectives hang")
        return
    sms = cupy.cuda.runtime.getDeviceProperties(device)["multiProcessorCount"]
    limit = max(sms // per_gpu, 1)
    os.environ["NCCL_MAX_CTAS"] = str(limit)
    if per_gpu <= sms:
        ranks.print_root(f"NCCL_MAX_CTAS={limit}: each rank's NCCL kernels use at most {limit} of the"
                         f" GPU's {sms} SMs, so that all {per_gpu} ranks' kernels fit at once")
    else:
        ranks.print_root(f"NCCL_MAX_CTAS=1: {per_gpu} ranks share the GPU's {sms} SMs: more ranks than SMs,"
                         " so their kernels cannot all run at once, and a collective may hang")


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
