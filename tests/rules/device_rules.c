/* Deliberately wrong programs for the rules of kernels and the device API
 * (tests/sim/fibers.c, device.c, lsa.c): each launches a small kernel, or
 * misuses a device communicator, through the simulation's C side
 * (tests/sim/include/ncclsim_device.h), on 2 thread ranks. */
#include <stdint.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "checks.h"
#include "ncclsim_device.h"
#include "rules.h"

#define BYTES 8192 /* two pages: the guard page follows */
#define BUILT 23007 /* the NCCL version the structs say they come from */

typedef struct lsa_setup {
  ncclComm_t comm;
  void *buf;
  ncclWindow_t win;
  ncclDevComm_t dev;
  int rank, peer;
} lsa_setup;

static void setup(const rank_ctx *ctx, lsa_setup *s, int barriers)
{
  ncclUniqueId id;
  if (ctx->rank == 0)
    NCCLCHECK(ncclGetUniqueId(&id));
  util_broadcast(0, ctx, &id);
  CUDACHECK(cudaSetDevice(ctx->rank));
  NCCLCHECK(ncclCommInitRank(&s->comm, ctx->nranks, id, ctx->rank));
  NCCLCHECK(ncclMemAlloc(&s->buf, BYTES));
  s->win = NULL;
  NCCLCHECK(ncclCommWindowRegister(s->comm, s->buf, BYTES, &s->win,
                                   NCCL_WIN_COLL_SYMMETRIC));
  /* The window's first bytes, written by this rank's host. */
  CUDACHECK(cudaMemsetAsync(s->buf, 0, BYTES, cudaStreamPerThread));
  CUDACHECK(cudaStreamSynchronize(cudaStreamPerThread));
  ncclDevCommRequirements_t reqs = {.size = sizeof reqs,
                                    .magic = NCCL_API_MAGIC,
                                    .version = BUILT,
                                    .lsaBarrierCount = barriers};
  NCCLCHECK(ncclDevCommCreate(s->comm, &reqs, &s->dev));
  s->rank = ctx->rank;
  s->peer = 1 - ctx->rank;
}

static void no_release(void *args) { (void)args; }

/* Runs `thread` on one CTA of `threads` GPU threads, and waits for it. */
static void launch(lsa_setup *s, void (*thread)(void *), unsigned threads)
{
  CUDACHECK(ncclsim_launch("wrong_kernel", (dim3){1, 1, 1},
                           (dim3){threads, 1, 1}, 0, cudaStreamPerThread,
                           &s->dev, thread, s, no_release, NULL));
  CUDACHECK(cudaStreamSynchronize(cudaStreamPerThread));
}

static void finish(lsa_setup *s)
{
  NCCLCHECK(ncclDevCommDestroy(s->comm, &s->dev));
  NCCLCHECK(ncclCommWindowDeregister(s->comm, s->win));
  NCCLCHECK(ncclMemFree(s->buf));
  NCCLCHECK(ncclCommFinalize(s->comm));
  NCCLCHECK(ncclCommDestroy(s->comm));
}

/* --------------------------------------------------------- the kernels */

static void leaves_cta_barrier(void *args)
{
  const lsa_setup *s = args; /* (rank 0 alone: one report, per SIM_SEED) */
  if (s->rank == 0 && ncclsim_thread_idx().x == 0)
    return; /* the others wait for it at the barrier */
  ncclsim_cta_sync();
}

/* A CTA's LSA barrier synced once, as ncclLsaBarrierSession's sync does. */
static void barrier_sync(const ncclDevComm_t *dev, unsigned index, int order)
{
  ncclsim_lsa_session s;
  ncclsim_lsa_session_open(&s, dev, index, dev->lsaSize, dev->lsaRank, 1, 0,
                           NULL);
  ncclsim_lsa_arrive(&s, order);
  ncclsim_lsa_wait(&s, order);
  ncclsim_lsa_session_close(&s);
}

/* What -fsanitize=thread makes the compiler call before an access in a
 * simulated lesson (tests/sim/tsan_hooks.c): here by hand. */
void __tsan_read4(void *p);

static void reads_peer_first(void *args)
{
  lsa_setup *s = args;
  float *peer = ncclsim_lsa_pointer(s->win, 0, s->peer);
  __tsan_read4(peer); /* the peer's host wrote it: nothing acquired yet */
  barrier_sync(&s->dev, 0, __ATOMIC_ACQUIRE);
}

/* (A peer outside the team: 41-lsa.sh's peer-past-the-team.) */
static void pointer_at_window_end(void *args)
{
  lsa_setup *s = args;
  barrier_sync(&s->dev, 0, __ATOMIC_ACQUIRE);
  (void)ncclsim_lsa_pointer(s->win, BYTES, s->rank); /* the first byte past */
}

static void barrier_past_count(void *args)
{
  lsa_setup *s = args;
  barrier_sync(&s->dev, 1, __ATOMIC_ACQUIRE); /* one asked for */
}

static void reads_past_window(void *args)
{
  lsa_setup *s = args;
  barrier_sync(&s->dev, 0, __ATOMIC_ACQUIRE);
  volatile unsigned char *mine = ncclsim_lsa_pointer(s->win, 0, s->rank);
  (void)mine[BYTES]; /* one byte past the window and its allocation */
}

/* A float4 load (one 16-byte instruction) 4 bytes past a 16-byte
 * boundary of the rank's own window, as the compiler reports it. */
void __tsan_read16(void *p);
static void vector_load_misaligned(void *args)
{
  lsa_setup *s = args;
  barrier_sync(&s->dev, 0, __ATOMIC_ACQUIRE);
  unsigned char *mine = ncclsim_lsa_pointer(s->win, 0, s->rank);
  __tsan_read16(mine + 4);
}

static void leaves_warp_barrier(void *args)
{
  (void)args;
  if (ncclsim_lane_id() == 0)
    return; /* the others wait for it at __syncwarp */
  ncclsim_warp_sync(0xffffffffu);
}

static void unlaunched_shared_memory(void *args)
{
  (void)args;
  (void)ncclsim_dynamic_shared(); /* the launch asked for none */
}

void __tsan_write4(void *p);

/* Two threads of a CTA write one __shared__ word, nothing between them. */
static void shared_word_twice(void *args)
{
  (void)args;
  float *word = ncclsim_shared_object(1, sizeof(float), sizeof(float));
  __tsan_write4(word);
  *word = (float)ncclsim_thread_idx().x;
}

/* The first thread of each of two CTAs writes one word of device memory
 * (cudaMalloc's): nothing orders two CTAs of a kernel. */
static void global_word_twice(void *args)
{
  float *word = *(float **)args;
  if (ncclsim_thread_idx().x == 0) {
    __tsan_write4(word);
    *word = (float)ncclsim_block_idx().x;
  }
}

/* Rank 1 reads rank 0's window after their barrier; rank 0's kernel ends
 * at the barrier. */
static void peer_reads_after_barrier(void *args)
{
  lsa_setup *s = args;
  barrier_sync(&s->dev, 0, __ATOMIC_ACQ_REL);
  if (s->rank == 1)
    __tsan_read4(ncclsim_lsa_pointer(s->win, 0, s->peer));
}

/* ------------------------------------------------------------ the cases */

#define KERNEL_CASE(fn, kernel, threads)                                       \
  static int fn(const rank_ctx *ctx)                                           \
  {                                                                            \
    lsa_setup s;                                                               \
    setup(ctx, &s, 1);                                                         \
    launch(&s, kernel, threads);                                               \
    finish(&s);                                                                \
    return 0;                                                                  \
  }
KERNEL_CASE(cta_barrier, leaves_cta_barrier, 4)
KERNEL_CASE(data_race, reads_peer_first, 1)
KERNEL_CASE(warp_barrier, leaves_warp_barrier, 32)
KERNEL_CASE(shared_memory, unlaunched_shared_memory, 1)
KERNEL_CASE(lsa_pointer, pointer_at_window_end, 1)
KERNEL_CASE(lsa_barrier, barrier_past_count, 1)
KERNEL_CASE(memory_access, reads_past_window, 1)
KERNEL_CASE(misaligned_access, vector_load_misaligned, 1)

KERNEL_CASE(shared_race, shared_word_twice, 2)

static int global_race(const rank_ctx *ctx)
{
  lsa_setup s;
  setup(ctx, &s, 2);
  float *word = NULL;
  CUDACHECK(cudaMalloc((void **)&word, 64));
  CUDACHECK(ncclsim_launch("wrong_kernel", (dim3){2, 1, 1}, (dim3){1, 1, 1},
                           0, cudaStreamPerThread, &s.dev, global_word_twice,
                           &word, no_release, NULL));
  CUDACHECK(cudaStreamSynchronize(cudaStreamPerThread));
  CUDACHECK(cudaFree(word));
  finish(&s);
  return 0;
}

/* Rank 0's host writes into its own window once its own kernel ended,
 * while rank 1's kernel may still read it: nothing orders rank 1's read
 * before that write (rank 0's kernel acquired nothing after it). */
int host_writes_own_window(const rank_ctx *ctx)
{
  lsa_setup s;
  setup(ctx, &s, 1);
  launch(&s, peer_reads_after_barrier, 1);
  if (s.rank == 0) {
    CUDACHECK(cudaMemsetAsync(s.buf, 1, 4, cudaStreamPerThread));
    CUDACHECK(cudaStreamSynchronize(cudaStreamPerThread));
  }
  finish(&s);
  return 0;
}

static int devcomm_left(const rank_ctx *ctx)
{
  lsa_setup s;
  setup(ctx, &s, 1);
  NCCLCHECK(ncclCommWindowDeregister(s.comm, s.win));
  NCCLCHECK(ncclMemFree(s.buf));
  NCCLCHECK(ncclCommFinalize(s.comm)); /* ncclDevCommDestroy never called */
  NCCLCHECK(ncclCommDestroy(s.comm));
  return 0;
}

static int barrier_counts_differ(const rank_ctx *ctx)
{
  lsa_setup s;
  setup(ctx, &s, 1 + ctx->rank);
  finish(&s);
  return 0;
}

const rule_case device_cases[] = {
    {"cta-barrier", cta_barrier},
    {"lsa-data-race", data_race},
    {"warp-barrier", warp_barrier},
    {"shared-memory", shared_memory},
    {"lsa-pointer", lsa_pointer},
    {"lsa-barrier", lsa_barrier},
    {"memory-access", memory_access},
    {"misaligned-access", misaligned_access},
    {"destroy-device-communicator", devcomm_left},
    {"device-communicator", barrier_counts_differ},
    {"shared-data-race", shared_race},
    {"data-race", global_race},
};
const size_t device_ncases = sizeof device_cases / sizeof *device_cases;
