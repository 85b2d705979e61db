#include "what_ran.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <unistd.h>

#include "calls.h"
#include "checks.h"
#include "requirements.h"

static _Thread_local uint64_t t_start;
static _Thread_local int recording;
static char *report; /* written by rank 0, printed by process 0 */

void what_ran_start(const rank_ctx *ctx)
{
  (void)ctx;
  recording = engine_probe_start();
  t_start = recording ? engine_probe_now() : 0;
}

size_t what_ran_report_size(int nranks)
{
  /* Each rank a group of its own (a description of up to 256 characters
   * and its rank list), each rank named in a cause, and the fixed words. */
  return (size_t)nranks * (256 + 2 * 16) + 4096;
}

/* A device API lesson: whose kernel ran, on which LSA team, or why the
 * lesson's kernel could not run. */
static void own_kernel_lines(char *out, size_t size, int n,
                             const rank_facts *facts)
{
  int *in = host_calloc((size_t)n, sizeof *in);
  int refused = 0, teams = 0;
  for (int r = 0; r < n; r++) {
    in[r] = facts[r].device_api == 0;
    refused += in[r];
  }
  if (refused) {
    text_add(out, size, "Why not the lesson's kernel: deviceApiSupport 0 on ");
    what_ran_add_ranks(out, size, in, n);
    text_add(out, size, " (NCCL gives the device API where it gives"
                        " symmetric windows: ");
    what_ran_causes(out, size, n, facts, WANT_OWN_KERNEL);
    text_add(out, size, ")\n");
  } else {
    for (int r = 0; r < n; r++) {
      in[r] = facts[r].device_api == 1 && facts[r].lsa_teams != 1;
      teams += in[r];
    }
    if (teams) {
      text_add(out, size, "Why not the lesson's kernel: %d LSA teams on ",
               facts[0].lsa_teams);
      what_ran_add_ranks(out, size, in, n);
      text_add(out, size, ": ranks on different nodes (NCCL_HOSTID too) or"
                          " without NVLink between them cannot load and"
                          " store each other's memory\n");
    } else if (facts[0].device_api == 1) {
      /* The lesson's kernels: one (03), or several (04's stages). */
      const int several = facts[0].measured && facts[0].work.nnames > 1;
      text_add(out, size,
               "Device API: the kernel%s above %s the lesson's own, on one"
               " LSA team of %d rank%s (deviceApiSupport 1, nLsaTeams 1 on"
               " every rank)\n",
               several ? "s" : "", several ? "are" : "is", n,
               n == 1 ? "" : "s");
    }
  }
  free(in);
}

/* The describer's " (no symmetric kernel)" says nothing of a lesson whose
 * kernel is its own. */
static void drop_no_symmetric(char *text)
{
  const char *words = " (no symmetric kernel)";
  char *at = strstr(text, words);
  if (at != NULL)
    memmove(at, at + strlen(words), strlen(at + strlen(words)) + 1);
}

void what_ran_format(const char *collective, int want, int n,
                     const rank_facts *facts, const char *unavailable,
                     char *out, size_t size)
{
  const int want_ce = want == WANT_COPY_ENGINES;
  out[0] = '\0';
  if (!facts[0].measured) {
    text_add(out, size, "What ran: not measured: %s\n", unavailable);
    return;
  }
  char(*text)[256] = host_calloc((size_t)n, sizeof *text);
  enum what_class *cls = host_calloc((size_t)n, sizeof *cls);
  int *in = host_calloc((size_t)n, sizeof *in);
  for (int r = 0; r < n; r++) {
    cls[r] = what_ran_describe(facts[r].measured ? &facts[r].work : NULL, n,
                               text[r], sizeof text[r]);
    if (want == WANT_OWN_KERNEL)
      drop_no_symmetric(text[r]);
  }
  if (n == 1 && want != WANT_OWN_KERNEL)
    text_add(out, size,
             "What ran: one rank: NCCL did %s, nothing was communicated\n",
             text[0]);
  else {
    text_add(out, size, "What ran: %s ran ", collective);
    int *done = host_calloc((size_t)n, sizeof *done);
    for (int r = 0, groups = 0; r < n; r++) {
      if (done[r])
        continue;
      int members = 0;
      for (int q = r; q < n; q++)
        members += in[q] = !done[q] && strcmp(text[q], text[r]) == 0;
      text_add(out, size, "%s%s on ", groups++ ? "; " : "",
               text[r][0] ? text[r] : "nothing measured");
      if (members == n)
        text_add(out, size, "every rank");
      else
        what_ran_add_ranks(out, size, in, n);
      for (int q = r; q < n; q++)
        done[q] |= in[q];
      memset(in, 0, (size_t)n * sizeof *in);
    }
    text_add(out, size, "\n");
    free(done);
  }
  if (want == WANT_OWN_KERNEL) {
    own_kernel_lines(out, size, n, facts);
    free(text);
    free(cls);
    free(in);
    return;
  }
  /* A rank not measured (CUPTI failed there) says nothing against it. */
  enum what_class wanted = want_ce ? RAN_COPY_ENGINE : RAN_SYMMETRIC;
  int all_as_wanted = 1;
  for (int r = 0; r < n; r++)
    all_as_wanted &= cls[r] == wanted || cls[r] == RAN_UNKNOWN;
  if (!all_as_wanted) {
    text_add(out, size, "%s: ",
             want_ce ? "Why not the copy engines" : "Why no symmetric kernel");
    what_ran_causes(out, size, n, facts, want_ce);
    text_add(out, size, "\n");
  }
  free(text);
  free(cls);
  free(in);
}

void all_ranks_finish_what_ran(const rank_ctx *ctx)
{
  rank_facts mine = {.device = ctx->device,
                     .null_window = rank_got_null_window(),
                     .p2p_to_first = -1}; /* rank 0 fills it in below */
  mine.device_api = rank_device_api(&mine.lsa_teams);
  /* Facts that only explain: a failure leaves them unknown (0). */
  cudaError_t cuda_err;
  WATCHED(cuda_err, cudaDriverGetVersion(&mine.driver));
  if (cuda_err != cudaSuccess)
    mine.driver = 0;
  ncclResult_t nccl_err;
  WATCHED(nccl_err, ncclGetVersion(&mine.nccl));
  if (nccl_err != ncclSuccess)
    mine.nccl = 0;
  host_identity(mine.host, sizeof mine.host);
  if (recording) {
    WATCHED(mine.measured,
            engine_probe_collect(ctx->device, t_start, engine_probe_now(),
                                 &mine.work));
    engine_probe_stop();
    recording = 0;
  }
  _Static_assert(sizeof(rank_facts) <= ALL_RANKS_GATHER_MAX,
                 "rank_facts must fit all_ranks_gather");
  rank_facts *facts =
      ctx->rank == 0 ? host_calloc((size_t)ctx->nranks, sizeof *facts) : NULL;
  all_ranks_gather(ctx, &mine, sizeof mine, facts);
  if (ctx->rank == 0) {
    /* CUDA P2P from rank 0's GPU to the others on its host. */
    for (int r = 1; r < ctx->nranks; r++) {
      int can = 0;
      cudaError_t err = cudaErrorUnknown;
      if (strcmp(facts[r].host, mine.host) == 0 &&
          facts[r].device != mine.device)
        WATCHED(err,
                cudaDeviceCanAccessPeer(&can, mine.device, facts[r].device));
      if (err == cudaSuccess)
        facts[r].p2p_to_first = can;
    }
    const char *coll =
        ctx->example->collective == COLLECTIVE_ALLGATHER ? "AllGather" : "AllReduce";
    what_ran_format(coll,
                    ctx->example->kernel ? WANT_OWN_KERNEL
                    : ctx->example->collective == COLLECTIVE_ALLGATHER
                        ? WANT_COPY_ENGINES
                        : WANT_SYMMETRIC,
                    ctx->nranks, facts, engine_probe_unavailable(),
                    report = host_calloc(what_ran_report_size(ctx->nranks), 1),
                    what_ran_report_size(ctx->nranks));
    free(facts);
  }
}

void what_ran_print(void)
{
  if (report != NULL && report[0] != '\0')
    fputs(report, stdout);
  free(report);
  report = NULL;
}
