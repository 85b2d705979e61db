/* ncclsim: what fibers.c (the GPU threads of a running kernel and their
 * scheduler) shares with ctas.c (what the threads of one CTA or warp share:
 * __shared__ memory, warp barriers and shuffles). Internal to those two. */
#ifndef NCCLSIM_FIBERS_H
#define NCCLSIM_FIBERS_H

#include <setjmp.h>
#include <ucontext.h>

#define STACK_BYTES (64 * 1024)
#define WARP 32

enum fiber_state { FIBER_READY, FIBER_AT_SYNC, FIBER_AT_WARP_SYNC,
                   FIBER_SPINNING, FIBER_YIELDED, FIBER_DONE };

typedef struct cta cta;
typedef struct fiber {
  ucontext_t context; /* where it starts (fibers.c) */
  jmp_buf jump;       /* where it goes on from its last switch */
  int started;
  cta *cta;
  uint3 idx;
  unsigned linear; /* its thread index in the CTA */
  enum fiber_state state;
  unsigned wphase; /* warp and CTA barriers it passed: what orders two
                      threads of one warp between two CTA barriers */
  const void *loaded; /* what its last access loaded, if it was a load */
  const void *site; /* the barrier call it makes (sites.c), and how deep */
  unsigned site_depth;
  int atomic_scope; /* of the atomic it makes (shadow.h's SCOPE_*), */
  const void *atomic_site; /* where it was called, how deep (fences.c) */
  unsigned atomic_depth;
  /* Its accesses to window and global memory and its fences, counted
   * (fences.c): a fence after its last access releases it; the CTA
   * segment of each, for a fence of another thread after a CTA barrier. */
  unsigned long long steps, last_access, sys_fence, dev_fence;
  unsigned last_access_seg, sys_fence_seg, dev_fence_seg;
} fiber;

/* One __shared__ object of a CTA (by the place that declares it), with
 * its shadow (shadow.c). */
typedef struct shared_block {
  unsigned id;
  void *p;
  size_t bytes;
  void *shadow;
} shared_block;

struct cta {
  uint3 idx;
  unsigned linear, arrived, done;
  fiber *threads;
  unsigned char *stacks;
  shared_block *shared; /* its __shared__ objects, the launch's extern */
  unsigned nshared;     /* __shared__ bytes last (id DYNAMIC_SHARED) */
  /* CTA barriers completed: accesses of two of its threads between the
   * same two are ordered by nothing but a warp barrier. */
  unsigned segment;
  /* The barrier its threads are meeting at: where the first came from. */
  const void *barrier_site;
  unsigned barrier_thread;
  /* fences.c: the segment of its last release, and what its last relaxed
   * wait observed and has not acquired (the peers, in which segment). */
  unsigned released_seg, observed_seg, observed_peers;
  struct hb_domain *observed_domain;
  unsigned warp_arrived[1024 / WARP], warp_done[1024 / WARP];
  unsigned long long warp_slots[1024]; /* a shuffle's values, per thread */
};

typedef struct grid_run {
  const struct sim_kernel *k;
  unsigned nctas, nthreads, resident, ended, slots; /* SIM_CTA_SLOTS */
  cta *ctas;
  unsigned *pending, npending; /* CTAs not admitted yet */
  fiber **ready, **spinning;
  size_t nready, nspinning;
  unsigned long long seed, rng;
  jmp_buf scheduler_jump; /* where the scheduler takes the CPU back */
  fiber *current;
} grid_run;

extern _Thread_local grid_run *running;

#define DYNAMIC_SHARED 0xffffffffu

/* The calling GPU thread; outside a kernel, says `what` needs one and
 * ends the process. */
fiber *me(const char *what);
/* The fiber gives the CPU back to its scheduler. */
void to_scheduler(fiber *f);
/* ctas.c: the stacks of a CTA's threads (bytes of them), mapped or kept
 * from an earlier CTA (NULL: no memory), and kept when it ends. */
unsigned char *take_stacks(size_t bytes);
void keep_stacks(unsigned char *p, size_t bytes);
/* ctas.c: a CTA's __shared__ memory and warps, when it ends. */
void cta_release(cta *c);
/* A CTA barrier that `ended` threads of the CTA left by ending while
 * `waiting` wait at it: a violation. */
_Noreturn void barrier_left(unsigned waiting, unsigned ended);
/* A thread of warp w of c ended: threads of it waiting at a warp barrier
 * that it left are a violation. */
void warp_thread_ended(cta *c, unsigned warp);
/* The __shared__ block of the calling thread's CTA that holds p, or NULL. */
shared_block *shared_block_of(const void *p);
/* fences.c: a CTA barrier completed (acquires what its relaxed wait
 * observed, where every thread that loaded a peer's arrival fenced). */
void fences_cta_barrier(cta *c);
/* The running kernel's communicator (through its device communicator),
 * for a message that stops its team too, or NULL. */
const struct ncclComm *kernel_comm(void);

#endif
