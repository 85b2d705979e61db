/*
 * The simulation's nccl_device.h: what a kernel of the device API lesson
 * (03_allreduce_lsa) uses, with NCCL 2.30.7's names and signatures, for a
 * build that compiles the lesson's main.cu as host C++ (tests/sim/
 * compile_cu.sh) and links tests/sim in place of CUDA and NCCL. Every GPU
 * thread then runs on the host, as a fiber of tests/sim/device.c. Never
 * part of what users build.
 */
#ifndef NCCLSIM_NCCL_DEVICE_H
#define NCCLSIM_NCCL_DEVICE_H

#include <atomic>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ncclsim_device.h"

/* The CUDA built-ins a kernel reads. */
#define threadIdx (ncclsim_thread_idx())
#define blockIdx (ncclsim_block_idx())
#define blockDim (ncclsim_block_dim())
#define gridDim (ncclsim_grid_dim())
#define __syncthreads() ncclsim_cta_sync()

namespace cuda {
using memory_order = std::memory_order;
constexpr memory_order memory_order_relaxed = std::memory_order_relaxed;
constexpr memory_order memory_order_acquire = std::memory_order_acquire;
constexpr memory_order memory_order_release = std::memory_order_release;
constexpr memory_order memory_order_acq_rel = std::memory_order_acq_rel;
constexpr memory_order memory_order_seq_cst = std::memory_order_seq_cst;
} // namespace cuda

#define NCCL_COMM_PROPERTIES_INITIALIZER                                       \
  {sizeof(ncclCommProperties_t), NCCL_API_MAGIC, NCCL_VERSION_CODE}
#define NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER                                 \
  {sizeof(ncclDevCommRequirements_t), NCCL_API_MAGIC, NCCL_VERSION_CODE,       \
   NULL, NULL, false, 0, 0}

struct ncclTeam {
  int nRanks, rank, stride;
};
typedef ncclTeam ncclTeam_t;

inline ncclTeam ncclTeamLsa(const ncclDevComm &comm)
{
  return ncclTeam{comm.lsaSize, comm.lsaRank, 1};
}

/* A CTA's threads acting together (NCCL's cooperative group "CTA"). */
struct ncclCoopCta {
  void sync() const { ncclsim_cta_sync(); }
};

template <typename Coop> struct ncclLsaBarrierSession {
  ncclLsaBarrierSession(Coop, const ncclDevComm &comm, ncclTeam,
                        ncclLsaBarrierHandle_t, unsigned index)
      : comm_(&comm), index_(index)
  {
  }
  void sync(Coop, cuda::memory_order order)
  {
    ncclsim_lsa_barrier_sync(comm_, index_, (int)order);
  }

private:
  const ncclDevComm *comm_;
  unsigned index_;
};

inline void *ncclGetLsaPointer(ncclWindow_t window, size_t offset, int peer)
{
  return ncclsim_lsa_pointer(window, offset, peer);
}

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

  template <typename... A> void operator()(A &&...args) const
  {
    call *c = new call(kernel, std::tuple<std::decay_t<P>...>(
                                   std::forward<A>(args)...));
    ncclsim_launch(name, grid, block, shared, stream, thread, c, release);
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
