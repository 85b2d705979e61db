/*
 * ncclsim: the device API and kernel launches, as the simulation offers
 * them to a program built for it (the C side; nccl_device.h beside this
 * file is the C++ side a lesson includes). The types keep NCCL 2.30.7's
 * names and, where a probe or program reads them, its layout
 * (ncclCommProperties_t, the head of ncclDevCommRequirements_t); the
 * simulated behaviour of every call is tests/sim/device.c's.
 */
#ifndef NCCLSIM_DEVICE_H
#define NCCLSIM_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include <cuda_runtime.h>
#include <nccl.h>

#ifndef NCCL_API_MAGIC
#define NCCL_API_MAGIC 0xcafebeef /* nccl.h from 2.29 on */
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  NCCL_GIN_TYPE_NONE = 0,
  NCCL_GIN_TYPE_PROXY = 2,
  NCCL_GIN_TYPE_GDAKI = 3,
} ncclGinType_t;

/* NCCL 2.30.7's layout (nccl_device/core.h). */
typedef struct ncclCommProperties {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int rank;
  int nRanks;
  int cudaDev;
  int nvmlDev;
  bool deviceApiSupport;
  bool multimemSupport;
  ncclGinType_t ginType;
  int nLsaTeams;
  bool hostRmaSupport;
  ncclGinType_t railedGinType;
} ncclCommProperties_t;

/* The head as NCCL's (size, magic, version), then the fields a lesson
 * sets. */
typedef struct ncclDevCommRequirements {
  size_t size;
  unsigned int magic;
  unsigned int version;
  void *resourceRequirementsList;
  void *teamRequirementsList;
  bool lsaMultimem;
  int barrierCount;
  int lsaBarrierCount;
} ncclDevCommRequirements_t;

typedef struct ncclLsaBarrierHandle {
  int nBarriers;
} ncclLsaBarrierHandle_t;

/* A team's multicast memory (NVLS): NULL unless the device communicator
 * asked for it (ncclDevCommRequirements.lsaMultimem, or a team's
 * requirement), which the simulation, without NVLS, refuses. */
typedef struct ncclMultimemHandle {
  void *mcBasePtr;
} ncclMultimemHandle_t;

/* What a kernel receives by value: its head as NCCL 2.29.2 to 2.32 lay it
 * out (nccl_device/impl/comm__types.h; tools/nccl_facts reads lsaRank and
 * lsaSize there). `sim` is the simulation's state of this device
 * communicator on this rank. */
typedef struct ncclDevComm {
  unsigned int magic, version;
  int rank, nRanks;
  unsigned int nRanks_rcp32;
  int lsaRank, lsaSize;
  unsigned int lsaSize_rcp32;
  ncclMultimemHandle_t lsaMultimem;
  ncclLsaBarrierHandle_t lsaBarrier;
  void *sim;
} ncclDevComm_t;

ncclResult_t ncclCommQueryProperties(ncclComm_t comm,
                                     ncclCommProperties_t *props);
ncclResult_t ncclDevCommCreate(ncclComm_t comm,
                               const ncclDevCommRequirements_t *reqs,
                               ncclDevComm_t *outDevComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm_t *devComm);

/* Kernel launches: `thread` runs once per GPU thread, with `args`; then
 * `release(args)`. Queued on `stream` as CUDA queues a kernel. A kernel
 * that takes a device communicator (devcomm, else NULL) runs in lockstep
 * with its team's (tests/sim/lockstep.c). On a stream being captured into
 * a CUDA graph it is recorded instead, and each replay runs a copy of
 * `args` from `clone` (NULL: it cannot be captured). */
cudaError_t ncclsim_launch(const char *name, dim3 grid, dim3 block,
                           size_t shared_bytes, cudaStream_t stream,
                           const ncclDevComm_t *devcomm,
                           void (*thread)(void *args), void *args,
                           void (*release)(void *args),
                           void *(*clone)(const void *args));
/* Inside a kernel: the calling GPU thread's coordinates. */
uint3 ncclsim_thread_idx(void);
uint3 ncclsim_block_idx(void);
dim3 ncclsim_block_dim(void);
dim3 ncclsim_grid_dim(void);
/* __syncthreads: every thread of the CTA, at the same barrier: the one
 * called from where this was called, or, inside a call that said where
 * it was made (ncclsim_site_enter ... leave, nested: the outermost), from
 * there (tests/sim/sites.c). */
void ncclsim_cta_sync(void);
void ncclsim_site_enter(const void *pc);
void ncclsim_site_leave(void);
/* Scopes of fences and atomics (tests/sim/fences.c). */
#define NCCLSIM_SCOPE_BLOCK 1
#define NCCLSIM_SCOPE_DEVICE 2
#define NCCLSIM_SCOPE_SYSTEM 3
/* __threadfence_block, __threadfence, __threadfence_system. */
void ncclsim_fence(int scope);
/* An atomic of the calling thread begins (its scope, where it was called
 * from) and ends; nested, the outermost counts (atomicAdd_system calls
 * atomicAdd). */
void ncclsim_atomic_enter(int scope, const void *pc);
void ncclsim_atomic_leave(void);
/* Warps (tests/sim/ctas.c): the caller's lane; __syncwarp; a shuffle (the
 * value of lane `from` of the warp); a vote (bit i: lane i's predicate). */
unsigned ncclsim_lane_id(void);
void ncclsim_warp_sync(unsigned mask);
unsigned long long ncclsim_warp_shuffle(unsigned mask, unsigned long long v,
                                        int from);
unsigned ncclsim_warp_ballot(unsigned mask, int predicate);
/* __shared__ object `id` of the calling CTA; its dynamic shared memory. */
void *ncclsim_shared_object(unsigned id, size_t bytes, size_t align);
void *ncclsim_dynamic_shared(void);
/* An LSA barrier session of the calling GPU thread's CTA on barrier
 * `index` of devComm, with the ranks of a team (tests/sim/lsa.c): each
 * thread keeps its own, as each keeps its ncclLsaBarrierSession. open
 * copies the barrier's epoch (multimem: the session asked for multicast;
 * multicast: the handle it was given); arrive and wait with the C++
 * memory order `order` (std::memory_order's value), wait adding 1 to the
 * epoch; close writes the epoch back. */
typedef struct ncclsim_lsa_session {
  const ncclDevComm_t *comm;
  unsigned index;
  int team_size, team_rank, team_stride;
  unsigned long long epoch;
} ncclsim_lsa_session;
void ncclsim_lsa_session_open(ncclsim_lsa_session *s,
                              const ncclDevComm_t *devComm, unsigned index,
                              int team_size, int team_rank, int team_stride,
                              int multimem, const void *multicast);
void ncclsim_lsa_arrive(ncclsim_lsa_session *s, int order);
void ncclsim_lsa_wait(ncclsim_lsa_session *s, int order);
void ncclsim_lsa_session_close(ncclsim_lsa_session *s);
/* ncclGetLsaMultimemPointer and ncclGetMultimemPointer: multicast memory,
 * which needs the device communicator's request (NULL handle: it made
 * none); the simulation has none to give. */
void *ncclsim_multimem_pointer(const char *call, const void *multicast,
                               const char *requirement);
/* ncclGetLsaPointer: where `peer`'s part of the window is, `offset` bytes
 * in, for the calling GPU thread. */
void *ncclsim_lsa_pointer(ncclWindow_t window, size_t offset, int peer);

#ifdef __cplusplus
}
#endif

#endif
