/*
 * The CUDA built-ins a kernel of the simulated lessons uses (see
 * nccl_device.h, which includes this): threadIdx and the rest, barriers of
 * a CTA and of a warp, shuffles and votes, atomics, fences, __shared__
 * objects. Every GPU thread is a fiber of tests/sim/fibers.c; what they
 * share is tests/sim/ctas.c's. Never part of what users build.
 */
#ifndef NCCLSIM_CUDA_H
#define NCCLSIM_CUDA_H

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ncclsim_device.h"

/* ----------------------------------------------------- CUDA built-ins */
#define threadIdx (ncclsim_thread_idx())
#define blockIdx (ncclsim_block_idx())
#define blockDim (ncclsim_block_dim())
#define gridDim (ncclsim_grid_dim())
#define warpSize 32
#define __syncthreads() ncclsim_cta_sync()
/* Fences by scope: only a system one orders anything between GPUs
 * (tests/sim/fences.c says what the simulation makes of each). */
#define __threadfence() ncclsim_fence(NCCLSIM_SCOPE_DEVICE)
#define __threadfence_block() ncclsim_fence(NCCLSIM_SCOPE_BLOCK)
#define __threadfence_system() ncclsim_fence(NCCLSIM_SCOPE_SYSTEM)

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
 * tests/sim/tsan_hooks.c for each, which checks it as an atomic access of
 * the calling thread's atomic scope: device for atomicAdd and the rest,
 * system for their _system variants, the CTA for _block ones). The
 * operand's type is the pointer's, as CUDA's overloads convert it. */
struct ncclsim_atomic {
  ncclsim_atomic(int scope, const void *pc) { ncclsim_atomic_enter(scope, pc); }
  ~ncclsim_atomic() { ncclsim_atomic_leave(); }
};
#define NCCLSIM_ATOMIC(scope)                                                  \
  ncclsim_atomic ncclsim_atomic_(scope, __builtin_return_address(0))
template <typename T> struct ncclsim_same { using type = T; };
template <typename T> using ncclsim_as = typename ncclsim_same<T>::type;
template <typename T> T atomicAdd(T *p, ncclsim_as<T> v)
{
  NCCLSIM_ATOMIC(NCCLSIM_SCOPE_DEVICE);
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
template <typename T> T atomicSub(T *p, ncclsim_as<T> v)
{
  NCCLSIM_ATOMIC(NCCLSIM_SCOPE_DEVICE);
  return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED);
}
template <typename T> T atomicExch(T *p, ncclsim_as<T> v)
{
  NCCLSIM_ATOMIC(NCCLSIM_SCOPE_DEVICE);
  return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);
}
template <typename T> T atomicAnd(T *p, ncclsim_as<T> v)
{
  NCCLSIM_ATOMIC(NCCLSIM_SCOPE_DEVICE);
  return __atomic_fetch_and(p, v, __ATOMIC_RELAXED);
}
template <typename T> T atomicOr(T *p, ncclsim_as<T> v)
{
  NCCLSIM_ATOMIC(NCCLSIM_SCOPE_DEVICE);
  return __atomic_fetch_or(p, v, __ATOMIC_RELAXED);
}
template <typename T> T atomicXor(T *p, ncclsim_as<T> v)
{
  NCCLSIM_ATOMIC(NCCLSIM_SCOPE_DEVICE);
  return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED);
}
template <typename T> T atomicCAS(T *p, ncclsim_as<T> expected, ncclsim_as<T> desired)
{
  NCCLSIM_ATOMIC(NCCLSIM_SCOPE_DEVICE);
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED,
                              __ATOMIC_RELAXED);
  return expected;
}
/* The operations CUDA defines by a rule on the old value (max, min, and
 * the wrapping increment and decrement of unsigned int). */
template <typename T, typename F> T ncclsim_atomic_rule(T *p, F rule)
{
  T old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(p, &old, rule(old), false,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
template <typename T> T atomicMax(T *p, ncclsim_as<T> v)
{
  NCCLSIM_ATOMIC(NCCLSIM_SCOPE_DEVICE);
  return ncclsim_atomic_rule(p, [v](T old) { return old < v ? v : old; });
}
template <typename T> T atomicMin(T *p, ncclsim_as<T> v)
{
  NCCLSIM_ATOMIC(NCCLSIM_SCOPE_DEVICE);
  return ncclsim_atomic_rule(p, [v](T old) { return old > v ? v : old; });
}
inline unsigned atomicInc(unsigned *p, unsigned v)
{
  NCCLSIM_ATOMIC(NCCLSIM_SCOPE_DEVICE);
  return ncclsim_atomic_rule(p, [v](unsigned old) { return old >= v ? 0u : old + 1; });
}
inline unsigned atomicDec(unsigned *p, unsigned v)
{
  NCCLSIM_ATOMIC(NCCLSIM_SCOPE_DEVICE);
  return ncclsim_atomic_rule(p, [v](unsigned old) { return old == 0 || old > v ? v : old - 1; });
}
/* The _system and _block variants: the same operation, of that scope. */
#define NCCLSIM_SCOPED(name)                                                   \
  template <typename T, typename... A> T name##_system(T *p, A... a)          \
  {                                                                            \
    NCCLSIM_ATOMIC(NCCLSIM_SCOPE_SYSTEM);                                      \
    return name(p, a...);                                                      \
  }                                                                            \
  template <typename T, typename... A> T name##_block(T *p, A... a)           \
  {                                                                            \
    NCCLSIM_ATOMIC(NCCLSIM_SCOPE_BLOCK);                                       \
    return name(p, a...);                                                      \
  }
NCCLSIM_SCOPED(atomicAdd)
NCCLSIM_SCOPED(atomicSub)
NCCLSIM_SCOPED(atomicExch)
NCCLSIM_SCOPED(atomicAnd)
NCCLSIM_SCOPED(atomicOr)
NCCLSIM_SCOPED(atomicXor)
NCCLSIM_SCOPED(atomicCAS)
NCCLSIM_SCOPED(atomicMax)
NCCLSIM_SCOPED(atomicMin)
NCCLSIM_SCOPED(atomicInc)
NCCLSIM_SCOPED(atomicDec)

/* __shared__ (compile_cu.sh rewrites declarations to these). */
template <typename T> T &ncclsim_shared(unsigned id)
{
  return *static_cast<T *>(ncclsim_shared_object(id, sizeof(T), alignof(T)));
}
template <typename T> T *ncclsim_extern_shared()
{
  return static_cast<T *>(ncclsim_dynamic_shared());
}

#endif
