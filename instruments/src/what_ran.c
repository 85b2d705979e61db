#include "what_ran.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <unistd.h>

#include "calls.h"
#include "checks.h"
#include "requirements.h"

#define SYM_PREFIX     "ncclSymkDevKernel_"
#define REGULAR_PREFIX "ncclDevKernel_"

static _Thread_local uint64_t t_start;
static _Thread_local int recording;
static char *report; /* written by rank 0, printed by process 0 */

void what_ran_start(const rank_ctx *ctx)
{
  (void)ctx;
  recording = engine_probe_start();
  t_start = recording ? engine_probe_now() : 0;
}

/* A regular kernel's name stands for a family of algorithms, not for the
 * one NCCL ran: NCCL 2.28 names ncclDevKernel_AllReduce_Sum_f32_RING_LL,
 * 2.31 and later ncclDevKernel_AllReduce_f32_RING (the 2.32.3 library's
 * symbols), and the kernel named for RING and LL also runs other
 * algorithms and protocols (NCCL_DEBUG_SUBSYS=TUNING names the one
 * chosen). Writes the algorithm the name carries ("RING", "NVLS_TREE"),
 * or, for a name of neither shape, the name without NCCL's prefix. */
static void regular_family(const char *name, char *out, size_t size)
{
  static const char *const algorithms[] = {
      "NVLS_TREE", "COLLNET_DIRECT", "COLLNET_CHAIN", "RING", "TREE",
      "NVLS",      "PAT"};
  static const char *const protocols[] = {"", "_LL", "_LL128", "_SIMPLE"};
  const char *base = name + strlen(REGULAR_PREFIX);
  for (const char *at = strchr(base, '_'); at; at = strchr(at + 1, '_'))
    for (size_t a = 0; a < sizeof algorithms / sizeof *algorithms; a++) {
      size_t len = strlen(algorithms[a]);
      if (strncmp(at + 1, algorithms[a], len) != 0)
        continue;
      for (size_t p = 0; p < sizeof protocols / sizeof *protocols; p++)
        if (strcmp(at + 1 + len, protocols[p]) == 0) {
          snprintf(out, size, "%s", algorithms[a]);
          return;
        }
    }
  snprintf(out, size, "%s", base);
}

/* The symmetric kernels of w without NCCL's prefix, ", "-separated, then
 * (with `regular`) the families of its regular kernels, each once:
 * "regular kernels of the RING family", "of the RING and TREE families".
 * Kernels of neither kind are named as they are. */
static void add_names(char *buf, size_t size, const engine_work *w,
                      int regular)
{
  int named = 0;
  for (int i = 0; i < w->nnames; i++) {
    const char *name = w->names[i];
    if (strncmp(name, REGULAR_PREFIX, strlen(REGULAR_PREFIX)) == 0)
      continue;
    if (strncmp(name, SYM_PREFIX, strlen(SYM_PREFIX)) == 0)
      name += strlen(SYM_PREFIX);
    text_add(buf, size, "%s%s", named++ ? ", " : "", name);
  }
  char families[ENGINE_MAX_NAMES][64];
  int nfamilies = 0;
  for (int i = 0; i < w->nnames && regular; i++) {
    if (strncmp(w->names[i], REGULAR_PREFIX, strlen(REGULAR_PREFIX)) != 0)
      continue;
    char family[64];
    regular_family(w->names[i], family, sizeof family);
    int seen = 0;
    for (int f = 0; f < nfamilies; f++)
      seen |= strcmp(families[f], family) == 0;
    if (!seen)
      snprintf(families[nfamilies++], sizeof families[0], "%s", family);
  }
  if (nfamilies > 0) {
    text_add(buf, size, "%sregular kernels of the ", named ? " and " : "");
    for (int f = 0; f < nfamilies; f++)
      text_add(buf, size, "%s%s", f == 0                ? ""
                                  : f == nfamilies - 1 ? " and "
                                                       : ", ",
               families[f]);
    text_add(buf, size, " famil%s", nfamilies > 1 ? "ies" : "y");
  }
  if (w->kernels > 0 && w->nnames == ENGINE_MAX_NAMES)
    text_add(buf, size, ", ...");
}

/* Copies that ran beside kernels, so that no record goes unsaid. */
static void add_copies(char *buf, size_t size, const engine_work *w)
{
  if (w->copies > 0)
    text_add(buf, size, " and %ld cop%s", w->copies,
             w->copies == 1 ? "y" : "ies");
}

enum what_class what_ran_describe(const engine_work *w, int nranks, char *buf,
                                  size_t size)
{
  buf[0] = '\0';
  if (w == NULL)
    return RAN_UNKNOWN;
  if (w->kernels == 0 && w->copies == 0) {
    text_add(buf, size, "no kernel and no copy that CUPTI saw");
    return RAN_NOTHING;
  }
  if (nranks == 1) {
    if (w->kernels == 0)
      text_add(buf, size, "a local copy (%ld cop%s, 0 kernels)", w->copies,
               w->copies == 1 ? "y" : "ies");
    else {
      text_add(buf, size, "a local kernel: ");
      add_names(buf, size, w, 1);
      add_copies(buf, size, w);
    }
    return RAN_LOCAL;
  }
  if (w->kernels == 0) {
    text_add(buf, size, "on the copy engines: 0 kernels, %ld cop%s", w->copies,
             w->copies == 1 ? "y" : "ies");
    return RAN_COPY_ENGINE;
  }
  int symmetric = 0, regular = 0, other = 0;
  for (int i = 0; i < w->nnames; i++) {
    int sym = strncmp(w->names[i], SYM_PREFIX, strlen(SYM_PREFIX)) == 0;
    int reg =
        strncmp(w->names[i], REGULAR_PREFIX, strlen(REGULAR_PREFIX)) == 0;
    symmetric += sym;
    regular += reg;
    other += !sym && !reg;
  }
  if (symmetric)
    text_add(buf, size, "NCCL's symmetric kernel%s ", symmetric > 1 ? "s" : "");
  else if (regular && !other)
    text_add(buf, size, "NCCL's ");
  else
    text_add(buf, size, "kernel%s ", w->nnames > 1 ? "s" : "");
  add_names(buf, size, w, 1);
  add_copies(buf, size, w);
  if (!symmetric)
    text_add(buf, size, " (no symmetric kernel)");
  return symmetric ? RAN_SYMMETRIC : RAN_REGULAR;
}

size_t what_ran_report_size(int nranks)
{
  /* Each rank a group of its own (a description of up to 256 characters
   * and its rank list), each rank named in a cause, and the fixed words. */
  return (size_t)nranks * (256 + 2 * 16) + 4096;
}

void what_ran_format(const char *collective, int want_ce, int n,
                     const rank_facts *facts, const char *unavailable,
                     char *out, size_t size)
{
  out[0] = '\0';
  if (!facts[0].measured) {
    text_add(out, size, "What ran: not measured: %s\n", unavailable);
    return;
  }
  char(*text)[256] = host_calloc((size_t)n, sizeof *text);
  enum what_class *cls = host_calloc((size_t)n, sizeof *cls);
  int *in = host_calloc((size_t)n, sizeof *in);
  for (int r = 0; r < n; r++)
    cls[r] = what_ran_describe(facts[r].measured ? &facts[r].work : NULL, n,
                               text[r], sizeof text[r]);
  if (n == 1)
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
  /* A rank not measured (CUPTI failed there) says nothing against it. */
  enum what_class want = want_ce ? RAN_COPY_ENGINE : RAN_SYMMETRIC;
  int all_as_wanted = 1;
  for (int r = 0; r < n; r++)
    all_as_wanted &= cls[r] == want || cls[r] == RAN_UNKNOWN;
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
    what_ran_format(coll, ctx->example->collective == COLLECTIVE_ALLGATHER,
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
