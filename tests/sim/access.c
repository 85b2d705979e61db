/* ncclsim: every access a kernel makes to window memory, checked against
 * happens-before (hb.c; see device.h). A simulated lesson's main.cu is
 * compiled with -fsanitize=thread (sim/compile_cu.sh): the compiler then
 * calls __tsan_readN / __tsan_writeN / __tsan_atomicN_* before each access
 * of that file, and the simulation, not ThreadSanitizer's runtime, defines
 * them here. Outside a kernel, or outside windows, they return at once.
 *
 * Each window has a shadow, shared by every rank as the window is: per
 * 4-byte word, its last write (rank, unit, thread, clock, site, atomic or
 * not) and each rank's last read (unit, clock). An access conflicts with
 * another rank's write (or, for a write, read) of the same word that is
 * not ordered before it: a rule violation, lsa-data-race, naming both
 * accesses and what is missing of the release -> acquire chain. Accesses
 * of one rank are not compared (the GPU orders nothing between its CTAs
 * either, but the rule is about the peers' windows); atomics do not
 * conflict with atomics. Host copies into and out of windows (queues.c)
 * are accesses of the rank's host unit. */

#include "sim.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ------------------------------------------------------- the shadows */

/* A write stamp: clock (32 bits), unit lane (11: HB_HOST fits), rank (8),
 * thread (10), atomic (1), set (1). A read stamp: clock (21 bits), lane
 * (11). */
_Static_assert(HB_HOST < 2048, "a lane fits in 11 bits");
#define W_SET (1ull << 62)
#define W_ATOMIC (1ull << 61)
static uint64_t write_stamp(uint32_t clock, int lane, int rank, unsigned t,
                            int atomic)
{
  return W_SET | (atomic ? W_ATOMIC : 0) | (uint64_t)(t & 1023) << 51 |
         (uint64_t)(rank & 255) << 43 | (uint64_t)(lane & 2047) << 32 | clock;
}
#define W_CLOCK(s) ((uint32_t)(s))
#define W_LANE(s) ((int)((s) >> 32 & 2047))
#define W_RANK(s) ((int)((s) >> 43 & 255))
#define W_THREAD(s) ((unsigned)((s) >> 51 & 1023))
#define R_MASK 0x1fffffu
#define R_STAMP(lane, clock) ((uint32_t)(lane) << 21 | ((clock) & R_MASK))
#define R_CLOCK(s) ((s) & R_MASK)
#define R_LANE(s) ((int)((s) >> 21))

size_t hb_shadow_bytes(size_t window_bytes, int nranks)
{
  const size_t words = (window_bytes + 3) / 4;
  return words * (sizeof(uint64_t) + sizeof(uint32_t)) +
         (size_t)nranks * words * sizeof(uint32_t);
}

/* A window as this process reaches it, with its shadow. */
typedef struct region {
  const unsigned char *base;
  size_t bytes, words, reach; /* reach: to the end of its allocation */
  size_t mapped; /* to the end of its mapping (whole pages), >= reach */
  uint64_t *writes;
  uint32_t *sites;  /* the last write's place in the program (exe offset) */
  uint32_t *reads;  /* [rank][word] */
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
                        .writes = shadow,
                        .sites = (uint32_t *)((uint64_t *)shadow + words),
                        .reads = (uint32_t *)((uint64_t *)shadow + words) + words,
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

/* ------------------------------------------------------- the reports */

/* "main.cu:63" for a place in the program (an offset in its executable),
 * or "" where the program has no line information for it. */
void line_of(uint32_t offset, char *buf, size_t len)
{
  buf[0] = '\0';
  char cmd[128], out[256] = "";
  snprintf(cmd, sizeof cmd, "addr2line -e /proc/%d/exe 0x%x 2>/dev/null",
           (int)getpid(), offset);
  FILE *p = popen(cmd, "r");
  if (p == NULL)
    return;
  if (fgets(out, sizeof out, p) != NULL && strstr(out, "??") == NULL) {
    out[strcspn(out, "\n")] = '\0';
    char *extra = strstr(out, " (discriminator");
    if (extra != NULL)
      *extra = '\0';
    const char *base = strrchr(out, '/');
    snprintf(buf, len, ", %.100s", base ? base + 1 : out);
  }
  pclose(p);
}

uint32_t exe_offset(const void *pc)
{
  Dl_info info;
  if (pc == NULL || dladdr(pc, &info) == 0 || info.dli_fbase == NULL)
    return 0;
  return (uint32_t)((const unsigned char *)pc - (const unsigned char *)info.dli_fbase);
}

/* Who made an access: "rank 1's kernel (CTA 3, thread 17, main.cu:63)"
 * or "rank 1's host (a copy or memset on its stream)". */
static void who(int rank, int lane, unsigned thread, uint32_t site,
                char *buf, size_t len)
{
  char line[160];
  if (lane == HB_HOST) {
    snprintf(buf, len, "rank %d's host (a copy or memset)", rank);
    return;
  }
  line_of(site, line, sizeof line);
  if (lane == HB_NONE)
    snprintf(buf, len, "rank %d's kernel (a CTA past the %d with a clock of"
             " their own, thread %u%s)", rank, HB_LANES, thread, line);
  else
    snprintf(buf, len, "rank %d's kernel (CTA %d, thread %u%s)", rank, lane,
             thread, line);
}

/* Reports the race, and ends the run; or, where the other side has
 * released nothing yet while its kernel runs, lets its verdict wait for
 * that side (races.c) and returns. */
static void race(const region *rg, size_t word, int writes,
                 int rank, int lane, unsigned thread,
                 uint32_t site, int other_writes, int other_rank,
                 int other_lane, unsigned other_thread,
                 uint32_t other_site, uint32_t other_clock)
{
  const int unit = hb_unit(rank, lane), other = hb_unit(other_rank, other_lane);
  const int deferred = races_deferred(rg->domain, unit, other, other_clock);
  if (deferred == 2)
    return; /* another race's verdict waits: it ends the run */
  char me[256], them[256], place[320] = "a copy or memset", head[1400];
  who(rank, lane, thread, site, me, sizeof me);
  who(other_rank, other_lane, other_thread, other_site, them, sizeof them);
  if (lane != HB_HOST)
    current_place(place, sizeof place);
  snprintf(head, sizeof head,
           "ncclsim: RULE VIOLATION [lsa-data-race] rank %d in %s: %s %s the"
           " word at byte %zu of rank %d's window, which %s %s, and nothing"
           " orders the two: ",
           rank, place, me, writes ? "writes" : "reads", word * 4, rg->owner,
           them, other_writes ? "wrote" : "read");
  const char *missing = hb_missing(rg->domain, unit, other, other_clock);
  if (deferred && races_defer(rg->domain, rg->comm->dir, unit, writes, other,
                              other_writes, other_clock, head, missing))
    return;
  fflush(stdout);
  fprintf(stderr, "%s%s\n", head, missing);
  mark_abort(rg->comm->dir);
  _exit(SIM_EXIT_VIOLATION);
}

/* ------------------------------------------------------- the check */

enum { READ = HB_READ, WRITE = HB_WRITE, ATOMIC = 2 };

/* An access of a kernel that runs past the end of a window (wherever it
 * starts): NCCL maps a peer's window with its registered size, nothing
 * after it. A rank's own buffer past its window but inside its allocation
 * is exempt: its own pointers reach it as well. */
static void check_bounds(const region *rg, const void *p, size_t bytes,
                         int how, int rank, int lane, unsigned thread,
                         uint32_t site)
{
  const size_t at = (size_t)((const unsigned char *)p - rg->base);
  if (lane == HB_HOST || at + bytes <= rg->bytes ||
      (rg->owner == rank && at + bytes <= rg->reach))
    return;
  char me[256], place[320], what[64];
  who(rank, lane, thread, site, me, sizeof me);
  if (bytes > 1)
    snprintf(what, sizeof what, "bytes %zu to %zu", at, at + bytes - 1);
  else
    snprintf(what, sizeof what, "byte %zu", at);
  fflush(stdout);
  fprintf(stderr,
          "ncclsim: RULE VIOLATION [memory-access] rank %d in %s: %s %s %s"
          " of rank %d's buffer, past the end of its %zu-byte window%s: NCCL"
          " maps a peer's window, the size it was registered with, and"
          " nothing after it\n",
          rank, current_place(place, sizeof place), me,
          how & WRITE ? "writes" : "reads", what, rg->owner, rg->bytes,
          at + bytes > rg->reach ? " (and of its allocation)" : "");
  mark_abort(rg->comm->dir);
  _exit(SIM_EXIT_VIOLATION);
}

/* One access by (rank, lane, thread) of `bytes` at p; site: its place. */
static void check(const void *p, size_t bytes, int how, int rank, int lane,
                  unsigned thread, uint32_t site)
{
  region *rg = region_of(p);
  const region *past = rg != NULL ? rg : past_window(p);
  if (past != NULL)
    check_bounds(past, p, bytes, how, rank, lane, thread, site);
  if (rg == NULL)
    return;
  hb_domain *d = rg->domain;
  const int me = hb_unit(rank, lane);
  const uint32_t *seen = hb_seen(d, me);
  const uint32_t now = hb_now(d, me);
  size_t first = (size_t)((const unsigned char *)p - rg->base) / 4;
  size_t last = ((size_t)((const unsigned char *)p - rg->base) + bytes - 1) / 4;
  if (last >= rg->words)
    last = rg->words - 1;
  const int writes = how & WRITE, atomic = (how & ATOMIC) != 0;
  for (size_t w = first; w <= last; w++) {
    uint64_t s = __atomic_load_n(&rg->writes[w], __ATOMIC_ACQUIRE);
    if ((s & W_SET) && W_RANK(s) != rank && !(atomic && (s & W_ATOMIC)) &&
        W_CLOCK(s) > seen[hb_unit(W_RANK(s), W_LANE(s))])
      race(rg, w, writes, rank, lane, thread, site, 1, W_RANK(s), W_LANE(s),
           W_THREAD(s), rg->sites[w], W_CLOCK(s));
    if (writes) {
      for (int q = 0; q < hb_ranks(d); q++) {
        const uint32_t r = __atomic_load_n(&rg->reads[(size_t)q * rg->words + w],
                                           __ATOMIC_ACQUIRE);
        if (q != rank && r != 0 &&
            R_CLOCK(r) > (seen[hb_unit(q, R_LANE(r))] & R_MASK))
          race(rg, w, writes, rank, lane, thread, site, 0, q, R_LANE(r), 0,
               0, R_CLOCK(r));
      }
      __atomic_store_n(&rg->writes[w],
                       write_stamp(now, lane, rank, thread, atomic),
                       __ATOMIC_RELEASE);
      __atomic_store_n(&rg->sites[w], site, __ATOMIC_RELAXED);
    } else if (!atomic) { /* an atomic load conflicts with no atomic */
      __atomic_store_n(&rg->reads[(size_t)rank * rg->words + w],
                       R_STAMP(lane, now), __ATOMIC_RELEASE);
    }
  }
}

/* A kernel's access: by the calling GPU thread (tsan_hooks.c). */
void hb_device_access(const void *p, size_t bytes, int how, void *pc)
{
  int rank, lane;
  unsigned thread;
  if (!current_gpu_thread(&rank, &lane, &thread))
    return; /* the host side of main.cu */
  check(p, bytes, how, rank, lane, thread, exe_offset(pc));
}

/* An atomic operation of a kernel (atomics.c). */
void hb_atomic_access(const volatile void *p, size_t bytes, int writes,
                      void *pc)
{
  hb_device_access((const void *)p, bytes, (writes ? WRITE : READ) | ATOMIC,
                   pc);
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
      check(at, n, writes ? WRITE : READ, sim_rank(), HB_HOST, 0, 0);
    } else {
      n = 4 - ((uintptr_t)at & 3);
    }
    done += n;
  }
}

