#!/usr/bin/env python3
"""NCCL symmetric memory: AllReduce on registered windows, in Python.

The same lifecycle as ../c/main.c, with nccl4py and mpi4py: one MPI process
per GPU, buffers from NCCL's allocator registered as symmetric windows, an
AllReduce, verification of every element on every rank, and cleanup with the
windows deregistered before the communicator goes.

    mpirun -np 2 python3 allreduce_sm.py [-n COUNT]
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common", "python"))
import example_utils as ex  # noqa: E402


def main():
    args = ex.parse_args("AllReduce on NCCL symmetric memory windows")
    ranks = ex.Ranks("allreduce_sm.py")
    nccl, cp = ex.import_gpu_libraries(ranks)
    device = ex.select_gpu(ranks, cp, nccl)
    ex.require_nccl(ranks, nccl, "2.27.0", "symmetric memory windows")
    ranks.print_banner()

    # STEP 1: Initialize the NCCL communicator
    ranks.print_root(f"Starting AllReduce example with {ranks.size} ranks")
    unique_id = nccl.get_unique_id() if ranks.rank == 0 else None
    unique_id = ranks.world.bcast(unique_id, root=0)
    comm = nccl.Communicator.init(nranks=ranks.size, rank=ranks.rank, unique_id=unique_id)
    ranks.all_ranks_print(f"  Rank {ranks.rank} communicator initialized using device {device}")

    # STEP 2: Allocate with NCCL's allocator: only such memory can be a window
    ranks.print_root("Symmetric Memory allocation")
    count = args.count
    size_bytes = count * 4
    ranks.all_ranks_print(f"  Rank {ranks.rank} allocating {size_bytes / 2**20:.2f} MB per buffer")
    sendbuf = nccl.cupy.empty(count, dtype=cp.float32)
    recvbuf = nccl.cupy.empty(count, dtype=cp.float32)

    # STEP 3: Register symmetric windows: collective; the same size on every
    # rank, as NCCL before 2.30.7 requires
    send_win = comm.register_window(sendbuf, nccl.WindowFlag.COLL_SYMMETRIC)
    recv_win = comm.register_window(recvbuf, nccl.WindowFlag.COLL_SYMMETRIC)
    ex.all_ranks_report_windows(ranks, comm, send_win, recv_win)

    # STEP 4: Initialize data: every element is the rank's number
    sendbuf.fill(ranks.rank)
    ranks.all_ranks_print(f"  Rank {ranks.rank} data initialized (value: {ranks.rank})")
    stream = cp.cuda.Stream(non_blocking=True)

    # STEP 5: AllReduce (sum, out of place) on the windows
    ranks.print_root(f"Starting AllReduce with {count} elements ({size_bytes // 2**20} MB)")
    cp.cuda.get_current_stream().synchronize()  # the fill is done
    comm.allreduce(sendbuf, recvbuf, nccl.SUM, stream=stream.ptr)
    stream.synchronize()
    ranks.print_root("AllReduce completed successfully")

    # STEP 6: Verify: every element is 0 + 1 + ... + (ranks - 1)
    expected = ranks.size * (ranks.size - 1) / 2
    ok = ex.verify_allreduce(ranks, cp.asnumpy(recvbuf), expected)

    # STEP 7: Clean up: windows before their memory and the communicator
    ex.close_windows(send_win, recv_win)  # None: no window to close
    ranks.all_ranks_print(f"  Rank {ranks.rank} symmetric memory windows deregistered")
    del sendbuf, recvbuf  # nccl4py's arrays go back to ncclMemFree
    comm.finalize()
    comm.destroy()
    ranks.print_root("All resources cleaned up successfully")
    if ok:
        ranks.print_root("Example completed - demonstrated symmetric memory lifecycle")
    ranks.finish(0 if ok else ex.EXIT_FAILURE)


if __name__ == "__main__":
    main()
