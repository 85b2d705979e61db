/* The facts about what ran, grouped registration, local handles,
 * destroy, graph capture and the communicator's properties (facts.h). */
#include "facts.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "props_2_30.h"

#include "engine.h"

/* Which of a collective's buffers are symmetric windows. */
enum { IN_SEND = 1, IN_RECV = 2, IN_BOTH = IN_SEND | IN_RECV };

/* Fills send with rank + 1 (AllGather: each byte; AllReduce: each float)
 * and, after the collective, counts the wrong elements of recv. */
static cudaError_t fill_send(void *send, size_t bytes, int rank, int allreduce,
                             cudaStream_t s)
{
  if (!allreduce)
    return cudaMemsetAsync(send, rank + 1, bytes, s);
  const size_t count = bytes / sizeof(float);
  float *host = malloc(bytes);
  if (host == NULL)
    return cudaErrorMemoryAllocation;
  for (size_t i = 0; i < count; i++)
    host[i] = (float)(rank + 1);
  /* On the collective's stream, and waited for: a copy from pageable
   * memory may return before it lands. */
  cudaError_t err = cudaMemcpyAsync(send, host, bytes, cudaMemcpyHostToDevice, s);
  if (err == cudaSuccess)
    err = cudaStreamSynchronize(s);
  free(host);
  return err;
}

static int count_wrong(const void *recv, size_t bytes, int nranks,
                       int allreduce)
{
  const size_t out = allreduce ? bytes : bytes * (size_t)nranks;
  void *host = malloc(out);
  if (host == NULL || cudaMemcpy(host, recv, out, cudaMemcpyDeviceToHost) !=
                          cudaSuccess) {
    free(host);
    return -1;
  }
  int wrong = 0;
  if (allreduce) {
    const float want = (float)nranks * (float)(nranks + 1) / 2;
    const float *v = host;
    for (size_t i = 0; i < bytes / sizeof(float); i++)
      wrong += v[i] != want;
  } else {
    const unsigned char *b = host;
    for (size_t i = 0; i < out; i++)
      wrong += b[i] != (unsigned char)(i / bytes + 1);
  }
  free(host);
  return wrong;
}

/* A collective of 1 MiB per rank (AllGather of bytes, or AllReduce of
 * floats) with the buffers `which` names registered as windows: what ran,
 * as CUPTI saw it on this rank (kernels or copies only), and whether the
 * result is right. */
static void what_ran(ncclComm_t comm, int rank, int nranks, outcome *o,
                     int allreduce, int which)
{
  control(comm, o);
  const size_t bytes = MIB, out = allreduce ? MIB : MIB * (size_t)nranks;
  char *send = NULL, *recv = NULL;
  ncclWindow_t sw = NOT_WRITTEN, rw = NOT_WRITTEN;
  if (!mem_alloc((void **)&send, bytes, o))
    return;
  if (!mem_alloc((void **)&recv, out, o)) {
    ncclMemFree(send);
    return;
  }
  if (which & IN_SEND)
    ncclCommWindowRegister(comm, send, bytes, &sw, NCCL_WIN_COLL_SYMMETRIC);
  if (which & IN_RECV)
    ncclCommWindowRegister(comm, recv, out, &rw, NCCL_WIN_COLL_SYMMETRIC);
  /* The window named for the fact: both held, or the state of the first
   * one asked that is not. */
  const int state = which == IN_RECV                 ? window_state(rw)
                    : which == IN_SEND || !held(sw) ? window_state(sw)
                                                    : window_state(rw);
  cudaStream_t s;
  int device = 0;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
      cudaGetDevice(&device) != cudaSuccess ||
      fill_send(send, bytes, rank, allreduce, s) != cudaSuccess ||
      cudaStreamSynchronize(s) != cudaSuccess) {
    note(o->detail, sizeof o->detail, "no stream, device or data for the %s",
         allreduce ? "AllReduce" : "AllGather");
    release(comm, rw, recv);
    release(comm, sw, send);
    return;
  }
  int measured = engine_probe_start();
  uint64_t t0 = engine_probe_now();
  ncclResult_t res =
      allreduce ? ncclAllReduce(send, recv, bytes / sizeof(float), ncclFloat,
                                ncclSum, comm, s)
                : ncclAllGather(send, recv, bytes, ncclChar, comm, s);
  record(o, comm, res, state);
  cudaStreamSynchronize(s);
  engine_work w;
  if (measured && engine_probe_collect(device, t0, engine_probe_now(), &w)) {
    if (w.kernels == 0 && w.copies > 0)
      note(o->detail, sizeof o->detail, "copy engines: 0 kernels, %ld copies",
           w.copies);
    else if (w.kernels == 0)
      note(o->detail, sizeof o->detail,
           "not measured: CUPTI recorded no kernel and no copy");
    else
      note(o->detail, sizeof o->detail, "kernels: %s%s",
           w.nnames ? w.names[0] : "(no name recorded)",
           w.nnames > 1 ? ", ..." : "");
  } else {
    note(o->detail, sizeof o->detail, "not measured: %s",
         engine_probe_unavailable());
  }
  if (measured)
    engine_probe_stop();
  o->wrong = res == ncclSuccess ? count_wrong(recv, bytes, nranks, allreduce)
                                : -1;
  if (o->wrong > 0) { /* rank 0's line says so; child.c adds the others' */
    const size_t len = strlen(o->detail);
    note(o->detail + len, sizeof o->detail - len, "; %d of %zu wrong",
         o->wrong, allreduce ? bytes / sizeof(float) : out);
  }
  cudaStreamDestroy(s);
  release(comm, rw, recv);
  release(comm, sw, send);
}

FACT(fact_what_ran)
{
  (void)f;
  what_ran(comm, rank, nranks, o, 0, IN_BOTH);
}
FACT(fact_ag_recv_window)
{
  (void)f;
  what_ran(comm, rank, nranks, o, 0, IN_RECV);
}
FACT(fact_ag_send_window)
{
  (void)f;
  what_ran(comm, rank, nranks, o, 0, IN_SEND);
}
FACT(fact_ar_windows)
{
  (void)f;
  what_ran(comm, rank, nranks, o, 1, IN_BOTH);
}
FACT(fact_ar_recv_window)
{
  (void)f;
  what_ran(comm, rank, nranks, o, 1, IN_RECV);
}
FACT(fact_ar_send_window)
{
  (void)f;
  what_ran(comm, rank, nranks, o, 1, IN_SEND);
}

/* A registration inside ncclGroupStart/ncclGroupEnd: what the handle holds
 * before the group ends (NCCL 2.30.7 makes registration a group task) and
 * after. */
void fact_grouped(const fact *f, ncclComm_t comm, int rank, int nranks,
                  outcome *o)
{
  (void)f, (void)rank, (void)nranks;
  control(comm, o);
  void *buf = NULL;
  ncclWindow_t win = NOT_WRITTEN;
  if (!mem_alloc(&buf, 4 * MIB, o))
    return;
  ncclResult_t res = ncclGroupStart();
  if (res == ncclSuccess)
    res = ncclCommWindowRegister(comm, buf, 4 * MIB, &win,
                                 NCCL_WIN_COLL_SYMMETRIC);
  const int before = window_state(win);
  ncclResult_t end = ncclGroupEnd();
  record(o, comm, res == ncclSuccess ? end : res, window_state(win));
  note(o->detail, sizeof o->detail,
       "before ncclGroupEnd the handle was %s; ncclGroupEnd: %s",
       window_word(before), ncclGetErrorString(end));
  release(comm, win, buf);
}

/* Is the window the handle of an ordinary local registration? NCCL hands
 * back the same local registration for the same buffer, so compare it
 * with what ncclCommRegister gives. */
void fact_local_handle(const fact *f, ncclComm_t comm, int rank, int nranks,
                       outcome *o)
{
  (void)f, (void)rank, (void)nranks;
  control(comm, o);
  void *buf = NULL, *local = NULL;
  ncclWindow_t win = NOT_WRITTEN;
  if (!mem_alloc(&buf, 4 * MIB, o))
    return;
  ncclResult_t res =
      ncclCommWindowRegister(comm, buf, 4 * MIB, &win, NCCL_WIN_COLL_SYMMETRIC);
  record(o, comm, res, window_state(win));
  ncclResult_t reg = ncclCommRegister(comm, buf, 4 * MIB, &local);
  note(o->detail, sizeof o->detail,
       "ncclCommRegister of the same buffer: %s; its handle %s the window",
       ncclGetErrorString(reg),
       reg == ncclSuccess && held(win) && local == (void *)win ? "is"
                                                               : "is not");
  if (reg == ncclSuccess && local != NULL)
    ncclCommDeregister(comm, local);
  release(comm, win, buf);
}

/* ncclCommDestroy while a window is still registered, on a communicator
 * split off for it; the buffer is freed after. */
void fact_destroy_registered(const fact *f, ncclComm_t comm, int rank,
                             int nranks, outcome *o)
{
  (void)f, (void)nranks;
  control(comm, o);
  ncclComm_t split = NULL;
  void *buf = NULL;
  ncclWindow_t win = NOT_WRITTEN;
  if (ncclCommSplit(comm, 0, rank, &split, NULL) != ncclSuccess) {
    note(o->detail, sizeof o->detail, "ncclCommSplit failed");
    return;
  }
  if (!mem_alloc(&buf, 4 * MIB, o))
    return;
  ncclCommWindowRegister(split, buf, 4 * MIB, &win, NCCL_WIN_COLL_SYMMETRIC);
  const int state = window_state(win);
  ncclResult_t fin = ncclCommFinalize(split);
  ncclResult_t res = ncclCommDestroy(split);
  record(o, comm, res, state);
  ncclResult_t freed = ncclMemFree(buf);
  note(o->detail, sizeof o->detail,
       "ncclCommFinalize: %s; ncclMemFree after: %s", ncclGetErrorString(fin),
       ncclGetErrorString(freed));
}

/* A registration while the calling thread captures a CUDA graph (global
 * capture mode, cudaStreamBeginCapture's strictest). */
void fact_graph_capture(const fact *f, ncclComm_t comm, int rank, int nranks,
                        outcome *o)
{
  (void)f, (void)rank, (void)nranks;
  control(comm, o);
  void *buf = NULL;
  ncclWindow_t win = NOT_WRITTEN;
  cudaStream_t s;
  if (!mem_alloc(&buf, 4 * MIB, o))
    return;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
      cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) != cudaSuccess) {
    note(o->detail, sizeof o->detail, "could not start a capture");
    ncclMemFree(buf);
    return;
  }
  ncclResult_t res =
      ncclCommWindowRegister(comm, buf, 4 * MIB, &win, NCCL_WIN_COLL_SYMMETRIC);
  record(o, comm, res, window_state(win));
  cudaGraph_t graph = NULL;
  cudaError_t end = cudaStreamEndCapture(s, &graph);
  note(o->detail, sizeof o->detail, "cudaStreamEndCapture: %s",
       cudaGetErrorName(end));
  if (graph)
    cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
  release(comm, win, buf);
}

void fact_properties(const fact *f, ncclComm_t comm, int rank, int nranks,
                     outcome *o)
{
  (void)f, (void)rank, (void)nranks;
  control(comm, o);
  int loaded = 0;
  ncclGetVersion(&loaded);
  typedef ncclResult_t (*query_fn)(ncclComm_t, props_2_30 *);
  query_fn query = NULL;
  *(void **)&query = dlsym(RTLD_DEFAULT, "ncclCommQueryProperties");
  if (query == NULL || loaded < 23000) {
    note(o->na, sizeof o->na, "%s; the probe knows the layout of NCCL 2.30",
         query ? "this NCCL is older than 2.30"
               : "this NCCL's library has no ncclCommQueryProperties");
    return;
  }
  /* The layout is the same from 2.30.3 to 2.30.7 (nccl_device/core.h); a
   * version newer than the library's is refused ("NCCL library is too
   * old", 2.30.4 src/dev_runtime.cc), so the loaded one is named. */
  props_2_30 p = {.size = sizeof p,
                  .magic = 0xcafebeef,
                  .version = (unsigned)(loaded < 23007 ? loaded : 23007)};
  ncclResult_t res = query(comm, &p);
  record(o, comm, res, WIN_NONE);
  if (res == ncclSuccess)
    note(o->detail, sizeof o->detail,
         "rank %d of %d, cudaDev %d, deviceApiSupport %d, multimemSupport "
         "%d, nLsaTeams %d, ginType %d",
         p.rank, p.nRanks, p.cudaDev, p.deviceApiSupport, p.multimemSupport,
         p.nLsaTeams, p.ginType);
}
