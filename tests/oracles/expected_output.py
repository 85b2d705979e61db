#!/usr/bin/env python3
"""The one oracle of what a good run of the C (and Python) examples prints
on stdout. run_tests.sh compares programs with it; check_docs.py compares
the READMEs' expected-output blocks with it.

  expected_output.py PROGRAM NRANKS [--count N] [--mode pthread|mpi]
                     [--gpus G] [--shared-sms S] [--no-report]

--gpus: GPUs visible (default NRANKS); rank r uses GPU r mod G.
--shared-sms: the ranks share GPUs of S SMs each (NCCL_MULTI_RANK_GPU_ENABLE
              =1): adds the two framework lines that say so.
--measured: allreduce_lsa's (or allreduce_fast's) report of what ran as
            CUPTI measures it (the lesson's kernels, one LSA team).
--no-report: leave out the report of what ran (the last lines, which only a
             build without CUPTI can predict: it says it measured nothing).
"""
import argparse
import sys

DEFAULT_COUNT = 1024 * 1024
NO_CUPTI_REPORT = "What ran: not measured: this build has no CUPTI (HAVE_CUPTI=0)"
REPORT_PREFIXES = ("What ran: ", "Why not the copy engines: ", "Why no symmetric kernel: ",
                   "Device API: ", "Why not the lesson's kernel: ")
LSA_BARRIERS = 16  # 03_allreduce_lsa/c/main.cu: NCCL_DEVICE_CTA_COUNT
# 04_allreduce_fast: the simulated GPU's SMs (tests/sim: SIM_SMS), and
# the lesson's launch (main.cu).
SIM_SMS = 132
FAST_THREADS = 512
FAST_FLOATS_PER_CTA = FAST_THREADS * 4 * 4  # threads * UNROLL * floats per vector
FAST_ONE_SHOT_MAX_READ = 2 * 1024 * 1024  # bytes one-shot reads per rank: ranks x size
FAST_STAGES = ["stage 1: 16-byte vectors, 16 CTAs", "stage 2: the grid sized to the GPU",
               "stage 3: one-shot", "stage 3: two-shot"]


def fast_grid(count, ranks_per_gpu, sms=SIM_SMS):
    """(the most CTAs per rank, the CTAs for count floats): the SMs times
    the CTAs of 512 threads one SM of compute capability 9.0 holds (at most
    32 CTAs and 2048 threads: CUDA C++ Programming Guide, "Compute
    Capabilities"), over the ranks on a GPU; one CTA per 8192 floats, at
    least one."""
    per_sm = min(32, 2048 // FAST_THREADS)
    most = sms * per_sm // ranks_per_gpu
    return most, min(max(1, -(-count // FAST_FLOATS_PER_CTA)), most)


def without_report(lines):
    """lines without the report of what ran, for outputs of real runs."""
    return [line for line in lines if not line.startswith(REPORT_PREFIXES)]


def shared_lines(nranks, ngpus, sms):
    per_gpu = (nranks + ngpus - 1) // ngpus
    ctas = sms // per_gpu
    gpus = "GPU" if ngpus == 1 else "GPUs"
    first = (f"{nranks} ranks share {ngpus} {gpus} (NCCL_MULTI_RANK_GPU_ENABLE=1): results are real NCCL;"
             " bandwidths are one GPU's, not a link's")
    if per_gpu > sms:  # NCCL_MAX_CTAS cannot go below 1
        return [first, f"NCCL_MAX_CTAS=1: {per_gpu} ranks share the GPU's {sms} SMs: more ranks than SMs,"
                       " so their kernels cannot all run at once, and a collective may hang"]
    return [first, f"NCCL_MAX_CTAS={ctas}: each rank's NCCL kernels use at most {ctas} of the GPU's {sms} SMs,"
                   f" so that all {per_gpu} ranks' kernels fit at once"]


def header(mode, nranks, ngpus):
    """NCCL's examples' framework lines (docs/examples/common/src/utils.cc)."""
    if mode == "mpi":
        title = "NCCL Example: One Device per Process"
        return ([f"Number of processes: {nranks}"]
                + [f"MPI initialized: rank {r} of {nranks}" for r in range(nranks)]
                + [title, "=" * len(title)])
    title = "NCCL Example: One Device per Thread"
    return [f"Creating {nranks} threads for {ngpus} devices", title, "=" * len(title)]


def mb(nbytes):
    return f"{nbytes / 1048576:.2f}"


NULL_WINDOW = ("  Rank {r}: no symmetric window: the handle is NULL after"
               " ncclCommWindowRegister; the collective runs on NCCL's regular path")
LOCAL_REGISTRATION = ("  Rank {r}: no symmetric window: NCCL {nccl} (before 2.28.7) has"
                      " none for a rank alone on its node, and hands back a local"
                      " registration; the collective runs on NCCL's regular path")


def lesson(program, n, count, ngpus, null_windows=False, local_registration=None):
    ranks = range(n)
    no_windows = [NULL_WINDOW.format(r=r) for r in ranks] if null_windows else []
    if local_registration:
        no_windows = [LOCAL_REGISTRATION.format(r=r, nccl=local_registration) for r in ranks]
    size = count * 4
    out = []
    if program == "allreduce_sm":
        out.append(f"Starting AllReduce example with {n} ranks")
        out += [f"  Rank {r} communicator initialized using device {r % ngpus}" for r in ranks]
        out.append("Symmetric Memory allocation")
        out += [f"  Rank {r} allocating {mb(size)} MB per buffer" for r in ranks]
        out += no_windows
        out += [f"  Rank {r} data initialized (value: {r})" for r in ranks]
        out.append(f"Starting AllReduce with {count} elements ({size // 1048576} MB)")
        out.append("AllReduce completed successfully")
        total = n * (n - 1) // 2
        out.append(f"Verification - Expected: {total}.0, Got: {total}.0")
    elif program == "allreduce_lsa":
        out.append(f"Starting Device API AllReduce example with {n} ranks")
        out += [f"  Rank {r} communicator initialized using device {r % ngpus}" for r in ranks]
        out += [f"  Rank {r}: device API supported, 1 LSA team" for r in ranks]
        out += [f"  Rank {r} allocating {mb(size)} MB per buffer" for r in ranks]
        out += [f"  Rank {r} data initialized" for r in ranks]
        out += [f"  Rank {r} created device communicator with {LSA_BARRIERS} LSA barriers" for r in ranks]
        out.append(f"Starting AllReduce with {count} elements ({size // 1048576} MB) using Device API")
        out.append("AllReduce kernel completed")
        # element 0 of rank r is r + 1 (common/src/verify.c, pattern_value)
        total = n * (n + 1) // 2
        out.append(f"Verification - Expected: {total}.0, Got: {total}.0")
    elif program == "allreduce_fast":
        per_gpu = -(-n // ngpus)
        most, grid = fast_grid(count, per_gpu)
        out.append(f"Starting fast Device API AllReduce example with {n} ranks")
        out += [f"  Rank {r} communicator initialized using device {r % ngpus}" for r in ranks]
        out += [f"  Rank {r}: device API supported, 1 LSA team" for r in ranks]
        out.append(f"  Grid: at most {most} CTAs of {FAST_THREADS} threads per rank ({per_gpu} rank"
                   f"{'' if per_gpu == 1 else 's'} per GPU), {grid} for this size")
        out += [f"  Rank {r} allocating {mb(size)} MB per buffer" for r in ranks]
        out += [f"  Rank {r} data initialized" for r in ranks]
        out += [f"  Rank {r} created device communicator with {most} LSA barriers" for r in ranks]
        out.append(f"Starting AllReduce with {count} elements ({size // 1048576} MB) in 4 kernels")
        out += [f"  {stage}: verified" for stage in FAST_STAGES]
        shot = "one-shot" if size * n <= FAST_ONE_SHOT_MAX_READ else "push"
        out.append(f"AllReduce kernel completed ({shot})")
        # element 0 of rank r is r + 1 (common/src/verify.c, pattern_value)
        total = n * (n + 1) // 2
        out.append(f"Verification - Expected: {total}.0, Got: {total}.0")
    elif program == "allgather_ce":
        out.append(f"Starting AllGather example with {n} ranks (Copy Engine enabled)")
        out += [f"  Rank {r} communicator initialized using device {r % ngpus} (CTAPolicy=2)" for r in ranks]
        out.append("Symmetric Memory allocation")
        out += [f"  Rank {r} allocating {mb(size)} MB send buffer, {mb(size * n)} MB recv buffer" for r in ranks]
        out += no_windows
        out += [f"  Rank {r} data initialized (value: {r})" for r in ranks]
        out.append(f"Starting AllGather with {count} elements per rank ({size * n // 1048576} MB total)")
        out.append("AllGather completed successfully")
        out += [f"Verification - Segment {r}: Expected: {r}.0, Got: {r}.0" for r in ranks]
    else:
        raise ValueError(f"unknown program {program!r}: allreduce_sm, allgather_ce, allreduce_lsa"
                         " or allreduce_fast")
    out.append("Results verified correctly")
    out += [f"  Rank {r} symmetric memory windows deregistered" for r in ranks]
    out.append("All resources cleaned up successfully")
    if program == "allreduce_sm":
        out.append("Example completed - demonstrated symmetric memory lifecycle")
    elif program == "allreduce_lsa":
        out.append("Example completed - demonstrated an AllReduce kernel on symmetric windows"
                   " through the device API")
    elif program == "allreduce_fast":
        out.append("Example completed - demonstrated a fast AllReduce kernel on symmetric windows"
                   " through the device API")
    else:
        out.append("Example completed - demonstrated symmetric memory + copy engine allgather")
    out += ["", "All NCCL communicators finalized successfully!"]
    return out


def lsa_report(nranks):
    """What ran for allreduce_lsa, measured (CUPTI): the lesson's kernel on
    every rank, one LSA team of all ranks."""
    ran = "a local kernel: " if nranks == 1 else "kernel "
    ranks = "rank" if nranks == 1 else "ranks"
    return [f"What ran: AllReduce ran {ran}simpleAllReduceKernel on every rank",
            f"Device API: the kernel above is the lesson's own, on one LSA team of {nranks} {ranks}"
            " (deviceApiSupport 1, nLsaTeams 1 on every rank)"]


def fast_report(nranks):
    """What ran for allreduce_fast, measured (CUPTI): the lesson's three
    kernels on every rank, one LSA team of all ranks."""
    kernels = "allreduce_push, allreduce_one_shot, allreduce_two_shot"
    ran = f"a local kernel: {kernels}" if nranks == 1 else f"kernels {kernels}"
    ranks = "rank" if nranks == 1 else "ranks"
    return [f"What ran: AllReduce ran {ran} on every rank",
            f"Device API: the kernels above are the lesson's own, on one LSA team of {nranks} {ranks}"
            " (deviceApiSupport 1, nLsaTeams 1 on every rank)"]


def expected(program, nranks, count=DEFAULT_COUNT, mode="pthread", ngpus=None, shared_sms=None,
             report=True, null_windows=False, local_registration=None, measured=False):
    """The lines of stdout, without newlines; with `report`, those of a
    build without CUPTI; with `null_windows`, every rank's window NULL;
    with `local_registration` (an NCCL version), every rank's handle a
    local registration of that NCCL."""
    ngpus = nranks if ngpus is None else ngpus
    lines = shared_lines(nranks, ngpus, shared_sms) if shared_sms else []
    lines += header(mode, nranks, ngpus) + lesson(program, nranks, count, ngpus, null_windows,
                                                 local_registration)
    if measured:  # allreduce_lsa or allreduce_fast with CUPTI
        ran = fast_report(nranks) if program == "allreduce_fast" else lsa_report(nranks)
        return lines + (ran if report else [])
    return lines + ([NO_CUPTI_REPORT] if report else [])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("program")
    ap.add_argument("nranks", type=int)
    ap.add_argument("--count", type=int, default=DEFAULT_COUNT)
    ap.add_argument("--mode", choices=("pthread", "mpi"), default="pthread")
    ap.add_argument("--gpus", type=int)
    ap.add_argument("--shared-sms", type=int)
    ap.add_argument("--no-report", action="store_true")
    ap.add_argument("--null-windows", action="store_true", help="every rank's window is NULL")
    ap.add_argument("--measured", action="store_true",
                    help="allreduce_lsa's report as a build with CUPTI measures it")
    ap.add_argument("--local-registration", metavar="NCCL",
                    help="every rank's handle is a local registration of this NCCL version")
    a = ap.parse_args()
    for line in expected(a.program, a.nranks, a.count, a.mode, a.gpus, a.shared_sms, not a.no_report,
                         a.null_windows, a.local_registration, a.measured):
        print(line)


if __name__ == "__main__":
    sys.exit(main())
