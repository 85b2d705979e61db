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
int require_nccl_version(const rank_ctx *ctx, int min_code,
                         const char *feature);

/* Collective. NCCL returns success and a NULL window when the communicator
 * has no symmetric-memory support (for example GPUs without P2P). Each rank
 * that got a NULL window says so in one line; the run goes on, since NCCL
 * then uses its regular path. Returns 1 if this rank's windows are real. */
int report_symmetric_windows(const rank_ctx *ctx, ncclWindow_t send_win,
                             ncclWindow_t recv_win);

/* Writes "2.28.9" for an NCCL version code into buf. */
void format_nccl_version(int code, char *buf, size_t size);

#endif
