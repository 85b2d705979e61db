/*
 * The simulation's nccl_device.h: the device C++ a kernel of the device
 * API lessons uses, with NCCL 2.30.7's names and signatures, for a build
 * that compiles a lesson's main.cu as host C++ (tests/sim/compile_cu.sh)
 * and links tests/sim in place of CUDA and NCCL. Every GPU thread then runs
 * on the host, as a fiber of tests/sim/fibers.c. Never part of what users
 * build.
 *
 * Here: the CUDA built-ins a kernel reads (threadIdx, ...), __syncthreads,
 * __syncwarp, the warp shuffles and votes, atomics, fences; NCCL's
 * cooperative groups (ncclCoopThread, ncclCoopWarp, ncclCoopCta), teams
 * (ncclTeamWorld, ncclTeamLsa, ncclTeamRankToWorld, ...), LSA barrier
 * sessions of a CTA, ncclGetLsaPointer. Names of NCCL's device API that the
 * simulation does not run say so where they are used: "not simulated
 * here: NAME" (tests/README.md lists what is simulated). __shared__
 * variables are rewritten by compile_cu.sh into one object per CTA.
 */
#ifndef NCCLSIM_NCCL_DEVICE_H
#define NCCLSIM_NCCL_DEVICE_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ncclsim_device.h"

#include "ncclsim_cuda.h" /* the CUDA built-ins a kernel uses */

namespace cuda {
using memory_order = std::memory_order;
constexpr memory_order memory_order_relaxed = std::memory_order_relaxed;
constexpr memory_order memory_order_acquire = std::memory_order_acquire;
constexpr memory_order memory_order_release = std::memory_order_release;
constexpr memory_order memory_order_acq_rel = std::memory_order_acq_rel;
constexpr memory_order memory_order_seq_cst = std::memory_order_seq_cst;
} // namespace cuda

/* -------------------------------------------------- NCCL's device API */
#define NCCL_COMM_PROPERTIES_INITIALIZER                                       \
  {sizeof(ncclCommProperties_t), NCCL_API_MAGIC, NCCL_VERSION_CODE}
#define NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER                                 \
  {sizeof(ncclDevCommRequirements_t), NCCL_API_MAGIC, NCCL_VERSION_CODE,       \
   NULL, NULL, false, 0, 0}

struct ncclTeam {
  int nRanks, rank, stride;
};
typedef ncclTeam ncclTeam_t;
struct ncclTeamTagLsa {};
struct ncclTeamTagWorld {};

inline ncclTeam ncclTeamWorld(const ncclDevComm &comm)
{
  return ncclTeam{comm.nRanks, comm.rank, 1};
}
inline ncclTeam ncclTeamLsa(const ncclDevComm &comm)
{
  return ncclTeam{comm.lsaSize, comm.lsaRank, 1};
}
/* The world rank, or the LSA rank, of `rank` of team tm. */
inline int ncclTeamRankToWorld(const ncclDevComm &comm, ncclTeam tm, int rank)
{
  return comm.rank + (rank - tm.rank) * tm.stride;
}
inline int ncclTeamRankToLsa(const ncclDevComm &comm, ncclTeam tm, int rank)
{
  return comm.lsaRank + (rank - tm.rank) * tm.stride;
}
/* Is rank brank of team b in team a, and which rank of a is it? */
inline bool ncclTeamRankIsMember(ncclTeam a, ncclTeam b, int brank)
{
  const int world = (brank - b.rank) * b.stride;
  const int arank = a.rank + world / a.stride;
  return world % a.stride == 0 && arank >= 0 && arank < a.nRanks;
}
inline int ncclTeamRankToTeam(ncclTeam a, ncclTeam b, int brank)
{
  return a.rank + (brank - b.rank) * b.stride / a.stride;
}
inline ncclTeam ncclTeamInnerFactor(ncclTeam parent, int inner)
{
  return ncclTeam{inner, parent.rank % inner, parent.stride};
}
inline ncclTeam ncclTeamOuterFactor(ncclTeam parent, int inner)
{
  return ncclTeam{parent.nRanks / inner, parent.rank / inner,
                  parent.stride * inner};
}

/* Where a barrier call was made, for the CTA barriers inside it: a CTA's
 * threads must meet at the same one (tests/sim/sites.c). */
struct ncclsim_site_guard {
  explicit ncclsim_site_guard(const void *pc) { ncclsim_site_enter(pc); }
  ~ncclsim_site_guard() { ncclsim_site_leave(); }
};
#define NCCLSIM_SITE ncclsim_site_guard ncclsim_site_(__builtin_return_address(0))

/* Cooperative groups: threads acting together. */
template <int N> struct ncclCoopTile {
  static_assert(N == 1 || N == 32, "not simulated here: ncclCoopTile of part"
                " of a warp (tests/README.md lists what is simulated)");
  int thread_rank() const { return N == 1 ? 0 : (int)ncclsim_lane_id(); }
  constexpr int size() const { return N; }
  constexpr int num_threads() const { return N; }
  void sync() const
  {
    if (N > 1)
      __syncwarp();
  }
};
typedef ncclCoopTile<1> ncclCoopThread;
typedef ncclCoopTile<32> ncclCoopWarp;
struct ncclCoopCta {
  int thread_rank() const { return (int)threadIdx.x; }
  int size() const { return (int)blockDim.x; }
  int num_threads() const { return (int)blockDim.x; }
  void sync() const
  {
    NCCLSIM_SITE;
    ncclsim_cta_sync();
  }
};

/* An LSA barrier session of a CTA (one barrier per CTA: index blockIdx.x)
 * with the ranks of a team: as NCCL 2.30.7's
 * (nccl_device/impl/lsa_barrier__funcs.h), arrive stores only to the
 * team's peers and wait waits only for them. Each thread keeps the epoch
 * it copied, as NCCL's does. multimem asks for the multicast barrier: the
 * constructor with a team takes the multicast handle (none by default),
 * the one with ncclTeamTagLsa the device communicator's lsaMultimem. */
template <typename Coop> struct ncclLsaBarrierSession {
  static_assert(std::is_same<Coop, ncclCoopCta>::value,
                "not simulated here: an LSA barrier session of a warp or a"
                " thread (ncclLsaBarrierSession<ncclCoopWarp>): the"
                " simulation runs sessions of a CTA (tests/README.md)");
  ncclLsaBarrierSession(Coop, const ncclDevComm &comm, ncclTeam team,
                        ncclLsaBarrierHandle_t, uint32_t index,
                        bool multimem = false,
                        ncclMultimemHandle_t mmHandle = {})
  {
    ncclsim_lsa_session_open(&s_, &comm, index, team.nRanks, team.rank,
                             team.stride, multimem, mmHandle.mcBasePtr);
  }
  ncclLsaBarrierSession(Coop coop, const ncclDevComm &comm, ncclTeamTagLsa,
                        uint32_t index, bool multimem = false)
      : ncclLsaBarrierSession(coop, comm, ncclTeamLsa(comm), comm.lsaBarrier,
                              index, multimem, comm.lsaMultimem)
  {
  }
  ~ncclLsaBarrierSession()
  {
    NCCLSIM_SITE;
    ncclsim_lsa_session_close(&s_);
  }
  ncclLsaBarrierSession(const ncclLsaBarrierSession &) = delete;
  ncclLsaBarrierSession &operator=(const ncclLsaBarrierSession &) = delete;

  void arrive(Coop, cuda::memory_order order)
  {
    NCCLSIM_SITE;
    ncclsim_lsa_arrive(&s_, (int)order);
  }
  void wait(Coop, cuda::memory_order order)
  {
    NCCLSIM_SITE;
    ncclsim_lsa_wait(&s_, (int)order);
  }
  void sync(Coop coop, cuda::memory_order order)
  {
    NCCLSIM_SITE;
    arrive(coop, order);
    wait(coop, order);
  }

private:
  ncclsim_lsa_session s_;
};

inline void *ncclGetLsaPointer(ncclWindow_t window, size_t offset, int peer)
{
  return ncclsim_lsa_pointer(window, offset, peer);
}

/* Names of NCCL's device API the simulation does not run: using one stops
 * the build, saying so. */
template <typename... A> struct ncclsim_not_simulated : std::false_type {};
#define NCCLSIM_NOT_SIMULATED(name)                                            \
  template <typename... A> void *name(A...)                                    \
  {                                                                            \
    static_assert(ncclsim_not_simulated<A...>::value,                          \
                  "not simulated here: " #name                                 \
                  " (tests/README.md lists what the simulation runs)");        \
    return nullptr;                                                            \
  }
/* Multicast memory needs the device communicator's request (NCCL 2.30.7
 * nccl_device/impl/core__funcs.h: the pointer is the team's mcBasePtr,
 * NULL unless requested); the simulation has no multicast to give. */
inline void *ncclGetMultimemPointer(ncclWindow_t, size_t, ncclMultimemHandle_t mm)
{
  return ncclsim_multimem_pointer("ncclGetMultimemPointer", mm.mcBasePtr,
                                  "a team requirement with multimem"
                                  " (ncclTeamRequirements, its"
                                  " outMultimemHandle)");
}
inline void *ncclGetLsaMultimemPointer(ncclWindow_t, size_t,
                                       const ncclDevComm &comm)
{
  return ncclsim_multimem_pointer("ncclGetLsaMultimemPointer",
                                  comm.lsaMultimem.mcBasePtr,
                                  "ncclDevCommRequirements.lsaMultimem");
}
NCCLSIM_NOT_SIMULATED(ncclGetLocalPointer)
NCCLSIM_NOT_SIMULATED(ncclGetPeerPointer)
NCCLSIM_NOT_SIMULATED(ncclTeamRail)
template <typename... A> struct ncclGin {
  static_assert(ncclsim_not_simulated<A...>::value,
                "not simulated here: ncclGin (GIN, the device API's network"
                " part; tests/README.md lists what the simulation runs)");
};
template <typename... A> struct ncclGinBarrierSession {
  static_assert(ncclsim_not_simulated<A...>::value,
                "not simulated here: ncclGinBarrierSession (tests/README.md)");
};
template <typename... A> struct ncclBarrierSession {
  static_assert(ncclsim_not_simulated<A...>::value,
                "not simulated here: ncclBarrierSession, a barrier of LSA and"
                " GIN (tests/README.md)");
};

/* kernel<<<grid, block, shared, stream>>>(args) is rewritten, in the
 * simulated build only, to ncclsim_launcher("kernel", kernel, grid, block,
 * shared, stream)(args): the arguments are copied as CUDA copies them, and
 * every GPU thread calls the kernel with them. */
template <typename... P> struct ncclsim_launch_of {
  const char *name;
  void (*kernel)(P...);
  dim3 grid, block;
  size_t shared;
  cudaStream_t stream;

  using call = std::pair<void (*)(P...), std::tuple<std::decay_t<P>...>>;
  static void thread(void *args)
  {
    call *c = static_cast<call *>(args);
    std::apply(c->first, c->second);
  }
  static void release(void *args) { delete static_cast<call *>(args); }
  static void *clone(const void *args)
  {
    return new call(*static_cast<const call *>(args));
  }

  /* The device communicator among the arguments (copied with them), if
   * any. */
  template <std::size_t I = 0>
  static const ncclDevComm *devcomm_of(const std::tuple<std::decay_t<P>...> &t)
  {
    if constexpr (I == sizeof...(P)) {
      return nullptr;
    } else if constexpr (std::is_same<std::tuple_element_t<I, std::tuple<std::decay_t<P>...>>,
                                      ncclDevComm>::value) {
      return &std::get<I>(t);
    } else {
      return devcomm_of<I + 1>(t);
    }
  }

  template <typename... A> void operator()(A &&...args) const
  {
    call *c = new call(kernel, std::tuple<std::decay_t<P>...>(
                                   std::forward<A>(args)...));
    ncclsim_launch(name, grid, block, shared, stream, devcomm_of(c->second),
                   thread, c, release, clone);
  }
};

template <typename... P>
ncclsim_launch_of<P...> ncclsim_launcher(const char *name, void (*kernel)(P...),
                                         dim3 grid, dim3 block,
                                         size_t shared = 0,
                                         cudaStream_t stream = 0)
{
  return ncclsim_launch_of<P...>{name, kernel, grid, block, shared, stream};
}

#endif
