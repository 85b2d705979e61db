/* The facts about what ran, grouped registration, local handles,
 * destroy, graph capture and the communicator's properties (facts.h). */
#include "facts.h"

#include <dlfcn.h>
#include <stdio.h>

#include "props_2_30.h"

#include "engine.h"

/* An AllGather of 1 MiB per rank in windows: what ran, as CUPTI saw it on
 * this rank (kernels or copies only). */
void fact_what_ran(const fact *f, ncclComm_t comm, int rank, int nranks,
                   outcome *o)
{
  (void)f;
  control(comm, o);
  const size_t bytes = MIB;
  char *send = NULL, *recv = NULL;
  ncclWindow_t sw = NOT_WRITTEN, rw = NOT_WRITTEN;
  if (!mem_alloc((void **)&send, bytes, o))
    return;
  if (!mem_alloc((void **)&recv, bytes * (size_t)nranks, o)) {
    ncclMemFree(send);
    return;
  }
  ncclCommWindowRegister(comm, send, bytes, &sw, NCCL_WIN_COLL_SYMMETRIC);
  ncclCommWindowRegister(comm, recv, bytes * (size_t)nranks, &rw,
                         NCCL_WIN_COLL_SYMMETRIC);
  cudaStream_t s;
  int device = 0;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
      cudaGetDevice(&device) != cudaSuccess) {
    note(o->detail, sizeof o->detail, "no stream or device for the AllGather");
    release(comm, rw, recv);
    release(comm, sw, send);
    return;
  }
  int measured = engine_probe_start();
  uint64_t t0 = engine_probe_now();
  ncclResult_t res = ncclAllGather(send, recv, bytes, ncclChar, comm, s);
  record(o, comm, res, held(sw) && held(rw) ? WIN_SET : window_state(sw));
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
  (void)rank;
  cudaStreamDestroy(s);
  release(comm, rw, recv);
  release(comm, sw, send);
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
  props_2_30 p = {.size = sizeof p, .magic = 0xcafebeef, .version = 23007};
  ncclResult_t res = query(comm, &p);
  record(o, comm, res, WIN_NONE);
  if (res == ncclSuccess)
    note(o->detail, sizeof o->detail,
         "rank %d of %d, cudaDev %d, deviceApiSupport %d, multimemSupport "
         "%d, nLsaTeams %d, ginType %d",
         p.rank, p.nRanks, p.cudaDev, p.deviceApiSupport, p.multimemSupport,
         p.nLsaTeams, p.ginType);
}
