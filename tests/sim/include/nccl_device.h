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

/* ----------------------------------------------------- CUDA built-ins */
#define threadIdx (ncclsim_thread_idx())
#define blockIdx (ncclsim_block_idx())
#define blockDim (ncclsim_block_dim())
#define gridDim (ncclsim_grid_dim())
#define warpSize 32
#define __syncthreads() ncclsim_cta_sync()
/* A fence orders nothing between ranks here: only LSA barriers do
 * (tests/README.md: the memory model). */
#define __threadfence() ncclsim_fence()
#define __threadfence_block() ncclsim_fence()
#define __threadfence_system() ncclsim_fence()

inline void __syncwarp(unsigned mask = 0xffffffffu) { ncclsim_warp_sync(mask); }
inline unsigned __activemask() { return 0xffffffffu; }
inline unsigned __ballot_sync(unsigned mask, int p)
{
  return ncclsim_warp_ballot(mask, p);
}
inline int __any_sync(unsigned mask, int p) { return __ballot_sync(mask, p) != 0; }
inline int __all_sync(unsigned mask, int p) { return __ballot_sync(mask, !p) == 0; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }

/* A shuffle moves the bits of a value of up to 8 bytes. */
template <typename T> T ncclsim_shfl(unsigned mask, T v, int from)
{
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value,
                "not simulated here: a shuffle of a value over 8 bytes");
  unsigned long long bits = 0;
  std::memcpy(&bits, &v, sizeof v);
  bits = ncclsim_warp_shuffle(mask, bits, from);
  T out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}
/* The lane a shuffle reads, within a segment of `width` lanes (CUDA's
 * rules: out of the segment, the thread's own value). */
inline int ncclsim_segment(int width) { return width > 0 && width <= 32 ? width : 32; }
template <typename T> T __shfl_sync(unsigned mask, T v, int src, int width = 32)
{
  const int w = ncclsim_segment(width), lane = (int)ncclsim_lane_id();
  return ncclsim_shfl(mask, v, lane / w * w + ((src % w) + w) % w);
}
template <typename T> T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32)
{
  const int w = ncclsim_segment(width), lane = (int)ncclsim_lane_id();
  const int src = lane - (int)d;
  return ncclsim_shfl(mask, v, src >= lane / w * w ? src : lane);
}
template <typename T> T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32)
{
  const int w = ncclsim_segment(width), lane = (int)ncclsim_lane_id();
  const int src = lane + (int)d;
  return ncclsim_shfl(mask, v, src < lane / w * w + w ? src : lane);
}
template <typename T> T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32)
{
  const int w = ncclsim_segment(width), lane = (int)ncclsim_lane_id();
  const int src = lane ^ m;
  return ncclsim_shfl(mask, v, src / w == lane / w ? src : lane);
}

/* Atomics: the compiler's atomic built-ins (the simulated build calls
 * tests/sim/tsan_hooks.c for each, which checks it as an atomic access). */
template <typename T> T atomicAdd(T *p, T v)
{
  if constexpr (std::is_integral<T>::value) {
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
  } else {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "atomicAdd of this type");
    using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    U *u = reinterpret_cast<U *>(p);
    U old = __atomic_load_n(u, __ATOMIC_RELAXED), want;
    do {
      T sum;
      std::memcpy(&sum, &old, sizeof sum);
      sum += v;
      std::memcpy(&want, &sum, sizeof want);
    } while (!__atomic_compare_exchange_n(u, &old, want, false,
                                          __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    T was;
    std::memcpy(&was, &old, sizeof was);
    return was;
  }
}
template <typename T> T atomicSub(T *p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }
template <typename T> T atomicExch(T *p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }
template <typename T> T atomicAnd(T *p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }
template <typename T> T atomicOr(T *p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
template <typename T> T atomicXor(T *p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); }
template <typename T> T atomicCAS(T *p, T expected, T desired)
{
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED,
                              __ATOMIC_RELAXED);
  return expected;
}
template <typename T> T atomicMax(T *p, T v)
{
  T old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_RELAXED,
                                                 __ATOMIC_RELAXED)) {
  }
  return old;
}
template <typename T> T atomicMin(T *p, T v)
{
  T old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (old > v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_RELAXED,
                                                 __ATOMIC_RELAXED)) {
  }
  return old;
}

/* __shared__ (compile_cu.sh rewrites declarations to these). */
template <typename T> T &ncclsim_shared(unsigned id)
{
  return *static_cast<T *>(ncclsim_shared_object(id, sizeof(T), alignof(T)));
}
template <typename T> T *ncclsim_extern_shared()
{
  return static_cast<T *>(ncclsim_dynamic_shared());
}

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
  void sync() const { ncclsim_cta_sync(); }
};

/* An LSA barrier session of a CTA (one barrier per CTA: index blockIdx.x).
 * Each thread keeps the epoch it copied, as NCCL's does. */
template <typename Coop> struct ncclLsaBarrierSession {
  static_assert(std::is_same<Coop, ncclCoopCta>::value,
                "not simulated here: an LSA barrier session of a warp or a"
                " thread (ncclLsaBarrierSession<ncclCoopWarp>): the"
                " simulation runs sessions of a CTA (tests/README.md)");
  ncclLsaBarrierSession(Coop, const ncclDevComm &comm, ncclTeam,
                        ncclLsaBarrierHandle_t, uint32_t index,
                        bool multimem = false)
      : comm_(&comm), index_(index)
  {
    static_cast<void>(multimem);
    epoch_ = ncclsim_lsa_session_open(comm_, index_);
  }
  ncclLsaBarrierSession(Coop coop, const ncclDevComm &comm, ncclTeamTagLsa,
                        uint32_t index, bool multimem = false)
      : ncclLsaBarrierSession(coop, comm, ncclTeamLsa(comm), comm.lsaBarrier,
                              index, multimem)
  {
  }
  ~ncclLsaBarrierSession() { ncclsim_lsa_session_close(comm_, index_, epoch_); }
  ncclLsaBarrierSession(const ncclLsaBarrierSession &) = delete;
  ncclLsaBarrierSession &operator=(const ncclLsaBarrierSession &) = delete;

  void arrive(Coop, cuda::memory_order order)
  {
    ncclsim_lsa_arrive(comm_, index_, epoch_, (int)order);
  }
  void wait(Coop, cuda::memory_order order)
  {
    ncclsim_lsa_wait(comm_, index_, epoch_, (int)order);
    epoch_ += 1;
  }
  void sync(Coop coop, cuda::memory_order order)
  {
    arrive(coop, order);
    wait(coop, order);
  }

private:
  const ncclDevComm *comm_;
  uint32_t index_;
  unsigned long long epoch_;
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
NCCLSIM_NOT_SIMULATED(ncclGetLsaMultimemPointer)
NCCLSIM_NOT_SIMULATED(ncclGetMultimemPointer)
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
