/* The one way --bench times GPU work: operations queued between two CUDA
 * events, with no host synchronisation inside, and the slowest rank's time
 * reported. The collective, the roofline copy and the SGEMM all use it. */
#include "bench_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "checks.h"

void time_ops(cudaStream_t stream, cudaEvent_t start, cudaEvent_t stop,
              int warmup, int iters, bench_op op, void *arg)
{
  for (int i = 0; i < warmup; i++)
    op(arg);
  CUDACHECK(cudaEventRecord(start, stream));
  for (int i = 0; i < iters; i++)
    op(arg);
  CUDACHECK(cudaEventRecord(stop, stream));
}

double time_per_op_us(cudaEvent_t start, cudaEvent_t stop, int iters)
{
  CUDACHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CUDACHECK(cudaEventElapsedTime(&ms, start, stop));
  return ms * 1e3 / iters;
}

double slowest(const rank_ctx *ctx, double value)
{
  double *values =
      ctx->rank == 0 ? host_calloc((size_t)ctx->nranks, sizeof value) : NULL;
  all_ranks_gather(ctx, &value, sizeof value, values);
  double max = value;
  if (ctx->rank == 0) {
    for (int r = 0; r < ctx->nranks; r++)
      if (values[r] > max)
        max = values[r];
    free(values);
  }
  return max;
}

static int compare_doubles(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double median_of(double *values, int n)
{
  qsort(values, (size_t)n, sizeof *values, compare_doubles);
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double spread_pct(double median, double min, double max)
{
  return median > 0 ? 100 * (max - min) / median : 0;
}

double cv_pct(const double *values, int n)
{
  if (n < 2)
    return NAN;
  double sum = 0, squares = 0;
  for (int i = 0; i < n; i++)
    sum += values[i];
  double mean = sum / n;
  for (int i = 0; i < n; i++)
    squares += (values[i] - mean) * (values[i] - mean);
  return mean > 0 ? 100 * sqrt(squares / (n - 1)) / mean : NAN;
}

loops loops_of(double *us, int n)
{
  loops l = {.cv = cv_pct(us, n)};
  size_t used = 0;
  for (int k = 0; k < n; k++) { /* in the order they ran */
    int w = snprintf(l.text + used, sizeof l.text - used, "%s%.3f",
                     k ? ";" : "", us[k]);
    if (w < 0 || (size_t)w >= sizeof l.text - used) {
      l.text[0] = '\0'; /* all of them or none */
      break;
    }
    used += (size_t)w;
  }
  l.us = median_of(us, n);
  l.us_min = us[0];
  l.us_max = us[n - 1];
  l.spread = spread_pct(l.us, l.us_min, l.us_max);
  return l;
}
