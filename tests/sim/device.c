/* ncclsim: NCCL's device API (see sim.h and include/ncclsim_device.h):
 * the communicator's properties, device communicators, their LSA barriers
 * and ncclGetLsaPointer, with the rules a kernel must follow.
 *
 * Per simulated version, as NCCL 2.30.7's src/dev_runtime.cc and the
 * release notes have it: ncclCommQueryProperties and a requirements
 * struct that must come from its initializer are new in 2.29.2 (a struct
 * made otherwise is refused with ncclInvalidUsage); nLsaTeams is filled in
 * for a struct of a version after 2.29.3; from 2.30 a struct (or program)
 * of a version newer than the library is refused ("NCCL library is too
 * old"); ncclDevCommCreate without symmetric support is refused.
 * deviceApiSupport is symmetric support; the LSA team is every rank of the
 * communicator, or, where every rank is alone on its node (NCCL_HOSTID),
 * each rank alone (nLsaTeams = ranks); other layouts are not modelled.
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
 *    asked for, or peers that never arrive (SIM_TIMEOUT_MS);
 *  - destroy-device-communicator: ncclCommFinalize or ncclCommDestroy
 *    with a device communicator not destroyed. */
#include "sim.h"

#include "ncclsim_device.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define DEVCOMM_MAGIC 0x44455643u

/* One rank's state of one device communicator. */
typedef struct sim_devcomm {
  struct sim_devcomm *next;
  unsigned magic;
  struct ncclComm *comm;
  int nbarriers, lsa_rank, lsa_size, first; /* first: its team's rank 0 */
  _Atomic unsigned long long *slots; /* [barrier][rank], shared */
  size_t slots_bytes;
  unsigned long long *epochs; /* this rank's, per barrier */
} sim_devcomm;

static sim_devcomm *devcomms; /* guarded by `lock` */

/* What a refused call says, as NCCL's WARN does. */
static ncclResult_t refuse(const char *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static ncclResult_t refuse(const char *call, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  fprintf(stderr, "ncclsim: %s: NCCL WARN %s\n", call, last_error);
  return ncclInvalidUsage;
}

static void version_text(int code, char *buf, size_t len)
{
  snprintf(buf, len, "%d.%d.%d", code / 10000, code % 10000 / 100,
           code % 100);
}

/* The checks both calls make of the struct's head. */
static ncclResult_t check_head(const char *call, const char *type,
                               const char *initializer, unsigned magic,
                               unsigned version)
{
  const int lib = simulated_version();
  char have[16], built[16];
  if (lib < NCCL_VERSION(2, 29, 2)) {
    version_text(lib, have, sizeof have);
    fprintf(stderr, "ncclsim: %s does not exist in NCCL %s (new in 2.29.2):"
                    " a program calling it does not load there\n", call, have);
    _exit(SIM_EXIT_VIOLATION);
  }
  if (magic != NCCL_API_MAGIC)
    return refuse(call, "%s argument must be initialized via %s", type,
                  initializer);
  if (lib >= NCCL_VERSION(2, 30, 0) && version > (unsigned)lib) {
    version_text((int)version, built, sizeof built);
    version_text(lib, have, sizeof have);
    return refuse(call, "NCCL library is too old. This application was"
                        " compiled with NCCL version %s, but is running with"
                        " NCCL library version %s.", built, have);
  }
  return ncclSuccess;
}

/* The rank's LSA team: everyone, or itself alone (see the top). */
static int lsa_alone(const struct ncclComm *comm)
{
  return comm->alone_on_nodes && comm->nranks > 1;
}

ncclResult_t ncclCommQueryProperties(ncclComm_t comm,
                                     ncclCommProperties_t *props)
{
  if (comm == NULL || props == NULL)
    return ncclInvalidArgument;
  ncclResult_t res = check_head(
      "ncclCommQueryProperties", "Cannot get communicator properties:"
      " ncclCommProperties_t", "NCCL_COMM_PROPERTIES_INITIALIZER",
      props->magic, props->version);
  if (res != ncclSuccess)
    return res;
  props->rank = comm->rank;
  props->nRanks = comm->nranks;
  props->cudaDev = comm->device;
  props->nvmlDev = machine_device(comm->device);
  props->deviceApiSupport = symmetric_support(comm);
  props->multimemSupport = false; /* NVLS: not simulated */
  if (props->version > NCCL_VERSION(2, 29, 3)) {
    props->hostRmaSupport = false;
    props->ginType = NCCL_GIN_TYPE_NONE;
    props->railedGinType = NCCL_GIN_TYPE_NONE;
    props->nLsaTeams = lsa_alone(comm) ? comm->nranks : 1;
  }
  return ncclSuccess;
}

ncclResult_t ncclDevCommCreate(ncclComm_t comm,
                               const ncclDevCommRequirements_t *reqs,
                               ncclDevComm_t *out)
{
  const char *call = "ncclDevCommCreate";
  if (injected_failure(call))
    return ncclUnhandledCudaError;
  if (comm == NULL || reqs == NULL || out == NULL)
    return ncclInvalidArgument;
  ncclResult_t res = check_head(
      call, "Cannot create device communicator: ncclDevCommRequirements_t",
      "NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER", reqs->magic, reqs->version);
  if (res != ncclSuccess)
    return res;
  if (!symmetric_support(comm))
    return refuse(call, "Communicator does not support symmetric memory!");
  sim_devcomm *d = calloc(1, sizeof *d);
  const int n = reqs->lsaBarrierCount > 0 ? reqs->lsaBarrierCount : 0;
  if (d == NULL)
    return ncclSystemError;
  *d = (sim_devcomm){.magic = DEVCOMM_MAGIC, .comm = comm, .nbarriers = n,
                     .lsa_rank = lsa_alone(comm) ? 0 : comm->rank,
                     .lsa_size = lsa_alone(comm) ? 1 : comm->nranks,
                     .first = lsa_alone(comm) ? comm->rank : 0};
  /* Collective: rank 0 makes the barriers' file, then every rank maps it. */
  char path[PATH_LEN + 64];
  snprintf(path, sizeof path, "%s/lsa-barriers-%lu", comm->dir, comm->seq[LANE_HOST]);
  d->slots_bytes = (size_t)(n ? n : 1) * (size_t)comm->nranks * sizeof *d->slots;
  if (comm->rank == 0) {
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)d->slots_bytes) != 0)
      violation(comm, "simulation", call, "cannot make %s", path);
    close(fd);
  }
  exchange(comm, LANE_HOST, call, (size_t)n, 0, NULL, 0);
  for (int r = 0; r < comm->nranks; r++) {
    msg_header peer;
    fetch(comm, LANE_HOST, r, &peer, NULL, 0);
    if ((int)peer.size != n)
      violation(comm, "device-communicator", call,
                "rank %d asked for %zu LSA barriers, this rank %d; every rank"
                " must ask for the same", r, peer.size, n);
  }
  int fd = open(path, O_RDWR);
  void *slots = fd < 0 ? MAP_FAILED
                       : mmap(NULL, d->slots_bytes, PROT_READ | PROT_WRITE,
                              MAP_SHARED, fd, 0);
  if (fd >= 0)
    close(fd);
  finish_exchange(comm, LANE_HOST);
  d->epochs = calloc((size_t)(n ? n : 1), sizeof *d->epochs);
  if (slots == MAP_FAILED || d->epochs == NULL)
    violation(comm, "simulation", call, "cannot map %s", path);
  d->slots = slots;
  pthread_mutex_lock(&lock);
  d->next = devcomms;
  devcomms = d;
  pthread_mutex_unlock(&lock);
  *out = (ncclDevComm_t){.magic = NCCL_API_MAGIC,
                         .version = reqs->version,
                         .rank = comm->rank,
                         .nRanks = comm->nranks,
                         .lsaRank = d->lsa_rank,
                         .lsaSize = d->lsa_size,
                         .lsaBarrier = {n},
                         .sim = d};
  return ncclSuccess;
}

ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm_t *devComm)
{
  if (comm == NULL || devComm == NULL)
    return ncclInvalidArgument;
  land_device_work(); /* the kernels that use it end first */
  pthread_mutex_lock(&lock);
  sim_devcomm *d = devcomms;
  while (d != NULL && d != devComm->sim)
    d = d->next;
  int found = 0;
  if (d != NULL && d->comm == comm)
    LIST_UNLINK(devcomms, d, found);
  pthread_mutex_unlock(&lock);
  if (!found)
    violation(comm, "device-communicator", "ncclDevCommDestroy",
              "not a device communicator of this communicator (destroyed"
              " twice, or never created?)");
  munmap((void *)d->slots, d->slots_bytes);
  free(d->epochs);
  d->magic = 0;
  free(d);
  return ncclSuccess;
}

void check_no_device_comms(const struct ncclComm *comm, const char *call)
{
  pthread_mutex_lock(&lock);
  const sim_devcomm *d = devcomms;
  while (d != NULL && d->comm != comm)
    d = d->next;
  pthread_mutex_unlock(&lock);
  if (d != NULL) /* NCCL would leave its resources, and a window, behind */
    violation(comm, "destroy-device-communicator", call,
              "a device communicator made by ncclDevCommCreate was not"
              " destroyed; call ncclDevCommDestroy before tearing the"
              " communicator down");
}

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
  const int alone = lsa_alone(w->comm);
  const int size = alone ? 1 : w->comm->nranks;
  if (peer < 0 || peer >= size)
    violation(w->comm, "lsa-pointer", current_place(place, sizeof place),
              "peer %d: the LSA team has ranks 0 to %d", peer, size - 1);
  if (offset >= w->size)
    violation(w->comm, "lsa-pointer", current_place(place, sizeof place),
              "offset %zu is past the end of the %zu-byte window", offset,
              w->size);
  const int rank = alone ? w->comm->rank : peer;
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
  if (v->unreleased_peer)
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
    violation(w->comm, "simulation", "ncclCommWindowRegister",
              "out of memory");
  for (int r = 0; r < n; r++) {
    const lsa_share *s = &all[r];
    if (s->pid == (long)getpid() || s->fd < 0) { /* a thread of this process */
      w->peers[r] = (unsigned char *)s->base + s->offset;
      continue;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/fd/%d", s->pid, s->fd);
    int fd = open(path, O_RDWR);
    void *p = fd < 0 ? MAP_FAILED
                     : mmap(NULL, s->mapped, PROT_READ | PROT_WRITE,
                            MAP_SHARED, fd, 0);
    if (fd >= 0)
      close(fd);
    if (p == MAP_FAILED)
      violation(w->comm, "simulation", "ncclCommWindowRegister",
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
