/*
 * Error checks for CUDA, NCCL and MPI calls. On failure each prints one line
 *   allreduce_sm: rank 2: main.c:84: ncclMemAlloc(&d_sendbuff, size_bytes)
 *   failed: unhandled cuda error (...) [NCCL: <last error text>]
 * and ends the whole job with status 1 (job_abort), so no rank is left
 * waiting in a collective for a peer that has stopped.
 */
#ifndef CHECKS_H
#define CHECKS_H

#include <cuda_runtime.h>
#include <nccl.h>

#define CUDACHECK(call)                                                        \
  do {                                                                         \
    cudaError_t err_ = (call);                                                 \
    if (err_ != cudaSuccess)                                                   \
      fail_cuda(__FILE__, __LINE__, #call, err_);                              \
  } while (0)

#define NCCLCHECK(call)                                                        \
  do {                                                                         \
    ncclResult_t res_ = (call);                                                \
    if (res_ != ncclSuccess)                                                   \
      fail_nccl(__FILE__, __LINE__, #call, res_);                              \
  } while (0)

#ifdef USE_MPI
#include <mpi.h>
#define MPICHECK(call)                                                         \
  do {                                                                         \
    int mpi_err_ = (call);                                                     \
    if (mpi_err_ != MPI_SUCCESS)                                               \
      fail_mpi(__FILE__, __LINE__, #call, mpi_err_);                           \
  } while (0)
_Noreturn void fail_mpi(const char *file, int line, const char *call, int err);
#endif

/* Report a failed call (see above) and end the job. Never return. */
_Noreturn void fail_cuda(const char *file, int line, const char *call,
                         cudaError_t err);
_Noreturn void fail_nccl(const char *file, int line, const char *call,
                         ncclResult_t res);

/* Returns n * size bytes of zeroed host memory, to be released with free().
 * If there is not enough, reports it and ends the job: never returns NULL. */
void *host_calloc(size_t n, size_t size);

/* Prints "PROG: [rank R: ]" and the formatted message to stderr in one
 * write, so that lines from several ranks do not interleave. */
void print_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The program name used in messages; run_example sets it from argv[0]. */
void set_program_name(const char *name);

#endif
