/* --overlap: how much a compute kernel (SGEMM on a second stream) and the
 * collective slow each other down when they run at the same time. The
 * GEMM loop is sized to last about as long as the baseline's collective
 * loop at the largest size. */
#include "bench_impl.h"

#include <math.h>
#include <stdio.h>

#include "output.h"

#if HAVE_CUBLAS
#include <cublas_v2.h>

#include "checks.h"

#define GEMM_N 4096 /* SGEMM of GEMM_N^3 */

/* Like CUDACHECK, for cuBLAS calls (watched the same way). */
#define CUBLASCHECK(call)                                                      \
  do {                                                                         \
    watch_begin(#call, __FILE__, __LINE__);                                     \
    cublasStatus_t st_ = (call);                                               \
    watch_end();                                                                \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                        \
      char text_[32];                                                          \
      snprintf(text_, sizeof text_, "cuBLAS status %d", (int)st_);             \
      fail_call(__FILE__, __LINE__, #call, text_);                             \
    }                                                                          \
  } while (0)

typedef struct gemm {
  cublasHandle_t handle;
  cudaStream_t stream;
  cudaEvent_t start, stop;
  float *a, *b, *c;
} gemm;

/* One SGEMM C = A * B on the gemm's stream, as a bench_op. */
static void gemm_op(void *arg)
{
  gemm *g = arg;
  const int n = GEMM_N;
  const float one = 1, zero = 0;
  CUBLASCHECK(cublasSgemm(g->handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one,
                          g->a, n, g->b, n, &zero, g->c, n));
}

static void gemm_setup(gemm *g)
{
  const size_t bytes = (size_t)GEMM_N * GEMM_N * sizeof(float);
  CUDACHECK(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
  CUDACHECK(cudaEventCreate(&g->start));
  CUDACHECK(cudaEventCreate(&g->stop));
  CUDACHECK(cudaMalloc((void **)&g->a, bytes));
  CUDACHECK(cudaMalloc((void **)&g->b, bytes));
  CUDACHECK(cudaMalloc((void **)&g->c, bytes));
  CUDACHECK(cudaMemsetAsync(g->a, 0, bytes, g->stream));
  CUDACHECK(cudaMemsetAsync(g->b, 0, bytes, g->stream));
  CUBLASCHECK(cublasCreate(&g->handle));
  CUBLASCHECK(cublasSetStream(g->handle, g->stream));
}

static void gemm_teardown(gemm *g)
{
  CUBLASCHECK(cublasDestroy(g->handle));
  CUDACHECK(cudaFree(g->a));
  CUDACHECK(cudaFree(g->b));
  CUDACHECK(cudaFree(g->c));
  CUDACHECK(cudaEventDestroy(g->start));
  CUDACHECK(cudaEventDestroy(g->stop));
  CUDACHECK(cudaStreamDestroy(g->stream));
}

void measure_overlap(bench *b, size_t bytes, size_t count)
{
  const rank_ctx *ctx = b->ctx;
  const int iters = b->opts->iters;
  gemm g;
  gemm_setup(&g);
  /* One GEMM's time (after a warm-up one) sizes the GEMM loop: the same
   * number of GEMMs on every rank. */
  time_ops(g.stream, g.start, g.stop, 1, 3, gemm_op, &g);
  double gemm_us = time_per_op_us(g.start, g.stop, 3);
  double coll_loop_us = b->modes[b->nmodes - 1].max_us * iters;
  /* Clamped before the conversion: a zero, NaN or huge ratio must not
   * reach (int), whose result would be undefined. */
  double ratio = gemm_us > 0 ? coll_loop_us / gemm_us : 1;
  int gemms = !(ratio >= 1) ? 1 : ratio > 1000 ? 1000 : (int)(ratio + 0.5);
  gemms = all_ranks_max(ctx, gemms);
  b->overlap_gemms = gemms;
  b->overlap_bytes = bytes;
  b->overlap_count = count;
  for (int i = 0; i < b->nmodes; i++) {
    const mode *m = &b->modes[i];
    time_ops(g.stream, g.start, g.stop, 0, gemms, gemm_op, &g);
    double gemm_alone = time_per_op_us(g.start, g.stop, gemms) * gemms / 1e3;

    all_ranks_max(ctx, 0); /* start together */
    coll_op op = {b, m, count, 0};
    time_ops(g.stream, g.start, g.stop, 0, gemms, gemm_op, &g);
    time_ops(b->stream, b->start, b->stop, 0, iters, collective_op, &op);
    double coll_with = time_per_op_us(b->start, b->stop, iters);
    double gemm_with = time_per_op_us(g.start, g.stop, gemms) * gemms / 1e3;

    b->overlap[i][0] = slowest(ctx, coll_with);
    b->overlap[i][1] = slowest(ctx, gemm_alone);
    b->overlap[i][2] = slowest(ctx, gemm_with);
  }
  all_ranks_max(ctx, 0); /* cudaFree may wait for the whole (shared) GPU */
  gemm_teardown(&g);
}

void report_overlap(bench *b)
{
  const rank_ctx *ctx = b->ctx;
  if (b->overlap_gemms == 0)
    return;
  print_root(ctx,
             "# overlap at %zu B: %d operations beside %d x SGEMM %dx%dx%d"
             " on a second stream (slowest rank)\n",
             b->overlap_bytes, b->opts->iters, b->overlap_gemms, GEMM_N,
             GEMM_N, GEMM_N);
  print_root(ctx, "# %5s %14s %16s %10s %13s %16s %10s\n", "mode",
             "coll alone(us)", "coll w/ GEMM(us)", "coll +%", "GEMM alone(ms)",
             "GEMM w/ coll(ms)", "GEMM +%");
  for (int i = 0; i < b->nmodes; i++) {
    const mode *m = &b->modes[i];
    double coll_alone_us = m->max_us, coll_with_us = b->overlap[i][0];
    double g_alone = b->overlap[i][1], g_with = b->overlap[i][2];
    double coll_slow = 100 * (coll_with_us / coll_alone_us - 1);
    double gemm_slow = 100 * (g_with / g_alone - 1);
    print_root(ctx, "# %5s %14.2f %16.2f %10.1f %13.3f %16.3f %10.1f\n",
               m->spec->name, coll_alone_us, coll_with_us, coll_slow, g_alone,
               g_with, gemm_slow);
    char name[32];
    snprintf(name, sizeof name, "%s+gemm", m->spec->name);
    row r = {.mode = name,
             .bytes = b->overlap_bytes,
             .count = b->overlap_count,
             .eager = LOOPS_NOT_TIMED,
             .graph = LOOPS_NOT_TIMED,
             .algbw = NAN,
             .busbw = NAN,
             .roof = NAN,
             .pct = NAN,
             .kernels = NAN,
             .copies = NAN,
             .speedup = NAN,
             .in_noise = NAN,
             .coll_slowdown = coll_slow,
             .gemm_slowdown = gemm_slow};
    r.eager.us = coll_with_us; /* the one number timed here */
    if (ctx->rank == 0 && b->csv)
      report_csv_line(b, &r);
  }
}
#else
void measure_overlap(bench *b, size_t bytes, size_t count)
{
  (void)b;
  (void)bytes;
  (void)count;
}

void report_overlap(bench *b)
{
  print_root(b->ctx, "# --overlap: this build has no cuBLAS (HAVE_CUBLAS=0)\n");
}
#endif
