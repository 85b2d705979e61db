/* One size in one mode: the timed loop, the check of every rank's result,
 * and which engine ran it. */
#include "bench_impl.h"

#include "checks.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "what_ran.h"

size_t part_of(const bench *b, size_t count, size_t k)
{
  return b->opts->cold ? k % (b->max_count / count) : 0;
}

void collective_op(void *arg)
{
  coll_op *op = arg;
  const bench *b = op->b;
  const size_t part = part_of(b, op->count, op->queued++);
  const size_t send_off = part * op->count * sizeof(float);
  const size_t recv_off =
      part * b->coll->result_count(op->count, b->ctx->nranks) * sizeof(float);
  if (op->m->spec->kernel)
    b->ctx->example->kernel->run(b->kernel_state, op->m->spec->kernel - 1,
                                 op->m->send_win, send_off, op->m->recv_win,
                                 recv_off, op->count, b->stream);
  else
    b->coll->run((const char *)op->m->send + send_off,
                 (char *)op->m->recv + recv_off, op->count, op->m->comm,
                 b->stream);
}

/* 1 if any element of this rank's result, in part `part` of the receive
 * buffer, is wrong. */
static int result_is_wrong(bench *b, const mode *m, size_t count, size_t part)
{
  int n = b->ctx->nranks;
  size_t total = b->coll->result_count(count, n);
  CUDACHECK(cudaMemcpy(b->host, (const float *)m->recv + part * total,
                       total * sizeof(float), cudaMemcpyDeviceToHost));
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
 * by CUPTI after every size was timed (run.c), so that tracing does not
 * change the timing. Every rank runs the operations, whether CUPTI works
 * there or not, so that the collectives match; each classifies its own
 * work ("n/a" where nothing was measured: CUPTI failed to start or to
 * collect); rank 0 says "mixed" when the ranks differ, and the counts are
 * -1 unless every rank measured. */
void attribute(bench *b, const mode *m, size_t count, result *res)
{
  const rank_ctx *ctx = b->ctx;
  engine_seen mine = {"n/a", ""};
  engine_work work = {0};
  int started = b->engine_known && engine_probe_start(), measured = 0;
  uint64_t t0 = started ? engine_probe_now() : 0;
  coll_op op = {b, m, count, 0};
  for (int i = 0; i < ATTRIBUTION_OPS; i++)
    collective_op(&op);
  CUDACHECK(cudaStreamSynchronize(b->stream));
  if (started) {
    uint64_t t1 = engine_probe_now();
    /* This rank's own work only: ranks sharing a GPU run on one device. */
    measured = engine_probe_collect(ctx->device, t0, t1, &work);
    engine_probe_stop();
  }
  if (measured)
    engine_word(&work, ctx->nranks, &mine);
  /* Every rank takes part, measured or not, so that the calls match. */
  const int all_measured = !all_ranks_max(ctx, !measured);
  res->kernels = all_ranks_max(ctx, measured ? (int)work.kernels : -1);
  res->copies =
      all_ranks_max(ctx, measured ? (int)(work.copies + work.host_copies) : -1);
  if (!all_measured)
    res->kernels = res->copies = -1;
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

/* A CUDA graph of n operations, captured on the bench's stream (ranks
 * that are threads capture at once: thread-local capture mode). Windows
 * were registered before, outside any capture. */
typedef struct graph {
  int n;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
} graph;

static graph capture(bench *b, const mode *m, size_t count, int n)
{
  graph g = {.n = n};
  coll_op op = {b, m, count, 0};
  CUDACHECK(cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < n; i++)
    collective_op(&op);
  CUDACHECK(cudaStreamEndCapture(b->stream, &g.graph));
  CUDACHECK(cudaGraphInstantiate(&g.exec, g.graph, 0));
  return g;
}

static void release(graph *g)
{
  if (g->n == 0)
    return;
  CUDACHECK(cudaGraphExecDestroy(g->exec));
  CUDACHECK(cudaGraphDestroy(g->graph));
  g->n = 0;
}

/* Collective: sets every element of this rank's result to all ones (NaN),
 * so that a result the collective did not write fails the check; with
 * --cold, the whole receive buffer, every part an operation may write. */
static void poison_result(bench *b, const mode *m, size_t count)
{
  size_t total = b->coll->result_count(b->opts->cold ? b->max_count : count,
                                       b->ctx->nranks);
  CUDACHECK(cudaMemsetAsync(m->recv, 0xff, total * sizeof(float), b->stream));
}

/* Collective: the -i operations as -r loops, each loop's time per
 * operation on the slowest rank, into us[]. Eager: -w warm-up operations
 * before the first loop, then each loop's operations launched one by one
 * between two events. Graph: each loop is one launch of a graph of its
 * operations (at most two graphs: the loops' counts differ by one at most),
 * each graph replayed once untimed first. Either way one untimed operation
 * is queued before each loop's start event. */
static size_t time_loops(bench *b, const mode *m, size_t count, int replay,
                         double *us)
{
  const int nloops = b->opts->repeat, iters = b->opts->iters;
  coll_op op = {b, m, count, 0};
  size_t last = 0; /* the part the checked operation writes */
  graph graphs[2] = {{0}, {0}}; /* iters / nloops + 1, iters / nloops */
  for (int k = 0; k < nloops; k++) {
    int n = iters / nloops + (k < iters % nloops);
    /* Each loop starts behind one untimed operation (after the warm-up,
     * for the first), so that the GPU is busy when the start event is
     * recorded: the host's latency to launch the first timed operation
     * onto an idle GPU is not counted, once per loop. */
    int untimed = k == 0 ? b->opts->warmup + 1 : 1;
    if (!replay) {
      time_ops(b->stream, b->start, b->stop, untimed, n, collective_op, &op);
    } else {
      graph *g = &graphs[n == iters / nloops];
      if (g->n == 0) {
        *g = capture(b, m, count, n);
        CUDACHECK(cudaGraphLaunch(g->exec, b->stream)); /* untimed */
      }
      collective_op(&op); /* untimed, as above */
      /* The result the check reads must be the last replay's own, not the
       * untimed operation's just before it. */
      if (k == nloops - 1)
        poison_result(b, m, count);
      CUDACHECK(cudaEventRecord(b->start, b->stream));
      CUDACHECK(cudaGraphLaunch(g->exec, b->stream));
      CUDACHECK(cudaEventRecord(b->stop, b->stream));
      last = part_of(b, count, (size_t)g->n - 1); /* the graph's own last */
    }
    us[k] = slowest(b->ctx, time_per_op_us(b->start, b->stop, n));
  }
  release(&graphs[0]);
  release(&graphs[1]);
  return replay ? last : part_of(b, count, op.queued - 1);
}

result measure(bench *b, const mode *m, size_t count)
{
  const rank_ctx *ctx = b->ctx;
  const int nloops = b->opts->repeat;
  result res = {0};
  double *us = host_calloc((size_t)nloops, sizeof *us);
  poison_result(b, m, count);
  size_t part = time_loops(b, m, count, 0, us);
  res.eager = loops_of(us, nloops);
  res.wrong = all_ranks_max(ctx, result_is_wrong(b, m, count, part));

  res.graph = LOOPS_NOT_TIMED;
  if (b->opts->graph) {
    part = time_loops(b, m, count, 1, us); /* poisons before its last replay */
    res.graph = loops_of(us, nloops);
    res.wrong_graph = all_ranks_max(ctx, result_is_wrong(b, m, count, part));
    /* No CUPTI attribution of a replay: on one H200 (NCCL 2.30.7, CUDA
     * 13.0, driver 580.159.04) a graph replayed while CUPTI traced
     * activity failed with "unspecified launch failure", where the same
     * replays untraced did not. */
  }
  free(us);
  return res;
}
