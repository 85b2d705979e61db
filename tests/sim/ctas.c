/* ncclsim: what the threads of one CTA, or of one warp, share (see
 * fibers.h; fibers.c runs them and schedules them):
 *  - __shared__ memory: one object per CTA for each declaration (the
 *    simulated build rewrites `__shared__ T name;` into a reference to it,
 *    sim/compile_cu.sh), and the launch's dynamic shared memory (extern
 *    __shared__); fresh, it reads as a pattern, as a GPU's leftovers may;
 *    each with a shadow, so that its threads' accesses are checked
 *    (shadow.c);
 *  - CTA barriers: every thread of the CTA, from the same call
 *    (cta-barrier, below), each one starting a new segment of the CTA's
 *    accesses (shadow.c);
 *  - warps: threads 32k .. 32k+31 of a CTA; __syncwarp, the shuffles and
 *    the votes wait for every thread of the warp (a mask must name them
 *    all: a warp operation on part of a warp is not simulated here), and a
 *    warp barrier that a thread of the warp left by ending is a rule
 *    violation, as a CTA barrier is; a warp barrier orders what the
 *    warp's threads did before it (their wphase);
 *  - stacks: its threads' stacks, kept for the next CTA when it ends. */
#include "sim.h"

#include "ncclsim_device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fibers.h"
#include "shadow.h"

#define FRESH_SHARED 0xff /* every float NaN, every int -1 */

/* A new __shared__ block of the calling CTA, of `bytes`, fresh, with its
 * shadow (shadow.c: one writer and two readers kept per word). */
static shared_block *new_block(cta *c, unsigned id, size_t bytes, size_t align)
{
  shared_block *more = realloc(c->shared, (c->nshared + 1) * sizeof *more);
  void *p = aligned_alloc(align < 16 ? 16 : align, (bytes + 15) / 16 * 16);
  void *shadow = calloc(1, shadow_bytes((bytes + 3) / 4, SHARED_SLOTS));
  if (more == NULL || p == NULL || shadow == NULL) {
    fprintf(stderr, "ncclsim: out of memory for a CTA's __shared__ memory\n");
    _exit(SIM_EXIT_VIOLATION);
  }
  memset(p, FRESH_SHARED, bytes);
  c->shared = more;
  shared_block *b = &c->shared[c->nshared++];
  b->id = id, b->bytes = bytes;
  b->p = p;
  b->shadow = shadow;
  return b;
}

void *ncclsim_shared_object(unsigned id, size_t bytes, size_t align)
{
  cta *c = me("a __shared__ variable")->cta;
  for (unsigned i = 0; i < c->nshared; i++)
    if (c->shared[i].id == id)
      return c->shared[i].p;
  return new_block(c, id, bytes, align)->p;
}

void *ncclsim_dynamic_shared(void)
{
  (void)me("extern __shared__ memory");
  const size_t bytes = running->k->shared;
  if (bytes == 0) {
    char place[256];
    violation(NULL, "shared-memory", current_place(place, sizeof place),
              "extern __shared__ memory used, but the launch asked for 0"
              " bytes of it (the third <<<>>> argument)");
  }
  return ncclsim_shared_object(DYNAMIC_SHARED, bytes, 16);
}

shared_block *shared_block_of(const void *p)
{
  cta *c = running->current->cta;
  const unsigned char *b = p;
  for (unsigned i = 0; i < c->nshared; i++) {
    const unsigned char *base = c->shared[i].p;
    if (b >= base && b < base + c->shared[i].bytes)
      return &c->shared[i];
  }
  return NULL;
}

void cta_release(cta *c)
{
  for (unsigned i = 0; i < c->nshared; i++) {
    free(c->shared[i].p);
    free(c->shared[i].shadow);
  }
  free(c->shared);
  c->shared = NULL, c->nshared = 0;
}

/* ----------------------------------------------------- CTA barriers */

void ncclsim_cta_sync(void)
{
  ncclsim_site_enter(__builtin_return_address(0));
  cta_sync();
  ncclsim_site_leave();
}

/* Every thread of the CTA must reach each of its barriers: a thread that
 * reaches one after others of its CTA ended, or that ends while others
 * wait at one, breaks the rule (the GPU may hang; compute-sanitizer's
 * synccheck reports it). */
_Noreturn void barrier_left(unsigned waiting, unsigned ended)
{
  char place[256];
  violation(NULL, "cta-barrier", current_place(place, sizeof place),
            "%u thread(s) of the CTA wait at a CTA barrier that %u other(s)"
            " left by ending: every thread of a CTA must reach it",
            waiting, ended);
}

/* The threads of a CTA must meet at the same barrier: __syncthreads() is
 * barrier.sync.aligned (PTX: every thread of the CTA executes the same
 * instruction), and so is ncclCoopCta's sync, which the LSA barrier's
 * arrive, wait and session end call (NCCL 2.30.7 nccl_device/coop.h,
 * impl/lsa_barrier__funcs.h); from divergent code a GPU may hang (seen:
 * half a warp in two __syncthreads() and the other half in a barrier's
 * sync, on an H100). Where each was called decides (sites.c). */
static _Noreturn void barrier_diverged(const fiber *f, const cta *c)
{
  char place[256], mine[160], theirs[160], branch[320];
  const uint32_t a = f->site ? exe_offset(f->site) - 1 : 0;
  const uint32_t b = c->barrier_site ? exe_offset(c->barrier_site) - 1 : 0;
  line_of(a, mine, sizeof mine);
  line_of(b, theirs, sizeof theirs);
  branch_between(a, b, branch, sizeof branch);
  violation(kernel_comm(), "cta-barrier", current_place(place, sizeof place),
            "thread %u reaches a CTA barrier at %s while thread %u of its CTA"
            " waits at another, at %s: every thread of a CTA must reach the"
            " same one (__syncthreads() and ncclCoopCta's sync are"
            " barrier.sync.aligned, undefined from divergent code: a GPU"
            " may hang)%s",
            f->linear, mine[0] ? mine : "a place without a line",
            c->barrier_thread, theirs[0] ? theirs : "a place without a line",
            branch);
}

void cta_sync(void)
{
  fiber *f = me("__syncthreads");
  cta *c = f->cta;
  if (c->done > 0)
    barrier_left(c->arrived + 1, c->done);
  if (c->arrived == 0)
    c->barrier_site = f->site, c->barrier_thread = f->linear;
  else if (c->barrier_site != f->site)
    barrier_diverged(f, c);
  if (++c->arrived < running->nthreads) {
    f->state = FIBER_AT_SYNC;
    to_scheduler(f);
    return;
  }
  /* The last to arrive: what every thread did before is ordered before
   * what each does after (a new segment), and it lets the others go on. */
  c->arrived = 0;
  c->segment++;
  hb_cta_barrier(running->k->rank,
                 c->linear < HB_LANES ? (int)c->linear : HB_NONE);
  fences_cta_barrier(c);
  for (unsigned t = 0; t < running->nthreads; t++) {
    c->threads[t].wphase++;
    if (c->threads[t].state == FIBER_AT_SYNC) {
      c->threads[t].state = FIBER_READY;
      running->ready[running->nready++] = &c->threads[t];
    }
  }
}

/* ---------------------------------------------------------- warps */

static unsigned warp_size_of(const fiber *f)
{
  const unsigned first = f->linear / WARP * WARP;
  return running->nthreads - first < WARP ? running->nthreads - first : WARP;
}

static unsigned full_mask(unsigned n)
{
  return n == WARP ? 0xffffffffu : (1u << n) - 1;
}

static _Noreturn void warp_left(unsigned waiting, unsigned ended)
{
  char place[256];
  violation(NULL, "warp-barrier", current_place(place, sizeof place),
            "%u thread(s) of a warp wait in a warp operation (__syncwarp, a"
            " shuffle or a vote) that %u other(s) of it left by ending:"
            " every thread the mask names must reach it",
            waiting, ended);
}

void warp_thread_ended(cta *c, unsigned warp)
{
  c->warp_done[warp]++;
  if (c->warp_arrived[warp] > 0)
    warp_left(c->warp_arrived[warp], c->warp_done[warp]);
}

/* Every thread of the caller's warp reaches this point; mask must name
 * them all. */
static void warp_barrier(fiber *f, unsigned mask, const char *what)
{
  cta *c = f->cta;
  const unsigned w = f->linear / WARP, n = warp_size_of(f);
  if ((mask & full_mask(n)) != full_mask(n)) {
    char place[256];
    fprintf(stderr, "ncclsim: not simulated here: %s with mask 0x%x, part"
            " of a warp of %u threads, in %s (tests/README.md lists what the"
            " simulation runs)\n", what, mask, n,
            current_place(place, sizeof place));
    _exit(SIM_EXIT_VIOLATION);
  }
  if (c->warp_done[w] > 0)
    warp_left(c->warp_arrived[w] + 1, c->warp_done[w]);
  if (++c->warp_arrived[w] < n) {
    f->state = FIBER_AT_WARP_SYNC;
    to_scheduler(f);
    return;
  }
  c->warp_arrived[w] = 0;
  for (unsigned t = w * WARP; t < w * WARP + n; t++) {
    c->threads[t].wphase++; /* what each did before is ordered for all */
    if (c->threads[t].state == FIBER_AT_WARP_SYNC) {
      c->threads[t].state = FIBER_READY;
      running->ready[running->nready++] = &c->threads[t];
    }
  }
}

void ncclsim_warp_sync(unsigned mask)
{
  warp_barrier(me("__syncwarp"), mask, "__syncwarp");
}

/* A shuffle: every thread of the warp puts `value`, then takes the value
 * of lane `from` of the warp (its own where `from` is out of the warp). */
unsigned long long ncclsim_warp_shuffle(unsigned mask, unsigned long long value,
                                        int from)
{
  fiber *f = me("a warp shuffle");
  cta *c = f->cta;
  const unsigned first = f->linear / WARP * WARP, n = warp_size_of(f);
  c->warp_slots[f->linear] = value;
  warp_barrier(f, mask, "a shuffle");
  const unsigned long long got =
      from >= 0 && (unsigned)from < n ? c->warp_slots[first + (unsigned)from]
                                      : value;
  warp_barrier(f, mask, "a shuffle"); /* all took theirs before the next */
  return got;
}

/* A vote: bit i of the result is lane i's predicate. */
unsigned ncclsim_warp_ballot(unsigned mask, int predicate)
{
  fiber *f = me("a warp vote");
  cta *c = f->cta;
  const unsigned first = f->linear / WARP * WARP, n = warp_size_of(f);
  c->warp_slots[f->linear] = predicate != 0;
  warp_barrier(f, mask, "a vote");
  unsigned bits = 0;
  for (unsigned i = 0; i < n; i++)
    bits |= (unsigned)c->warp_slots[first + i] << i;
  warp_barrier(f, mask, "a vote");
  return bits & mask;
}

unsigned ncclsim_lane_id(void) { return me("a lane id")->linear % WARP; }

/* The stacks of a CTA's threads, kept for the next CTA of this host
 * thread rather than unmapped: mapping fresh ones for every CTA faulted
 * in every page again (a grid sized to the GPU, launched in a loop, took
 * seconds of system time). A reused stack holds what the last thread left
 * there, as a GPU's local memory does. */
#define KEPT_STACKS 256
static _Thread_local unsigned char *kept[KEPT_STACKS];
static _Thread_local size_t kept_bytes[KEPT_STACKS];
static _Thread_local int nkept;

unsigned char *take_stacks(size_t bytes)
{
  for (int i = nkept - 1; i >= 0; i--)
    if (kept_bytes[i] == bytes) {
      unsigned char *p = kept[i];
      kept[i] = kept[--nkept], kept_bytes[i] = kept_bytes[nkept];
      return p;
    }
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

void keep_stacks(unsigned char *p, size_t bytes)
{
  if (nkept < KEPT_STACKS)
    kept[nkept] = p, kept_bytes[nkept++] = bytes;
  else
    munmap(p, bytes);
}
