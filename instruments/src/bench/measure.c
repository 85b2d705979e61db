/* One size in one mode: the timed loop, the check of every rank's result,
 * and which engine ran it. */
#include "bench_impl.h"

#include "checks.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "what_ran.h"

void collective_op(void *arg)
{
  const coll_op *op = arg;
  const bench *b = op->b;
  b->coll->run(op->m->send, op->m->recv, op->count, op->m->comm, b->stream);
}

/* 1 if any element of this rank's result is wrong. */
static int result_is_wrong(bench *b, const mode *m, size_t count)
{
  int n = b->ctx->nranks;
  size_t total = b->coll->result_count(count, n);
  CUDACHECK(cudaMemcpy(b->host, m->recv, total * sizeof(float),
                       cudaMemcpyDeviceToHost));
  return b->coll->count_wrong(b->host, count, n) > 0;
}

/* What one rank saw, for rank 0. */
typedef struct engine_seen {
  char engine[8];
  char names[120];
} engine_seen;

/* The engine column's word for one rank's work (see the table's header). */
static void engine_word(const engine_work *w, int nranks, engine_seen *seen)
{
  char text[256];
  static const char *const words[] = {
      [RAN_UNKNOWN] = "n/a",    [RAN_NOTHING] = "none",  [RAN_LOCAL] = "copy",
      [RAN_COPY_ENGINE] = "CE", [RAN_SYMMETRIC] = "SYM", [RAN_REGULAR] = "SM"};
  enum what_class c = what_ran_describe(w, nranks, text, sizeof text);
  const char *word = c == RAN_LOCAL && w->kernels > 0 ? "SM" : words[c];
  snprintf(seen->engine, sizeof seen->engine, "%s", word);
  seen->names[0] = '\0';
  for (int i = 0; i < w->nnames; i++) {
    size_t len = strlen(seen->names);
    snprintf(seen->names + len, sizeof seen->names - len, "%s%s", i ? " " : "",
             w->names[i]);
  }
}

/* Collective: what each rank's work was in a few more operations, watched
 * by CUPTI apart from the timed loop so that tracing does not change the
 * timing. Every rank classifies its own work; rank 0 says "mixed" when the
 * ranks differ. */
static void attribute(bench *b, const mode *m, size_t count, result *res)
{
  const rank_ctx *ctx = b->ctx;
  engine_seen mine = {"n/a", ""};
  engine_work work = {0};
  res->kernels = res->copies = -1;
  if (b->engine_known && engine_probe_start()) {
    uint64_t t0 = engine_probe_now();
    coll_op op = {b, m, count};
    for (int i = 0; i < ATTRIBUTION_OPS; i++)
      collective_op(&op);
    CUDACHECK(cudaStreamSynchronize(b->stream));
    uint64_t t1 = engine_probe_now();
    /* This rank's own work only: ranks sharing a GPU run on one device. */
    engine_probe_collect(ctx->device, t0, t1, &work);
    engine_probe_stop();
    engine_word(&work, ctx->nranks, &mine);
  }
  /* Every rank takes part, known or not, so that the calls match. */
  res->kernels = all_ranks_max(ctx, b->engine_known ? (int)work.kernels : -1);
  res->copies = all_ranks_max(
      ctx, b->engine_known ? (int)(work.copies + work.host_copies) : -1);
  engine_seen *all =
      ctx->rank == 0 ? host_calloc((size_t)ctx->nranks, sizeof *all) : NULL;
  all_ranks_gather(ctx, &mine, sizeof mine, all);
  if (ctx->rank == 0) {
    int same = 1;
    for (int r = 1; r < ctx->nranks; r++)
      same &= strcmp(all[r].engine, all[0].engine) == 0 &&
              strcmp(all[r].names, all[0].names) == 0;
    snprintf(res->engine, sizeof res->engine, "%s",
             same ? all[0].engine : "mixed");
    res->kernel_names[0] = '\0';
    for (int r = 0; r < (same ? 1 : ctx->nranks); r++) {
      size_t len = strlen(res->kernel_names);
      if (same)
        snprintf(res->kernel_names, sizeof res->kernel_names, "%s",
                 all[0].names);
      else
        snprintf(res->kernel_names + len, sizeof res->kernel_names - len,
                 "%sr%d:%s:%s", r ? " " : "", r, all[r].engine, all[r].names);
    }
    free(all);
  }
}

result measure(bench *b, const mode *m, size_t count)
{
  const rank_ctx *ctx = b->ctx;
  result res = {0};
  /* All ones: NaN, so a result the collective did not write fails. */
  size_t total = b->coll->result_count(count, ctx->nranks);
  CUDACHECK(cudaMemsetAsync(m->recv, 0xff, total * sizeof(float), b->stream));
  coll_op op = {b, m, count};
  /* The -i operations as -r loops (the first after the warm-up): the time
   * is the median loop's, the spread that of all of them; each loop's time
   * is its slowest rank's. */
  const int loops = b->opts->repeat, iters = b->opts->iters;
  double *us = host_calloc((size_t)loops, sizeof *us);
  for (int k = 0; k < loops; k++) {
    int n = iters / loops + (k < iters % loops);
    time_ops(b->stream, b->start, b->stop, k == 0 ? b->opts->warmup : 0, n,
             collective_op, &op);
    us[k] = slowest(ctx, time_per_op_us(b->start, b->stop, n));
  }
  res.us = median_of(us, loops);
  res.us_min = res.us_max = us[0];
  for (int k = 1; k < loops; k++) {
    res.us_min = us[k] < res.us_min ? us[k] : res.us_min;
    res.us_max = us[k] > res.us_max ? us[k] : res.us_max;
  }
  free(us);
  res.wrong = all_ranks_max(ctx, result_is_wrong(b, m, count));
  attribute(b, m, count, &res);
  return res;
}
