/*
 * Which engine ran a collective: counts, from CUPTI activity records, the
 * GPU kernels and the copies that ran on a device between two moments. A
 * collective that ran kernels used SMs; one that ran only copies used the
 * copy engines. Built without CUPTI (HAVE_CUPTI=0) every call reports that
 * nothing is known.
 */
#ifndef ENGINE_H
#define ENGINE_H

#include <stddef.h>
#include <stdint.h>

/* Starts recording kernels and copies in this process; calls nest, and
 * recording stops at the matching engine_probe_stop. Returns 1 if records
 * are available, 0 if not (no CUPTI in this build, or CUPTI failed: the
 * reason goes to stderr once). */
int engine_probe_start(void);
void engine_probe_stop(void);

/* Why nothing can be recorded (no CUPTI in this build, or CUPTI failed),
 * for messages; meaningful after engine_probe_start returned 0. */
const char *engine_probe_unavailable(void);

/* The current time on CUPTI's clock, in ns (0 without CUPTI). */
uint64_t engine_probe_now(void);

/* What ran on a device: the kernels and copies CUPTI recorded. */
#define ENGINE_MAX_NAMES 4
typedef struct engine_work {
  long kernels;     /* kernels */
  long copies;      /* copies within the GPU or between GPUs */
  long host_copies; /* copies to or from host memory */
  int nnames;       /* distinct kernel names (first ENGINE_MAX_NAMES) */
  char names[ENGINE_MAX_NAMES][64]; /* unmangled: ncclSymkDevKernel_... */
} engine_work;

/* Fills *w with the work that started on `device` within [t0, t1] and was
 * launched by the calling thread (so each rank sees its own work when ranks
 * share a GPU). Flushes CUPTI's buffers first, so everything that finished
 * is counted. Returns 1, or 0 when nothing is known (no CUPTI: *w is
 * zeroed). */
int engine_probe_collect(int device, uint64_t t0, uint64_t t1, engine_work *w);

/* For the tools that are preloaded into a program (tools/whatran,
 * tools/gaps) and must not wait for the GPU: every kernel and copy
 * flushed so far (engine_probe_flush, which returns 0 if CUPTI failed),
 * each with the CUDA call (runtime or driver API) that launched it: its
 * thread (engine_probe_thread's number) and host times. *out is a
 * malloc'd array (free it); the names stay valid until engine_probe_stop.
 * Returns how many. */
enum engine_what { ENGINE_KERNEL, ENGINE_DEVICE_COPY, ENGINE_HOST_COPY };
typedef struct engine_piece {
  enum engine_what what;
  const char *name;    /* a kernel's, unmangled; else "?" */
  uint32_t device;
  uint64_t start, end; /* on the GPU, CUPTI's clock (ns) */
  uint32_t thread;     /* the launching call's thread; 0 if not recorded */
  uint32_t launch;     /* the launching call's correlation id */
  uint64_t launch_start, launch_end; /* the launching call, on the host */
  int graph;           /* that call was a graph launch */
} engine_piece;
int engine_probe_flush(void);
uint32_t engine_probe_thread(void);
size_t engine_probe_pieces(engine_piece **out);
/* Counts a piece into *w as engine_probe_collect does. */
void engine_work_add(engine_work *w, const engine_piece *p);

#endif
