/* The roofline: a copy of the largest message, device to device with one
 * rank or when the ranks share one GPU, else to the next GPU (the link a
 * collective between GPUs uses), timed like the collective. */
#include "bench_impl.h"

#include "checks.h"

/* Rank 0 allocates its buffers once, before any communicator exists: with
 * ranks sharing a GPU, cudaMalloc and cudaFree may wait for the whole
 * device, and so for other ranks' collectives. */
void roofline_alloc(bench *b, size_t max_bytes)
{
  const rank_ctx *ctx = b->ctx;
  if (ctx->rank != 0)
    return;
  b->roof_peer = ctx->device;
  if (ctx->nranks > 1 && ctx->ngpus > 1)
    b->roof_peer = (ctx->device + 1) % ctx->ngpus;
  CUDACHECK(cudaMalloc(&b->roof_src, max_bytes));
  CUDACHECK(cudaSetDevice(b->roof_peer));
  CUDACHECK(cudaMalloc(&b->roof_dst, max_bytes));
  CUDACHECK(cudaSetDevice(ctx->device));
}

void roofline_free(bench *b)
{
  if (b->ctx->rank != 0)
    return;
  CUDACHECK(cudaFree(b->roof_src));
  CUDACHECK(cudaFree(b->roof_dst));
}

const char *roofline_text(const bench *b)
{
  if (b->ctx->nranks == 1)
    return "device-to-device copy of that size";
  if (b->roof_peer == b->ctx->device)
    return "copy of that size within GPU 0, which the ranks share";
  return "peer copy of that size from GPU 0 to GPU 1";
}

typedef struct roof_copy {
  const bench *b;
  size_t bytes;
} roof_copy;

static void copy_once(void *arg)
{
  const roof_copy *c = arg;
  const bench *b = c->b;
  CUDACHECK(cudaMemcpyPeerAsync(b->roof_dst, b->roof_peer, b->roof_src,
                                b->ctx->device, c->bytes, b->stream));
}

double roofline_us(const bench *b, size_t bytes)
{
  if (b->ctx->rank != 0)
    return 0;
  /* As many copies as collectives are timed, after as many warm-ups. */
  roof_copy c = {b, bytes};
  time_ops(b->stream, b->start, b->stop, b->opts->warmup, b->opts->iters,
           copy_once, &c);
  return time_per_op_us(b->start, b->stop, b->opts->iters);
}
