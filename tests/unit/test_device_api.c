/*
 * The simulation's device API, per simulated NCCL version, as NCCL's
 * src/dev_runtime.cc (2.29.2 to 2.30.7) has it: a struct not made with its
 * initializer is refused from 2.29.2 on; nLsaTeams is written only for a
 * struct of a version after 2.29.3 (not at 2.29.3); a struct of a version
 * newer than the library, by a patch release too, is refused (2.29.2 and
 * 2.30.7 alike, in other words);
 * ncclDevCommCreate without symmetric support is refused. One rank, one
 * thread, linked against the simulation alone; the values written before
 * each call tell "not written" from a written 0.
 */
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "ncclsim_device.h"
#include "test_util.h"

#define UNWRITTEN (-7)

static ncclComm_t one_rank_comm(void)
{
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  EXPECT(cudaSetDevice(0) == cudaSuccess);
  EXPECT(ncclGetUniqueId(&id) == ncclSuccess);
  EXPECT(ncclCommInitRank(&comm, 1, id, 0) == ncclSuccess);
  return comm;
}

/* The properties as a program of version `built` asks for them. */
static ncclResult_t query(ncclComm_t comm, unsigned built, unsigned magic,
                          ncclCommProperties_t *p)
{
  memset(p, 0, sizeof *p);
  *p = (ncclCommProperties_t){.size = sizeof *p, .magic = magic,
                              .version = built, .nLsaTeams = UNWRITTEN,
                              .deviceApiSupport = true};
  return ncclCommQueryProperties(comm, p);
}

static ncclResult_t create(ncclComm_t comm, unsigned built, unsigned magic,
                           ncclDevComm_t *dev)
{
  ncclDevCommRequirements_t reqs = {.size = sizeof reqs, .magic = magic,
                                    .version = built, .lsaBarrierCount = 4};
  return ncclDevCommCreate(comm, &reqs, dev);
}

int main(void)
{
  setenv("SIM_DEVICES", "1", 1);
  ncclCommProperties_t p;
  ncclDevComm_t dev;

  setenv("SIM_NCCL_VERSION", "22902", 1);
  ncclComm_t comm = one_rank_comm();
  EXPECT(query(comm, 22902, 0, &p) == ncclInvalidUsage); /* not initialised */
  EXPECT(create(comm, 22902, 0, &dev) == ncclInvalidUsage);
  EXPECT(query(comm, 22902, NCCL_API_MAGIC, &p) == ncclSuccess);
  EXPECT(p.deviceApiSupport && p.nRanks == 1);
  EXPECT(p.nLsaTeams == UNWRITTEN); /* 2.29.2's struct has no nLsaTeams */
  EXPECT(query(comm, 23203, NCCL_API_MAGIC, &p) == ncclInvalidUsage); /* too old */
  EXPECT(query(comm, 22901, NCCL_API_MAGIC, &p) == ncclSuccess); /* older: fine */

  setenv("SIM_NCCL_VERSION", "23007", 1);
  EXPECT(query(comm, 23203, NCCL_API_MAGIC, &p) == ncclInvalidUsage); /* too old */
  EXPECT(create(comm, 23203, NCCL_API_MAGIC, &dev) == ncclInvalidUsage);
  /* Older than the program by a patch release: too old all the same. */
  EXPECT(query(comm, 23008, NCCL_API_MAGIC, &p) == ncclInvalidUsage);
  EXPECT(create(comm, 23008, NCCL_API_MAGIC, &dev) == ncclInvalidUsage);
  /* nLsaTeams only for a struct after 2.29.3: not at 2.29.3 itself. */
  EXPECT(query(comm, 22903, NCCL_API_MAGIC, &p) == ncclSuccess);
  EXPECT(p.nLsaTeams == UNWRITTEN);
  EXPECT(query(comm, 22904, NCCL_API_MAGIC, &p) == ncclSuccess);
  EXPECT(p.nLsaTeams == 1);
  EXPECT(query(comm, 23007, NCCL_API_MAGIC, &p) == ncclSuccess);
  EXPECT(p.nLsaTeams == 1 && p.rank == 0 && p.cudaDev == 0);
  memset(&dev, 0x5e, sizeof dev);
  EXPECT(create(comm, 23007, NCCL_API_MAGIC, &dev) == ncclSuccess);
  EXPECT(dev.lsaRank == 0 && dev.lsaSize == 1 && dev.lsaBarrier.nBarriers == 4);
  EXPECT(ncclDevCommDestroy(comm, &dev) == ncclSuccess);

  setenv("SIM_NO_SYMMETRIC", "1", 1);
  EXPECT(query(comm, 23007, NCCL_API_MAGIC, &p) == ncclSuccess);
  EXPECT(!p.deviceApiSupport);
  EXPECT(create(comm, 23007, NCCL_API_MAGIC, &dev) == ncclInvalidUsage);
  unsetenv("SIM_NO_SYMMETRIC");

  EXPECT(ncclCommFinalize(comm) == ncclSuccess);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  if (test_failures == 0)
    printf("test_device_api: all passed\n");
  return test_failures ? 1 : 0;
}
