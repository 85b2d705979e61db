/*
 * Everything an example's main.c uses from common/, in one include:
 *   bootstrap.h  run_example, rank_ctx, example_desc, util_broadcast
 *   checks.h     CUDACHECK, NCCLCHECK, host_calloc
 *   output.h     print_root, all_ranks_print (collective), MiB
 *   verify.h     fill_floats, verify_allreduce, verify_allgather_segments
 *   requirements.h  all_ranks_report_windows (collective)
 *
 * A call named all_ranks_* is collective, like util_broadcast and the
 * verify_* calls: every rank must make it, in the same order, or the ranks
 * that did wait for ever. print_root and the CHECK macros are not.
 */
#ifndef EXAMPLE_H
#define EXAMPLE_H

/* A CUDA C++ lesson (03_allreduce_lsa) includes these C headers too: C
 * linkage, and C11's _Noreturn in C++'s spelling (as glibc's sys/cdefs.h
 * does for compilers without it). */
#ifdef __cplusplus
#include <cuda_runtime.h> /* C++ headers: included here, outside the C block */
#include <nccl.h>
#ifndef _Noreturn
#define _Noreturn [[noreturn]]
#endif
extern "C" {
#endif

#include "bootstrap.h"
#include "checks.h"
#include "output.h"
#include "requirements.h"
#include "verify.h"

#ifdef __cplusplus
}
#endif

#endif
