"""The Python variants' window report and GPU choice without nccl4py,
CuPy, MPI or a GPU: stand-ins for nccl4py's window handles (a handle of 0,
a real one, None), for a communicator that reports a registration in
progress, and for CuPy's runtime and the node's ranks (per-task binding:
each process sees its own GPU as device 0)."""
import os
import sys

from expect import expect, finish
import example_utils as ex  # noqa: E402 (common/python, put on the path by expect)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracles"))
from expected_output import shared_lines  # noqa: E402 (the oracle of what rank 0 prints)


class Ranks:
    rank = 1

    def __init__(self):
        self.lines = []

    def all_ranks_print(self, line):
        self.lines.append(line)


class Window:
    def __init__(self, handle):
        self.handle = handle
        self.closed = 0

    def close(self):
        self.closed += 1


class Comm:
    def __init__(self, state):
        self.state = state

    def get_async_error(self):
        return self.state


SUCCESS = 0
done, busy = Comm(SUCCESS), Comm(ex.NCCL_IN_PROGRESS)
real, empty = Window(0x7F001000), Window(0)

expect(ex.window_state(done, real) == "window", "a non-zero handle is a window")
expect(ex.window_state(done, empty) == "none", "a 0 handle after completion is no window")
expect(ex.window_state(done, None) == "none", "None is no window")
expect(ex.window_state(busy, empty) == "pending", "a 0 handle while in progress is pending")
expect(ex.window_state(busy, real) == "window", "a written handle is a window, in progress or not")
expect(ex.window_state(busy, None) == "none", "None stays no window")

NONE_LINE = ("  Rank 1: no symmetric window: the handle is NULL after ncclCommWindowRegister;"
             " the collective runs on NCCL's regular path")
PENDING_LINE = ("  Rank 1: window registration still pending: the handle is written when the"
                " group or the non-blocking communicator completes")
for comm, windows, want in [(done, (real, real), ""), (done, (real, None), NONE_LINE),
                            (done, (empty, real), NONE_LINE), (busy, (empty, real), PENDING_LINE),
                            (busy, (None, empty), PENDING_LINE)]:
    r = Ranks()
    ex.all_ranks_report_windows(r, comm, *windows)
    expect(r.lines == [want], f"report of {windows}: {r.lines}, wanted {[want]}")

a, b = Window(5), Window(0)
ex.close_windows(a, None, b)
expect(a.closed == 1 and b.closed == 1, "each window closed once, None skipped")

# ---- the GPU choice: gpu_name, gpu_load, select_gpu
UUID_A = bytes(range(16))
NAME_A = "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f"  # nvidia-smi -L's form of bytes 0..15
UUID_B = bytes(range(16, 32))
NAME_B = "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f"
expect(ex.gpu_name({"uuid": UUID_A}) == NAME_A, f"UUID as nvidia-smi prints it: {ex.gpu_name({'uuid': UUID_A})}")
expect(ex.gpu_name({"pciDomainID": 0, "pciBusID": 0x1B, "pciDeviceID": 0}) == "PCI 0000:1b:00",
       "no UUID: the PCI address")
expect(ex.gpu_load([(0, "A"), (1, "B")]) == (1, ""), "two GPUs, one rank each")
expect(ex.gpu_load([(3, "B"), (0, "A"), (2, "A"), (1, "B")]) == (2, "ranks 0 and 2 use A; ranks 1 and 3 use B"),
       f"two shared GPUs: {ex.gpu_load([(3, 'B'), (0, 'A'), (2, 'A'), (1, 'B')])}")
expect(ex.gpu_load([(0, "A"), (1, "A"), (2, "A")]) == (3, "ranks 0, 1 and 2 use A"), "three on one")


class RuntimeError_(Exception):
    pass


class Cupy:
    """CuPy's runtime as one process sees it: its GPUs' UUIDs, in order."""
    class cuda:
        class runtime:
            CUDARuntimeError = RuntimeError_
            uuids = []
            used = []
            sms = 132

            @classmethod
            def getDeviceCount(cls):
                return len(cls.uuids)

            @classmethod
            def getDeviceProperties(cls, device):
                return {"uuid": cls.uuids[device], "multiProcessorCount": cls.sms}

        class Device:
            def __init__(self, n):
                self.n = n

            def use(self):
                Cupy.cuda.runtime.used.append(self.n)


class Version:
    def __init__(self, text):
        self.parts = tuple(int(x) for x in str(text).split("."))

    def __lt__(self, other):
        return self.parts < other.parts

    def __str__(self):
        return ".".join(str(p) for p in self.parts)


class packaging_version:  # stands in for the packaging module (not needed otherwise)
    Version = Version


sys.modules.setdefault("packaging", type(sys)("packaging"))
sys.modules["packaging.version"] = packaging_version


class Nccl:
    def __init__(self, version):
        self.version = version

    def get_version(self):
        lib = type("lib", (), {"version": Version(self.version)})
        return type("info", (), {"libnccl": lib})


class NodeRanks:
    """Rank `rank` (node-local `local_rank`) of a node whose ranks picked
    the GPUs `picks` ({rank: UUID}); the others found no problem."""
    def __init__(self, rank, local_rank, picks):
        self.rank, self.local_rank, self.local_size = rank, local_rank, len(picks)
        self.picks = picks
        self.errors, self.printed = [], []

    def node_gather(self, name):
        return [(r, name if r == self.rank else ex.gpu_name({"uuid": u})) for r, u in sorted(self.picks.items())]

    def worst(self, status):
        return status

    def error(self, message):
        self.errors.append(message)

    def print_root(self, text):
        if self.rank == 0:
            self.printed.append(text)


def choose(rank, picks, sees, nccl="2.30.7", multi=None):
    """select_gpu on one rank: its node's picks, the UUIDs it sees; returns
    (device or exit status, its errors, what it printed, NCCL_MAX_CTAS)."""
    Cupy.cuda.runtime.uuids, Cupy.cuda.runtime.used = sees, []
    for v in ("NCCL_MULTI_RANK_GPU_ENABLE", "NCCL_MAX_CTAS"):
        os.environ.pop(v, None)
    if multi is not None:
        os.environ["NCCL_MULTI_RANK_GPU_ENABLE"] = multi
    r = NodeRanks(rank, rank, picks)
    try:
        got = ex.select_gpu(r, Cupy, Nccl(nccl))
    except SystemExit as e:
        got = ("exit", e.code)
    return got, r.errors, r.printed, os.environ.get("NCCL_MAX_CTAS")


HOST = os.uname().nodename
# One GPU per task: each process sees its own GPU as device 0.
for rank in (0, 1):
    got, errors, _, ctas = choose(rank, {0: UUID_A, 1: UUID_B}, [UUID_A if rank == 0 else UUID_B])
    expect(got == 0 and not errors and ctas is None, f"per-task binding, rank {rank}: {got} {errors} {ctas}")
    expect(Cupy.cuda.runtime.used == [0], f"rank {rank} makes device 0 current: {Cupy.cuda.runtime.used}")
# Two tasks given one GPU: refused, said once (by the node's first rank).
got, errors, _, _ = choose(0, {0: UUID_A, 1: UUID_A}, [UUID_A])
want = (f"2 ranks on {HOST} share GPUs (ranks 0 and 1 use {NAME_A}); one rank per GPU: give each rank a GPU"
        " of its own (Slurm's --gpus-per-task=1, or CUDA_VISIBLE_DEVICES), or start at most 1 rank(s) per node"
        " where each process sees 1 GPU(s); with NCCL >= 2.30, NCCL_MULTI_RANK_GPU_ENABLE=1 lets ranks share a GPU")
expect(got == ("exit", ex.EXIT_USAGE) and errors == [want], f"two tasks on one GPU, rank 0: {got} {errors}")
got, errors, _, _ = choose(1, {0: UUID_A, 1: UUID_A}, [UUID_A])
expect(got == ("exit", ex.EXIT_USAGE) and errors == [], f"two tasks on one GPU, rank 1 stays quiet: {got} {errors}")
# Every process sees both GPUs: node-local rank mod 2, no sharing.
got, errors, _, _ = choose(1, {0: UUID_A, 1: UUID_B}, [UUID_A, UUID_B])
expect(got == 1 and not errors, f"both GPUs visible, rank 1 takes device 1: {got} {errors}")
# Shared with NCCL 2.30's switch: NCCL_MAX_CTAS from the ranks on the busiest GPU.
got, errors, printed, ctas = choose(0, {0: UUID_A, 1: UUID_A, 2: UUID_B}, [UUID_A], multi="1")
expect(got == 0 and not errors and ctas == "66", f"2 of 3 ranks on one GPU share it: {got} {errors} {ctas}")
expect(printed[-1] == ("NCCL_MAX_CTAS=66: each rank's NCCL kernels use at most 66 of the GPU's 132 SMs,"
                       " so that all 2 ranks' kernels fit at once"), f"what rank 0 says: {printed}")
# Three on one GPU: more than the 2 NCCL 2.30 documents, said once (rank 0).
got, errors, printed, ctas = choose(0, {0: UUID_A, 1: UUID_A, 2: UUID_A}, [UUID_A], multi="1")
expect(got == 0 and ctas == "44" and errors == [
    "NCCL_MULTI_RANK_GPU_ENABLE is experimental, and NCCL 2.30 documents up to 2 ranks per GPU with its"
    " default settings; 3 share one here: if a collective hangs, use fewer ranks per GPU or a lower"
    " NCCL_MAX_CTAS"], f"three ranks on one GPU: {got} {ctas} {errors}")
# A GPU of few SMs: as many ranks as SMs fit, one SM each; more than
# that still get NCCL_MAX_CTAS=1 (NCCL ignores 0), and rank 0 says they may
# hang. Rank 0's lines are the oracle's (tests/oracles/expected_output.py).
for nranks, sms in [(3, 3), (3, 2), (4, 1)]:
    Cupy.cuda.runtime.sms = sms
    got, _, printed, ctas = choose(0, {r: UUID_A for r in range(nranks)}, [UUID_A], multi="1")
    want = shared_lines(nranks, 1, sms)
    expect(got == 0 and ctas == str(max(sms // nranks, 1)) and printed == want,
           f"{nranks} ranks on a GPU of {sms} SMs: {got} NCCL_MAX_CTAS={ctas} {printed}, wanted {want}")
Cupy.cuda.runtime.sms = 132
got, errors, _, _ = choose(0, {0: UUID_A, 1: UUID_A}, [UUID_A], nccl="2.28.3", multi="1")
expect(got == ("exit", ex.EXIT_USAGE) and len(errors) == 1 and
       "ranks may share a GPU only with NCCL >= 2.30, and the loaded NCCL is 2.28.3" in errors[0] and
       f"(ranks 0 and 1 use {NAME_A})" in errors[0], f"NCCL 2.28.3 refuses: {got} {errors}")

# NCCL_MULTI_RANK_GPU_ENABLE as NCCL 2.30.7 reads it: strtoll(text, NULL, 0),
# out of range meaning the default 0 (src/misc/param.cc); each expected
# value worked out by hand from C's strtoll.
for text, want in [("1", 1), ("0", 0), ("", 0), ("010", 1), ("0x1", 1), ("0X0", 0), ("00", 0),
                   ("-1", 1), (" 1", 1), ("1abc", 1), ("1_0", 1), ("yes", -1), ("0b1", -1),
                   ("0x", -1), ("99999999999999999999", 0), ("08", -1)]:
    os.environ["NCCL_MULTI_RANK_GPU_ENABLE"] = text
    got = ex.multi_rank_gpu_requested()[0]
    expect(got == want, f"NCCL_MULTI_RANK_GPU_ENABLE='{text}': {got}, wanted {want}")
os.environ.pop("NCCL_MULTI_RANK_GPU_ENABLE")
expect(ex.strtoll("010") == (8, 3, False) and ex.strtoll("0x1f") == (31, 4, False) and
       ex.strtoll("-12z") == (-12, 3, False), "strtoll's bases and end")

finish()
