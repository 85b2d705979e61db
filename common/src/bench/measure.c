/* One size in one mode: the timed loop, the check of every rank's result,
 * and which engine ran it. */
#include "bench_impl.h"

#include "checks.h"
#include "engine.h"

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

/* Collective: kernels and copies this rank's work ran in a few more
 * operations, watched by CUPTI apart from the timed loop so that tracing
 * does not change the timing. */
static void attribute(bench *b, const mode *m, size_t count, result *res)
{
  const rank_ctx *ctx = b->ctx;
  res->kernels = res->copies = -1;
  if (b->engine_known && engine_probe_start()) {
    uint64_t t0 = engine_probe_now();
    coll_op op = {b, m, count};
    for (int i = 0; i < ATTRIBUTION_OPS; i++)
      collective_op(&op);
    CUDACHECK(cudaStreamSynchronize(b->stream));
    uint64_t t1 = engine_probe_now();
    engine_work work;
    /* This rank's own work only: ranks sharing a GPU run on one device. */
    engine_probe_collect(ctx->device, t0, t1, &work);
    engine_probe_stop();
    res->kernels = all_ranks_max(ctx, (int)work.kernels);
    res->copies = all_ranks_max(ctx, (int)(work.copies + work.host_copies));
  }
  all_ranks_max(ctx,
                0); /* nobody times the next mode while others still trace */
}

result measure(bench *b, const mode *m, size_t count)
{
  const rank_ctx *ctx = b->ctx;
  result res = {0};
  /* All ones: NaN, so a result the collective did not write fails. */
  size_t total = b->coll->result_count(count, ctx->nranks);
  CUDACHECK(cudaMemsetAsync(m->recv, 0xff, total * sizeof(float), b->stream));
  coll_op op = {b, m, count};
  time_ops(b->stream, b->start, b->stop, b->opts->warmup, b->opts->iters,
           collective_op, &op);
  res.us = slowest(ctx, time_per_op_us(b->start, b->stop, b->opts->iters));
  res.wrong = all_ranks_max(ctx, result_is_wrong(b, m, count));
  attribute(b, m, count, &res);
  return res;
}
