#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>
#include <nccl.h>

#if HAVE_CUBLAS
#include <cublas_v2.h>
#endif

#include "checks.h"
#include "engine.h"
#include "output.h"
#include "requirements.h"
#include "verify.h"

#define ATTRIBUTION_OPS 3 /* operations watched by CUPTI, apart from timing */
#define GEMM_N          4096 /* --overlap: SGEMM of GEMM_N^3 */
#define MAX_MODES       3

/* One way of running the collective: a communicator, two buffers from
 * ncclMemAlloc and, unless the mode is "plain", symmetric windows on them. */
typedef struct mode {
  const char *name;
  ncclComm_t comm;
  int windows;
  void *send, *recv;
  ncclWindow_t send_win, recv_win;
  double register_ms; /* both registrations, slowest rank */
  double max_us;      /* time per operation at the largest size */
  double peak_algbw, peak_busbw;
  size_t peak_bytes; /* where busbw peaked (algbw with one rank) */
} mode;

/* What one size and mode measured; on rank 0, the worst over all ranks. */
typedef struct result {
  double us; /* time per operation */
  long kernels, copies;
  int wrong; /* elements that failed verification */
} result;

typedef struct bench {
  const rank_ctx *ctx;
  const example_options *opts;
  enum bench_collective coll;
  cudaStream_t stream;
  cudaEvent_t start, stop;
  mode modes[MAX_MODES];
  int nmodes;
  int engine_known;          /* CUPTI records are available */
  size_t max_count;          /* floats per rank at the largest size */
  float *host;               /* room for one whole result */
  FILE *csv;                 /* rank 0 only */
  int roof_peer;             /* device the roofline copies to (rank 0 only) */
  void *roof_src, *roof_dst; /* its buffers, at the largest size */
} bench;

static double wall_ms(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Collective: the largest value any rank passed, on rank 0. */
static double slowest(const rank_ctx *ctx, double value)
{
  double *values =
      ctx->rank == 0 ? host_calloc((size_t)ctx->nranks, sizeof value) : NULL;
  rank_gather(ctx, &value, sizeof value, values);
  double max = value;
  if (ctx->rank == 0) {
    for (int r = 0; r < ctx->nranks; r++)
      if (values[r] > max)
        max = values[r];
    free(values);
  }
  return max;
}

/* Elements per rank for a message of `bytes`: the AllReduce message is one
 * rank's buffer, the AllGather message the whole gathered result. */
static size_t count_for(const bench *b, size_t bytes)
{
  size_t per_rank = b->coll == BENCH_ALLGATHER ? (size_t)b->ctx->nranks : 1;
  return bytes / sizeof(float) / per_rank;
}

static size_t result_count(const bench *b, size_t count)
{
  return b->coll == BENCH_ALLGATHER ? count * (size_t)b->ctx->nranks : count;
}

static void run_collective(const bench *b, const mode *m, size_t count)
{
  if (b->coll == BENCH_ALLREDUCE)
    NCCLCHECK(ncclAllReduce(m->send, m->recv, count, ncclFloat, ncclSum,
                            m->comm, b->stream));
  else
    NCCLCHECK(
        ncclAllGather(m->send, m->recv, count, ncclFloat, m->comm, b->stream));
}

/* Bus bandwidth as NCCL's perf tests define it: what each rank's links
 * carry, so that it can be compared with the hardware's bandwidth. */
static double bus_factor(const bench *b)
{
  double n = b->ctx->nranks;
  return b->coll == BENCH_ALLREDUCE ? 2 * (n - 1) / n : (n - 1) / n;
}

/* ------------------------------------------------------------ setup */

static ncclComm_t init_comm(const bench *b, int cta_policy, double *ms)
{
  const rank_ctx *ctx = b->ctx;
  ncclUniqueId id;
  if (ctx->rank == 0)
    NCCLCHECK(ncclGetUniqueId(&id));
  util_broadcast(0, ctx, &id);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  if (cta_policy != NCCL_CTA_POLICY_DEFAULT)
    config.CTAPolicy = cta_policy;
  ncclComm_t comm;
  double t0 = wall_ms();
  NCCLCHECK(ncclCommInitRankConfig(&comm, ctx->nranks, id, ctx->rank, &config));
  *ms = slowest(ctx, wall_ms() - t0);
  return comm;
}

/* Allocates a mode's buffers at the largest size and, if it uses windows,
 * registers them: once, since registering per size would exhaust NCCL's
 * symmetric address space. */
static void add_mode(bench *b, const char *name, ncclComm_t comm, int windows)
{
  mode *m = &b->modes[b->nmodes++];
  size_t send_bytes = b->max_count * sizeof(float);
  size_t recv_bytes = result_count(b, b->max_count) * sizeof(float);
  *m = (mode){.name = name, .comm = comm, .windows = windows};
  NCCLCHECK(ncclMemAlloc(&m->send, send_bytes));
  NCCLCHECK(ncclMemAlloc(&m->recv, recv_bytes));
  float *fill = host_calloc(b->max_count, sizeof(float));
  fill_floats(fill, b->max_count, (float)b->ctx->rank);
  CUDACHECK(cudaMemcpy(m->send, fill, send_bytes, cudaMemcpyHostToDevice));
  free(fill);
  if (windows) {
    double t0 = wall_ms();
    NCCLCHECK(ncclCommWindowRegister(comm, m->send, send_bytes, &m->send_win,
                                     NCCL_WIN_COLL_SYMMETRIC));
    NCCLCHECK(ncclCommWindowRegister(comm, m->recv, recv_bytes, &m->recv_win,
                                     NCCL_WIN_COLL_SYMMETRIC));
    m->register_ms = slowest(b->ctx, wall_ms() - t0);
    report_symmetric_windows(b->ctx, m->send_win, m->recv_win);
  }
}

static void free_mode(mode *m)
{
  NCCLCHECK(ncclCommWindowDeregister(m->comm, m->send_win));
  NCCLCHECK(ncclCommWindowDeregister(m->comm, m->recv_win));
  NCCLCHECK(ncclMemFree(m->send));
  NCCLCHECK(ncclMemFree(m->recv));
}

/* ------------------------------------------------------- measuring */

/* The roofline: a copy of the largest message, device to device with one
 * rank or when the ranks share one GPU, else to the next GPU (the link a
 * collective between GPUs uses). Rank 0 allocates its buffers once, before
 * any communicator exists: with ranks sharing a GPU, cudaMalloc and cudaFree
 * may wait for the whole device, and so for other ranks' collectives. */
static void roofline_alloc(bench *b, size_t max_bytes)
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

/* Frees them, once every rank's communicators are gone. */
static void roofline_free(bench *b)
{
  if (b->ctx->rank != 0)
    return;
  CUDACHECK(cudaFree(b->roof_src));
  CUDACHECK(cudaFree(b->roof_dst));
}

/* Time of one roofline copy of `bytes`, in us, on rank 0 (0 elsewhere). */
static double roofline_us(const bench *b, size_t bytes)
{
  const rank_ctx *ctx = b->ctx;
  if (ctx->rank != 0)
    return 0;
  /* As many copies as collectives are timed, after as many warm-ups. */
  const int warmup = b->opts->warmup, iters = b->opts->iters;
  for (int i = 0; i < warmup + iters; i++) {
    if (i == warmup)
      CUDACHECK(cudaEventRecord(b->start, b->stream));
    CUDACHECK(cudaMemcpyPeerAsync(b->roof_dst, b->roof_peer, b->roof_src,
                                  ctx->device, bytes, b->stream));
  }
  CUDACHECK(cudaEventRecord(b->stop, b->stream));
  CUDACHECK(cudaEventSynchronize(b->stop));
  float ms = 0;
  CUDACHECK(cudaEventElapsedTime(&ms, b->start, b->stop));
  return ms * 1e3 / iters;
}

/* 1 if any element of this rank's result is wrong. */
static int result_is_wrong(bench *b, const mode *m, size_t count)
{
  size_t total = result_count(b, count), first = 0, wrong = 0;
  CUDACHECK(cudaMemcpy(b->host, m->recv, total * sizeof(float),
                       cudaMemcpyDeviceToHost));
  int n = b->ctx->nranks;
  if (b->coll == BENCH_ALLREDUCE)
    wrong =
        count_mismatches(b->host, count, (float)n * (float)(n - 1) / 2, &first);
  else
    for (int r = 0; r < n; r++)
      wrong += count_mismatches(b->host + (size_t)r * count, count, (float)r,
                                &first);
  return wrong > 0;
}

static result measure(bench *b, const mode *m, size_t count)
{
  const rank_ctx *ctx = b->ctx;
  result res = {0};
  /* All ones: NaN, so a result the collective did not write fails. */
  CUDACHECK(cudaMemsetAsync(m->recv, 0xff,
                            result_count(b, count) * sizeof(float), b->stream));
  for (int i = 0; i < b->opts->warmup; i++)
    run_collective(b, m, count);
  /* Timed: only collectives between the two events, no host sync inside. */
  CUDACHECK(cudaEventRecord(b->start, b->stream));
  for (int i = 0; i < b->opts->iters; i++)
    run_collective(b, m, count);
  CUDACHECK(cudaEventRecord(b->stop, b->stream));
  CUDACHECK(cudaEventSynchronize(b->stop));
  float ms = 0;
  CUDACHECK(cudaEventElapsedTime(&ms, b->start, b->stop));
  res.us = slowest(ctx, ms * 1e3 / b->opts->iters);
  res.wrong = rank_max(ctx, result_is_wrong(b, m, count));

  /* Which engine ran it: a few more operations watched by CUPTI, apart
   * from the timed loop so that tracing does not change the timing. */
  res.kernels = res.copies = -1;
  if (b->engine_known && engine_probe_start()) {
    uint64_t t0 = engine_probe_now();
    for (int i = 0; i < ATTRIBUTION_OPS; i++)
      run_collective(b, m, count);
    CUDACHECK(cudaStreamSynchronize(b->stream));
    uint64_t t1 = engine_probe_now();
    long kernels, copies;
    /* This rank's own work only: ranks sharing a GPU run on one device. */
    engine_probe_count(ctx->device, t0, t1, &kernels, &copies);
    engine_probe_stop();
    res.kernels = rank_max(ctx, (int)kernels);
    res.copies = rank_max(ctx, (int)copies);
  }
  rank_max(ctx, 0); /* nobody times the next mode while others still trace */
  return res;
}

/* ---------------------------------------------------------- output */

static void engine_text(const result *r, char *buf, size_t size)
{
  if (r->kernels < 0)
    snprintf(buf, size, "n/a");
  else if (r->kernels == 0 && r->copies == 0)
    snprintf(buf, size, "none"); /* nothing recorded: say so, claim nothing */
  else if (r->kernels == 0)
    snprintf(buf, size, "CE");
  else
    snprintf(buf, size, "SM(%g)", (double)r->kernels / ATTRIBUTION_OPS);
}

static void print_header(const bench *b)
{
  const rank_ctx *ctx = b->ctx;
  const example_options *o = b->opts;
  print_root(ctx,
             "# %s --bench: %d rank(s), float %s, out of place; %d timed"
             " + %d warm-up operations per size and mode\n",
             o->prog, ctx->nranks,
             b->coll == BENCH_ALLREDUCE ? "sum AllReduce" : "AllGather",
             o->iters, o->warmup);
  print_root(ctx, "# modes: %s\n",
             b->coll == BENCH_ALLREDUCE
                 ? "sym = symmetric windows; plain = ncclMemAlloc buffers, no"
                   " windows"
                 : "ce = CTAPolicy ZERO + symmetric windows; sym = default"
                   " policy + windows; plain = default policy, no windows");
  const char *roof =
      ctx->nranks == 1 ? "device-to-device copy of that size"
      : b->roof_peer == ctx->device
          ? "copy of that size within GPU 0, which the ranks share"
          : "peer copy of that size from GPU 0 to GPU 1";
  print_root(ctx, "# size: %s; roof: %s, measured in this run\n",
             b->coll == BENCH_ALLREDUCE ? "bytes per rank"
                                        : "bytes gathered per rank",
             roof);
  if (ctx->gpu_shared)
    print_root(ctx,
               ctx->ranks_are_threads
                   ? "# %d ranks share %d GPU(s): times are one GPU doing every"
                     " rank's part, not a link's\n"
                   : "# WARNING: %d processes share %d GPU(s): without MPS the"
                     " GPU time-slices between processes, so these times"
                     " measure that, not NCCL (the pthread build measures)\n",
               ctx->nranks, ctx->ngpus);
  print_root(ctx,
             "# %%roof: %s / roof; engine (CUPTI): CE = copies only,"
             " SM(k) = k kernels per operation\n",
             ctx->nranks == 1 ? "algbw" : "busbw");
  char line[1024];
  int n =
      snprintf(line, sizeof line, "%12s %11s %8s", "size(B)", "count", "roof");
  for (int i = 0; i < b->nmodes; i++)
    n += snprintf(line + n, sizeof line - (size_t)n,
                  " | %5s %9s %7s %7s %5s %-6s", b->modes[i].name, "time(us)",
                  "algbw", "busbw", "%roof", "engine");
  for (int i = 0; i < b->nmodes - 1; i++)
    n += snprintf(line + n, sizeof line - (size_t)n, " | %s/plain",
                  b->modes[i].name);
  print_root(ctx, "%s\n", line);
}

static void print_row(bench *b, size_t bytes, size_t count, double roof_us,
                      const result *res)
{
  const rank_ctx *ctx = b->ctx;
  if (ctx->rank != 0)
    return;
  double roof = roof_us > 0 ? bytes / roof_us / 1e3 : 0;
  char line[1024];
  int n = snprintf(line, sizeof line, "%12zu %11zu %8.1f", bytes, count, roof);
  const result *plain = &res[b->nmodes - 1];
  for (int i = 0; i < b->nmodes; i++) {
    double algbw = bytes / res[i].us / 1e3;
    double busbw = algbw * bus_factor(b);
    double pct = roof > 0 ? 100 * (ctx->nranks == 1 ? algbw : busbw) / roof : 0;
    mode *m = &b->modes[i];
    if ((ctx->nranks == 1 ? algbw : busbw) >
        (ctx->nranks == 1 ? m->peak_algbw : m->peak_busbw)) {
      m->peak_algbw = algbw;
      m->peak_busbw = busbw;
      m->peak_bytes = bytes;
    }
    char engine[32];
    engine_text(&res[i], engine, sizeof engine);
    n += snprintf(line + n, sizeof line - (size_t)n,
                  " | %5s %9.2f %7.1f %7.1f %5.1f %-6s", "", res[i].us, algbw,
                  busbw, pct, engine);
    if (b->csv)
      fprintf(b->csv,
              "%s,%d,%s,%zu,%zu,%.3f,%.3f,%.3f,%.3f,%.2f,%s,%ld,%ld,%.4f,,\n",
              ctx->opts->prog, ctx->nranks, b->modes[i].name, bytes, count,
              res[i].us, algbw, busbw, roof, pct, engine, res[i].kernels,
              res[i].copies, plain->us / res[i].us);
  }
  for (int i = 0; i < b->nmodes - 1; i++)
    n += snprintf(line + n, sizeof line - (size_t)n, " | %8.2fx",
                  plain->us / res[i].us);
  print_root(ctx, "%s\n", line);
}

/* ---------------------------------------------------------- overlap */

#if HAVE_CUBLAS
/* Queues `times` SGEMMs C = A * B of GEMM_N^3 on the handle's stream. */
static void run_gemms(cublasHandle_t handle, const float *a, const float *b,
                      float *c, int times)
{
  const int n = GEMM_N;
  const float one = 1, zero = 0;
  for (int i = 0; i < times; i++)
    if (cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n,
                    &zero, c, n) != CUBLAS_STATUS_SUCCESS) {
      print_error("cublasSgemm failed\n");
      job_abort(1);
    }
}

/* --overlap: how much a compute kernel (SGEMM on a second stream) and the
 * collective slow each other down when they run at the same time. The
 * GEMM loop is sized to last about as long as the plain collective loop. */
static void measure_overlap(bench *b, size_t bytes, size_t count)
{
  const rank_ctx *ctx = b->ctx;
  const size_t n = GEMM_N;
  cudaStream_t gemm_stream;
  cudaEvent_t g0, g1;
  CUDACHECK(cudaStreamCreateWithFlags(&gemm_stream, cudaStreamNonBlocking));
  CUDACHECK(cudaEventCreate(&g0));
  CUDACHECK(cudaEventCreate(&g1));
  float *a, *bm, *c;
  CUDACHECK(cudaMalloc((void **)&a, n * n * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&bm, n * n * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&c, n * n * sizeof(float)));
  CUDACHECK(cudaMemsetAsync(a, 0, n * n * sizeof(float), gemm_stream));
  CUDACHECK(cudaMemsetAsync(bm, 0, n * n * sizeof(float), gemm_stream));
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS ||
      cublasSetStream(handle, gemm_stream) != CUBLAS_STATUS_SUCCESS) {
    print_error("cublasCreate/cublasSetStream failed\n");
    job_abort(1);
  }
  /* One GEMM's time, after a warm-up one. */
  run_gemms(handle, a, bm, c, 1);
  CUDACHECK(cudaEventRecord(g0, gemm_stream));
  run_gemms(handle, a, bm, c, 3);
  CUDACHECK(cudaEventRecord(g1, gemm_stream));
  CUDACHECK(cudaEventSynchronize(g1));
  float ms = 0;
  CUDACHECK(cudaEventElapsedTime(&ms, g0, g1));
  double coll_loop_ms = b->modes[b->nmodes - 1].max_us * b->opts->iters / 1e3;
  int gemms = (int)(coll_loop_ms / (ms / 3) + 0.5);
  gemms = gemms < 1 ? 1 : gemms > 1000 ? 1000 : gemms;
  gemms = rank_max(ctx, gemms); /* the same work on every rank */

  print_root(ctx,
             "# overlap at %zu B: %d operations beside %d x SGEMM %zux%zux%zu"
             " on a second stream (slowest rank)\n",
             bytes, b->opts->iters, gemms, n, n, n);
  print_root(ctx, "# %5s %14s %16s %10s %13s %16s %10s\n", "mode",
             "coll alone(us)", "coll w/ GEMM(us)", "coll +%", "GEMM alone(ms)",
             "GEMM w/ coll(ms)", "GEMM +%");
  for (int i = 0; i < b->nmodes; i++) {
    const mode *m = &b->modes[i];
    CUDACHECK(cudaEventRecord(g0, gemm_stream));
    run_gemms(handle, a, bm, c, gemms);
    CUDACHECK(cudaEventRecord(g1, gemm_stream));
    CUDACHECK(cudaEventSynchronize(g1));
    float gemm_alone = 0, gemm_with = 0, coll_with = 0;
    CUDACHECK(cudaEventElapsedTime(&gemm_alone, g0, g1));

    rank_max(ctx, 0); /* start together */
    CUDACHECK(cudaEventRecord(g0, gemm_stream));
    run_gemms(handle, a, bm, c, gemms);
    CUDACHECK(cudaEventRecord(g1, gemm_stream));
    CUDACHECK(cudaEventRecord(b->start, b->stream));
    for (int it = 0; it < b->opts->iters; it++)
      run_collective(b, m, count);
    CUDACHECK(cudaEventRecord(b->stop, b->stream));
    CUDACHECK(cudaEventSynchronize(b->stop));
    CUDACHECK(cudaEventSynchronize(g1));
    CUDACHECK(cudaEventElapsedTime(&gemm_with, g0, g1));
    CUDACHECK(cudaEventElapsedTime(&coll_with, b->start, b->stop));

    double coll_alone_us = m->max_us;
    double coll_with_us = slowest(ctx, coll_with * 1e3 / b->opts->iters);
    double g_alone = slowest(ctx, gemm_alone), g_with = slowest(ctx, gemm_with);
    double coll_slow = 100 * (coll_with_us / coll_alone_us - 1);
    double gemm_slow = 100 * (g_with / g_alone - 1);
    print_root(ctx, "# %5s %14.2f %16.2f %10.1f %13.3f %16.3f %10.1f\n",
               m->name, coll_alone_us, coll_with_us, coll_slow, g_alone, g_with,
               gemm_slow);
    if (b->csv)
      fprintf(b->csv, "%s,%d,%s+gemm,%zu,%zu,%.3f,,,,,,,,,%.2f,%.2f\n",
              ctx->opts->prog, ctx->nranks, m->name, bytes, count, coll_with_us,
              coll_slow, gemm_slow);
  }
  rank_max(ctx, 0); /* cudaFree may wait for the whole (shared) GPU */
  cublasDestroy(handle);
  CUDACHECK(cudaFree(a));
  CUDACHECK(cudaFree(bm));
  CUDACHECK(cudaFree(c));
  CUDACHECK(cudaEventDestroy(g0));
  CUDACHECK(cudaEventDestroy(g1));
  CUDACHECK(cudaStreamDestroy(gemm_stream));
}
#else
static void measure_overlap(bench *b, size_t bytes, size_t count)
{
  (void)bytes;
  (void)count;
  print_root(b->ctx, "# --overlap: this build has no cuBLAS (HAVE_CUBLAS=0)\n");
}
#endif

/* ------------------------------------------------------------- main */

int run_bench(const rank_ctx *ctx, enum bench_collective coll)
{
  bench b = {.ctx = ctx, .opts = ctx->opts, .coll = coll};
  const example_options *o = ctx->opts;
  b.max_count = count_for(&b, o->max_bytes);
  if (b.max_count == 0) {
    if (ctx->rank == 0)
      print_error("-e %zu is smaller than one float per rank\n", o->max_bytes);
    return EXIT_USAGE;
  }
  int csv_ok = 1;
  if (ctx->rank == 0 && o->csv != NULL) {
    b.csv = fopen(o->csv, "w");
    csv_ok = b.csv != NULL;
    if (!csv_ok)
      print_error("cannot write --csv %s: %s\n", o->csv, strerror(errno));
  }
  if (!all_ranks_ok(ctx, csv_ok)) {
    if (b.csv)
      fclose(b.csv);
    return EXIT_FAILURE;
  }
  if (b.csv)
    fprintf(b.csv, "program,ranks,mode,size_bytes,count,time_us,algbw_GBps,"
                   "busbw_GBps,roof_GBps,pct_roof,engine,kernels,copies,"
                   "speedup_vs_plain,coll_slowdown_pct,gemm_slowdown_pct\n");

  CUDACHECK(cudaSetDevice(ctx->device));
  /* Non-blocking streams: work on them never waits for the legacy default
   * stream, which another rank sharing this GPU might be using. */
  CUDACHECK(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
  CUDACHECK(cudaEventCreate(&b.start));
  CUDACHECK(cudaEventCreate(&b.stop));
  b.host = host_calloc(result_count(&b, b.max_count), sizeof(float));
  roofline_alloc(&b, result_count(&b, b.max_count) * sizeof(float));

  double init_ms, ce_init_ms = 0;
  ncclComm_t comm = init_comm(&b, NCCL_CTA_POLICY_DEFAULT, &init_ms);
  ncclComm_t ce_comm = NULL;
  if (coll == BENCH_ALLGATHER) {
    ce_comm = init_comm(&b, NCCL_CTA_POLICY_ZERO, &ce_init_ms);
    add_mode(&b, "ce", ce_comm, 1);
  }
  add_mode(&b, "sym", comm, 1);
  add_mode(&b, "plain", comm, 0); /* last: the baseline */
  b.engine_known = engine_probe_start();
  if (b.engine_known)
    engine_probe_stop();

  print_header(&b);
  int wrong = 0;
  size_t last_bytes = 0, last_count = 0;
  for (size_t size = o->min_bytes; size <= o->max_bytes;) {
    size_t count = count_for(&b, size);
    if (count > 0) {
      size_t bytes = result_count(&b, count) * sizeof(float);
      double roof_us = roofline_us(&b, bytes);
      rank_max(ctx, 0); /* the others wait here, not on the GPU */
      result res[MAX_MODES];
      for (int i = 0; i < b.nmodes; i++) {
        res[i] = measure(&b, &b.modes[i], count);
        b.modes[i].max_us = res[i].us;
        if (res[i].wrong && ctx->rank == 0)
          print_error("%s at %zu bytes: wrong result on at least one rank\n",
                      b.modes[i].name, bytes);
        wrong |= res[i].wrong;
      }
      print_row(&b, bytes, count, roof_us, res);
      last_bytes = bytes;
      last_count = count;
    }
    if (size > o->max_bytes / o->factor)
      break;
    size *= o->factor;
  }
  if (last_count == 0)
    print_root(ctx, "# no size from -b to -e holds one float per rank\n");

  print_root(ctx, "# peak algbw / busbw (GB/s):");
  for (int i = 0; i < b.nmodes; i++)
    print_root(ctx, "%s %s %.1f / %.1f at %zu B", i ? "," : "", b.modes[i].name,
               b.modes[i].peak_algbw, b.modes[i].peak_busbw,
               b.modes[i].peak_bytes);
  print_root(ctx, "\n");
  print_root(ctx, "# setup (slowest rank): communicator init %.1f ms", init_ms);
  if (ce_comm)
    print_root(ctx, ", with CTAPolicy ZERO %.1f ms", ce_init_ms);
  for (int i = 0; i < b.nmodes; i++)
    if (b.modes[i].windows)
      print_root(ctx, "; %s window registration (send + recv) %.1f ms",
                 b.modes[i].name, b.modes[i].register_ms);
  print_root(ctx, "\n");
  if (o->overlap && last_count > 0)
    measure_overlap(&b, last_bytes, last_count);

  for (int i = 0; i < b.nmodes; i++)
    free_mode(&b.modes[i]);
  NCCLCHECK(ncclCommFinalize(comm));
  NCCLCHECK(ncclCommDestroy(comm));
  if (ce_comm) {
    NCCLCHECK(ncclCommFinalize(ce_comm));
    NCCLCHECK(ncclCommDestroy(ce_comm));
  }
  rank_max(ctx, 0); /* every rank's collectives are done: free safely */
  roofline_free(&b);
  CUDACHECK(cudaEventDestroy(b.start));
  CUDACHECK(cudaEventDestroy(b.stop));
  CUDACHECK(cudaStreamDestroy(b.stream));
  free(b.host);
  if (b.csv && fclose(b.csv) != 0) {
    print_error("writing --csv %s failed\n", o->csv);
    wrong = 1;
  }
  print_root(ctx, wrong ? "Benchmark results verification failed\n"
                        : "Benchmark results verified correctly\n");
  return rank_max(ctx, wrong) ? EXIT_FAILURE : EXIT_SUCCESS;
}
