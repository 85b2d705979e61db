/* ncclsim: fences, and what they order between ranks (see hb.c).
 *
 * CUDA's fences: __threadfence_block() is of CTA scope, __threadfence() of
 * device scope (one GPU), __threadfence_system() of system scope (what
 * other GPUs see too; CUDA C++ Programming Guide, memory fence functions;
 * PTX's fence.sc.cta/.gpu/.sys). Between ranks only a system-scope fence
 * orders anything, in the two patterns of PTX's memory model that an LSA
 * barrier synced with cuda::memory_order_relaxed leaves to the kernel:
 *  - release: a fence, then a relaxed store of the same thread (NCCL
 *    2.30.7 nccl_device/impl/lsa_barrier__funcs.h: arrive stores each
 *    peer's epoch relaxed, thread i of the CTA the i-th peer's, after
 *    fencing with releaseOrderOf(order), nothing for relaxed). A relaxed
 *    arrive releases here when every thread of the CTA either touched no
 *    window or global memory since the CTA's last release, or fenced at
 *    system scope after its last such access, or the storing threads all
 *    fenced at system scope after a CTA barrier that came after it;
 *  - acquire: a relaxed load, then a fence of the same thread (wait loads
 *    each peer's epoch in thread i). What a relaxed wait observed is
 *    acquired, for the whole CTA, at its first CTA barrier after every
 *    thread that loaded a peer's epoch fenced at system scope; until then
 *    not even the fencing thread's own accesses count as acquired (a
 *    stricter rule than PTX's for that one thread).
 * A device-scope fence where a system one would have done is remembered,
 * so that the race it lets through says so. __threadfence_block() orders
 * nothing here. A fence with atomics between CTAs of one rank (a flag
 * they poll) is not modelled: such an order is not seen, and the accesses
 * it orders are reported. */
#include "sim.h"

#include "ncclsim_device.h"

#include <string.h>

#include "fibers.h"
#include "shadow.h"

/* Per lane of this process's kernels: a relaxed wait's epochs were loaded
 * and then fenced, but at device scope only. */
static _Thread_local unsigned char device_acquire[HB_PER_RANK];

void ncclsim_fence(int scope)
{
  fiber *f = me("__threadfence");
  f->steps++;
  if (scope == SCOPE_SYSTEM)
    f->sys_fence = f->steps, f->sys_fence_seg = f->cta->segment;
  if (scope >= SCOPE_DEVICE)
    f->dev_fence = f->steps, f->dev_fence_seg = f->cta->segment;
}

void ncclsim_atomic_enter(int scope, const void *pc)
{
  fiber *f = me("an atomic");
  if (f->atomic_depth++ == 0)
    f->atomic_scope = scope, f->atomic_site = pc;
}

void ncclsim_atomic_leave(void)
{
  fiber *f = me("an atomic");
  if (f->atomic_depth > 0 && --f->atomic_depth == 0)
    f->atomic_scope = SCOPE_NONE, f->atomic_site = NULL;
}

void fences_accessed(void)
{
  fiber *f = running->current;
  f->last_access = ++f->steps;
  f->last_access_seg = f->cta->segment;
}

static unsigned loaders(unsigned peers)
{
  return peers < running->nthreads ? peers : running->nthreads;
}

/* Every thread's accesses since the last release covered by fences of at
 * least `scope`: its own after them, or the storing threads' after a CTA
 * barrier after them. */
static int covered(const cta *c, unsigned storers, int scope)
{
  unsigned after = ~0u; /* the storers' fences: the earliest segment */
  for (unsigned i = 0; i < storers; i++) {
    const fiber *t = &c->threads[i];
    const unsigned seg = scope == SCOPE_SYSTEM ? t->sys_fence_seg : t->dev_fence_seg;
    const unsigned long long at = scope == SCOPE_SYSTEM ? t->sys_fence : t->dev_fence;
    after = at == 0 ? 0 : (seg < after ? seg : after);
  }
  for (unsigned t = 0; t < running->nthreads; t++) {
    const fiber *u = &c->threads[t];
    const unsigned long long fence = scope == SCOPE_SYSTEM ? u->sys_fence : u->dev_fence;
    if (u->last_access != 0 && u->last_access_seg >= c->released_seg &&
        fence < u->last_access && u->last_access_seg >= after)
      return 0;
  }
  return 1;
}

int fences_release(hb_domain *d, int rank, int lane, int releases)
{
  if (!in_kernel())
    return releases;
  cta *c = running->current->cta;
  unsigned char *device_only = hb_notes(d);
  const int unit = hb_unit(rank, lane);
  if (!releases) {
    const unsigned storers = loaders((unsigned)hb_ranks(d) - 1);
    releases = covered(c, storers, SCOPE_SYSTEM);
    if (!releases && unit < HB_NOTES && covered(c, storers, SCOPE_DEVICE))
      device_only[unit] = 1;
  }
  if (releases) {
    c->released_seg = c->segment;
    if (unit < HB_NOTES)
      device_only[unit] = 0;
  }
  return releases;
}

void fences_observed(hb_domain *d, int peer)
{
  if (!in_kernel())
    return;
  cta *c = running->current->cta;
  if (c->observed_seg != c->segment || c->observed_domain != d)
    c->observed_peers = 0;
  c->observed_seg = c->segment;
  c->observed_domain = d;
  c->observed_peers += peer >= 0;
}

void fences_cta_barrier(cta *c)
{
  if (c->observed_peers == 0)
    return;
  const unsigned n = loaders(c->observed_peers);
  int sys = 1, dev = 1;
  for (unsigned i = 0; i < n; i++) {
    sys &= c->threads[i].sys_fence_seg > c->observed_seg;
    dev &= c->threads[i].dev_fence_seg > c->observed_seg;
  }
  const int lane = c->linear < HB_LANES ? (int)c->linear : HB_NONE;
  if (sys) {
    hb_acquire(c->observed_domain, running->k->rank, lane);
    c->observed_peers = 0;
  }
  device_acquire[lane] = !sys && dev;
}

const char *fences_note(hb_domain *d, int me, int unit, int pending)
{
  if (pending && me / HB_PER_RANK == current_kernel_rank() &&
      device_acquire[me % HB_PER_RANK])
    return "; the __threadfence() after that wait does not make it an"
           " acquire: it is of device scope, and orders nothing between"
           " GPUs (__threadfence_system() would, with a CTA barrier after"
           " it)";
  if (!pending && unit < HB_NOTES && hb_notes(d)[unit])
    return "; the __threadfence() before that rank's relaxed arrive does not"
           " release it: it is of device scope, and orders nothing between"
           " GPUs (__threadfence_system() would)";
  return "";
}
