/* ncclsim: every access a kernel makes, checked against happens-before
 * (hb.c; see device.h). A simulated lesson's main.cu is compiled with
 * -fsanitize=thread (sim/compile_cu.sh): the compiler then calls
 * __tsan_readN / __tsan_writeN / __tsan_atomicN_* before each access of
 * that file, and the simulation, not ThreadSanitizer's runtime, defines
 * them (tsan_hooks.c). Outside a kernel they return at once. In a kernel,
 * before each access, the schedule may give the CPU to another GPU thread
 * (from the seed: a GPU interleaves its threads between any two
 * accesses, a load and the store of a += too), then the access is
 * checked in the shadow (shadow.c) of what it touches:
 *  - the CTA's __shared__ memory: against its other threads' accesses
 *    (shared-data-race);
 *  - a window: against every rank's accesses, its host's copies too
 *    (queues.c), those of other CTAs of the same rank included
 *    (lsa-data-race); each window has a shadow that every rank maps;
 *  - other device memory of the rank (cudaMalloc, ncclMemAlloc outside a
 *    window): against its CTAs' and threads' (data-race), in a shadow made
 *    at the kernel's first access; the rank's other streams: stream_races.c.
 * A race names both accesses and what is missing of the order. */

#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fibers.h"
#include "shadow.h"

/* ------------------------------------------------------- the shadows */

size_t hb_shadow_bytes(size_t window_bytes, int nranks)
{
  return shadow_bytes((window_bytes + 3) / 4, nranks);
}

/* A window as this process reaches it, with its shadow. */
typedef struct region {
  const unsigned char *base;
  size_t bytes, words, reach; /* reach: to the end of its allocation */
  size_t mapped; /* to the end of its mapping (whole pages), >= reach */
  shadow shadow; /* a read slot per rank */
  int owner;
  hb_domain *domain;
  const struct ncclComm *comm; /* the registering rank's (its folder) */
  const void *window; /* the registration it belongs to */
} region;

#define MAX_REGIONS 512
static region regions[MAX_REGIONS];
static pthread_mutex_t regions_lock = PTHREAD_MUTEX_INITIALIZER;
static int nregions; /* published with release; slots are never reused
                        while a kernel runs (a window is deregistered by
                        its host after its kernels) */

void hb_region_add(const void *window, const void *base, size_t bytes,
                   size_t reach, size_t mapped, void *shadow, int owner,
                   const struct ncclComm *comm)
{
  pthread_mutex_lock(&regions_lock);
  int i = 0;
  while (i < nregions && regions[i].base != NULL)
    i++;
  if (i == MAX_REGIONS)
    sim_failure("ncclCommWindowRegister", "more than %d windows mapped",
                MAX_REGIONS);
  const size_t words = (bytes + 3) / 4;
  regions[i] = (region){.base = base, .bytes = bytes, .words = words,
                        .reach = reach > bytes ? reach : bytes,
                        .mapped = mapped > reach ? mapped : reach,
                        .shadow = shadow_at(shadow, words, comm->nranks),
                        .owner = owner, .domain = comm->hb, .comm = comm,
                        .window = window};
  if (i == nregions)
    __atomic_store_n(&nregions, nregions + 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&regions_lock);
}

void hb_region_remove(const void *window)
{
  pthread_mutex_lock(&regions_lock);
  for (int i = 0; i < nregions; i++)
    if (regions[i].window == window)
      regions[i].base = NULL;
  pthread_mutex_unlock(&regions_lock);
}

/* A window whose owner's mapping holds p past the window's end. */
static const region *past_window(const void *p)
{
  const unsigned char *b = p;
  const int n = __atomic_load_n(&nregions, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; i++) {
    const region *r = &regions[i];
    if (r->base != NULL && b >= r->base + r->bytes && b < r->base + r->mapped)
      return r;
  }
  return NULL;
}

static region *region_of(const void *p)
{
  const unsigned char *b = p;
  const int n = __atomic_load_n(&nregions, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; i++) {
    const region *r = &regions[i];
    if (r->base != NULL && b >= r->base && b < r->base + r->bytes)
      return &regions[i];
  }
  return NULL;
}

/* The first window that starts after p and before end, else end. */
static const unsigned char *next_region_start(const unsigned char *p,
                                              const unsigned char *end)
{
  const unsigned char *next = end;
  const int n = __atomic_load_n(&nregions, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; i++) {
    const region *r = &regions[i];
    if (r->base != NULL && r->base > p && r->base < next)
      next = r->base;
  }
  return next;
}

/* ------------------------------------------------- global memory */

/* Device memory of this rank outside windows that a running kernel
 * touched: a shadow for the kernel's run (its CTAs and threads against
 * each other; kernels on one stream are ordered, and stream order is not
 * checked here), freed when the kernel ends. */
typedef struct global_region {
  const unsigned char *base;
  size_t bytes;
  void *memory;
  size_t memory_bytes;
  shadow shadow;
} global_region;
#define MAX_GLOBALS 64
static _Thread_local global_region globals[MAX_GLOBALS];
static _Thread_local int nglobals;
static _Thread_local uintptr_t not_device_page; /* the last page found not to be */

static global_region *global_of(const void *p)
{
  const unsigned char *b = p;
  for (int i = 0; i < nglobals; i++)
    if (b >= globals[i].base && b < globals[i].base + globals[i].bytes)
      return &globals[i];
  if ((uintptr_t)p >> 12 == not_device_page || nglobals == MAX_GLOBALS)
    return NULL;
  pthread_mutex_lock(&lock);
  const sim_alloc *a = find_alloc(p, 1);
  pthread_mutex_unlock(&lock);
  if (a == NULL) {
    not_device_page = (uintptr_t)p >> 12;
    return NULL;
  }
  global_region *g = &globals[nglobals];
  const size_t words = (a->size + 3) / 4;
  g->memory_bytes = shadow_bytes(words, SHARED_SLOTS);
  g->memory = mmap(NULL, g->memory_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (g->memory == MAP_FAILED)
    sim_failure("a kernel's access", "no memory for the shadow of %zu bytes"
                " of device memory", a->size);
  g->base = a->base, g->bytes = a->size;
  g->shadow = shadow_at(g->memory, words, SHARED_SLOTS);
  nglobals++;
  return g;
}

void hb_kernel_memory_done(void)
{
  for (int i = 0; i < nglobals; i++)
    munmap(globals[i].memory, globals[i].memory_bytes);
  nglobals = 0;
  not_device_page = 0;
}

/* ------------------------------------------------------- the checks */

/* A kernel's access that runs past the end of a window, wherever it
 * starts (lsa_windows.c says it): NCCL maps a peer's window with its
 * registered size. A rank's own buffer past its window but inside its
 * allocation is exempt: its own pointers reach it as well. */
static void check_bounds(const region *rg, const void *p, size_t bytes,
                         int how, const mem_access *a)
{
  const size_t at = (size_t)((const unsigned char *)p - rg->base);
  if (at + bytes <= rg->bytes ||
      (rg->owner == a->rank && at + bytes <= rg->reach))
    return;
  past_window_end(rg->comm->dir, rg->owner, rg->bytes, at + bytes > rg->reach,
                  at, bytes, how, a);
}

/* Each word of `bytes` at p, in rg, accessed as `now` (its clock from the
 * region's domain). */
static void check_window(region *rg, const void *p, size_t bytes, mem_access *now)
{
  hb_domain *d = rg->domain;
  const int unit = hb_unit(now->rank, now->lane);
  const order o = {.seen = hb_seen(d, unit), .domain = d};
  now->clock = hb_now(d, unit);
  const size_t from = (size_t)((const unsigned char *)p - rg->base);
  size_t last = (from + bytes - 1) / 4;
  if (last >= rg->words)
    last = rg->words - 1;
  for (size_t w = from / 4; w <= last; w++) {
    mem_access other;
    int scope_only;
    if (shadow_check(&rg->shadow, w, now, &o, now->rank, 1, &other, &scope_only))
      memory_race(rg->comm->dir, d, rg->owner, w * 4, now, &other, scope_only);
  }
}

static void check_shared(shared_block *sb, const fiber *f, const void *p,
                         size_t bytes, mem_access *now)
{
  shadow s = shadow_at(sb->shadow, (sb->bytes + 3) / 4, SHARED_SLOTS);
  const order o = {NULL, NULL};
  const size_t from = (size_t)((const unsigned char *)p - (unsigned char *)sb->p);
  size_t last = (from + bytes - 1) / 4;
  if (last >= s.words)
    last = s.words - 1;
  now->clock = f->cta->segment;
  now->lane = (int)f->cta->linear;
  for (size_t w = from / 4; w <= last; w++) {
    mem_access other;
    int scope_only;
    if (shadow_check(&s, w, now, &o, 0, SHARED_SLOTS, &other, &scope_only))
      shared_race(sb->p, w * 4, now, &other, scope_only);
  }
}

static void check_global(global_region *g, const fiber *f, const void *p,
                         size_t bytes, mem_access *now)
{
  const order o = {NULL, NULL}; /* nothing orders two CTAs of a kernel */
  const size_t from = (size_t)((const unsigned char *)p - g->base);
  size_t last = (from + bytes - 1) / 4;
  if (last >= g->shadow.words)
    last = g->shadow.words - 1;
  mem_access at = *now; /* its CTA in lane and rank (17 bits) */
  at.clock = f->cta->segment;
  at.lane = (int)(f->cta->linear & 511);
  at.rank = (int)(f->cta->linear >> 9 & 255);
  for (size_t w = from / 4; w <= last; w++) {
    mem_access other;
    int scope_only;
    if (shadow_check(&g->shadow, w, &at, &o, 0, SHARED_SLOTS, &other,
                     &scope_only)) {
      other.lane = (int)((unsigned)other.rank << 9 | (unsigned)other.lane);
      other.rank = now->rank;
      at.lane = (int)f->cta->linear, at.rank = now->rank;
      memory_race(NULL, NULL, -1, (size_t)((const unsigned char *)p - g->base),
                  &at, &other, scope_only);
    }
  }
}

/* A kernel's access of `bytes` at p by the calling GPU thread; `scope`:
 * an atomic's (SCOPE_NONE: a plain access). */
static void device_access(const void *p, size_t bytes, int how, int scope,
                          void *pc)
{
  if (!in_kernel())
    return; /* the host side of main.cu */
  if ((how & HB_ALIGNED) && bytes > 1 && (uintptr_t)p % bytes != 0)
    misaligned(p, bytes, how, pc);
  ncclsim_may_switch(p, how & HB_WRITE); /* another thread may run first */
  fiber *f = running->current;
  const unsigned char *b = p;
  if (b >= f->cta->stacks &&
      b < f->cta->stacks + (size_t)running->nthreads * STACK_BYTES)
    return; /* a thread's own locals */
  mem_access now = {.rank = running->k->rank,
                .lane = f->cta->linear < HB_LANES ? (int)f->cta->linear : HB_NONE,
                .thread = f->linear, .wphase = f->wphase, .scope = scope,
                .writes = (how & HB_WRITE) != 0, .site = exe_offset(pc)};
  shared_block *sb = shared_block_of(p);
  if (sb != NULL) {
    check_shared(sb, f, p, bytes, &now);
    return;
  }
  region *rg = region_of(p);
  const region *past = rg != NULL ? rg : past_window(p);
  if (past != NULL)
    check_bounds(past, p, bytes, how, &now);
  if (rg != NULL) {
    fences_accessed();
    order_kernel_access(rg->base, p, bytes, now.writes, scope != SCOPE_NONE);
    check_window(rg, p, bytes, &now);
    return;
  }
  global_region *g = global_of(p);
  if (g != NULL) {
    fences_accessed();
    order_kernel_access(g->base, p, bytes, now.writes, scope != SCOPE_NONE);
    check_global(g, f, p, bytes, &now);
  }
}

void hb_device_access(const void *p, size_t bytes, int how, void *pc)
{
  device_access(p, bytes, how, SCOPE_NONE, pc);
}

/* An atomic operation of a kernel (tsan_hooks.c), of the scope the
 * calling thread set for it (atomicAdd_system, ...; device by default). */
void hb_atomic_access(const volatile void *p, size_t bytes, int writes,
                      void *pc)
{
  const fiber *f = in_kernel() ? running->current : NULL;
  const int scope = f != NULL && f->atomic_scope ? f->atomic_scope : SCOPE_DEVICE;
  device_access((const void *)p, bytes, writes ? HB_WRITE : HB_READ, scope,
                f != NULL && f->atomic_site ? (void *)f->atomic_site : pc);
}

/* The host's copies and memsets on its streams (queues.c). */
void hb_host_access(const void *p, size_t bytes, int writes)
{
  if (bytes == 0 || __atomic_load_n(&nregions, __ATOMIC_ACQUIRE) == 0)
    return;
  for (size_t done = 0; done < bytes;) { /* a copy may span windows */
    const unsigned char *at = (const unsigned char *)p + done;
    region *rg = region_of(at);
    size_t n = bytes - done;
    if (rg != NULL) {
      const size_t left = rg->bytes - (size_t)(at - rg->base);
      n = n < left ? n : left;
      mem_access now = {.rank = sim_rank(), .lane = HB_HOST, .writes = writes};
      check_window(rg, at, n, &now);
    } else { /* outside every window: on to the next one it reaches */
      n = (size_t)(next_region_start(at, (const unsigned char *)p + bytes) - at);
    }
    done += n;
  }
}
