/* ncclsim: what a race report says of the release it lacks (see hb.c,
 * access.c), where the clocks alone cannot tell:
 *  - where the other side released the access, if it did: the earliest
 *    sync of an LSA barrier whose published release covers it ("rank 0
 *    released it at its sync #3 of LSA barrier 0"), so that a reader that
 *    waited only for an earlier sync is told it came one barrier early;
 *  - a race whose other side had released nothing yet, while its kernel
 *    still runs: the verdict waits. If that kernel releases the access
 *    later, this side came one barrier too early (unless the sync before
 *    it came after the access and released nothing: that is the other
 *    side's fix), and the report says so when the release comes; if
 *    the kernel ends first, the fix is the other side's (a barrier with
 *    release after its access), said when it ends. Both come in the other
 *    side's turn of the lockstep (lockstep.c), so SIM_SEED repeats them.
 * One race waits at a time, per communicator, in the head of its
 * happens-before file (every rank maps it): later ones that would wait
 * too are let go, the first one's report ends the run. */
#include "sim.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_RUNNING 1024 /* ranks whose kernels are tracked */

typedef struct waiting_race {
  _Atomic int state; /* 0 none, 1 being written, 2 waits for the other side */
  int unit, me;      /* the other side's unit (its kernel's), this side's */
  int writes, other_writes; /* whether each side's access was a write */
  uint32_t clock;    /* the other side's access */
  char dir[PATH_LEN];
  char head[2048];   /* the report, up to what is missing */
  char missing[1536];
  unsigned char running[MAX_RUNNING]; /* per rank: its kernel runs */
} waiting_race;

_Static_assert(sizeof(waiting_race) <= HB_HEAD_BYTES - HB_NOTES,
               "a waiting race fits in the head of the happens-before file");

static waiting_race *waiting(hb_domain *d) { return hb_head(d); }

void releases_kernel(hb_domain *d, int rank, int running)
{
  if (rank < MAX_RUNNING)
    waiting(d)->running[rank] = (unsigned char)running;
}

/* Any release of `unit`'s rank that covers its access at `clock`? */
static int released(hb_domain *d, int unit, uint32_t clock)
{
  const int first = unit / HB_PER_RANK * HB_PER_RANK;
  for (int u = first; u < first + HB_PER_RANK; u++)
    if (hb_released(d, u)[unit] >= clock)
      return 1;
  return 0;
}

int releases_deferred(hb_domain *d, int me, int unit, uint32_t clock)
{
  const int rank = unit / HB_PER_RANK;
  waiting_race *w = waiting(d);
  if (unit % HB_PER_RANK >= HB_NONE || rank == me / HB_PER_RANK ||
      rank >= MAX_RUNNING || !w->running[rank] || released(d, unit, clock))
    return 0;
  return atomic_load(&w->state) != 0 ? 2 : 1;
}

int releases_defer(hb_domain *d, const char *dir, int me, int writes, int unit,
                int other_writes, uint32_t clock, const char *head,
                const char *missing)
{
  waiting_race *w = waiting(d);
  int none = 0;
  if (!atomic_compare_exchange_strong(&w->state, &none, 1))
    return 1; /* one waits already: it ends the run */
  w->unit = unit, w->me = me, w->clock = clock;
  w->writes = writes, w->other_writes = other_writes;
  snprintf(w->dir, sizeof w->dir, "%s", dir);
  snprintf(w->head, sizeof w->head, "%s", head);
  snprintf(w->missing, sizeof w->missing, "%s", missing);
  atomic_store(&w->state, 2);
  return 1;
}

static _Noreturn void report(waiting_race *w, const char *missing)
{
  fflush(stdout);
  fprintf(stderr, "%s%s\n", w->head, missing);
  mark_abort(w->dir);
  _exit(SIM_EXIT_VIOLATION);
}

/* The earliest sync of `unit`'s rank whose published release covers the
 * access at `clock` (0 if none is kept), its barrier, and the segment of
 * that rank's arrive on the same barrier just before it (0 if unknown). */
static unsigned long long released_at(hb_domain *d, int unit, uint32_t clock,
                                      unsigned *index, uint32_t *before)
{
  unsigned long long best = 0;
  for (unsigned i = 0; i < HB_BARRIERS; i++)
    for (int slot = 0; slot < HB_RING; slot++) {
      unsigned long long epoch;
      uint32_t segment;
      const uint32_t *pub = hb_publication(d, i, unit / HB_PER_RANK, slot,
                                           &epoch, &segment);
      if (pub != NULL && pub[unit] >= clock && (best == 0 || epoch < best))
        best = epoch, *index = i;
    }
  *before = 0;
  for (int slot = 0; best > 1 && slot < HB_RING; slot++) {
    unsigned long long epoch;
    uint32_t segment;
    if (hb_publication(d, *index, unit / HB_PER_RANK, slot, &epoch,
                       &segment) != NULL && epoch == best - 1)
      *before = segment;
  }
  return best;
}

/* The other side's fix, if its sync before the releasing one came after
 * the access but released nothing; NULL if that sync came before it. */
static const char *writer_side(int rank, uint32_t clock, unsigned index,
                               unsigned long long epoch, uint32_t before,
                               char *buf, size_t len)
{
  if (before < clock)
    return NULL;
  snprintf(buf, len,
           "the other side released nothing after it until its sync #%llu"
           " of LSA barrier %u: rank %d's sync #%llu, after that access,"
           " released nothing (synced with cuda::memory_order_acquire or"
           " relaxed: NCCL's releaseOrderOf(acquire) is relaxed); sync that"
           " one with release or acq_rel", epoch, index, rank, epoch - 1);
  return buf;
}

void releases_released(hb_domain *d, int unit, unsigned index,
                    unsigned long long epoch)
{
  waiting_race *w = waiting(d);
  if (atomic_load(&w->state) != 2 || w->unit != unit ||
      hb_released(d, unit)[unit] < w->clock)
    return;
  const int rank = unit / HB_PER_RANK;
  char why[1024], sync[128];
  unsigned at;
  uint32_t before = 0;
  if (released_at(d, unit, w->clock, &at, &before) != epoch || at != index)
    before = 0; /* (not kept: said as this side's) */
  if (writer_side(rank, w->clock, index, epoch, before, why, sizeof why))
    report(w, why);
  snprintf(sync, sizeof sync, "its sync #%llu of LSA barrier %u", epoch,
           index);
  if (!w->writes) /* this side read what the other wrote: this side's fix */
    snprintf(why, sizeof why,
             "this side did not acquire it: rank %d released that write"
             " only later, at %s, after this read: this side read it one"
             " barrier too early (or rank %d wrote it one barrier too late);"
             " read it only after this side's wait (with acquire) for that"
             " sync", rank, sync, rank);
  else
    snprintf(why, sizeof why,
             "this side did not acquire it: rank %d released that %s only"
             " later, at %s, after this write: the two are one barrier"
             " apart the wrong way; write only after this side's wait (with"
             " acquire) for that sync, or let rank %d %s it before a sync"
             " that this side waits for",
             rank, w->other_writes ? "write" : "read", sync, rank,
             w->other_writes ? "write" : "read");
  report(w, why);
}

void releases_writer_done(hb_domain *d, int rank)
{
  waiting_race *w = waiting(d);
  releases_kernel(d, rank, 0);
  if (atomic_load(&w->state) == 2 && w->unit / HB_PER_RANK == rank)
    report(w, w->missing);
}

const char *releases_released_at(hb_domain *d, int unit, uint32_t clock,
                              char *buf, size_t len)
{
  unsigned index = 0;
  uint32_t before;
  const unsigned long long epoch = released_at(d, unit, clock, &index, &before);
  if (epoch == 0)
    return NULL;
  if (writer_side(unit / HB_PER_RANK, clock, index, epoch, before, buf, len))
    return buf;
  if (before != 0) /* the access came after the sync before it */
    snprintf(buf, len,
             "this side did not acquire it: rank %d made that access after"
             " its sync #%llu of LSA barrier %u and released it only at its"
             " sync #%llu, and no wait of this side with acquire observed"
             " sync #%llu before this access: a wait for sync #%llu is one"
             " barrier too early; wait with acquire (or acq_rel) for sync"
             " #%llu before this access", unit / HB_PER_RANK, epoch - 1,
             index, epoch, epoch, epoch - 1, epoch);
  else
    snprintf(buf, len,
             "this side did not acquire it: it was released by rank %d at"
             " its sync #%llu of LSA barrier %u, but no wait of this side"
             " with acquire observed that sync before this access (a"
             " barrier synced with release or relaxed acquires nothing);"
             " wait with acquire (or acq_rel) for that sync before this"
             " access", unit / HB_PER_RANK, epoch, index);
  return buf;
}
