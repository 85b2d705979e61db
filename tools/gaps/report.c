/* libgaps' report (gaps.h): the GPU work CUPTI saw, tied to the calls
 * that launched it, and one line per kind of call with the measures of
 * gaps.c's header. */
#include <stdio.h>
#include <stdlib.h>

#include "engine.h"
#include "gaps.h"

static int by_thread_then_begin(const void *a, const void *b)
{
  const call *x = a, *y = b;
  if (x->thread != y->thread)
    return x->thread < y->thread ? -1 : 1;
  return (x->begin > y->begin) - (x->begin < y->begin);
}

static int compare_doubles(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
  if (n == 0)
    return -1;
  qsort(v, n, sizeof *v, compare_doubles);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double mean(const double *v, size_t n)
{
  double sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += v[i];
  return n ? sum / n : -1;
}

static int by_launch(const void *a, const void *b)
{
  uint32_t x = ((const engine_piece *)a)->launch,
           y = ((const engine_piece *)b)->launch;
  return (x > y) - (x < y);
}

/* Adds a piece of GPU work to call k. */
static void add_work(call *k, const engine_piece *e)
{
  k->first = e->start < k->first ? e->start : k->first;
  k->last = e->end > k->last ? e->end : k->last;
  k->busy += e->end - e->start;
  *(e->what == ENGINE_KERNEL ? &k->kernels : &k->copies) += 1;
}

/* Graph replays become calls of their own kind, one per launch; every
 * other kernel or copy goes to the call of its launching thread whose host
 * time holds the launch (calls sorted by thread, then start: a binary
 * search). pieces sorted by launch. Returns how many went to no call. */
static size_t tie_work(engine_piece *pieces, size_t npieces)
{
  int graph_kind = -1;
  for (size_t i = 0; i < npieces; i++) {
    const engine_piece *e = &pieces[i];
    if (!e->graph)
      continue;
    int same = i > 0 && pieces[i - 1].graph && pieces[i - 1].launch == e->launch;
    if (graph_kind < 0 &&
        grow((void **)&kinds, &kinds_cap, nkinds, sizeof *kinds)) {
      snprintf(kinds[nkinds].text, sizeof kinds->text, "cuGraphLaunch");
      graph_kind = (int)nkinds++;
    }
    if (!same && graph_kind >= 0 &&
        grow((void **)&calls, &calls_cap, ncalls, sizeof *calls)) {
      calls[ncalls] = (call){ncalls + 1, graph_kind, e->thread,
                             e->launch_start, e->launch_end, UINT64_MAX,
                             0, 0, 0, 0};
      ncalls++;
    }
    if (graph_kind >= 0 && ncalls > 0)
      add_work(&calls[ncalls - 1], e);
  }
  qsort(calls, ncalls, sizeof *calls, by_thread_then_begin);
  size_t unowned = 0;
  for (size_t i = 0; i < npieces; i++) {
    const engine_piece *e = &pieces[i];
    if (e->graph)
      continue;
    long lo = 0, hi = (long)ncalls - 1, found = -1;
    while (lo <= hi) {
      long mid = (lo + hi) / 2;
      const call *k = &calls[mid];
      if (k->thread < e->thread ||
          (k->thread == e->thread && k->begin <= e->launch_start)) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    call *k = found >= 0 ? &calls[found] : NULL;
    if (k != NULL && k->thread == e->thread && k->kind != graph_kind &&
        e->launch_start <= k->end)
      add_work(k, e);
    else
      unowned++;
  }
  return unowned;
}

/* The measures of one kind of call, each over its calls (the header's
 * list); GPU ones only from calls with GPU work. */
enum measure { HOST, PERIOD, GPU, BUSY, GAP, LAG, NMEASURES };
static const struct {
  const char *name;
  int with_mean; /* also said as a mean */
} measures[NMEASURES] = {
    [HOST] = {"host_us", 0}, [PERIOD] = {"period_us", 1},
    [GPU] = {"gpu_us", 0},   [BUSY] = {"busy_us", 0},
    [GAP] = {"gap_us", 1},   [LAG] = {"lag_us", 0},
};
typedef struct series {
  double *v;
  size_t n;
} series;
static void add(series *s, double us) { s->v[s->n++] = us; }

/* Kind k's measures (each s[m].v holds room for every call); *kernels and
 * *copies: their sums over the calls with GPU work. */
static void measure_kind(int k, series *s, double *kernels, double *copies)
{
  for (size_t i = 0; i < ncalls; i++) {
    const call *c = &calls[i];
    if (c->kind != k)
      continue;
    add(&s[HOST], (c->end - c->begin) / 1e3);
    if (i + 1 < ncalls && calls[i + 1].thread == c->thread &&
        calls[i + 1].kind == c->kind)
      add(&s[PERIOD], (calls[i + 1].begin - c->begin) / 1e3);
    if (c->first == UINT64_MAX)
      continue;
    *kernels += c->kernels;
    *copies += c->copies;
    add(&s[GPU], (c->last - c->first) / 1e3);
    add(&s[BUSY], c->busy / 1e3);
    add(&s[LAG], ((double)c->first - (double)c->end) / 1e3);
    /* the previous call of the same thread that had GPU work */
    for (size_t p = i; p-- > 0 && calls[p].thread == c->thread;)
      if (calls[p].first != UINT64_MAX) {
        if (calls[p].kind == c->kind)
          add(&s[GAP], ((double)c->first - (double)calls[p].last) / 1e3);
        break;
      }
  }
}

/* Prints measures from..to-1 of s: " name median" or " name median
 * (mean mean)". */
static void print_measures(FILE *out, series *s, int from, int to)
{
  for (int m = from; m < to; m++) {
    fprintf(out, " %s %.2f", measures[m].name, median(s[m].v, s[m].n));
    if (measures[m].with_mean)
      fprintf(out, " (mean %.2f)", mean(s[m].v, s[m].n));
  }
}

void report(void)
{
  engine_piece *pieces = NULL;
  size_t npieces = cupti_ok && engine_probe_flush()
                       ? engine_probe_pieces(&pieces)
                       : 0;
  pthread_mutex_lock(&lock);
  qsort(pieces, npieces, sizeof *pieces, by_launch);
  size_t unowned = tie_work(pieces, npieces);
  FILE *out = stderr;
  const char *path = getenv("GAPS_OUT");
  if (path && *path && (out = fopen(path, "a")) == NULL) {
    perror(path);
    out = stderr;
  }
  series s[NMEASURES];
  int room = 1;
  for (int m = 0; m < NMEASURES; m++)
    room &= (s[m].v = calloc(ncalls ? ncalls : 1, sizeof(double))) != NULL;
  for (size_t k = 0; k < nkinds && room; k++) {
    double kernels = 0, copies = 0;
    for (int m = 0; m < NMEASURES; m++)
      s[m].n = 0;
    measure_kind((int)k, s, &kernels, &copies);
    size_t with_work = s[GPU].n;
    fprintf(out, "gaps: %s: calls %zu (with GPU work %zu):", kinds[k].text,
            s[HOST].n, with_work);
    print_measures(out, s, HOST, GPU);
    if (with_work == 0) {
      fprintf(out, "; GPU side not measured\n");
      continue;
    }
    print_measures(out, s, GPU, NMEASURES);
    fprintf(out, " kernels/call %.2f copies/call %.2f\n", kernels / with_work,
            copies / with_work);
  }
  fprintf(out, "gaps: %zu kernels or copies tied to no call; %zu records\n",
          unowned, npieces);
  for (int m = 0; m < NMEASURES; m++)
    free(s[m].v);
  if (out != stderr)
    fclose(out);
  pthread_mutex_unlock(&lock);
  free(pieces);
}

/* ------------------------------------------------------ the NCCL calls */
