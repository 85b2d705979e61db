/* The fact about the device API's communicator (facts.h): does
 * ncclDevCommCreate give this layout of ranks a device communicator with
 * one LSA barrier per CTA, as 03_allreduce_lsa asks, and what LSA team
 * does it hold? */
#include "facts.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The head of ncclDevCommRequirements_t, as NCCL lays it out from 2.29.2
 * to 2.32 (nccl_device/core.h, host.h). NCCL copies `size` bytes of it
 * over its own initializer's defaults ("the source may actually be smaller
 * than the type would imply", 2.30.7 src/dev_runtime.cc), so this head is
 * a whole request. A layout fact, not NCCL's code. */
typedef struct reqs_head {
  // cppcheck-suppress unusedStructMember
  size_t size;
  // cppcheck-suppress unusedStructMember
  unsigned int magic, version;
  // cppcheck-suppress unusedStructMember
  void *resource_requirements, *team_requirements;
  // cppcheck-suppress unusedStructMember
  bool lsa_multimem;
  // cppcheck-suppress unusedStructMember
  int barrier_count;
  // cppcheck-suppress unusedStructMember
  int lsa_barrier_count;
} reqs_head;

/* The head of ncclDevComm (2.29.2 to 2.32: nccl_device/impl/
 * comm__types.h): the probe reads the LSA team from it. */
typedef struct devcomm_head {
  // cppcheck-suppress unusedStructMember
  unsigned int magic, version;
  int rank, nranks;
  // cppcheck-suppress unusedStructMember
  unsigned int nranks_rcp32;
  int lsa_rank, lsa_size;
} devcomm_head;

/* NCCL's ncclDevComm is under 1 KiB in 2.30.7; room for a later one. */
#define DEVCOMM_ROOM 65536
#define LSA_BARRIERS 16 /* 03_allreduce_lsa's CTAs */

void fact_devcomm(const fact *f, ncclComm_t comm, int rank, int nranks,
                  outcome *o)
{
  (void)f, (void)rank, (void)nranks;
  control(comm, o);
  int loaded = 0;
  ncclGetVersion(&loaded);
  typedef ncclResult_t (*create_fn)(ncclComm_t, const reqs_head *, void *);
  typedef ncclResult_t (*destroy_fn)(ncclComm_t, const void *);
  create_fn create = NULL;
  destroy_fn destroy = NULL;
  *(void **)&create = dlsym(RTLD_DEFAULT, "ncclDevCommCreate");
  *(void **)&destroy = dlsym(RTLD_DEFAULT, "ncclDevCommDestroy");
  if (create == NULL || destroy == NULL || loaded < 22902) {
    note(o->na, sizeof o->na, "%s; the probe knows the requirements' layout"
         " from NCCL 2.29.2",
         create ? "this NCCL is older than 2.29.2"
                : "this NCCL's library has no ncclDevCommCreate");
    return;
  }
  reqs_head reqs = {.size = sizeof reqs,
                    .magic = 0xcafebeef,
                    .version = (unsigned)(loaded < 23007 ? loaded : 23007),
                    .lsa_barrier_count = LSA_BARRIERS};
  void *devcomm = calloc(1, DEVCOMM_ROOM);
  if (devcomm == NULL) {
    note(o->detail, sizeof o->detail, "out of host memory");
    return;
  }
  ncclResult_t res = create(comm, &reqs, devcomm);
  record(o, comm, res, WIN_NONE);
  if (res == ncclSuccess) {
    devcomm_head head;
    memcpy(&head, devcomm, sizeof head);
    ncclResult_t gone = destroy(comm, devcomm);
    note(o->detail, sizeof o->detail,
         "created with %d LSA barriers: rank %d of %d, lsaRank %d of lsaSize"
         " %d; ncclDevCommDestroy: %s",
         LSA_BARRIERS, head.rank, head.nranks, head.lsa_rank, head.lsa_size,
         ncclGetErrorString(gone));
  }
  free(devcomm);
}
