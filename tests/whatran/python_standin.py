#!/usr/bin/env python3
"""A stand-in for the Python variants under tools/whatran: like a Python
binding, it opens the NCCL library itself (ctypes, by path) and calls it
through that handle, so that a preloaded library never sees the calls.
Two ranks as threads (ctypes lets go of the GIL during each call), each an
AllReduce of 4 KiB with both buffers in windows.

Usage: python_standin.py LIBRARY (the simulation as a shared library)."""
import ctypes
import sys
import threading

lib = ctypes.CDLL(sys.argv[1])


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


N = 1024
uid = UniqueId()
assert lib.ncclGetUniqueId(ctypes.byref(uid)) == 0
failed = []


def rank(r):
    comm, send, recv = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    wins = [ctypes.c_void_p(), ctypes.c_void_p()]
    stream = ctypes.c_void_p()
    calls = [
        lambda: lib.cudaSetDevice(r),
        lambda: lib.ncclCommInitRank(ctypes.byref(comm), 2, uid, r),
        lambda: lib.cudaStreamCreate(ctypes.byref(stream)),
        lambda: lib.ncclMemAlloc(ctypes.byref(send), ctypes.c_size_t(4 * N)),
        lambda: lib.ncclMemAlloc(ctypes.byref(recv), ctypes.c_size_t(4 * N)),
        lambda: lib.cudaMemsetAsync(send, 0, ctypes.c_size_t(4 * N), stream),
        lambda: lib.ncclCommWindowRegister(comm, send, ctypes.c_size_t(4 * N), ctypes.byref(wins[0]), 1),
        lambda: lib.ncclCommWindowRegister(comm, recv, ctypes.c_size_t(4 * N), ctypes.byref(wins[1]), 1),
        # ncclFloat32 = 7, ncclSum = 0
        lambda: lib.ncclAllReduce(send, recv, ctypes.c_size_t(N), 7, 0, comm, stream),
        lambda: lib.cudaStreamSynchronize(stream),
        lambda: lib.ncclCommWindowDeregister(comm, wins[0]),
        lambda: lib.ncclCommWindowDeregister(comm, wins[1]),
        lambda: lib.ncclMemFree(send),
        lambda: lib.ncclMemFree(recv),
        lambda: lib.cudaStreamDestroy(stream),
        lambda: lib.ncclCommFinalize(comm),
        lambda: lib.ncclCommDestroy(comm),
    ]
    for i, call in enumerate(calls):
        if call() != 0:
            failed.append(f"rank {r}: call {i} failed")
            return


threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("\n".join(failed) if failed else "both ranks done")
sys.exit(1 if failed else 0)
