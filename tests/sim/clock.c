/* ncclsim: the simulated GPU's clock (see sim.h). Each device of the
 * process has one: it reads when the device's last work ended, in
 * simulated nanoseconds from the process's start, and only work moves it
 * (queues.c), by the time the simulation gives that work here. So an
 * event's time, and what cudaEventElapsedTime says, follow from the work
 * between two events and nothing else: the same on a quiet machine and a
 * loaded one.
 *
 * A work's time: SIM_GPU_US's for it where set (cuda.c), else a model of
 * an H200-class GPU: a launch's latency plus its bytes at a bandwidth. The
 * model is coarse on purpose; what the suite checks of simulated times
 * comes from SIM_GPU_US's definitions, and the model only keeps every
 * time above 0, as a GPU's is. */
#include "sim.h"

enum { MAX_CLOCKS = 1024 };

/* Per device index of the process; written with atomics (ranks that are
 * threads sharing a device share its clock). */
static long long clocks[MAX_CLOCKS];

static long long *clock_of(int device)
{
  return &clocks[device >= 0 && device < MAX_CLOCKS ? device : 0];
}

long long gpu_now_ns(int device)
{
  return __atomic_load_n(clock_of(device), __ATOMIC_ACQUIRE);
}

void gpu_busy_until(int device, long long ns)
{
  long long *c = clock_of(device);
  long long was = __atomic_load_n(c, __ATOMIC_RELAXED);
  while (was < ns &&
         !__atomic_compare_exchange_n(c, &was, ns, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_RELAXED))
    ;
}

/* Latencies and bandwidths of the model (bytes per nanosecond = GB/s). */
enum { LAUNCH_NS = 5000, COPY_NS = 2000 };
static const double COLLECTIVE_GBPS = 100, DEVICE_GBPS = 1000, HOST_GBPS = 25;

long long modeled_ns(enum work_kind kind, size_t bytes, int device_copy)
{
  switch (kind) {
  case WORK_COLLECTIVE: return LAUNCH_NS + (long long)(bytes / COLLECTIVE_GBPS);
  case WORK_COPY:
    return COPY_NS +
           (long long)(bytes / (device_copy ? DEVICE_GBPS : HOST_GBPS));
  case WORK_MEMSET:
  case WORK_FILL: return LAUNCH_NS + (long long)(bytes / DEVICE_GBPS);
  case WORK_KERNEL: return LAUNCH_NS;
  case WORK_EVENT:
  case WORK_NOTHING: return 0;
  }
  return 0;
}
