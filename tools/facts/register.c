/* The facts about registering and freeing windows (facts.h). */
#include "facts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* register.memalloc, and the facts that only change a variable: a whole
 * ncclMemAlloc buffer. */
void fact_memalloc(const fact *f, ncclComm_t comm, int rank, int nranks,
                   outcome *o)
{
  (void)f, (void)rank, (void)nranks;
  void *buf = NULL;
  ncclWindow_t win = NOT_WRITTEN;
  ncclResult_t res = alloc_and_register(comm, 4 * MIB, &buf, &win);
  record(o, comm, res, window_state(win));
  o->control_ok = 1; /* its control is register.memalloc run alone */
  release(comm, win, buf);
}

void fact_cudamalloc(const fact *f, ncclComm_t comm, int rank, int nranks,
                     outcome *o)
{
  (void)f, (void)rank, (void)nranks;
  control(comm, o);
  void *buf = NULL;
  ncclWindow_t win = NOT_WRITTEN;
  if (cudaMalloc(&buf, 4 * MIB) != cudaSuccess) {
    note(o->detail, sizeof o->detail, "cudaMalloc failed");
    return;
  }
  ncclResult_t res =
      ncclCommWindowRegister(comm, buf, 4 * MIB, &win, NCCL_WIN_COLL_SYMMETRIC);
  record(o, comm, res, window_state(win));
  if (held(win))
    ncclCommWindowDeregister(comm, win);
  cudaFree(buf);
}

/* A part of an ncclMemAlloc buffer: 256 bytes in, or the first half. */
void fact_part(const fact *f, ncclComm_t comm, int rank, int nranks, outcome *o)
{
  (void)rank, (void)nranks;
  control(comm, o);
  const size_t offset = strcmp(f->id, "register.offset256") == 0 ? 256 : 0;
  char *buf = NULL;
  ncclWindow_t win = NOT_WRITTEN;
  if (!mem_alloc((void **)&buf, 4 * MIB, o))
    return;
  ncclResult_t res = ncclCommWindowRegister(comm, buf + offset, 2 * MIB, &win,
                                            NCCL_WIN_COLL_SYMMETRIC);
  record(o, comm, res, window_state(win));
  release(comm, win, buf);
}

void fact_twice(const fact *f, ncclComm_t comm, int rank, int nranks,
                outcome *o)
{
  (void)f, (void)rank, (void)nranks;
  control(comm, o);
  void *buf = NULL;
  ncclWindow_t first = NOT_WRITTEN, second = NOT_WRITTEN;
  if (!mem_alloc(&buf, 4 * MIB, o))
    return;
  ncclResult_t res1 = ncclCommWindowRegister(comm, buf, 4 * MIB, &first,
                                             NCCL_WIN_COLL_SYMMETRIC);
  ncclResult_t res2 = ncclCommWindowRegister(comm, buf, 4 * MIB, &second,
                                             NCCL_WIN_COLL_SYMMETRIC);
  record(o, comm, res2, window_state(second));
  note(o->detail, sizeof o->detail,
       "first registration: %s, window %s; second window %s the first",
       ncclGetErrorString(res1), window_word(window_state(first)),
       held(second) && second == first ? "is" : "is not");
  /* Each handle once, even where both are one (a local registration
   * counts its registrations). */
  if (held(second))
    ncclCommWindowDeregister(comm, second);
  if (held(first))
    ncclCommWindowDeregister(comm, first);
  ncclMemFree(buf);
}

/* ncclMemFree while the buffer's window is registered; the communicator's
 * destruction then takes the window with it. */
void fact_free_first(const fact *f, ncclComm_t comm, int rank, int nranks,
                     outcome *o)
{
  (void)f, (void)rank, (void)nranks;
  control(comm, o);
  void *buf = NULL;
  ncclWindow_t win = NOT_WRITTEN;
  if (!mem_alloc(&buf, 4 * MIB, o))
    return;
  ncclCommWindowRegister(comm, buf, 4 * MIB, &win, NCCL_WIN_COLL_SYMMETRIC);
  record(o, comm, ncclMemFree(buf), WIN_NONE);
  note(o->detail, sizeof o->detail, "its window was %s",
       window_word(window_state(win)));
}

/* Rank r registers (1 + r) MiB, then an AllReduce of 1024 floats runs in
 * those windows; verified. */
void fact_sizes_differ(const fact *f, ncclComm_t comm, int rank, int nranks,
                       outcome *o)
{
  (void)f;
  control(comm, o);
  const size_t size = (1 + (size_t)rank) * MIB, count = 1024;
  float *send = NULL, *recv = NULL;
  ncclWindow_t sw = NOT_WRITTEN, rw = NOT_WRITTEN;
  if (!mem_alloc((void **)&send, size, o))
    return;
  if (!mem_alloc((void **)&recv, size, o)) {
    ncclMemFree(send);
    return;
  }
  ncclResult_t res =
      ncclCommWindowRegister(comm, send, size, &sw, NCCL_WIN_COLL_SYMMETRIC);
  if (res == ncclSuccess)
    res =
        ncclCommWindowRegister(comm, recv, size, &rw, NCCL_WIN_COLL_SYMMETRIC);
  record(o, comm, res, held(sw) && held(rw) ? WIN_SET : window_state(sw));
  if (res == ncclSuccess) {
    float host[1024];
    for (size_t i = 0; i < count; i++)
      host[i] = (float)rank;
    cudaStream_t s;
    cudaError_t setup = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    /* On the AllReduce's stream: a pageable copy may land late. */
    if (setup == cudaSuccess)
      setup =
          cudaMemcpyAsync(send, host, sizeof host, cudaMemcpyHostToDevice, s);
    if (setup != cudaSuccess) {
      note(o->detail, sizeof o->detail, "setting up the AllReduce: %s",
           cudaGetErrorName(setup));
      goto deregister;
    }
    ncclResult_t ar =
        ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, s);
    cudaError_t sync = cudaStreamSynchronize(s);
    if (sync == cudaSuccess)
      sync = cudaMemcpy(host, recv, sizeof host, cudaMemcpyDeviceToHost);
    const float want = (float)nranks * (float)(nranks - 1) / 2;
    int wrong = 0;
    for (size_t i = 0; i < count; i++)
      wrong += host[i] != want;
    o->wrong = wrong;
    note(o->detail, sizeof o->detail,
         "rank %d registered %zu MiB; AllReduce in them: %s, %s, %d of %zu"
         " wrong",
         rank, size / MIB, ncclGetErrorString(ar), cudaGetErrorName(sync),
         wrong, count);
    cudaStreamDestroy(s);
  }
deregister:
  release(comm, rw, recv);
  release(comm, sw, send);
}

/* Register and deregister one buffer LOOP_TIMES times: does it ever fail? */
void fact_loop(const fact *f, ncclComm_t comm, int rank, int nranks, outcome *o)
{
  (void)f, (void)rank, (void)nranks;
  control(comm, o);
  void *buf = NULL;
  if (!mem_alloc(&buf, 64 * MIB, o))
    return;
  int i, nulls = 0, unwritten = 0;
  ncclResult_t res = ncclSuccess;
  for (i = 0; i < LOOP_TIMES && res == ncclSuccess; i++) {
    ncclWindow_t win = NOT_WRITTEN;
    res = ncclCommWindowRegister(comm, buf, 64 * MIB, &win,
                                 NCCL_WIN_COLL_SYMMETRIC);
    nulls += res == ncclSuccess && window_state(win) == WIN_NULL;
    unwritten += res == ncclSuccess && window_state(win) == WIN_NOT_WRITTEN;
    if (held(win))
      res = ncclCommWindowDeregister(comm, win);
  }
  record(o, comm, res, WIN_NONE);
  if (res == ncclSuccess)
    note(o->detail, sizeof o->detail,
         "%d of %d registrations of 64 MiB succeeded, %d NULL windows%s", i,
         LOOP_TIMES, nulls, unwritten ? ", some handles not written" : "");
  else
    note(o->detail, sizeof o->detail, "failed at registration %d of %d", i,
         LOOP_TIMES);
  ncclMemFree(buf);
}
