/*
 * What NCCL actually ran for the lesson's collective, measured, and why it
 * may not be what the example is about. The driver wraps every lesson with
 * these calls; main.c shows no trace of them.
 *
 * After the lesson, rank 0 prints one line naming what ran on every rank
 * (from CUPTI's kernel and copy records of each rank's own work), e.g.
 *   What ran: AllGather ran on the copy engines: 0 kernels, 3 copies on every
 * rank and, when that is not the example's point (no copy engine for
 * allgather_ce, no symmetric kernel for allreduce_sm), a second line naming
 * the conditions that fail here, or "no known cause found". This is a
 * report, never an error.
 */
#ifndef WHAT_RAN_H
#define WHAT_RAN_H

#include <stddef.h>

#include "bootstrap.h"
#include "engine.h"

/* Not collective: starts recording this rank's GPU work. */
void what_ran_start(const rank_ctx *ctx);

/* Collective: stops recording, gathers every rank's work on rank 0 and
 * there formats the report for what_ran_print (nothing is printed yet, so
 * that the original's output stays as it was). */
void all_ranks_finish_what_ran(const rank_ctx *ctx);

/* Prints the report formatted by the last all_ranks_finish_what_ran, if
 * any (process 0 only has one). */
void what_ran_print(void);

/* What one rank's work was, in words: "NCCL's symmetric kernel X",
 * "NCCL's regular kernel X", "the copy engines: 0 kernels, N copies", a
 * local copy with one rank, ...; w is NULL when nothing could be
 * recorded (RAN_UNKNOWN, buf empty). Pure: unit-tested without a GPU.
 * Returns its class. */
enum what_class {
  RAN_UNKNOWN,     /* not measured */
  RAN_NOTHING,     /* measured, but no kernel or copy recorded */
  RAN_LOCAL,       /* one rank: a local copy or kernel */
  RAN_COPY_ENGINE, /* copies only */
  RAN_SYMMETRIC,   /* an NCCL symmetric kernel */
  RAN_REGULAR,     /* other kernels */
};
enum what_class what_ran_describe(const engine_work *w, int nranks, char *buf,
                                  size_t size);

/* What each rank sends rank 0 for the report. */
typedef struct rank_facts {
  int measured;     /* CUPTI recorded this rank's work */
  int null_window;  /* all_ranks_report_windows saw a NULL window */
  int device;       /* the CUDA device the rank drove */
  int driver;       /* cudaDriverGetVersion, 0 if unknown */
  int nccl;         /* ncclGetVersion of the loaded NCCL, 0 if unknown */
  int p2p_to_first; /* CUDA P2P to rank 0's device: 1, 0, or -1 (same
                       device, another host, or unknown) */
  char host[48];    /* which host, as NCCL tells hosts apart: see
                      host_identity */
  int device_api;   /* a device API lesson's deviceApiSupport (0, 1), -1
                       where it did not ask */
  int lsa_teams;    /* its nLsaTeams */
  engine_work work;
} rank_facts;

/* Writes to out the identity of this rank's host as NCCL tells hosts apart
 * (NCCL 2.28 and 2.30 alike, src/misc/utils.cc getHostHash): the value of
 * NCCL_HOSTID when it is set, else the host name followed by the kernel's
 * boot id; hashed to 16 hex digits. Ranks with equal identities are on one
 * host for NCCL, whatever the machines are. */
void host_identity(char *out, size_t size);

/* The CTA policy NCCL_CTA_POLICY=text sets for NCCL version `nccl`, which
 * then replaces config.CTAPolicy. From 2.29 (the 2.29.7 and 2.30.7
 * libraries; 2.30.7's src/init.cc, getEnvCtaPolicyOnce): a leading digit
 * 0, 1 or 2 is that policy, any other digit DEFAULT (0); else names
 * DEFAULT, EFFICIENCY, ZERO, any case, joined by '|', unknown ones ignored;
 * ZERO with EFFICIENCY is ZERO (2.29.2 and 2.30.7 src/init.cc,
 * envConfigOverride). Before (2.28.9's library reads it with
 * ncclParamCtaPolicy): an integer, as nccl_int_variable, and one outside
 * 0..2 is DEFAULT ("CTAPolicy %d is not a valid value", 2.28.3 and 2.28.9
 * src/init.cc). Returns 1 and the policy NCCL then uses in *policy, or 0
 * when the text sets nothing (then the config's policy stands). */
int nccl_env_cta_policy(const char *text, int nccl, int *policy);

/* Writes the report (one or two lines, each ending in a newline) for
 * nranks ranks' facts into out. `collective` is "AllReduce" or
 * "AllGather"; want: what the example is about (enum what_want); `unavailable` says why nothing was measured. Reads
 * NCCL_WIN_ENABLE, NCCL_CUMEM_ENABLE, NCCL_LOCAL_REGISTER, NCCL_CTA_POLICY
 * and NCCL_HOSTID. Pure otherwise: unit-tested. */
/* The bytes what_ran_format needs for nranks ranks at most: every rank
 * different, every rank named in the causes. */
size_t what_ran_report_size(int nranks);

/* What an example is about, what_ran_format's `want`. */
enum what_want {
  WANT_SYMMETRIC,    /* NCCL's symmetric kernels (allreduce_sm) */
  WANT_COPY_ENGINES, /* the copy engines (allgather_ce) */
  WANT_OWN_KERNEL,   /* the lesson's own kernel, through the device API
                        (allreduce_lsa) */
};

void what_ran_format(const char *collective, int want, int nranks,
                     const rank_facts *facts, const char *unavailable,
                     char *out, size_t size);

/* Between what_ran.c and what_ran_causes.c: appends "rank 3", "ranks
 * 0-2" or "ranks 0, 2, 5" for the ranks r with in[r]; and the causes
 * (rank 0, from every rank's facts), or "no known cause found". */
void what_ran_add_ranks(char *buf, size_t size, const int *in, int n);
void what_ran_causes(char *buf, size_t size, int n, const rank_facts *facts,
                     int want);

#endif
