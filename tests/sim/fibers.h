/* ncclsim: what fibers.c (the GPU threads of a running kernel and their
 * scheduler) shares with ctas.c (what the threads of one CTA or warp share:
 * __shared__ memory, warp barriers and shuffles). Internal to those two. */
#ifndef NCCLSIM_FIBERS_H
#define NCCLSIM_FIBERS_H

#include <ucontext.h>

#define STACK_BYTES (64 * 1024)
#define WARP 32

enum fiber_state { FIBER_READY, FIBER_AT_SYNC, FIBER_AT_WARP_SYNC,
                   FIBER_SPINNING, FIBER_DONE };

typedef struct cta cta;
typedef struct fiber {
  ucontext_t context;
  cta *cta;
  uint3 idx;
  unsigned linear; /* its thread index in the CTA */
  enum fiber_state state;
} fiber;

/* One __shared__ object of a CTA (by the place that declares it). */
typedef struct shared_block {
  unsigned id;
  void *p;
} shared_block;

struct cta {
  uint3 idx;
  unsigned linear, arrived, done;
  fiber *threads;
  unsigned char *stacks;
  shared_block *shared; /* its __shared__ objects */
  unsigned nshared;
  void *dynamic_shared; /* the launch's extern __shared__ bytes */
  unsigned warp_arrived[1024 / WARP], warp_done[1024 / WARP];
  unsigned long long warp_slots[1024]; /* a shuffle's values, per thread */
};

typedef struct grid_run {
  const struct sim_kernel *k;
  unsigned nctas, nthreads, resident, ended;
  cta *ctas;
  unsigned *pending, npending; /* CTAs not admitted yet */
  fiber **ready, **spinning;
  size_t nready, nspinning;
  unsigned long long seed, rng;
  ucontext_t scheduler;
  fiber *current;
} grid_run;

extern _Thread_local grid_run *running;

/* The calling GPU thread; outside a kernel, says `what` needs one and
 * ends the process. */
fiber *me(const char *what);
/* The fiber gives the CPU back to its scheduler. */
void to_scheduler(fiber *f);
/* ctas.c: a CTA's __shared__ memory and warps, when it ends. */
void cta_release(cta *c);
/* A thread of warp w of c ended: threads of it waiting at a warp barrier
 * that it left are a violation. */
void warp_thread_ended(cta *c, unsigned warp);

#endif
