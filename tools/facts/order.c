/* The facts about order on one stream: does a collective read its send
 * buffer before the kernel queued before it on the same stream has written
 * it (facts.h)?
 *
 * A kernel may let the next kernel on its stream start early: it executes
 * PTX's griddepcontrol.launch_dependents, and a kernel launched with
 * programmatic stream serialisation may then begin before it ends. Such a
 * dependent kernel must wait (griddepcontrol.wait, CUDA's
 * cudaGridDependencySynchronize) before it reads what the first one
 * writes. NCCL 2.28 to 2.30.4 launch their symmetric kernels that way on
 * sm_90 and later without the wait; NCCL 2.30.7 added it (its commit
 * "Reintroduce cudaGridDependencySynchronize in built-in symmetric
 * kernels").
 *
 * The writer below is such a kernel, written in PTX so that the probe stays
 * C: each thread lets dependents start (if asked), waits delay_ns, then
 * stores the value into its elements. */
#include "facts.h"

#include <stdio.h>
#include <stdlib.h>

static const char writer_ptx[] =
    ".version 8.0\n"
    ".target sm_90\n"
    ".address_size 64\n"
    ".visible .entry fill(.param .u64 p_buf, .param .u32 p_n,\n"
    "    .param .f32 p_value, .param .u32 p_trigger, .param .u32 p_delay_ns)\n"
    "{\n"
    "  .reg .pred %p<4>;\n"
    "  .reg .b32 %r<10>;\n"
    "  .reg .f32 %f<2>;\n"
    "  .reg .b64 %rd<8>;\n"
    "  ld.param.u64 %rd1, [p_buf];\n"
    "  ld.param.u32 %r1, [p_n];\n"
    "  ld.param.f32 %f1, [p_value];\n"
    "  ld.param.u32 %r2, [p_trigger];\n"
    "  ld.param.u32 %r3, [p_delay_ns];\n"
    "  cvta.to.global.u64 %rd2, %rd1;\n"
    "  setp.eq.u32 %p1, %r2, 0;\n"
    "  @%p1 bra WAIT;\n"
    "  griddepcontrol.launch_dependents;\n"
    "WAIT:\n"
    "  mov.u64 %rd5, %globaltimer;\n"
    "  cvt.u64.u32 %rd6, %r3;\n"
    "  add.u64 %rd6, %rd6, %rd5;\n"
    "SPIN:\n"
    "  mov.u64 %rd7, %globaltimer;\n"
    "  setp.lt.u64 %p2, %rd7, %rd6;\n"
    "  @%p2 bra SPIN;\n"
    "  mov.u32 %r4, %ctaid.x;\n"
    "  mov.u32 %r5, %ntid.x;\n"
    "  mov.u32 %r6, %tid.x;\n"
    "  mad.lo.u32 %r7, %r4, %r5, %r6;\n"
    "  mov.u32 %r8, %nctaid.x;\n"
    "  mul.lo.u32 %r9, %r8, %r5;\n"
    "STORE:\n"
    "  setp.ge.u32 %p3, %r7, %r1;\n"
    "  @%p3 bra DONE;\n"
    "  mul.wide.u32 %rd3, %r7, 4;\n"
    "  add.s64 %rd4, %rd2, %rd3;\n"
    "  st.global.f32 [%rd4], %f1;\n"
    "  add.u32 %r7, %r7, %r9;\n"
    "  bra STORE;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";

enum { ROUNDS = 200, WRITER_DELAY_NS = 20000 };

/* ROUNDS times: the writer fills send with this round's value, then an
 * AllReduce of it on the same stream; counts the rounds whose result was
 * wrong anywhere. Returns -1 if it could not run (why in o->detail). */
static int rounds_wrong(ncclComm_t comm, int rank, int nranks, float *send,
                        float *recv, size_t count, cudaStream_t s,
                        cudaKernel_t writer, unsigned trigger, outcome *o,
                        char *first, size_t first_size)
{
  float *host = malloc(count * sizeof *host);
  if (host == NULL) {
    note(o->detail, sizeof o->detail, "no host memory for the results");
    return -1;
  }
  int wrong = 0;
  for (int round = 1; round <= ROUNDS; round++) {
    float value = (float)round * (float)(rank + 1);
    unsigned n = (unsigned)count, delay = WRITER_DELAY_NS;
    void *args[] = {&send, &n, &value, &trigger, &delay};
    const dim3 blocks = {132, 1, 1}, threads = {256, 1, 1};
    cudaError_t err =
        cudaLaunchKernel((const void *)writer, blocks, threads, args, 0, s);
    ncclResult_t res = err == cudaSuccess
                           ? ncclAllReduce(send, recv, count, ncclFloat,
                                           ncclSum, comm, s)
                           : ncclSuccess;
    if (err == cudaSuccess)
      err = cudaStreamSynchronize(s);
    if (err == cudaSuccess)
      err = cudaMemcpy(host, recv, count * sizeof *host,
                       cudaMemcpyDeviceToHost);
    if (err != cudaSuccess || res != ncclSuccess) {
      note(o->detail, sizeof o->detail, "round %d: %s, %s", round,
           cudaGetErrorName(err), ncclGetErrorString(res));
      free(host);
      return -1;
    }
    const float want = (float)round * (float)nranks * (float)(nranks + 1) / 2;
    size_t bad = 0, at = 0;
    for (size_t i = 0; i < count; i++)
      if (host[i] != want && bad++ == 0)
        at = i;
    if (bad && wrong++ == 0)
      snprintf(first, first_size,
               " (first: round %d, %zu elements wrong, at %zu %g for %g)",
               round, bad, at, (double)host[at], (double)want);
  }
  free(host);
  return wrong;
}

/* The writer, then an AllReduce of what it wrote, ROUNDS times each way:
 * letting the AllReduce start early, and (the control) not. in_windows:
 * both buffers are symmetric windows. */
static void early_reads(ncclComm_t comm, int rank, int nranks, outcome *o,
                        int in_windows)
{
  control(comm, o);
  const size_t count = MIB / sizeof(float), bytes = MIB;
  float *send = NULL, *recv = NULL;
  ncclWindow_t sw = NOT_WRITTEN, rw = NOT_WRITTEN;
  cudaLibrary_t library = NULL;
  cudaKernel_t writer = NULL;
  cudaStream_t s = NULL;
  if (!mem_alloc((void **)&send, bytes, o))
    return;
  if (!mem_alloc((void **)&recv, bytes, o))
    goto out;
  ncclResult_t res = ncclSuccess;
  if (in_windows) {
    res = ncclCommWindowRegister(comm, send, bytes, &sw,
                                 NCCL_WIN_COLL_SYMMETRIC);
    if (res == ncclSuccess)
      res = ncclCommWindowRegister(comm, recv, bytes, &rw,
                                   NCCL_WIN_COLL_SYMMETRIC);
  }
  record(o, comm, res,
         !in_windows             ? WIN_NONE
         : held(sw) && held(rw) ? WIN_SET
                                 : window_state(sw));
  cudaError_t err = cudaLibraryLoadData(&library, writer_ptx, NULL, NULL, 0,
                                        NULL, NULL, 0);
  if (err == cudaSuccess)
    err = cudaLibraryGetKernel(&writer, library, "fill");
  if (err == cudaSuccess)
    err = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (err != cudaSuccess || res != ncclSuccess) {
    note(o->detail, sizeof o->detail, "setting up: %s, %s",
         cudaGetErrorName(err), ncclGetErrorString(res));
    goto out;
  }
  char first[120] = "", first_control[120] = "";
  const int early = rounds_wrong(comm, rank, nranks, send, recv, count, s,
                                 writer, 1, o, first, sizeof first);
  const int late =
      early < 0 ? -1
                : rounds_wrong(comm, rank, nranks, send, recv, count, s,
                               writer, 0, o, first_control,
                               sizeof first_control);
  if (early >= 0 && late >= 0) {
    o->wrong = early;
    note(o->detail, sizeof o->detail,
         "writer letting the AllReduce start early: %d of %d rounds wrong%s;"
         " without: %d of %d%s",
         early, ROUNDS, first, late, ROUNDS, first_control);
  }
out:
  if (s)
    cudaStreamDestroy(s);
  if (library)
    cudaLibraryUnload(library);
  release(comm, rw, recv);
  release(comm, sw, send);
}

FACT(fact_early_reads)
{
  (void)f;
  early_reads(comm, rank, nranks, o, 1);
}

FACT(fact_early_reads_plain)
{
  (void)f;
  early_reads(comm, rank, nranks, o, 0);
}
