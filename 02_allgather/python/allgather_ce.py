#!/usr/bin/env python3
"""NCCL symmetric memory + copy engine: AllGather with zero SMs, in Python.

The same lifecycle as ../c/main.c, with nccl4py and mpi4py: a communicator
whose config asks for no SMs (CTA policy ZERO, NCCL >= 2.28), send and
receive buffers registered as symmetric windows, an AllGather that NCCL can
run on the copy engines, verification of every segment on every rank, and
cleanup in order.

    mpirun -np 2 python3 allgather_ce.py [-n COUNT]
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common", "python"))
import example_utils as ex  # noqa: E402


def main():
    args = ex.parse_args("AllGather on NCCL symmetric memory windows with the copy engine")
    ranks = ex.Ranks("allgather_ce.py")
    nccl, cp = ex.import_gpu_libraries(ranks)
    device = ex.select_gpu(ranks, cp, nccl)
    ex.require_nccl(ranks, nccl, "2.28.3", "the copy-engine policy (CTAPolicy ZERO)")
    ranks.print_banner()

    # STEP 1: Initialize the communicator with the copy-engine policy
    ranks.print_root(f"Starting AllGather example with {ranks.size} ranks (Copy Engine enabled)")
    unique_id = nccl.get_unique_id() if ranks.rank == 0 else None
    unique_id = ranks.world.bcast(unique_id, root=0)
    config = nccl.NCCLConfig(cta_policy=nccl.CTAPolicy.ZERO)
    comm = nccl.Communicator.init(nranks=ranks.size, rank=ranks.rank, unique_id=unique_id, config=config)
    ranks.all_ranks_print(f"  Rank {ranks.rank} communicator initialized using device {device}"
                        f" (CTAPolicy={int(nccl.CTAPolicy.ZERO)})")

    # STEP 2: Allocate with NCCL's allocator; receive = count * ranks floats
    ranks.print_root("Symmetric Memory allocation")
    sendcount = args.count
    send_bytes = sendcount * 4
    recv_bytes = send_bytes * ranks.size
    ranks.all_ranks_print(f"  Rank {ranks.rank} allocating {send_bytes / 2**20:.2f} MB send buffer,"
                        f" {recv_bytes / 2**20:.2f} MB recv buffer")
    sendbuf = nccl.cupy.empty(sendcount, dtype=cp.float32)
    recvbuf = nccl.cupy.empty(sendcount * ranks.size, dtype=cp.float32)

    # STEP 3: Register symmetric windows: collective; the same sizes on every
    # rank, as NCCL before 2.30.7 requires
    send_win = comm.register_window(sendbuf, nccl.WindowFlag.COLL_SYMMETRIC)
    recv_win = comm.register_window(recvbuf, nccl.WindowFlag.COLL_SYMMETRIC)
    ex.all_ranks_report_windows(ranks, comm, send_win, recv_win)

    # STEP 4: Initialize data: every element is the rank's number
    sendbuf.fill(ranks.rank)
    ranks.all_ranks_print(f"  Rank {ranks.rank} data initialized (value: {ranks.rank})")
    stream = cp.cuda.Stream(non_blocking=True)

    # STEP 5: AllGather on the windows (copy engines where NCCL can)
    ranks.print_root(f"Starting AllGather with {sendcount} elements per rank ({recv_bytes // 2**20} MB total)")
    cp.cuda.get_current_stream().synchronize()  # the fill is done
    comm.allgather(sendbuf, recvbuf, stream=stream.ptr)
    stream.synchronize()
    ranks.print_root("AllGather completed successfully")

    # STEP 6: Verify: segment r holds rank r's value everywhere
    ok = ex.verify_allgather_segments(ranks, cp.asnumpy(recvbuf), sendcount)

    # STEP 7: Clean up: windows before their memory and the communicator
    ex.close_windows(send_win, recv_win)  # None: no window to close
    ranks.all_ranks_print(f"  Rank {ranks.rank} symmetric memory windows deregistered")
    del sendbuf, recvbuf  # nccl4py's arrays go back to ncclMemFree
    comm.finalize()
    comm.destroy()
    ranks.print_root("All resources cleaned up successfully")
    if ok:
        ranks.print_root("Example completed - demonstrated symmetric memory + copy engine allgather")
    ranks.finish(0 if ok else ex.EXIT_FAILURE)


if __name__ == "__main__":
    main()
