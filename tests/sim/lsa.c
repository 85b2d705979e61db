/* ncclsim: NCCL's device API, its device side (see sim.h, device.h and
 * include/ncclsim_device.h): LSA barriers and ncclGetLsaPointer, in the
 * GPU threads of kernels that fibers.c runs, and the windows' mappings
 * that let ranks of other processes reach each other's memory.
 *
 * An LSA barrier is NCCL's (2.30.7 nccl_device/impl/lsa_barrier__funcs.h):
 * each rank keeps one epoch per barrier; a session copies its barrier's
 * epoch when it is made and writes it back when it ends; arrive stores
 * the session's epoch + 1 where the team's ranks look, wait waits until
 * every other rank of the team stored at least that, then adds 1. Each
 * rank's stored epochs are in a file of the communicator's rendezvous
 * folder that every rank maps (threads or processes). What the memory
 * orders of arrive and wait order is hb.c's; the accesses they order are
 * checked in access.c. Rules checked here:
 *  - lsa-barrier: a barrier index past the count asked for, peers that
 *    never arrive (SIM_TIMEOUT_MS), a session of another CTA of this rank
 *    on the same barrier while this one is made (NCCL's sessions would
 *    then copy and write back one epoch, and stop waiting for each
 *    other's peers: one barrier per CTA);
 *  - lsa-pointer: a window that is not one, a peer outside the team, an
 *    offset past the window. */
#include "sim.h"

#include "ncclsim_device.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------ inside kernels */

static int acquires(int order)
{
  return order == (int)memory_order_acquire ||
         order == (int)memory_order_acq_rel ||
         order == (int)memory_order_seq_cst ||
         order == (int)memory_order_consume;
}

static int releases(int order)
{
  return order == (int)memory_order_release ||
         order == (int)memory_order_acq_rel ||
         order == (int)memory_order_seq_cst;
}

/* The calling CTA's lane of the happens-before clocks. */
static int my_lane(void)
{
  int rank, lane;
  unsigned thread;
  return current_gpu_thread(&rank, &lane, &thread) ? lane : HB_NONE;
}

/* The device communicator of a barrier call, checked. */
static sim_devcomm *barrier_of(const ncclDevComm_t *devComm, unsigned index)
{
  char place[256];
  if (!in_kernel()) {
    fprintf(stderr, "ncclsim: an LSA barrier used outside a kernel\n");
    _exit(SIM_EXIT_VIOLATION);
  }
  sim_devcomm *d = devComm->sim;
  if (d == NULL || d->magic != DEVCOMM_MAGIC)
    violation(NULL, "lsa-barrier", current_place(place, sizeof place),
              "the device communicator was never created by"
              " ncclDevCommCreate, or was destroyed");
  if ((int)index >= d->nbarriers)
    violation(d->comm, "lsa-barrier", current_place(place, sizeof place),
              "barrier index %u, but the device communicator has %d LSA"
              " barriers (ncclDevCommRequirements.lsaBarrierCount): one per"
              " CTA of the launch", index, d->nbarriers);
  return d;
}

unsigned long long ncclsim_lsa_session_open(const ncclDevComm_t *devComm,
                                            unsigned index)
{
  sim_devcomm *d = barrier_of(devComm, index);
  const unsigned mine = current_cta() + 1;
  if (d->holders[index] != 0 && d->holders[index] != mine) {
    char place[256];
    violation(d->comm, "lsa-barrier", current_place(place, sizeof place),
              "CTA %u makes a session on LSA barrier %u while CTA %u of this"
              " rank holds one on it: NCCL keeps one epoch per barrier,"
              " which each session copies when it is made and writes back"
              " when it ends (2.30.7 nccl_device/impl/lsa_barrier__funcs.h),"
              " so two CTAs on one barrier stop waiting for each other's"
              " peers; give each CTA its own (index blockIdx.x, with"
              " lsaBarrierCount = the CTA count)",
              mine - 1, index, d->holders[index] - 1);
  }
  d->holders[index] = mine;
  return d->epochs[index];
}

void ncclsim_lsa_session_close(const ncclDevComm_t *devComm, unsigned index,
                               unsigned long long epoch)
{
  sim_devcomm *d = barrier_of(devComm, index);
  if (cta_leader()) {
    d->epochs[index] = epoch;
    d->holders[index] = 0;
  }
  cta_sync();
}

void ncclsim_lsa_arrive(const ncclDevComm_t *devComm, unsigned index,
                        unsigned long long epoch, int order)
{
  sim_devcomm *d = barrier_of(devComm, index);
  cta_sync();
  if (!cta_leader())
    return;
  const int n = d->comm->nranks;
  if (d->comm->hb != NULL)
    hb_arrive(d->comm->hb, d->comm->rank, my_lane(), index, epoch + 1,
              releases(order));
  atomic_store_explicit(&d->slots[(size_t)index * n + d->comm->rank],
                        epoch + 1, memory_order_release);
}

/* The CTA's leader waits for the team; then every thread goes on. */
void ncclsim_lsa_wait(const ncclDevComm_t *devComm, unsigned index,
                      unsigned long long epoch, int order)
{
  sim_devcomm *d = barrier_of(devComm, index);
  if (cta_leader()) {
    const int n = d->comm->nranks;
    const long timeout_ms = env_long("SIM_TIMEOUT_MS", 10000);
    char abort_path[PATH_LEN + 16], place[256];
    snprintf(abort_path, sizeof abort_path, "%s/abort", d->comm->dir);
    stall_clock clock; /* the team's progress restarts it */
    stall_start(&clock, d);
    for (int t = 0; t < d->lsa_size; t++) {
      const int r = d->first + t;
      if (r == d->comm->rank)
        continue;
      unsigned long long got;
      while ((got = atomic_load_explicit(&d->slots[(size_t)index * n + r],
                                         memory_order_acquire)) < epoch + 1) {
        if (access(abort_path, F_OK) == 0) {
          fprintf(stderr, "ncclsim: rank %d stops in its kernel: a peer"
                          " reported a violation\n", d->comm->rank);
          _exit(SIM_EXIT_VIOLATION);
        }
        if (stall_ms(&clock, d) > timeout_ms)
          violation(d->comm, "lsa-barrier", current_place(place, sizeof place),
                    "waited %ld ms at LSA barrier %u (its sync #%llu) for"
                    " rank %d, which never arrived, while no rank of the"
                    " team made progress: every rank's same CTA must sync"
                    " the barrier as often",
                    timeout_ms, index, epoch + 1, r);
        spin_yield();
      }
      if (d->comm->hb != NULL)
        hb_observe(d->comm->hb, d->comm->rank, my_lane(), index, r, got);
    }
    if (d->comm->hb != NULL && acquires(order))
      hb_acquire(d->comm->hb, d->comm->rank, my_lane());
  }
  cta_sync();
}

void *ncclsim_lsa_pointer(ncclWindow_t window, size_t offset, int peer)
{
  char place[256];
  if (!in_kernel()) { /* ncclGetLsaPointer is a device function */
    fprintf(stderr, "ncclsim: ncclGetLsaPointer called outside a kernel\n");
    _exit(SIM_EXIT_VIOLATION);
  }
  const struct ncclWindow_vidmem *w = window;
  if (w == NULL || w->magic != WINDOW_MAGIC || w->local_only || !w->peers)
    violation(NULL, "lsa-pointer", current_place(place, sizeof place),
              "%p is not a registered symmetric window", (void *)window);
  const int size = lsa_team_size(w->comm);
  if (peer < 0 || peer >= size)
    violation(w->comm, "lsa-pointer", current_place(place, sizeof place),
              "peer %d: the LSA team has ranks 0 to %d", peer, size - 1);
  if (offset >= w->size)
    violation(w->comm, "lsa-pointer", current_place(place, sizeof place),
              "offset %zu is past the end of the %zu-byte window", offset,
              w->size);
  const int rank = w->comm->rank - w->comm->rank % size + peer;
  return (unsigned char *)w->peers[rank] + offset;
}

/* ------------------------------------------- windows across processes */

/* The owner's part: its memory, and a shadow for the window (access.c),
 * a memfd that peers map too. */
void lsa_describe(const struct ncclComm *comm, const void *buff,
                  size_t bytes, lsa_share *out)
{
  pthread_mutex_lock(&lock);
  const sim_alloc *a = find_alloc(buff, 1);
  pthread_mutex_unlock(&lock);
  *out = (lsa_share){.pid = (long)getpid(), .fd = -1,
                     .base = (void *)buff, .shadow_fd = -1, .reach = bytes};
  if (a != NULL)
    out->reach = a->size - (size_t)((const unsigned char *)buff - a->base);
  if (a != NULL && a->fd >= 0) {
    out->fd = a->fd;
    out->base = a->base;
    out->mapped = a->mapped;
    out->offset = (size_t)((const unsigned char *)buff - a->base);
  }
  if (bytes == 0)
    return; /* no window will be made: no shadow */
  out->shadow_bytes = hb_shadow_bytes(bytes, comm->nranks);
  out->shadow_fd = memfd_create("window-shadow", MFD_CLOEXEC);
  if (out->shadow_fd < 0 ||
      ftruncate(out->shadow_fd, (off_t)out->shadow_bytes) != 0 ||
      (out->shadow = mmap(NULL, out->shadow_bytes, PROT_READ | PROT_WRITE,
                          MAP_SHARED, out->shadow_fd, 0)) == MAP_FAILED)
    sim_failure("ncclCommWindowRegister", "cannot make a window's shadow");
}

void lsa_map_peers(struct ncclWindow_vidmem *w, const lsa_share *all)
{
  const int n = w->comm->nranks;
  w->peers = calloc((size_t)n, sizeof *w->peers);
  w->peer_mapped = calloc((size_t)n, sizeof *w->peer_mapped);
  w->peer_offset = calloc((size_t)n, sizeof *w->peer_offset);
  w->shadows = calloc((size_t)n, sizeof *w->shadows);
  w->shadow_bytes = calloc((size_t)n, sizeof *w->shadow_bytes);
  w->shadow_fd = -1;
  if (w->peers == NULL || w->peer_mapped == NULL || w->peer_offset == NULL ||
      w->shadows == NULL || w->shadow_bytes == NULL)
    sim_failure("ncclCommWindowRegister", "out of memory");
  for (int r = 0; r < n; r++) {
    const lsa_share *s = &all[r];
    void *shadow = s->shadow;
    if (s->pid == (long)getpid() || s->fd < 0) { /* a thread of this process */
      w->peers[r] = (unsigned char *)s->base + s->offset;
      if (r == w->comm->rank) { /* its own: this rank unmaps it */
        w->shadows[r] = shadow;
        w->shadow_bytes[r] = s->shadow_bytes;
        w->shadow_fd = s->shadow_fd;
        hb_region_add(w, w->peers[r], w->size, s->reach, shadow, r, w->comm);
      }
      continue;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/fd/%d", s->pid, s->fd);
    void *p = map_file(path, s->mapped);
    snprintf(path, sizeof path, "/proc/%ld/fd/%d", s->pid, s->shadow_fd);
    shadow = map_file(path, s->shadow_bytes);
    if (p == MAP_FAILED || shadow == MAP_FAILED)
      sim_failure("ncclCommWindowRegister",
                  "cannot map rank %d's window through %s", r, path);
    w->peers[r] = (unsigned char *)p + s->offset;
    w->peer_mapped[r] = s->mapped;
    w->peer_offset[r] = s->offset;
    w->shadows[r] = shadow;
    w->shadow_bytes[r] = s->shadow_bytes;
    hb_region_add(w, w->peers[r], w->size, s->reach, shadow, r, w->comm);
  }
}

void lsa_unmap_peers(struct ncclWindow_vidmem *w)
{
  w->magic = 0;
  if (w->peers == NULL)
    return;
  hb_region_remove(w);
  for (int r = 0; r < w->comm->nranks; r++) {
    if (w->peer_mapped[r] > 0)
      munmap((unsigned char *)w->peers[r] - w->peer_offset[r],
             w->peer_mapped[r]);
    if (w->shadow_bytes[r] > 0)
      munmap(w->shadows[r], w->shadow_bytes[r]);
  }
  if (w->shadow_fd >= 0)
    close(w->shadow_fd);
  free(w->peers);
  free(w->peer_mapped);
  free(w->peer_offset);
  free(w->shadows);
  free(w->shadow_bytes);
  w->peers = NULL;
}
