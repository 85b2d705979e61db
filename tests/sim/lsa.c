/* ncclsim: NCCL's device API, its device side (see sim.h, device.h and
 * include/ncclsim_device.h): LSA barriers and ncclGetLsaPointer, in the
 * GPU threads of kernels that fibers.c runs, and the windows' mappings
 * that let ranks of other processes reach each other's memory.
 *
 * An LSA barrier is one epoch counter per barrier and rank, in a file of
 * the communicator's rendezvous folder that every rank maps (threads or
 * processes): a sync stores the rank's next epoch and waits until every
 * rank of its team stored it too. The rules, checked per GPU thread:
 *  - lsa-acquire-barrier: ncclGetLsaPointer to a peer's window before the
 *    thread passed an LSA barrier synced with acquire (or stronger);
 *  - lsa-release-barrier: a thread that ends after reaching a peer's
 *    window with no release (or stronger) barrier after it;
 *  - lsa-pointer: a window that is not one, a peer outside the team, an
 *    offset past the window; lsa-barrier: a barrier index past the count
 *    asked for, or peers that never arrive (SIM_TIMEOUT_MS).
 * The rules are checked where the thread calls ncclGetLsaPointer: a
 * pointer taken before the barrier and used after it is reported too. */
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

static long ms_since(const struct timespec *start)
{
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (now.tv_sec - start->tv_sec) * 1000 +
         (now.tv_nsec - start->tv_nsec) / 1000000;
}

/* The CTA's leader: arrive with the next epoch, wait for the team's. */
static void arrive_and_wait(sim_devcomm *d, unsigned index)
{
  const int n = d->comm->nranks;
  const unsigned long long epoch = ++d->epochs[index];
  atomic_store_explicit(&d->slots[(size_t)index * n + d->comm->rank], epoch,
                        memory_order_release);
  const long timeout_ms = env_long("SIM_TIMEOUT_MS", 10000);
  char abort_path[PATH_LEN + 16], place[256];
  snprintf(abort_path, sizeof abort_path, "%s/abort", d->comm->dir);
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    char late[256] = "";
    for (int t = 0; t < d->lsa_size; t++) {
      const int r = d->first + t;
      if (atomic_load_explicit(&d->slots[(size_t)index * n + r],
                               memory_order_acquire) < epoch)
        snprintf(late + strlen(late), sizeof late - strlen(late), "%s%d",
                 *late ? ", " : "", r);
    }
    if (*late == '\0')
      return;
    if (access(abort_path, F_OK) == 0) {
      fprintf(stderr, "ncclsim: rank %d stops in its kernel: a peer reported"
                      " a violation\n", d->comm->rank);
      _exit(SIM_EXIT_VIOLATION);
    }
    if (ms_since(&start) > timeout_ms)
      violation(d->comm, "lsa-barrier", current_place(place, sizeof place),
                "waited %ld ms at LSA barrier %u (its sync #%llu) for rank(s)"
                " %s, which never arrived: every rank's same CTA must sync"
                " the barrier as often",
                timeout_ms, index, epoch, late);
    spin_yield();
  }
}

void ncclsim_lsa_barrier_sync(const ncclDevComm_t *devComm, unsigned index,
                              int order)
{
  char place[256];
  lsa_view *v = current_lsa();
  if (v == NULL) {
    fprintf(stderr, "ncclsim: an LSA barrier synced outside a kernel\n");
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
  cta_sync();
  if (cta_leader())
    arrive_and_wait(d, index);
  cta_sync();
  v->barriers++;
  if (acquires(order))
    v->acquired = 1;
  if (releases(order))
    v->unreleased_peer = 0;
}

void *ncclsim_lsa_pointer(ncclWindow_t window, size_t offset, int peer)
{
  char place[256];
  lsa_view *v = current_lsa();
  if (v == NULL) { /* ncclGetLsaPointer is a device function */
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
  if (rank != w->comm->rank) {
    if (!v->acquired)
      violation(w->comm, "lsa-acquire-barrier",
                current_place(place, sizeof place),
                "ncclGetLsaPointer reaches peer %d's window %s: the peer may"
                " not have written its data yet, or may still be using this"
                " window; first sync an LSA barrier with"
                " cuda::memory_order_acquire",
                peer,
                v->barriers ? "after LSA barriers that only relaxed (a relaxed"
                              " barrier orders no memory)"
                            : "before any LSA barrier");
    v->unreleased_peer = peer + 1;
  }
  return (unsigned char *)w->peers[rank] + offset;
}

void lsa_thread_end(const lsa_view *v)
{
  char place[256];
  if (v->unreleased_peer == 0)
    return;
  violation(NULL, "lsa-release-barrier", current_place(place, sizeof place),
            "the thread ended after reaching peer %d's window with no LSA"
            " barrier synced with cuda::memory_order_release after it: its"
            " stores may not have reached the peer when the kernels end;"
            " end with a release barrier",
            v->unreleased_peer - 1);
}

/* ------------------------------------------- windows across processes */

void lsa_describe(const void *buff, lsa_share *out)
{
  pthread_mutex_lock(&lock);
  const sim_alloc *a = find_alloc(buff, 1);
  pthread_mutex_unlock(&lock);
  *out = (lsa_share){.pid = (long)getpid(), .fd = -1, .base = (void *)buff};
  if (a != NULL && a->fd >= 0) {
    out->fd = a->fd;
    out->base = a->base;
    out->mapped = a->mapped;
    out->offset = (size_t)((const unsigned char *)buff - a->base);
  }
}

void lsa_map_peers(struct ncclWindow_vidmem *w, const lsa_share *all)
{
  const int n = w->comm->nranks;
  w->peers = calloc((size_t)n, sizeof *w->peers);
  w->peer_mapped = calloc((size_t)n, sizeof *w->peer_mapped);
  w->peer_offset = calloc((size_t)n, sizeof *w->peer_offset);
  if (w->peers == NULL || w->peer_mapped == NULL || w->peer_offset == NULL)
    sim_failure("ncclCommWindowRegister",
              "out of memory");
  for (int r = 0; r < n; r++) {
    const lsa_share *s = &all[r];
    if (s->pid == (long)getpid() || s->fd < 0) { /* a thread of this process */
      w->peers[r] = (unsigned char *)s->base + s->offset;
      continue;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/fd/%d", s->pid, s->fd);
    void *p = map_file(path, s->mapped);
    if (p == MAP_FAILED)
      sim_failure("ncclCommWindowRegister",
                "cannot map rank %d's window through %s", r, path);
    w->peers[r] = (unsigned char *)p + s->offset;
    w->peer_mapped[r] = s->mapped;
    w->peer_offset[r] = s->offset;
  }
}

void lsa_unmap_peers(struct ncclWindow_vidmem *w)
{
  w->magic = 0;
  if (w->peers == NULL)
    return;
  for (int r = 0; r < w->comm->nranks; r++)
    if (w->peer_mapped[r] > 0)
      munmap((unsigned char *)w->peers[r] - w->peer_offset[r],
             w->peer_mapped[r]);
  free(w->peers);
  free(w->peer_mapped);
  free(w->peer_offset);
  w->peers = NULL;
}
