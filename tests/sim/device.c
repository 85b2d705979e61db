/* ncclsim: NCCL's device API, its host side (see sim.h, device.h and
 * include/ncclsim_device.h): the communicator's properties and device
 * communicators. lsa.c and lsa_windows.c are the device side (LSA
 * barriers, ncclGetLsaPointer and their rules).
 *
 * Per simulated version, as NCCL 2.30.7's src/dev_runtime.cc and the
 * release notes have it: ncclCommQueryProperties and a requirements
 * struct that must come from its initializer are new in 2.29.2 (a struct
 * made otherwise is refused with ncclInvalidUsage); nLsaTeams is filled in
 * for a struct of a version after 2.29.3; a struct (or program) of a
 * version newer than the library is refused ("NCCL library version is too
 * old" with version codes in 2.29, "NCCL library is too old" with dotted
 * versions from 2.30; src/dev_runtime.cc at v2.29.2-1 and v2.30.7-1);
 * ncclDevCommCreate without symmetric support is refused, and so is a
 * request for multicast (lsaMultimem: the simulation has no NVLS, and
 * 2.30.7's symTeamObtain refuses it where the system has none).
 * deviceApiSupport is symmetric support (none for ranks on several hosts,
 * windows.c); the LSA team is every rank of the communicator, or groups of
 * SIM_LSA_TEAM_SIZE ranks (nLsaTeams = ranks / that).
 * Every device communicator is destroyed before its communicator is torn
 * down (rule destroy-device-communicator: NCCL would leave its resources,
 * a window among them). */
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

static sim_devcomm *devcomms; /* guarded by `lock` */

_Noreturn void sim_failure(const char *call, const char *fmt, ...)
{
  char details[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(details, sizeof details, fmt, ap);
  va_end(ap);
  fprintf(stderr, "ncclsim: %s: the simulation failed: %s\n", call, details);
  _exit(SIM_EXIT_VIOLATION);
}

void *map_file(const char *path, size_t bytes)
{
  int fd = open(path, O_RDWR);
  void *p = fd < 0 ? MAP_FAILED
                   : mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                          0);
  if (fd >= 0)
    close(fd);
  return p;
}

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
  char have[16];
  if (lib < NCCL_VERSION(2, 29, 2)) {
    version_text(lib, have, sizeof have);
    fprintf(stderr, "ncclsim: %s does not exist in NCCL %s (new in 2.29.2):"
                    " a program calling it does not load there\n", call, have);
    _exit(SIM_EXIT_VIOLATION);
  }
  if (magic != NCCL_API_MAGIC)
    return refuse(call, "%s argument must be initialized via %s", type,
                  initializer);
  if (version > (unsigned)lib && lib < NCCL_VERSION(2, 30, 0))
    return refuse(call, "NCCL library version is too old. This application"
                        " was compiled with NCCL version %u, but is running"
                        " with NCCL library version %d.", version, lib);
  if (version > (unsigned)lib) {
    char built[16];
    version_text((int)version, built, sizeof built);
    version_text(lib, have, sizeof have);
    return refuse(call, "NCCL library is too old. This application was"
                        " compiled with NCCL version %s, but is running with"
                        " NCCL library version %s.", built, have);
  }
  return ncclSuccess;
}

int lsa_team_size(const struct ncclComm *comm)
{
  long k = env_long("SIM_LSA_TEAM_SIZE", comm->nranks);
  if (k < 1 || k > comm->nranks || comm->nranks % k != 0) {
    fprintf(stderr, "ncclsim: SIM_LSA_TEAM_SIZE=%ld: use a divisor of the"
                    " %d ranks\n", k, comm->nranks);
    _exit(SIM_EXIT_VIOLATION);
  }
  return (int)k;
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
    props->nLsaTeams = comm->nranks / lsa_team_size(comm);
  }
  return ncclSuccess;
}

ncclResult_t ncclDevCommCreate(ncclComm_t comm,
                               const ncclDevCommRequirements_t *reqs,
                               ncclDevComm_t *out)
{
  const char *call = "ncclDevCommCreate";
  if (comm == NULL || reqs == NULL || out == NULL)
    return ncclInvalidArgument;
  ncclResult_t res = check_head(
      call, "Cannot create device communicator: ncclDevCommRequirements_t",
      "NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER", reqs->magic, reqs->version);
  if (res != ncclSuccess)
    return res;
  if (!symmetric_support(comm))
    return refuse(call, "Communicator does not support symmetric memory!");
  if (reqs->lsaMultimem) { /* no NVLS here: 2.30.7 symTeamObtain refuses */
    refuse(call, "Multicast support requested for team but none available"
                 " on system.");
    return ncclInvalidArgument;
  }
  sim_devcomm *d = calloc(1, sizeof *d);
  const int n = reqs->lsaBarrierCount > 0 ? reqs->lsaBarrierCount : 0;
  if (d == NULL)
    return ncclSystemError;
  *d = (sim_devcomm){.magic = DEVCOMM_MAGIC, .comm = comm, .nbarriers = n,
                     .lsa_rank = comm->rank % lsa_team_size(comm),
                     .lsa_size = lsa_team_size(comm),
                     .first = comm->rank - comm->rank % lsa_team_size(comm)};
  /* Collective: rank 0 makes the barriers' file, then every rank maps it. */
  char path[PATH_LEN + 64];
  snprintf(path, sizeof path, "%s/lsa-barriers-%lu", comm->dir, comm->seq[LANE_HOST]);
  /* The ranks' inboxes [rank][barrier * LSA team size], then the team's
   * turns for kernels that run in lockstep (lockstep.c). */
  const size_t words = (size_t)(n ? n : 1) * (size_t)d->lsa_size;
  const size_t barrier_bytes = words * (size_t)comm->nranks * sizeof *d->slots;
  d->slots_bytes = barrier_bytes + lockstep_bytes(comm->nranks);
  if (comm->rank == 0) {
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)d->slots_bytes) != 0)
      sim_failure(call, "cannot make %s", path);
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
  void *slots = map_file(path, d->slots_bytes);
  finish_exchange(comm, LANE_HOST);
  const size_t nb = (size_t)(n ? n : 1);
  d->epochs = calloc(nb, sizeof *d->epochs);
  d->holders = calloc(nb, sizeof *d->holders);
  d->holders_open = calloc(nb, sizeof *d->holders_open);
  d->holders_launch = calloc(nb, sizeof *d->holders_launch);
  d->observed = calloc(words, sizeof *d->observed);
  d->lane_team = calloc(HB_LANES, sizeof *d->lane_team);
  if (slots == MAP_FAILED || d->epochs == NULL || d->holders == NULL ||
      d->holders_open == NULL || d->holders_launch == NULL ||
      d->observed == NULL || d->lane_team == NULL)
    sim_failure(call, "cannot map %s", path);
  d->slots = slots;
  lockstep_map(d, (unsigned char *)slots + barrier_bytes);
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
                         .lsaMultimem = {NULL}, /* never asked for here */
                         .lsaBarrier = {n},
                         .sim = d};
  return ncclSuccess;
}

ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm_t *devComm)
{
  if (comm == NULL || devComm == NULL)
    return ncclInvalidArgument;
  /* NCCL does not wait: it deregisters the barriers' memory at once (2.30.7
   * src/dev_runtime.cc, ncclDevCommDestroy), under a kernel still using
   * it. The program must synchronize the kernel's stream first. */
  const int pending = kernels_queued_with(devComm->sim);
  if (pending > 0)
    violation(comm, "destroy-device-communicator", "ncclDevCommDestroy",
              "%d kernel(s) that take this device communicator are still"
              " queued or running: NCCL frees its barriers' memory at once"
              " (it does not wait for them, NCCL 2.30.7 src/dev_runtime.cc);"
              " synchronize their stream first", pending);
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
  lsa_forget_devcomm(d);
  munmap((void *)d->slots, d->slots_bytes);
  free(d->epochs);
  free(d->holders);
  free(d->holders_open);
  free(d->holders_launch);
  free(d->observed);
  free(d->lane_team);
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
