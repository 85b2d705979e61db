/* ncclsim: the NCCL calls the examples make (see sim.h). */
#include "sim.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * NCCL
 * --------------------------------------------------------------------- */

const char *ncclGetErrorString(ncclResult_t result)
{
  switch (result) {
  case ncclSuccess: return "no error";
  case ncclUnhandledCudaError: return "unhandled cuda error";
  case ncclSystemError: return "unhandled system error";
  case ncclInternalError: return "internal error";
  case ncclInvalidArgument: return "invalid argument";
  case ncclInvalidUsage: return "invalid usage";
  default: return "unknown result code";
  }
}

const char *ncclGetLastError(ncclComm_t comm)
{
  (void)comm;
  return last_error;
}

int simulated_version(void)
{
  return (int)env_long("SIM_NCCL_VERSION", NCCL_VERSION_CODE);
}

ncclResult_t ncclGetVersion(int *version)
{
  if (injected_failure("ncclGetVersion"))
    return ncclSystemError;
  *version = simulated_version();
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
  if (injected_failure("ncclGetUniqueId"))
    return ncclSystemError;
  unsigned char bytes[12];
  if (getrandom(bytes, sizeof bytes, 0) != (ssize_t)sizeof bytes)
    return ncclSystemError;
  memset(id, 0, sizeof *id);
  int n = snprintf(id->internal, sizeof id->internal, SIM_MAGIC);
  for (size_t i = 0; i < sizeof bytes; i++)
    n += snprintf(id->internal + n, sizeof id->internal - (size_t)n, "%02x",
                  bytes[i]);
  return ncclSuccess;
}

/* NCCL >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE non-zero, read as NCCL
 * reads its integer variables: strtoll(text, NULL, 0), so "1x" is 1. */
int multi_rank_gpu_allowed(void)
{
  const char *text = getenv("NCCL_MULTI_RANK_GPU_ENABLE");
  return simulated_version() >= NCCL_VERSION(2, 30, 0) && text != NULL &&
         strtoll(text, NULL, 0) != 0;
}

/* `call` is the program's call; `injectable` says whether SIM_FAIL and
 * SIM_HANG may name it (ncclCommSplit and ncclCommInitAll are not in the
 * fault matrix). Inside an open group the communicator joins it: NCCL
 * makes it at the group's end (nonblocking.h). */
ncclResult_t init_rank(ncclComm_t *out, int nranks, ncclUniqueId id,
                       int rank, int cta_policy, const char *call,
                       int injectable)
{
  if (injectable && injected_failure(call))
    return ncclUnhandledCudaError;
  if (strncmp(id.internal, SIM_MAGIC, strlen(SIM_MAGIC)) != 0 ||
      memchr(id.internal, '\0', sizeof id.internal) == NULL)
    violation(NULL, "unique-id", call,
              "the ncclUniqueId was not made by ncclGetUniqueId (was it"
              " broadcast to every rank?)");
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    snprintf(last_error, sizeof last_error, "rank %d out of range for %d ranks",
             rank, nranks);
    return ncclInvalidArgument;
  }
  struct ncclComm *c = calloc(1, sizeof *c);
  if (c == NULL)
    return ncclSystemError;
  const char *base = getenv("SIM_DIR");
  if (base == NULL)
    base = getenv("TMPDIR");
  if (base == NULL)
    base = "/tmp";
  snprintf(c->dir, sizeof c->dir, "%s/%s", base,
           id.internal + strlen(SIM_MAGIC));
  if (mkdir(c->dir, 0700) != 0 && errno != EEXIST) {
    snprintf(last_error, sizeof last_error, "ncclsim: mkdir %s: %s", c->dir,
             strerror(errno));
    free(c);
    return ncclSystemError;
  }
  c->rank = rank;
  c->nranks = nranks;
  c->device = current_device;
  c->cta_policy = cta_policy;
  thread_rank = rank;

  /* Which host a rank is on, as NCCL tells hosts apart: NCCL_HOSTID, else
   * this machine (every process of the simulation runs on one). */
  char host[64] = "", peer_host[64];
  const char *hostid = getenv("NCCL_HOSTID");
  snprintf(host, sizeof host, "%s", hostid ? hostid : "");
  /* The machine's device: processes that see different devices as their
   * device 0 (CUDA_VISIBLE_DEVICES) use different GPUs. */
  const int gpu = machine_device(c->device);
  exchange(c, LANE_HOST, "ncclCommInitRank", (size_t)nranks, gpu, host,
           sizeof host);
  c->alone_on_nodes = 1, c->hosts = 0; /* hosts: another host than this one */
  for (int r = 0; r < nranks; r++) {
    msg_header peer;
    fetch(c, LANE_HOST, r, &peer, peer_host, sizeof peer_host);
    c->alone_on_nodes &= !(r != rank && strcmp(peer_host, host) == 0);
    c->hosts |= strcmp(peer_host, host) != 0;
    if (peer.size != (size_t)nranks)
      violation(
          c, "collective-calls", call,
          "rank %d created the communicator with %zu ranks, this rank with %d",
          r, peer.size, nranks);
    if (r != rank && peer.arg == gpu && !multi_rank_gpu_allowed())
      violation(c, "one-rank-per-device", call,
                "ranks %d and %d both use the machine's device %d in one"
                " communicator (NCCL >= 2.30 allows it with"
                " NCCL_MULTI_RANK_GPU_ENABLE=1)",
                r < rank ? r : rank, r < rank ? rank : r, gpu);
  }
  finish_exchange(c, LANE_HOST);

  pthread_mutex_lock(&lock);
  install_exit_check();
  c->next = comms;
  comms = c;
  pthread_mutex_unlock(&lock);
  if (in_group())
    group_made(c);
  *out = c;
  return ncclSuccess;
}

/* NCCL_CTA_POLICY, which replaces config.CTAPolicy when set, read as the
 * simulated version reads it: from 2.29 a digit (0, 1, 2; another digit
 * is DEFAULT) or names (DEFAULT, EFFICIENCY, ZERO, any case, '|'-joined;
 * ZERO wins over EFFICIENCY), before that a number (strtoll base 0), one
 * outside 0..2 DEFAULT (NCCL 2.30.7 and 2.28.3 src/init.cc). The H200 and
 * an H100 recorded 0 and EFFICIENCY giving the symmetric AllGather
 * kernel, 2 and ZERO the copy engines (docs/facts, cta.env-*). */
static int env_cta_policy(int policy)
{
  const char *text = getenv("NCCL_CTA_POLICY");
  if (text == NULL || *text == '\0')
    return policy;
  if (simulated_version() < NCCL_VERSION(2, 29, 0)) {
    char *end;
    long long v = strtoll(text, &end, 0);
    if (end == text)
      return policy;
    return v >= 0 && v <= 2 ? (int)v : NCCL_CTA_POLICY_DEFAULT;
  }
  if (*text >= '0' && *text <= '9')
    return *text == '1' || *text == '2' ? *text - '0' : NCCL_CTA_POLICY_DEFAULT;
  int bits = 0, named = 0;
  char copy[128];
  snprintf(copy, sizeof copy, "%s", text);
  for (char *save = NULL, *t = strtok_r(copy, "|", &save); t;
       t = strtok_r(NULL, "|", &save)) {
    int zero = strcasecmp(t, "ZERO") == 0, eff = strcasecmp(t, "EFFICIENCY") == 0;
    named |= zero || eff || strcasecmp(t, "DEFAULT") == 0;
    bits |= (zero ? NCCL_CTA_POLICY_ZERO : 0) | (eff ? NCCL_CTA_POLICY_EFFICIENCY : 0);
  }
  if (!named)
    return policy;
  return (bits & NCCL_CTA_POLICY_ZERO) ? NCCL_CTA_POLICY_ZERO : bits;
}

/* config.blocking = 0, else `otherwise` (no config: NCCL's default, or
 * a split's parent's), NCCL_COMM_BLOCKING=0 or 1 winning over both (NCCL
 * 2.30.7 src/init.cc parseCommConfig, copyCommConfig, envConfigOverride). */
int made_nonblocking(const ncclConfig_t *config, int otherwise)
{
  int nonblocking = config != NULL ? config->blocking == 0 : otherwise;
  const char *env = getenv("NCCL_COMM_BLOCKING");
  if (env != NULL && (strcmp(env, "0") == 0 || strcmp(env, "1") == 0))
    nonblocking = *env == '0';
  return nonblocking;
}

/* A communicator made with config: a non-blocking one returns
 * ncclInProgress, its handle written at once (NCCL 2.30.7 src/init.cc
 * ncclCommInitRankDev, ncclCommInitRankConfig), and is in progress. */
static ncclResult_t made_with(ncclComm_t *comm, ncclResult_t res,
                              const ncclConfig_t *config)
{
  if (res != ncclSuccess || *comm == NULL)
    return res;
  (*comm)->nb.nonblocking = made_nonblocking(config, 0);
  return nonblocking_job(*comm, res);
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id,
                              int rank)
{
  return made_with(comm,
                   init_rank(comm, nranks, id, rank,
                             env_cta_policy(NCCL_CTA_POLICY_DEFAULT),
                             "ncclCommInitRank", 1),
                   NULL);
}

ncclResult_t init_with_config(ncclComm_t *comm, int nranks, ncclUniqueId id,
                              int rank, const ncclConfig_t *config,
                              const char *call, int injectable)
{
  int policy = NCCL_CTA_POLICY_DEFAULT;
  if (config != NULL && config->CTAPolicy != NCCL_CONFIG_UNDEF_INT)
    policy = config->CTAPolicy;
  policy = env_cta_policy(policy);
  return made_with(comm,
                   init_rank(comm, nranks, id, rank, policy, call, injectable),
                   config);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks,
                                    ncclUniqueId id, int rank,
                                    ncclConfig_t *config)
{
  return init_with_config(comm, nranks, id, rank, config,
                          "ncclCommInitRankConfig", 1);
}

ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
  if (injected_failure("ncclCommFinalize"))
    return ncclUnhandledCudaError;
  if (ensure_ready(comm, "ncclCommFinalize") != ncclSuccess)
    return ncclInvalidArgument;
  land_comm(comm); /* NCCL waits for the communicator's operations */
  check_no_device_comms(comm, "ncclCommFinalize");
  exchange(comm, LANE_HOST, "ncclCommFinalize", 0, 0, NULL, 0);
  finish_exchange(comm, LANE_HOST);
  return nonblocking_job(comm, ncclSuccess);
}

static ncclResult_t release_comm(ncclComm_t comm, const char *call,
                                 int check_windows)
{
  pthread_mutex_lock(&lock);
  /* From 2.29.7 ncclCommDestroy frees the windows still registered (2.29.7
   * release notes; 2.30.7 src/dev_runtime.cc, ncclDevrFinalize); for older
   * versions the simulation assumes nothing frees them. */
  const int frees_windows = simulated_version() >= NCCL_VERSION(2, 29, 7);
  for (struct ncclWindow_vidmem **link = &windows; *link;) {
    struct ncclWindow_vidmem *w = *link;
    if (w->comm != comm) {
      link = &w->next;
      continue;
    }
    if (check_windows && !frees_windows)
      violation(comm, "deregister-before-destroy", call,
                "a window of %zu bytes is still registered on this"
                " communicator, and NCCL frees it only from 2.29.7;"
                " call ncclCommWindowDeregister first",
                w->size);
    *link = w->next;
    lsa_unmap_peers(w);
    free(w);
  }
  int found;
  LIST_UNLINK(comms, comm, found);
  pthread_mutex_unlock(&lock);
  if (!found)
    return ncclInvalidArgument;
  nonblocking_forget(comm);
  hb_domain_detach(comm);
  leave_rendezvous(comm);
  free(comm);
  thread_rank = -1;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
  if (injected_failure("ncclCommDestroy"))
    return ncclUnhandledCudaError;
  if (ensure_ready(comm, "ncclCommDestroy") != ncclSuccess)
    return ncclInvalidArgument; /* NCCL 2.30.7 too: the communicator stays */
  land_comm(comm); /* as ncclCommFinalize, if the program did not call it */
  check_no_device_comms(comm, "ncclCommDestroy");
  return release_comm(comm, "ncclCommDestroy", 1);
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
  mark_abort(comm->dir);
  drop_comm(comm); /* its queued collectives never run */
  return release_comm(comm, "ncclCommAbort", 0);
}
