/* ncclsim: kernels run on the host (see sim.h). A program built for the
 * simulation launches its kernels through ncclsim_launch (include/
 * nccl_device.h rewrites `<<<...>>>` to it); the launch is queued on its
 * stream like any work, and when it runs every GPU thread is a fiber (a
 * ucontext of its own stack) of the thread that waits for the stream.
 *
 * As a GPU does, and at its least convenient:
 *  - CTAs are admitted in a random order into resident slots (as many as
 *    an H100's or H200's SMs keep, or SIM_CTA_SLOTS: kernels.c); the rest
 *    wait for a resident CTA to end;
 *  - the next thread to run is drawn at random among those that can run,
 *    from a seed: SIM_SEED, else one drawn per launch; every message of a
 *    broken rule names it, so that SIM_SEED=S repeats the schedule;
 *  - a thread runs until it waits (a CTA or warp barrier, a peer), or
 *    ends, or, before one of its accesses to memory, the schedule gives
 *    the CPU to another (ncclsim_may_switch: often between the load and
 *    the store of a +=);
 *  - the threads of a CTA meet at a barrier only from the same call of
 *    it (cta-barrier, ctas.c).
 * A CTA whose threads wait at a CTA barrier that one of them left by
 * ending is a rule violation (the GPU would hang). An access past the end
 * of an ncclMemAlloc buffer (its guard page) is named, with its place.
 *
 * A thread starts on its own stack with setcontext; from then on the
 * switches between it and the scheduler are _setjmp and _longjmp, which
 * leave the signal mask alone (swapcontext's system call, at every switch,
 * took most of a kernel's time). glibc's _FORTIFY_SOURCE check refuses a
 * longjmp to another stack: it is off in this file. */
#undef _FORTIFY_SOURCE
#include "sim.h"

#include "ncclsim_device.h"

#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "fibers.h"
#include "shadow.h"

_Thread_local grid_run *running;

static unsigned draw(grid_run *g, unsigned n)
{
  g->rng ^= g->rng << 13, g->rng ^= g->rng >> 7, g->rng ^= g->rng << 17;
  return (unsigned)(g->rng % n);
}

static unsigned volume(dim3 d) { return d.x * d.y * d.z; }

/* ------------------------------------------------ the running GPU thread */

fiber *me(const char *what)
{
  if (running == NULL || running->current == NULL) {
    fprintf(stderr, "ncclsim: %s outside a kernel\n", what);
    _exit(SIM_EXIT_VIOLATION);
  }
  return running->current;
}

uint3 ncclsim_thread_idx(void) { return me("threadIdx")->idx; }
uint3 ncclsim_block_idx(void) { return me("blockIdx")->cta->idx; }
dim3 ncclsim_block_dim(void) { return (me("blockDim"), running->k->block); }
dim3 ncclsim_grid_dim(void) { return (me("gridDim"), running->k->grid); }

int in_kernel(void) { return running != NULL && running->current != NULL; }

int current_gpu_thread(int *rank, int *lane, unsigned *thread)
{
  if (running == NULL || running->current == NULL)
    return 0;
  const fiber *f = running->current;
  *rank = running->k->rank;
  *lane = f->cta->linear < HB_LANES ? (int)f->cta->linear : HB_NONE;
  *thread = f->linear;
  return 1;
}

unsigned current_cta(void) { return me("a CTA's index")->cta->linear; }

int current_kernel_rank(void) { return running ? running->k->rank : -1; }

const char *current_place(char *buf, size_t len)
{
  const fiber *f = me("a device call");
  snprintf(buf, len,
           "kernel %s (CTA %u, thread %u; schedule seed %llu: SIM_SEED=%llu"
           " repeats it)",
           running->k->name, f->cta->linear,
           f->idx.x + running->k->block.x *
                          (f->idx.y + running->k->block.y * f->idx.z),
           running->seed, running->seed);
  return buf;
}

int cta_leader(void)
{
  const fiber *f = me("a CTA's barrier");
  return f->idx.x == 0 && f->idx.y == 0 && f->idx.z == 0;
}

void to_scheduler(fiber *f)
{
  if (_setjmp(f->jump) == 0)
    _longjmp(running->scheduler_jump, 1);
}

void spin_yield(void)
{
  fiber *f = me("a wait for peers");
  f->state = FIBER_SPINNING;
  to_scheduler(f);
}

/* The kernel's communicator (its devcomm's), for a message that stops
 * the team, or NULL. */
const struct ncclComm *kernel_comm(void)
{
  const struct ncclDevComm *dc = running ? running->k->devcomm : NULL;
  const sim_devcomm *d = dc ? dc->sim : NULL;
  return d != NULL && d->magic == DEVCOMM_MAGIC ? d->comm : NULL;
}

/* Before an access: from the seed, another GPU thread may run first (a
 * GPU interleaves its threads between any two accesses): one time in
 * SWITCH_ODDS, and one time in two before a store to the word the thread
 * loaded last (the store of a +=, which a GPU does not make one with its
 * load). */
#define SWITCH_ODDS 32
void ncclsim_may_switch(const void *p, int writes)
{
  grid_run *g = running;
  fiber *f = g != NULL ? g->current : NULL;
  if (f == NULL)
    return;
  const int rmw = writes && p == f->loaded;
  f->loaded = writes ? NULL : p;
  if (draw(g, rmw ? 2 : SWITCH_ODDS) != 0)
    return;
  f->state = FIBER_YIELDED;
  to_scheduler(f);
}

/* ------------------------------------------------------ the scheduler */

static void fiber_main(void)
{
  grid_run *g = running;
  fiber *f = g->current;
  g->k->thread(g->k->args);
  f->state = FIBER_DONE;
  _longjmp(running->scheduler_jump, 1); /* never returns */
}

/* GPU thread t of CTA c, ready to start (its own function: getcontext
 * returns twice, as setjmp does, so no caller's locals live across it). */
static __attribute__((noinline)) fiber *new_fiber(grid_run *g, cta *c,
                                                   unsigned t)
{
  fiber *f = &c->threads[t];
  const dim3 b = g->k->block;
  f->cta = c;
  f->linear = t;
  f->idx = (uint3){t % b.x, t / b.x % b.y, t / (b.x * b.y)};
  f->started = 0;
  getcontext(&f->context);
  f->context.uc_stack.ss_sp = c->stacks + (size_t)t * STACK_BYTES;
  f->context.uc_stack.ss_size = STACK_BYTES;
  f->context.uc_link = NULL; /* fiber_main jumps back, never returns */
  makecontext(&f->context, fiber_main, 0);
  return f;
}

static void admit(grid_run *g, lockstep *ls)
{
  while (g->npending > 0 && g->resident < g->slots) {
    unsigned i = draw(g, g->npending);
    cta *c = &g->ctas[g->pending[i]];
    g->pending[i] = g->pending[--g->npending];
    c->threads = calloc(g->nthreads, sizeof *c->threads);
    c->stacks = take_stacks((size_t)g->nthreads * STACK_BYTES);
    if (c->threads == NULL || c->stacks == NULL) {
      fprintf(stderr, "ncclsim: out of memory for the threads of a CTA\n");
      _exit(SIM_EXIT_VIOLATION);
    }
    for (unsigned t = 0; t < g->nthreads; t++)
      g->ready[g->nready++] = new_fiber(g, c, t);
    g->resident++;
    if (ls != NULL)
      lockstep_progress(ls);
  }
}

static void thread_ended(grid_run *g, fiber *f)
{
  cta *c = f->cta;
  if (c->arrived > 0) {
    g->current = f;
    barrier_left(c->arrived, c->done + 1);
  }
  g->current = f; /* for a message naming its place */
  warp_thread_ended(c, f->linear / WARP);
  g->current = NULL;
  if (++c->done < g->nthreads)
    return;
  cta_release(c);
  keep_stacks(c->stacks, (size_t)g->nthreads * STACK_BYTES);
  free(c->threads);
  c->threads = NULL;
  g->resident--;
  g->ended++;
}

/* In lockstep (ls), this rank runs for a quantum of steps at its turn,
 * or until all its threads that can run have only looked for their peers
 * once. */
#define QUANTUM 4096
static void schedule(grid_run *g, lockstep *ls)
{
  const struct timespec nap = {0, 20 * 1000};
  const long step_us = env_long("SIM_STEP_US", 0); /* a slower machine */
  long owed_us = 0; /* slept a millisecond at a time, after the steps */
  unsigned steps = 0;
  int looked = 0;
  if (ls != NULL)
    lockstep_wait_turn(ls);
  while (g->ended < g->nctas) {
    admit(g, ls);
    if (ls != NULL && (steps >= QUANTUM || (g->nready == 0 && looked))) {
      lockstep_pass(ls, 0);
      lockstep_wait_turn(ls);
      steps = 0, looked = 0;
    }
    if (g->nready == 0) { /* only threads waiting for peers: let them look */
      memcpy(g->ready, g->spinning, g->nspinning * sizeof *g->ready);
      g->nready = g->nspinning;
      g->nspinning = 0;
      if (ls != NULL)
        looked = 1;
      else
        nanosleep(&nap, NULL);
      continue;
    }
    unsigned i = draw(g, (unsigned)g->nready);
    fiber *f = g->ready[i];
    g->ready[i] = g->ready[--g->nready];
    f->state = FIBER_READY;
    g->current = f;
    if (_setjmp(g->scheduler_jump) == 0) { /* back here at its next wait */
      if (f->started)
        _longjmp(f->jump, 1);
      f->started = 1;
      setcontext(&f->context);
    }
    g->current = NULL;
    steps++;
    if (step_us > 0 && (owed_us += step_us) >= 1000) {
      const struct timespec owed = {owed_us / 1000000, owed_us % 1000000 * 1000};
      nanosleep(&owed, NULL); /* (asleep: the machine's other work goes on) */
      owed_us = 0;
    }
    if (ls != NULL && f->state != FIBER_SPINNING) /* (said at once: a */
      lockstep_progress(ls); /* quantum may take longer than a wait may) */
    if (f->state == FIBER_DONE)
      thread_ended(g, f); /* (frees f) */
    else if (f->state == FIBER_SPINNING)
      g->spinning[g->nspinning++] = f;
    else if (f->state == FIBER_YIELDED)
      g->ready[g->nready++] = f;
  }
  if (ls != NULL)
    lockstep_pass(ls, 1);
}

void run_kernel(struct sim_kernel *k, uint32_t correlation)
{
  grid_run g = {.k = k, .nctas = volume(k->grid), .nthreads = volume(k->block)};
  lockstep team, *ls = NULL;
  sim_devcomm *d = k->devcomm ? k->devcomm->sim : NULL;
  if (d != NULL && d->magic == DEVCOMM_MAGIC) {
    ls = &team;
    g.seed = lockstep_enter(ls, d, k->name);
  } else {
    const char *seed = getenv("SIM_SEED");
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    g.seed = seed && *seed ? strtoull(seed, NULL, 10)
                           : (unsigned long long)now.tv_nsec ^ (unsigned long long)k->rank << 20;
  }
  g.rng = g.seed * 2654435761u + (unsigned long long)k->rank + 1;
  const long slots = resident_ctas(g.nthreads);
  g.slots = (unsigned)(slots > 0 ? slots : 1);
  const size_t most = (size_t)g.slots * g.nthreads;
  g.ctas = calloc(g.nctas, sizeof *g.ctas);
  g.pending = calloc(g.nctas, sizeof *g.pending);
  g.ready = calloc(most, sizeof *g.ready);
  g.spinning = calloc(most, sizeof *g.spinning);
  if (!g.ctas || !g.pending || !g.ready || !g.spinning) {
    fprintf(stderr, "ncclsim: out of memory for kernel %s\n", k->name);
    _exit(SIM_EXIT_VIOLATION);
  }
  for (unsigned c = 0; c < g.nctas; c++) {
    g.ctas[c].linear = c;
    g.ctas[c].idx = (uint3){c % k->grid.x, c / k->grid.x % k->grid.y,
                            c / (k->grid.x * k->grid.y)};
    g.pending[g.npending++] = c;
  }
  sim_catch_kernel_faults();
  const int nlanes = g.nctas < HB_LANES ? (int)g.nctas : HB_LANES;
  hb_kernels(k->rank, nlanes, 1);
  grid_run *outer = running;
  running = &g;
  schedule(&g, ls);
  hb_kernel_memory_done();
  running = outer;
  hb_kernels(k->rank, nlanes, 0);
  if (cupti_kernel != NULL)
    cupti_kernel(correlation, k->device, k->name);
  free(g.ctas), free(g.pending), free(g.ready), free(g.spinning);
  k->release(k->args);
  free(k);
}
