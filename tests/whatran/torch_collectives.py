#!/usr/bin/env python3
"""An AllReduce and an AllGather through torch.distributed's NCCL backend,
as users run PyTorch, for What ran (tools/libwhatran.so) on a GPU:

    torchrun --nproc_per_node N tests/whatran/torch_collectives.py
    LD_PRELOAD=$PWD/tools/libwhatran.so torchrun --nproc_per_node N tests/whatran/torch_collectives.py

Each process is one rank on GPU (LOCAL_RANK mod the visible GPUs): it
joins init_process_group("nccl"), runs an all_reduce of 1 MiB (every rank
gives its rank + 1, so every element must be N(N+1)/2) and an
all_gather_into_tensor of 1 MiB a rank (rank r's part must hold r), and
prints one line: "rank R of N: all_reduce ok, all_gather ok" (or what was
wrong: the first wrong element and its value), then "NCCL x.y.z" at rank 0,
the NCCL that torch loaded. Exit status 0 when both results are right,
1 otherwise. Not run by the test suite (it needs PyTorch and a GPU).
"""
import os
import sys

import torch
import torch.distributed as dist

COUNT = 256 * 1024  # float32 elements: 1 MiB


def first_wrong(tensor, expected):
    """The first element of tensor that is not expected, as text, or None."""
    wrong = (tensor != expected).nonzero()
    if wrong.numel() == 0:
        return None
    i = int(wrong[0][0])
    return f"element {i} is {float(tensor[i])}, wanted {float(expected[i])}"


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local % torch.cuda.device_count())
    dist.init_process_group("nccl")

    x = torch.full((COUNT,), float(rank + 1), device="cuda")
    dist.all_reduce(x)
    reduce_wrong = first_wrong(x, torch.full_like(x, world * (world + 1) / 2))

    mine = torch.full((COUNT,), float(rank), device="cuda")
    gathered = torch.empty(world * COUNT, device="cuda")
    dist.all_gather_into_tensor(gathered, mine)
    parts = torch.arange(world, device="cuda", dtype=torch.float32).repeat_interleave(COUNT)
    gather_wrong = first_wrong(gathered, parts)
    torch.cuda.synchronize()

    print(f"rank {rank} of {world}: all_reduce {reduce_wrong or 'ok'}, all_gather {gather_wrong or 'ok'}",
          flush=True)
    if rank == 0:
        version = torch.cuda.nccl.version()  # a tuple of numbers, or one number
        print("NCCL " + (".".join(map(str, version)) if isinstance(version, tuple) else str(version)),
              flush=True)
    dist.destroy_process_group()
    return 0 if reduce_wrong is None and gather_wrong is None else 1


if __name__ == "__main__":
    sys.exit(main())
