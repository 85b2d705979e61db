/*
 * Which engine ran a collective: counts, from CUPTI activity records, the
 * GPU kernels and the copies that ran on a device between two moments. A
 * collective that ran kernels used SMs; one that ran only copies used the
 * copy engines. Built without CUPTI (HAVE_CUPTI=0) every call reports that
 * nothing is known.
 */
#ifndef ENGINE_H
#define ENGINE_H

#include <stdint.h>

/* Starts recording kernels and copies in this process; calls nest, and
 * recording stops at the matching engine_probe_stop. Returns 1 if records
 * are available, 0 if not (no CUPTI in this build, or CUPTI failed: the
 * reason goes to stderr once). */
int engine_probe_start(void);
void engine_probe_stop(void);

/* The current time on CUPTI's clock, in ns (0 without CUPTI). */
uint64_t engine_probe_now(void);

/* Counts the kernels and copies that started on `device` within [t0, t1]
 * and were launched by the calling thread (so each rank counts its own work
 * when ranks share a GPU). Flushes CUPTI's buffers first, so everything that
 * finished is counted. */
void engine_probe_count(int device, uint64_t t0, uint64_t t1, long *kernels,
                        long *copies);

#endif
