/* ncclsim: happens-before between the ranks' accesses to window memory
 * (see device.h): vector clocks, one domain per communicator, in a file of
 * its rendezvous folder that every rank maps (threads or processes).
 *
 * A unit is one timeline of one rank: a lane (a CTA of the running kernel,
 * by its index, up to HB_LANES; CTAs past them share HB_NONE) or the
 * rank's host (HB_HOST: its copies and the work on its streams). Each unit
 * has three clocks: cur (what it has seen), released (cur at its last
 * release) and pending (what it observed through relaxed loads since its
 * last acquire). As NCCL's barrier does it (2.30.7
 * nccl_device/impl/lsa_barrier__funcs.h: sync is arrive + wait; arrive
 * fences releaseOrderOf(order), then stores the epoch relaxed; wait loads
 * with acquireOrderOf(order)):
 *   arrive(order): if it releases, released = cur; the epoch published
 *     carries released (a relaxed store after an older release fence
 *     publishes that older release); the unit starts a new segment;
 *   wait(order): what each peer published for that epoch joins pending;
 *     if it acquires, pending joins cur.
 * A kernel's start is a release (what its stream did before it is
 * published by any later store), its end an acquire (what it observed is
 * seen by what follows on the stream), and its lanes' clocks join the
 * host's when it ends. An access of another rank's unit is ordered before
 * a unit's when its clock is at most the unit's cur entry for that unit.
 * A CTA barrier starts a new segment of its lane (hb_cta_barrier: two
 * threads' accesses of one CTA are ordered when a barrier came between,
 * shadow.c); a relaxed arrive releases, and what a relaxed wait observed
 * is acquired, where the CTA's threads fenced at system scope
 * (fences.c). */
#include "sim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>


struct hb_domain {
  int nranks, units;
  size_t vc_bytes, file_bytes;
  /* in the file, after this header: cur, released, pending
   * [units][units], then per lane and rank the last HB_RING publications:
   * epochs [HB_BARRIERS][nranks][HB_RING] and clocks [...][units] */
  uint32_t *clocks[3];
  unsigned long long *pub_epoch;
  uint32_t *pub;
};
enum { CUR, RELEASED, PENDING };

#define HEADER_BYTES HB_HEAD_BYTES /* fences.c's notes, then releases.c's */

int hb_unit(int rank, int lane) { return rank * HB_PER_RANK + lane; }

int hb_ranks(const hb_domain *d) { return d->nranks; }

static uint32_t *hb_clock(hb_domain *d, int which, int unit)
{
  return d->clocks[which] + (size_t)unit * (size_t)d->units;
}

/* What releases.c reads: its part of the file's head (after fences.c's
 * notes), a unit's last release, and rank's publication in ring slot
 * `slot` of barrier `index` (NULL if none). */
void *hb_head(hb_domain *d) { return hb_notes(d) + HB_NOTES; }
const uint32_t *hb_released(hb_domain *d, int unit) { return hb_clock(d, RELEASED, unit); }
const uint32_t *hb_publication(hb_domain *d, unsigned index, int rank,
                               int slot, unsigned long long *epoch,
                               uint32_t *segment)
{
  const size_t at = ((size_t)index * (size_t)d->nranks + (size_t)rank) * HB_RING +
                    (size_t)slot;
  const unsigned long long kept = __atomic_load_n(&d->pub_epoch[at], __ATOMIC_ACQUIRE);
  *epoch = kept & 0xffffffffu, *segment = (uint32_t)(kept >> 32);
  return *epoch ? d->pub + at * (size_t)d->units : NULL;
}

/* The bytes of a domain of nranks, and, given its mapping, where each part
 * of it is. */
static size_t domain_bytes(int nranks)
{
  const size_t units = (size_t)nranks * HB_PER_RANK;
  const size_t vc = units * sizeof(uint32_t);
  const size_t pubs = (size_t)HB_BARRIERS * (size_t)nranks * HB_RING;
  return HEADER_BYTES + 3 * units * vc + pubs * sizeof(unsigned long long) +
         pubs * vc;
}

static void lay_out(hb_domain *d, unsigned char *base, int nranks)
{
  d->nranks = nranks;
  d->units = nranks * HB_PER_RANK;
  d->vc_bytes = (size_t)d->units * sizeof(uint32_t);
  d->file_bytes = domain_bytes(nranks);
  unsigned char *p = base + HEADER_BYTES;
  for (int i = 0; i < 3; i++, p += (size_t)d->units * d->vc_bytes)
    d->clocks[i] = (uint32_t *)p;
  d->pub_epoch = (unsigned long long *)p;
  p += (size_t)HB_BARRIERS * (size_t)nranks * HB_RING * sizeof *d->pub_epoch;
  d->pub = (uint32_t *)p;
}

static void domain_path(const struct ncclComm *comm, char *path, size_t len)
{
  snprintf(path, len, "%s/happens-before", comm->dir);
}

/* ncclCommWindowRegister, before its exchange: rank 0 makes the file
 * (sparse: only the clocks of units that run are ever touched). */
void hb_domain_make(const struct ncclComm *comm)
{
  if (comm->rank != 0 || comm->hb != NULL)
    return;
  char path[PATH_LEN + 32];
  domain_path(comm, path, sizeof path);
  int fd = open(path, O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0 && errno == EEXIST)
    return; /* made by an earlier registration of this communicator */
  if (fd < 0 || ftruncate(fd, (off_t)domain_bytes(comm->nranks)) != 0)
    sim_failure("ncclCommWindowRegister", "cannot make %s", path);
  close(fd);
}

/* ... after it: every rank maps it (once per communicator). */
void hb_domain_attach(struct ncclComm *comm)
{
  if (comm->hb != NULL)
    return;
  hb_domain *d = calloc(1, sizeof *d);
  char path[PATH_LEN + 32];
  domain_path(comm, path, sizeof path);
  unsigned char *base =
      d ? map_file(path, domain_bytes(comm->nranks)) : MAP_FAILED;
  if (base == MAP_FAILED)
    sim_failure("ncclCommWindowRegister", "cannot map %s", path);
  lay_out(d, base, comm->nranks);
  comm->hb = d;
}

void hb_domain_detach(struct ncclComm *comm)
{
  hb_domain *d = comm->hb;
  if (d == NULL)
    return;
  munmap((unsigned char *)d->clocks[CUR] - HEADER_BYTES, d->file_bytes);
  free(d);
  comm->hb = NULL;
}

static void join(uint32_t *into, const uint32_t *from, int n)
{
  for (int i = 0; i < n; i++)
    if (from[i] > into[i])
      into[i] = from[i];
}

/* A unit starts a new segment: its later accesses are not covered by what
 * it published before. */
static void next_segment(hb_domain *d, int unit)
{
  hb_clock(d, CUR, unit)[unit]++;
}

const uint32_t *hb_seen(hb_domain *d, int unit) { return hb_clock(d, CUR, unit); }

uint32_t hb_now(hb_domain *d, int unit)
{
  uint32_t *own = &hb_clock(d, CUR, unit)[unit];
  if (*own == 0)
    *own = 1; /* a unit's first accesses: after nothing it published */
  return *own;
}

/* A kernel of `rank` starts: each of its lanes sees what the host did
 * before (stream order), and the start releases it; the host's later
 * accesses come after. */
static void hb_kernel_start(hb_domain *d, int rank, int nlanes)
{
  const int host = hb_unit(rank, HB_HOST);
  releases_kernel(d, rank, 1);
  hb_now(d, host);
  for (int l = 0; l <= nlanes; l++) {
    const int u = hb_unit(rank, l < nlanes ? l : HB_NONE);
    join(hb_clock(d, CUR, u), hb_clock(d, CUR, host), d->units);
    memcpy(hb_clock(d, RELEASED, u), hb_clock(d, CUR, u), d->vc_bytes);
    next_segment(d, u); /* the kernel's own accesses come after it */
  }
  next_segment(d, host);
}

/* ... and ends: what each lane observed is acquired, and the host sees it
 * all (the stream's later work, and the host once it waited). */
static void hb_kernel_end(hb_domain *d, int rank, int nlanes)
{
  const int host = hb_unit(rank, HB_HOST);
  releases_writer_done(d, rank); /* a race waiting for its release: none came */
  for (int l = 0; l <= nlanes; l++) {
    const int u = hb_unit(rank, l < nlanes ? l : HB_NONE);
    join(hb_clock(d, CUR, u), hb_clock(d, PENDING, u), d->units);
    memset(hb_clock(d, PENDING, u), 0, d->vc_bytes);
    join(hb_clock(d, CUR, host), hb_clock(d, CUR, u), d->units);
  }
  next_segment(d, host);
}

/* arrive on LSA barrier `index` for epoch `epoch` (the value it stores). */
void hb_arrive(hb_domain *d, int rank, int lane, unsigned index,
               unsigned long long epoch, int releases)
{
  const int u = hb_unit(rank, lane);
  releases = fences_release(d, rank, lane, releases); /* fenced: fences.c */
  if (releases)
    memcpy(hb_clock(d, RELEASED, u), hb_clock(d, CUR, u), d->vc_bytes);
  if (index < HB_BARRIERS) {
    const size_t slot =
        ((size_t)index * (size_t)d->nranks + (size_t)rank) * HB_RING +
        epoch % HB_RING;
    memcpy(d->pub + slot * (size_t)d->units, hb_clock(d, RELEASED, u),
           d->vc_bytes);
    __atomic_store_n(&d->pub_epoch[slot], /* with the arrive's segment */
                     epoch | (unsigned long long)hb_clock(d, CUR, u)[u] << 32,
                     __ATOMIC_RELEASE);
  }
  if (releases) /* a race waiting for this release: this side's is right */
    releases_released(d, u, index, epoch);
  next_segment(d, u);
}

/* wait: observed `peer`'s arrival with `epoch` on barrier `index` (the
 * store this wait read: its publication, if still kept). */
void hb_observe(hb_domain *d, int rank, int lane, unsigned index, int peer,
                unsigned long long epoch)
{
  fences_observed(d, peer); /* a fence after the wait may acquire it */
  if (index >= HB_BARRIERS)
    return;
  const size_t slot =
      ((size_t)index * (size_t)d->nranks + (size_t)peer) * HB_RING +
      epoch % HB_RING;
  if ((__atomic_load_n(&d->pub_epoch[slot], __ATOMIC_ACQUIRE) & 0xffffffffu) !=
      (epoch & 0xffffffffu))
    return; /* overwritten since: nothing is known of it (never kinder) */
  join(hb_clock(d, PENDING, hb_unit(rank, lane)),
       d->pub + slot * (size_t)d->units, d->units);
}

void hb_acquire(hb_domain *d, int rank, int lane)
{
  const int u = hb_unit(rank, lane);
  join(hb_clock(d, CUR, u), hb_clock(d, PENDING, u), d->units);
  memset(hb_clock(d, PENDING, u), 0, d->vc_bytes);
}

/* Why an access of `unit` at `clock` is not ordered before `me`'s now, in
 * words: what is missing of the release -> acquire chain. Released: some
 * unit of the accessing rank published it (an arrive with release, or a
 * kernel's start for what its host did before). */
const char *hb_missing(hb_domain *d, int me, int unit, uint32_t clock)
{
  const char *team = lsa_team_note(me / HB_PER_RANK, me % HB_PER_RANK,
                                   unit / HB_PER_RANK);
  if (team != NULL) /* that barrier could not order it */
    return team;
  if (hb_clock(d, PENDING, me)[unit] >= clock)
    return "this side did not acquire it: it observed a barrier that"
           " published it, but its wait was relaxed (a barrier synced with"
           " cuda::memory_order_release or relaxed acquires nothing: NCCL's"
           " acquireOrderOf(release) is relaxed); sync with acquire or"
           " acq_rel before this access";
  const int first = unit / HB_PER_RANK * HB_PER_RANK;
  const int lanes_differ = me % HB_PER_RANK != unit % HB_PER_RANK &&
                           unit % HB_PER_RANK < HB_NONE &&
                           me % HB_PER_RANK < HB_NONE;
  static _Thread_local char said[1024]; /* with the syncs that did */
  if (!lanes_differ && releases_released_at(d, unit, clock, said, sizeof said))
    return said;
  for (int u = first; u < first + HB_PER_RANK; u++)
    if (hb_clock(d, RELEASED, u)[unit] >= clock)
      return lanes_differ
                 ? "this side did not acquire it: it was released, but by"
                   " another CTA than this one, and an LSA barrier orders"
                   " only the same CTA of each rank (barrier index"
                   " blockIdx.x): have each CTA read what the same CTA of"
                   " its peers wrote"
                 : "this side did not acquire it: it was released (by an"
                   " LSA barrier with release, or by its kernel's start for"
                   " what the host did before), but this side synced no LSA"
                   " barrier since that acquires it: sync one with acquire"
                   " (or acq_rel) before this access";
  return "the other side released nothing after it: no LSA barrier with"
         " release after that access (one synced with"
         " cuda::memory_order_acquire or relaxed releases nothing: NCCL's"
         " releaseOrderOf(acquire) is relaxed); sync with release or acq_rel"
         " after it";
}

void hb_kernels(int rank, int nlanes, int start)
{
  pthread_mutex_lock(&lock);
  for (struct ncclComm *c = comms; c != NULL; c = c->next)
    if (c->hb != NULL && c->rank == rank) {
      if (start)
        hb_kernel_start(c->hb, rank, nlanes);
      else
        hb_kernel_end(c->hb, rank, nlanes);
    }
  pthread_mutex_unlock(&lock);
}

/* A CTA barrier of `lane` completed: its later accesses are in a new
 * segment (shadow.c orders two threads' accesses of one CTA by it). */
void hb_cta_barrier(int rank, int lane)
{
  if (lane >= HB_NONE)
    return; /* CTAs past the lanes share one: a barrier of one is not all's */
  pthread_mutex_lock(&lock);
  for (struct ncclComm *c = comms; c != NULL; c = c->next)
    if (c->hb != NULL && c->rank == rank)
      next_segment(c->hb, hb_unit(rank, lane));
  pthread_mutex_unlock(&lock);
}

const uint32_t *hb_pending(hb_domain *d, int unit)
{
  return hb_clock(d, PENDING, unit);
}

/* The file's first bytes, which nothing else uses: a byte per unit that
 * fences.c keeps for messages. */
unsigned char *hb_notes(hb_domain *d)
{
  _Static_assert(HB_NOTES <= HEADER_BYTES, "the notes fit the header");
  return (unsigned char *)d->clocks[CUR] - HEADER_BYTES;
}
