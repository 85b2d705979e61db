/* run_bench: set up every mode once, sweep the sizes, print the summary,
 * tear down in the lesson's order. */
#include "bench_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "engine.h"
#include "output.h"

/* Collective: rank 0 opens --csv; every rank learns whether it could. */
static int open_csv(bench *b)
{
  const rank_ctx *ctx = b->ctx;
  int ok = 1;
  if (ctx->rank == 0 && b->opts->csv != NULL)
    ok = report_csv_open(b);
  return all_ranks_ok(ctx, ok);
}

/* The best bandwidth a mode reached, to sum up the sweep. With one rank
 * the algorithm bandwidth is the one that compares with the roofline. */
static void track_peak(mode *m, const row *r, int nranks)
{
  if (r->cache[0] != '\0')
    return; /* the L2 cache's speed, not memory's */
  double bw = nranks == 1 ? r->algbw : r->busbw;
  double peak = nranks == 1 ? m->peak_algbw : m->peak_busbw;
  if (bw > peak) {
    m->peak_algbw = r->algbw;
    m->peak_busbw = r->busbw;
    m->peak_bytes = r->bytes;
  }
}

/* One size of the sweep: what every mode measured. */
typedef struct size_run {
  size_t bytes, count;
  double roof_us;
  result res[MAX_MODES];
} size_run;

/* Collective: times one size in every mode. Returns 1 if a result was
 * wrong. */
static int time_size(bench *b, size_run *s)
{
  const rank_ctx *ctx = b->ctx;
  s->roof_us = roofline_us(b, s->bytes);
  all_ranks_max(ctx, 0); /* the others wait here, not on the GPU */
  int wrong = 0;
  for (int i = 0; i < b->nmodes; i++) {
    result *res = &s->res[i];
    *res = measure(b, &b->modes[i], s->count);
    b->modes[i].max_us = res->eager.us;
    if (res->wrong && ctx->rank == 0)
      print_error("%s at %zu bytes: wrong result on at least one rank\n",
                  b->modes[i].spec->name, s->bytes);
    if (res->wrong_graph && ctx->rank == 0)
      print_error("%s at %zu bytes, replayed from a CUDA graph: wrong result"
                  " on at least one rank\n",
                  b->modes[i].spec->name, s->bytes);
    wrong |= res->wrong || res->wrong_graph;
  }
  return wrong;
}

/* Collective: which engine ran each size and mode, then the table lines. */
static void report_sizes(bench *b, size_run *runs, int nruns)
{
  for (int k = 0; k < nruns; k++)
    for (int i = 0; i < b->nmodes; i++)
      attribute(b, &b->modes[i], runs[k].count, &runs[k].res[i]);
  for (int k = 0; k < nruns; k++) {
    row rows[MAX_MODES];
    report_size(b, runs[k].bytes, runs[k].count, runs[k].roof_us, runs[k].res,
                rows);
    for (int i = 0; i < b->nmodes; i++)
      track_peak(&b->modes[i], &rows[i], b->ctx->nranks);
  }
}

static void print_summary(const bench *b)
{
  const rank_ctx *ctx = b->ctx;
  if (b->modes[0].peak_bytes == 0) {
    print_root(ctx, "# peak algbw / busbw: none, every size fits in the L2"
                    " cache\n");
  } else {
    print_root(ctx, "# peak algbw / busbw (GB/s), among the sizes that do not"
                    " fit in the L2 cache:");
    for (int i = 0; i < b->nmodes; i++)
      print_root(ctx, "%s %s %.1f / %.1f at %zu B", i ? "," : "",
                 b->modes[i].spec->name, b->modes[i].peak_algbw,
                 b->modes[i].peak_busbw, b->modes[i].peak_bytes);
    print_root(ctx, "\n");
  }
  print_root(ctx, "# setup (slowest rank):");
  for (int i = 0; i < b->coll->ncomms; i++)
    print_root(ctx, "%s %s %.1f ms", i ? "," : "", b->coll->comms[i].label,
               b->init_ms[i]);
  for (int i = 0; i < b->nmodes; i++)
    if (b->modes[i].spec->windows && !b->modes[i].borrowed)
      print_root(ctx, "; %s window registration (send + recv) %.1f ms",
                 b->modes[i].spec->name, b->modes[i].register_ms);
  print_root(ctx, "\n");
}

int run_bench(const rank_ctx *ctx, const example_desc *example)
{
  const instrument_options *o = instrument_opts();
  bench b = {.ctx = ctx, .opts = o, .coll = bench_coll_of(example)};
  b.max_count = b.coll->count_for(o->max_bytes, ctx->nranks);
  if (b.max_count == 0) {
    if (ctx->rank == 0)
      print_error("-e %zu is smaller than one float per rank\n", o->max_bytes);
    return EXIT_USAGE;
  }
  if (!open_csv(&b)) {
    report_csv_close(&b);
    return EXIT_FAILURE;
  }
  size_t max_result = b.coll->result_count(b.max_count, ctx->nranks);

  CUDACHECK(cudaSetDevice(ctx->device));
  /* Sizes whose buffers fit in the L2 cache are timed against the cache:
   * the table marks them. Ranks sharing a GPU (one node) share its L2. */
  int l2 = 0;
  CUDACHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, ctx->device));
  b.l2_bytes = l2 > 0 ? (size_t)l2 : 0;
  /* Its name heads the table and fills the CSV's gpu column: where the
   * numbers were measured (a simulated GPU says so in its name). */
  struct cudaDeviceProp prop;
  CUDACHECK(cudaGetDeviceProperties(&prop, ctx->device));
  snprintf(b.gpu, sizeof b.gpu, "%s", prop.name);
  b.ranks_per_gpu =
      ctx->gpu_shared ? (ctx->nranks + ctx->ngpus - 1) / ctx->ngpus : 1;
  /* Non-blocking streams: work on them never waits for the legacy default
   * stream, which another rank sharing this GPU might be using. */
  CUDACHECK(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
  CUDACHECK(cudaEventCreate(&b.start));
  CUDACHECK(cudaEventCreate(&b.stop));
  b.host = host_calloc(max_result, sizeof(float));
  roofline_alloc(&b, max_result * sizeof(float));
  modes_setup(&b);

  report_header(&b);
  /* Every size is timed first, and only then watched by CUPTI (which
   * engine ran it): timing never runs in a process where CUPTI started. */
  int wrong = 0, nruns = 0;
  /* at most 63 sizes: -f is at least 2 and a size fits in 64 bits */
  size_run *runs = host_calloc(64, sizeof *runs);
  size_t last_bytes = 0, last_count = 0;
  for (size_t size = o->min_bytes; size <= o->max_bytes;) {
    size_t count = b.coll->count_for(size, ctx->nranks);
    if (count > 0 && nruns < 64) {
      last_bytes = b.coll->result_count(count, ctx->nranks) * sizeof(float);
      last_count = count;
      runs[nruns] = (size_run){.bytes = last_bytes, .count = count};
      wrong |= time_size(&b, &runs[nruns++]);
    }
    if (size > o->max_bytes / o->factor)
      break;
    size *= o->factor;
  }
  if (o->overlap && last_count > 0)
    measure_overlap(&b, last_bytes, last_count);
  /* Whether CUPTI works is agreed once, by every rank: a rank where it
   * failed (a profiler holds it there, say) must not leave the others
   * waiting in the attribution's collectives. */
  int cupti_works = engine_probe_start();
  if (cupti_works)
    engine_probe_stop();
  b.engine_known = !all_ranks_max(ctx, !cupti_works);
  report_sizes(&b, runs, nruns);
  free(runs);
  if (last_count == 0)
    print_root(ctx, "# no size from -b to -e holds one float per rank\n");
  print_summary(&b);
  if (o->overlap && last_count > 0)
    report_overlap(&b);

  modes_teardown(&b);
  all_ranks_max(ctx, 0); /* every rank's collectives are done: free safely */
  roofline_free(&b);
  CUDACHECK(cudaEventDestroy(b.start));
  CUDACHECK(cudaEventDestroy(b.stop));
  CUDACHECK(cudaStreamDestroy(b.stream));
  free(b.host);
  int csv_ok = report_csv_close(&b);
  print_root(ctx, wrong ? "Benchmark results verification failed\n"
                        : "Benchmark results verified correctly\n");
  return all_ranks_max(ctx, wrong || !csv_ok) ? EXIT_FAILURE : EXIT_SUCCESS;
}
