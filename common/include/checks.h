/*
 * The error module: the one path every message to stderr takes, and the
 * checks for CUDA and NCCL calls (the MPI transport adds MPICHECK in its own
 * file). On failure a check prints one line
 *   allreduce_sm: rank 2: main.c:55: ncclMemAlloc(&d_sendbuff, size_bytes)
 *   failed: unhandled cuda error (...) [NCCL: <last error text>]
 * and ends the whole job with status 1 (the transport's job_abort, which
 * it registers with on_fatal_error), so no rank is left waiting in a
 * collective for a peer that has stopped. Depends on nothing else here
 * but the seam's watch_* hooks (instruments.h).
 */
#ifndef CHECKS_H
#define CHECKS_H

#include <stddef.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "instruments.h"

/* Each check also notes the call in progress (watch_begin, instruments.h),
 * so that a watchdog can say which call a rank is stuck in. */
#define CUDACHECK(call)                                                        \
  do {                                                                         \
    watch_begin(#call, __FILE__, __LINE__);                                    \
    cudaError_t err_ = (call);                                                 \
    watch_end();                                                               \
    if (err_ != cudaSuccess)                                                   \
      fail_cuda(__FILE__, __LINE__, #call, err_);                              \
  } while (0)

/* A call whose failure is not fatal (a fact that only explains, such as
 * the number of GPUs before the job's check), still watched:
 * WATCHED(result, call) sets result to what call returned. */
#define WATCHED(result, call)                                                  \
  do {                                                                         \
    watch_begin(#call, __FILE__, __LINE__);                                    \
    (result) = (call);                                                         \
    watch_end();                                                               \
  } while (0)

#define NCCLCHECK(call)                                                        \
  do {                                                                         \
    watch_begin(#call, __FILE__, __LINE__);                                    \
    ncclResult_t res_ = (call);                                                \
    watch_end();                                                               \
    if (res_ != ncclSuccess)                                                   \
      fail_nccl(__FILE__, __LINE__, #call, res_);                              \
  } while (0)

/* Report a failed call (see above) and end the job. Never return. */
_Noreturn void fail_cuda(const char *file, int line, const char *call,
                         cudaError_t err);
_Noreturn void fail_nccl(const char *file, int line, const char *call,
                         ncclResult_t res);
/* The same for any library: `text` is its own words for the error. */
_Noreturn void fail_call(const char *file, int line, const char *call,
                         const char *text);

/* How a fatal error ends the job: the transport's job_abort (MPI_Abort, or
 * _exit for threads). Until one is set, the process exits. */
void on_fatal_error(void (*end_job)(int status));

/* Ends the job through that function with `status`. Never returns. */
_Noreturn void fatal(int status);

/* The rank that the calling thread runs, for the "rank R: " prefix of its
 * messages; -1 (the default) prints none. Its calls are watched as that
 * rank's (watch_rank). */
void set_error_rank(int rank);

/* A 64-bit hash of size bytes (FNV-1a): the options' checksum. */
unsigned long long hash_bytes(const void *data, size_t size);

/* The last part of a path: "main.c" for "/src/main.c" (messages stay
 * short). */
const char *path_base_name(const char *path);

/* Returns n * size bytes of zeroed host memory, to be released with free().
 * If there is not enough, reports it and ends the job: never returns NULL. */
void *host_calloc(size_t n, size_t size);

/* Prints "PROG: [rank R: ]" and the formatted message to stderr in one
 * write, so that lines from several ranks do not interleave. */
void print_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The program name used in messages: the last part of `path`; run_example
 * sets it from argv[0]. */
void set_program_name(const char *path);

/* Flushes stdout only if no thread holds it: the watchdog and the abort
 * paths must not wait behind a rank stuck writing to a full pipe. */
void flush_stdout_if_free(void);

#endif
