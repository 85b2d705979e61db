/*
 * What an example needs from the library and the machine, checked in one
 * place and reported plainly instead of failing deep inside NCCL.
 */
#ifndef REQUIREMENTS_H
#define REQUIREMENTS_H

#include <nccl.h>

#include "bootstrap.h"

/* Refuse to build against headers too old for symmetric windows (set
 * NCCL_HOME to a newer NCCL). */
#if !defined(NCCL_VERSION_CODE) || NCCL_VERSION_CODE < NCCL_VERSION(2, 27, 0)
#error "nccl.h is older than 2.27: symmetric windows need NCCL >= 2.27"
#endif

/* Collective. Compares the NCCL library loaded at run time (ncclGetVersion)
 * with min_code (an NCCL_VERSION(x, y, z) value). If it is older on any rank,
 * that rank prints a message naming both versions and `feature`, and every
 * rank gets 0. Returns 1 on every rank if all are new enough. */
int all_ranks_require_nccl(const rank_ctx *ctx, int min_code,
                           const char *feature);

/* Collective. A device API program is refused by NCCL (>= 2.30) when the
 * loaded library is older than the nccl.h it was built with: checks that
 * here first, so that the refusal names both versions in one line.
 * headers_code 0 checks nothing. Returns 1 on every rank if it holds. */
int all_ranks_require_headers(const rank_ctx *ctx, int headers_code);

/* Collective. A device API lesson's check of what ncclCommQueryProperties
 * said on each rank: device API support, and one LSA team (every rank
 * reaching every other rank's memory with loads and stores). A rank where
 * either fails says so in one line. Returns 1 on every rank if all ranks
 * have both. What ran reads the answers (rank_device_api). */
int all_ranks_check_device_api(const rank_ctx *ctx, int device_api_support,
                               int lsa_teams);
/* What this rank's all_ranks_check_device_api saw: -1 (not asked), or its
 * deviceApiSupport, and its nLsaTeams in *lsa_teams. */
int rank_device_api(int *lsa_teams);

/* Collective. Each rank without a symmetric window says so in one line,
 * and the run goes on, on NCCL's regular path: a NULL handle after a
 * successful ncclCommWindowRegister (NCCL 2.30.7 writes NULL without
 * symmetric support; NCCL 2.28.3 may leave the handle unwritten, so the
 * caller must set it to NULL first), or, with NCCL before 2.28.7 and one
 * rank, a handle that is an ordinary local registration (see
 * docs/troubleshooting.md). Returns 1 if this rank's windows are real. */
int all_ranks_report_windows(const rank_ctx *ctx, ncclWindow_t send_win,
                             ncclWindow_t recv_win);

/* Not collective: 1 if all_ranks_report_windows found no symmetric window
 * on this rank (the report of what ran names the cause). */
int rank_got_null_window(void);

/* Writes "2.28.9" for an NCCL version code into buf. */
void format_nccl_version(int code, char *buf, size_t size);

/* Several ranks may use one GPU only when the user asks with NCCL's own
 * switch, NCCL_MULTI_RANK_GPU_ENABLE=1, and the loaded NCCL is >= 2.30 (the
 * first release that allows it). */
#define NCCL_SHARED_GPU_MIN NCCL_VERSION(2, 30, 0)
/* The ranks per GPU NCCL 2.30 says it "should be able to run" with its
 * default settings (docs/userguide/source/env.rst,
 * NCCL_MULTI_RANK_GPU_ENABLE, an experimental feature). */
#define NCCL_DOCUMENTED_RANKS_PER_GPU 2

/* How a node's ranks may map onto its GPUs. */
enum gpu_sharing {
  GPU_ONE_RANK_EACH, /* ranks <= GPUs: rank i drives GPU i */
  GPU_SHARED,        /* more ranks than GPUs, and sharing is allowed */
  GPU_TOO_FEW,       /* more ranks than GPUs, no sharing asked for */
  GPU_SHARING_BAD,   /* asked for, but the value or the NCCL is wrong */
};

/* Not collective. Decides whether `ranks` ranks on one node, at most
 * `per_gpu` on one GPU, may run, from NCCL_MULTI_RANK_GPU_ENABLE and
 * ncclGetVersion (the loaded library, not the header). For GPU_SHARING_BAD
 * it prints why (with `who`: which ranks share which GPU) and what to do,
 * if `say`; for GPU_TOO_FEW the caller prints its own message, adding
 * shared_gpu_hint(). */
enum gpu_sharing decide_gpu_sharing(int ranks, int ngpus, int per_gpu,
                                    const char *who, int say);

/* Not collective; call before any communicator exists. Ranks sharing a GPU
 * need all their NCCL kernels resident at once (each waits for the others),
 * but NCCL sizes a rank's kernels for a whole GPU (up to 64 CTAs on an H200,
 * one per SM): 4 ranks then ask for more SMs than there are, and hang. So
 * unless the user set NCCL_MAX_CTAS, this sets it to the GPU's SM count
 * divided by the ranks per GPU (per_gpu). If `say`, prints one line saying which
 * limit holds. */
void fit_shared_gpu_kernels(int per_gpu, int device, int say);

/* The hint every "more ranks than GPUs" message ends with. */
const char *shared_gpu_hint(void);

/* An integer variable of NCCL's, read as NCCL reads them (NCCL 2.30.7,
 * src/misc/param.cc, ncclLoadParam): unset or empty gives `unset`;
 * otherwise strtoll(text, NULL, 0), so "1x" is 1 and "yes" is 0; a value
 * out of range gives `unset` as well. */
long long nccl_int_variable(const char *name, long long unset);

#endif
