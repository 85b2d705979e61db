/* libwhatran's wrappers of windows, groups and collectives (whatran.c's
 * header says what the library does): each notes what it saw, then passes
 * the call on unchanged. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "whatran.h"

#define EXPORTED __attribute__((visibility("default")))

/* The handle is read once: here, or where NCCL writes it: inside a group,
 * at the group's end (records.c end_group); on a non-blocking
 * communicator (NCCL 2.30.7 returns ncclSuccess with the handle NULL, and
 * its own thread writes it: src/dev_runtime.cc), when the program's poll
 * of ncclCommGetAsyncError says ncclSuccess (now_ready). Never later: the
 * program's variable may be gone by then. */
EXPORTED ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff,
                                             size_t size, ncclWindow_t *win,
                                             int flags)
{
  NEXT(ncclCommWindowRegister);
  ncclResult_t res = next_fn(comm, buff, size, win, flags);
  pthread_mutex_lock(&lock);
  comm_rec *c = find(comm);
  if (res == ncclSuccess && c != NULL && c->nwindows < MAX_WINDOWS && win) {
    window *w = &c->windows[c->nwindows++];
    *w = (window){.buf = buff, .size = size, .live = 1};
    if (group_depth == 0 && c->nonblocking)
      w->where = win, w->thread = 0; /* at the poll that says ready */
    else if (group_depth == 0)
      w->handle = *win, w->read = 1;
    else
      w->where = win, w->thread = engine_probe_thread();
  }
  pthread_mutex_unlock(&lock);
  return res;
}

EXPORTED ncclResult_t ncclCommWindowDeregister(ncclComm_t comm,
                                               ncclWindow_t win)
{
  NEXT(ncclCommWindowDeregister);
  pthread_mutex_lock(&lock);
  comm_rec *c = find(comm);
  for (int i = 0; c != NULL && i < c->nwindows; i++)
    if (c->windows[i].live && c->windows[i].read &&
        c->windows[i].handle == win && win != NULL) {
      c->windows[i].live = 0;
      break;
    }
  pthread_mutex_unlock(&lock);
  return next_fn(comm, win);
}

/* Whether the call from `from` is the program's own: neither this
 * library's (settle) nor one made inside the library that defines `fn`. */
static int from_program(const void *from, void *fn)
{
  Dl_info caller, library;
  int inside = dladdr(from, &caller) != 0 && dladdr(fn, &library) != 0 &&
               caller.dli_fbase == library.dli_fbase;
  return !asking_nccl && !inside;
}

/* The program's poll: once it says ncclSuccess, a non-blocking
 * communicator is ready (its rank, its handles). NCCL calls it too, from
 * inside its own calls (NCCL 2.30.7 src/init.cc ncclCommEnsureReady, run
 * by ncclCommUserRank, which this library calls with its lock held), and
 * the preload catches those calls as well: they are passed on alone. */
EXPORTED ncclResult_t ncclCommGetAsyncError(ncclComm_t comm,
                                            ncclResult_t *asyncError)
{
  NEXT(ncclCommGetAsyncError);
  ncclResult_t res = next_fn(comm, asyncError);
  if (res == ncclSuccess && asyncError != NULL &&
      *asyncError == ncclSuccess &&
      from_program(__builtin_return_address(0), (void *)next_fn))
    now_ready(comm);
  return res;
}

EXPORTED ncclResult_t ncclGroupStart(void)
{
  NEXT(ncclGroupStart);
  group_depth++;
  return next_fn();
}

EXPORTED ncclResult_t ncclGroupEnd(void)
{
  NEXT(ncclGroupEnd);
  ncclResult_t res = next_fn();
  if (group_depth > 0 && --group_depth == 0)
    end_group(now());
  return res;
}

/* The bytes of one element of each of NCCL's types (nccl.h, 2.30.7:
 * ncclInt8 0 ... ncclBfloat16 9, ncclFloat8e4m3 10, ncclFloat8e5m2 11);
 * 0 for a type this library does not know. */
static size_t type_bytes(ncclDataType_t t)
{
  switch ((int)t) {
  case 0: case 1: case 10: case 11: return 1; /* int8, uint8, the fp8s */
  case 6: case 9: return 2;                   /* float16, bfloat16 */
  case 2: case 3: case 7: return 4;           /* int32, uint32, float32 */
  case 4: case 5: case 8: return 8;           /* int64, uint64, float64 */
  default: return 0;
  }
}

/* One collective: noted with its buffers' bytes, whether it works in place
 * (at one rank NCCL then has nothing to move), and its time. */
static void collective(ncclComm_t comm, enum coll coll, const void *send,
                       size_t send_bytes, const void *recv, size_t recv_bytes,
                       int in_place, cudaStream_t stream, uint64_t t0,
                       ncclResult_t res)
{
  note_call(comm, coll,
            &(call){.send_bytes = send_bytes, .recv_bytes = recv_bytes,
                    .in_place = in_place,
                    .in_progress = res == ncclInProgress},
            send, recv, stream, t0, now());
}

EXPORTED ncclResult_t ncclAllReduce(const void *send, void *recv,
                                    size_t count, ncclDataType_t type,
                                    ncclRedOp_t op, ncclComm_t comm,
                                    cudaStream_t stream)
{
  NEXT(ncclAllReduce);
  uint64_t t0 = now();
  ncclResult_t res = next_fn(send, recv, count, type, op, comm, stream);
  size_t bytes = count * type_bytes(type);
  collective(comm, ALLREDUCE, send, bytes, recv, bytes, send == recv, stream,
             t0, res);
  return res;
}

/* AllGather and ReduceScatter: the larger buffer is the ranks' count
 * times the smaller; in place, the smaller is this rank's part of it. */
EXPORTED ncclResult_t ncclAllGather(const void *send, void *recv,
                                    size_t count, ncclDataType_t type,
                                    ncclComm_t comm, cudaStream_t stream)
{
  NEXT(ncclAllGather);
  uint64_t t0 = now();
  ncclResult_t res = next_fn(send, recv, count, type, comm, stream);
  int n = size_of(comm), rank = rank_of(comm);
  size_t bytes = count * type_bytes(type);
  collective(comm, ALLGATHER, send, bytes, recv,
             bytes * (size_t)(n > 0 ? n : 1),
             rank >= 0 && (const char *)send == (char *)recv + rank * bytes,
             stream, t0, res);
  return res;
}

EXPORTED ncclResult_t ncclReduceScatter(const void *send, void *recv,
                                        size_t count, ncclDataType_t type,
                                        ncclRedOp_t op, ncclComm_t comm,
                                        cudaStream_t stream)
{
  NEXT(ncclReduceScatter);
  uint64_t t0 = now();
  ncclResult_t res = next_fn(send, recv, count, type, op, comm, stream);
  int n = size_of(comm), rank = rank_of(comm);
  size_t bytes = count * type_bytes(type);
  collective(comm, REDUCESCATTER, send, bytes * (size_t)(n > 0 ? n : 1), recv,
             bytes,
             rank >= 0 && (const char *)recv == (const char *)send + rank * bytes,
             stream, t0, res);
  return res;
}

EXPORTED ncclResult_t ncclBroadcast(const void *send, void *recv,
                                    size_t count, ncclDataType_t type,
                                    int root, ncclComm_t comm,
                                    cudaStream_t stream)
{
  NEXT(ncclBroadcast);
  uint64_t t0 = now();
  ncclResult_t res = next_fn(send, recv, count, type, root, comm, stream);
  size_t bytes = count * type_bytes(type);
  collective(comm, BROADCAST, send, bytes, recv, bytes, send == recv, stream,
             t0, res);
  return res;
}

EXPORTED ncclResult_t ncclReduce(const void *send, void *recv, size_t count,
                                 ncclDataType_t type, ncclRedOp_t op, int root,
                                 ncclComm_t comm, cudaStream_t stream)
{
  NEXT(ncclReduce);
  uint64_t t0 = now();
  ncclResult_t res = next_fn(send, recv, count, type, op, root, comm, stream);
  size_t bytes = count * type_bytes(type);
  collective(comm, REDUCE, send, bytes, recv, bytes, send == recv, stream, t0,
             res);
  return res;
}
