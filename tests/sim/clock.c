/* ncclsim: the simulated GPU's clock (see sim.h). Each device of the
 * process has one: it reads when the device's last work ended, in
 * simulated nanoseconds from the process's start, and only work moves it
 * (queues.c), by the time the simulation gives that work here. So an
 * event's time, and what cudaEventElapsedTime says, follow from the work
 * between two events and nothing else: the same on a quiet machine and a
 * loaded one.
 *
 * A work's time: SIM_GPU_US's for it where set (below), else a model of
 * an H200-class GPU: a launch's latency plus its bytes at a bandwidth. The
 * model is coarse on purpose; what the suite checks of simulated times
 * comes from SIM_GPU_US's definitions, and the model only keeps every
 * time above 0, as a GPU's is. */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Latencies and bandwidths of the model (bytes per nanosecond = GB/s),
 * and an SGEMM's floating-point operations per nanosecond (50 TFLOP/s). */
enum { LAUNCH_NS = 5000, COPY_NS = 2000 };
static const double COLLECTIVE_GBPS = 100, DEVICE_GBPS = 1000, HOST_GBPS = 25,
                    FLOP_PER_NS = 50000;

/* SIM_GPU_US=WHAT:RANK:US[,...]: the simulated GPU spends US microseconds
 * on each such work of rank RANK (* for every rank) when it runs (the sum,
 * where several items name it), in place of the model's time;
 * WHAT is "collective", or "copy" (device to device, or between devices).
 * Returns -1 where no item names it. Timed work then lasts a known time: a
 * loop of n operations between two events n * US. A setting it cannot
 * read ends the process. */
static long sim_gpu_us(const char *kind, int rank)
{
  const char *spec = getenv("SIM_GPU_US");
  if (spec == NULL || *spec == '\0')
    return -1;
  long total = -1;
  for (const char *item = spec; *item;) {
    char what[16], who[16];
    long us;
    int used = 0;
    if (sscanf(item, "%15[^:]:%15[^:]:%ld%n", what, who, &us, &used) != 3 ||
        us < 0 || (item[used] != ',' && item[used] != '\0') ||
        (strcmp(what, "collective") != 0 && strcmp(what, "copy") != 0) ||
        (strcmp(who, "*") != 0 && strspn(who, "0123456789") != strlen(who))) {
      fprintf(stderr, "ncclsim: SIM_GPU_US='%s': wanted WHAT:RANK:US[,...],"
              " WHAT collective or copy, RANK a number or *\n", spec);
      _exit(SIM_EXIT_VIOLATION);
    }
    if (strcmp(what, kind) == 0 && (strcmp(who, "*") == 0 || atoi(who) == rank))
      total = (total < 0 ? 0 : total) + us;
    item += used + (item[used] == ',');
  }
  return total;
}

long long work_ns(enum work_kind kind, size_t bytes, int d2d, int rank)
{
  if (kind == WORK_COLLECTIVE || d2d) {
    const long us = sim_gpu_us(d2d ? "copy" : "collective", rank);
    if (us >= 0)
      return us * 1000LL;
  }
  switch (kind) {
  case WORK_COLLECTIVE: return LAUNCH_NS + (long long)(bytes / COLLECTIVE_GBPS);
  case WORK_COPY:
    return COPY_NS +
           (long long)(bytes / (d2d ? DEVICE_GBPS : HOST_GBPS));
  case WORK_MEMSET:
  case WORK_FILL: return LAUNCH_NS + (long long)(bytes / DEVICE_GBPS);
  case WORK_KERNEL: return LAUNCH_NS;
  case WORK_GEMM: /* bytes: its multiply-adds, 2 operations each */
    return LAUNCH_NS + (long long)(2 * (double)bytes / FLOP_PER_NS);
  case WORK_EVENT:
  case WORK_NOTHING: return 0;
  }
  return 0;
}
