/* ncclsim: what -fsanitize=thread makes the compiler call in a simulated
 * lesson's main.cu (sim/compile_cu.sh), defined here in place of
 * ThreadSanitizer's runtime (so not linked into the simulation's TSan
 * builds, tests/Makefile): before each plain access, the access's check
 * (access.c); in place of each atomic operation, the operation, then its
 * check as an access that does not conflict with another atomic one. An
 * atomic's memory order orders nothing between ranks here: only LSA
 * barriers do (tests/README.md says why). atomicAdd, atomicCAS, atomicExch
 * and the rest of include/nccl_device.h compile to these. A fence is no
 * access. */
#include "sim.h"

typedef unsigned char a8;
typedef unsigned short a16;
typedef unsigned int a32;
typedef unsigned long long a64;


#define ATOMICS(n, T)                                                          \
  T __tsan_atomic##n##_load(const volatile T *a, int mo);                      \
  T __tsan_atomic##n##_load(const volatile T *a, int mo)                       \
  {                                                                            \
    (void)mo;                                                                  \
    hb_atomic_access(a, sizeof(T), 0, __builtin_return_address(0));            \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                               \
  }                                                                            \
  void __tsan_atomic##n##_store(volatile T *a, T v, int mo);                   \
  void __tsan_atomic##n##_store(volatile T *a, T v, int mo)                    \
  {                                                                            \
    (void)mo;                                                                  \
    hb_atomic_access(a, sizeof(T), 1, __builtin_return_address(0));            \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                  \
  }                                                                            \
  RMW(n, T, exchange, __atomic_exchange_n)                                     \
  RMW(n, T, fetch_add, __atomic_fetch_add)                                     \
  RMW(n, T, fetch_sub, __atomic_fetch_sub)                                     \
  RMW(n, T, fetch_and, __atomic_fetch_and)                                     \
  RMW(n, T, fetch_or, __atomic_fetch_or)                                       \
  RMW(n, T, fetch_xor, __atomic_fetch_xor)                                     \
  RMW(n, T, fetch_nand, __atomic_fetch_nand)                                   \
  int __tsan_atomic##n##_compare_exchange_strong(volatile T *a, T *c, T v,     \
                                                 int mo, int fmo);             \
  int __tsan_atomic##n##_compare_exchange_strong(volatile T *a, T *c, T v,     \
                                                 int mo, int fmo)              \
  {                                                                            \
    (void)mo, (void)fmo;                                                       \
    hb_atomic_access(a, sizeof(T), 1, __builtin_return_address(0));            \
    return __atomic_compare_exchange_n(a, c, v, 0, __ATOMIC_SEQ_CST,           \
                                       __ATOMIC_SEQ_CST);                      \
  }                                                                            \
  int __tsan_atomic##n##_compare_exchange_weak(volatile T *a, T *c, T v,       \
                                               int mo, int fmo);               \
  int __tsan_atomic##n##_compare_exchange_weak(volatile T *a, T *c, T v,       \
                                               int mo, int fmo)                \
  {                                                                            \
    (void)mo, (void)fmo;                                                       \
    hb_atomic_access(a, sizeof(T), 1, __builtin_return_address(0));            \
    return __atomic_compare_exchange_n(a, c, v, 0, __ATOMIC_SEQ_CST,           \
                                       __ATOMIC_SEQ_CST);                      \
  }                                                                            \
  T __tsan_atomic##n##_compare_exchange_val(volatile T *a, T c, T v, int mo,   \
                                            int fmo);                          \
  T __tsan_atomic##n##_compare_exchange_val(volatile T *a, T c, T v, int mo,   \
                                            int fmo)                           \
  {                                                                            \
    (void)mo, (void)fmo;                                                       \
    hb_atomic_access(a, sizeof(T), 1, __builtin_return_address(0));            \
    __atomic_compare_exchange_n(a, &c, v, 0, __ATOMIC_SEQ_CST,                 \
                                __ATOMIC_SEQ_CST);                             \
    return c;                                                                  \
  }

#define RMW(n, T, op, builtin)                                                 \
  T __tsan_atomic##n##_##op(volatile T *a, T v, int mo);                       \
  T __tsan_atomic##n##_##op(volatile T *a, T v, int mo)                        \
  {                                                                            \
    (void)mo;                                                                  \
    hb_atomic_access(a, sizeof(T), 1, __builtin_return_address(0));            \
    return builtin(a, v, __ATOMIC_SEQ_CST);                                    \
  }

ATOMICS(8, a8)
ATOMICS(16, a16)
ATOMICS(32, a32)
ATOMICS(64, a64)

void __tsan_atomic_thread_fence(int mo);
void __tsan_atomic_signal_fence(int mo);
void __tsan_atomic_thread_fence(int mo) { (void)mo; }
void __tsan_atomic_signal_fence(int mo) { (void)mo; }

/* ---------------------------------- what -fsanitize=thread calls */

#define RW(n)                                                                  \
  void __tsan_read##n(void *p);                                                \
  void __tsan_write##n(void *p);                                               \
  void __tsan_unaligned_read##n(void *p);                                      \
  void __tsan_unaligned_write##n(void *p);                                     \
  void __tsan_read##n(void *p)                                                 \
  {                                                                            \
    hb_device_access(p, n, HB_READ | HB_ALIGNED, __builtin_return_address(0));      \
  }                                                                            \
  void __tsan_write##n(void *p)                                                \
  {                                                                            \
    hb_device_access(p, n, HB_WRITE | HB_ALIGNED, __builtin_return_address(0));     \
  }                                                                            \
  void __tsan_unaligned_read##n(void *p)                                       \
  {                                                                            \
    hb_device_access(p, n, HB_READ, __builtin_return_address(0));                    \
  }                                                                            \
  void __tsan_unaligned_write##n(void *p)                                      \
  {                                                                            \
    hb_device_access(p, n, HB_WRITE, __builtin_return_address(0));                   \
  }
RW(1)
RW(2)
RW(4)
RW(8)
RW(16)

void __tsan_read_range(void *p, unsigned long n);
void __tsan_write_range(void *p, unsigned long n);
void __tsan_read_range(void *p, unsigned long n)
{
  hb_device_access(p, n, HB_READ, __builtin_return_address(0));
}
void __tsan_write_range(void *p, unsigned long n)
{
  hb_device_access(p, n, HB_WRITE, __builtin_return_address(0));
}

void __tsan_init(void);
void __tsan_func_entry(void *pc);
void __tsan_func_exit(void);
void __tsan_init(void) {}
void __tsan_func_entry(void *pc) { (void)pc; }
void __tsan_func_exit(void) {}
