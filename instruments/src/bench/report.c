/* The results, as a table on stdout and as CSV, both written from one list
 * of columns so that they cannot disagree. */
#include "bench_impl.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "calls.h"
#include "checks.h"
#include "output.h"
#include "requirements.h"

/* Where a column appears in the table: once per line before the modes,
 * once per mode (GRAPH_MODE: only with --graph), once per mode except the
 * baseline after all modes, or not at all. Every column is in the CSV, in
 * this list's order. */
enum place { LINE, PER_MODE, GRAPH_MODE, PER_RATIO, CSV_ONLY };
/* What a cell holds: a row field (TEXT, a char array; SIZE; NUMBER, where
 * NaN is an empty CSV cell), or the program, the rank count or the mode's
 * name; RATIO is a NUMBER whose table cell starts with '~' when it is
 * inside the noise. */
enum kind { TEXT, SIZE, NUMBER, PROGRAM, RANKS, MODE, RATIO, GPU };

typedef struct column {
  const char *csv; /* CSV heading */
  enum place place;
  enum kind kind;
  size_t field;      /* offsetof(row, ...) for TEXT, SIZE and NUMBER */
  const char *title; /* table heading; NULL: the mode's name */
  const char *head;  /* printf format of the heading */
  const char *cell;  /* printf format of a table cell */
  const char *fmt;   /* printf format of a CSV cell */
} column;

#define F(name) offsetof(row, name)
/* The statistics of the loops timed one way (row.eager, row.graph), under
 * PREFIX in the CSV: the time's column in the table at TIME_PLACE, headed
 * TITLE, the spread's and cv's at PLACE. */
#define LOOP_COLUMNS(prefix, way, time_place, title, place)                     \
  {prefix "time_us", time_place, NUMBER, F(way.us), title, "%9s", "%9.2f",     \
   "%.3f"},                                                                    \
  {prefix "spread_pct", place, NUMBER, F(way.spread), "spr%", "%4s", "%4.0f",  \
   "%.2f"},                                                                    \
  {prefix "cv_pct", place, NUMBER, F(way.cv), "cv%", "%4s", "%4.1f", "%.2f"},  \
  {prefix "time_min_us", CSV_ONLY, NUMBER, F(way.us_min), "", "", "", "%.3f"}, \
  {prefix "time_max_us", CSV_ONLY, NUMBER, F(way.us_max), "", "", "", "%.3f"}, \
  {prefix "loops_us", CSV_ONLY, TEXT, F(way.text), "", "", "", "%s"}
static const column columns[] = {
    {"program", CSV_ONLY, PROGRAM, 0, "", "", "", "%s"},
    {"ranks", CSV_ONLY, RANKS, 0, "", "", "", "%d"},
    {"mode", PER_MODE, MODE, 0, NULL, "%5s", "%5s", "%s"},
    {"size_bytes", LINE, SIZE, F(bytes), "size(B)", "%12s", "%12zu", "%zu"},
    {"count", LINE, SIZE, F(count), "count", "%11s", "%11zu", "%zu"},
    LOOP_COLUMNS("", eager, PER_MODE, "time(us)", PER_MODE),
    LOOP_COLUMNS("graph_", graph, GRAPH_MODE, "graph(us)", CSV_ONLY),
    {"algbw_GBps", PER_MODE, NUMBER, F(algbw), "algbw", "%7s", "%7.1f", "%.3f"},
    {"busbw_GBps", PER_MODE, NUMBER, F(busbw), "busbw", "%7s", "%7.1f", "%.3f"},
    {"roof_GBps", LINE, NUMBER, F(roof), "roof", "%8s", "%8.1f", "%.3f"},
    {"in_l2", LINE, TEXT, F(cache), "L2", "%2s", "%2s", "%s"},
    {"pct_roof", PER_MODE, NUMBER, F(pct), "%roof", "%5s", "%5.1f", "%.2f"},
    {"engine", PER_MODE, TEXT, F(engine), "engine", "%-6s", "%-6s", "%s"},
    {"kernels", CSV_ONLY, NUMBER, F(kernels), "", "", "", "%.0f"},
    {"copies", CSV_ONLY, NUMBER, F(copies), "", "", "", "%.0f"},
    {"speedup_vs_plain", PER_RATIO, RATIO, F(speedup), NULL, "%s/plain",
     "%8.2fx", "%.4f"},
    {"speedup_in_noise", CSV_ONLY, NUMBER, F(in_noise), "", "", "", "%.0f"},
    {"coll_slowdown_pct", CSV_ONLY, NUMBER, F(coll_slowdown), "", "", "",
     "%.2f"},
    {"gemm_slowdown_pct", CSV_ONLY, NUMBER, F(gemm_slowdown), "", "", "",
     "%.2f"},
    {"kernel_names", CSV_ONLY, TEXT, F(kernel_names), "", "", "", "%s"},
    {"gpu", CSV_ONLY, GPU, 0, "", "", "", "%s"},
};
#define NCOLUMNS (sizeof columns / sizeof columns[0])

/* A line being built, never longer than its buffer. */
typedef struct line {
  char text[1024];
} line;

/* A text cell of the CSV, quoted as RFC 4180 says when it holds a comma,
 * a double quote or a line break (a program may be started under any
 * name). */
static void add_csv_text(line *l, const char *text)
{
  if (strpbrk(text, ",\"\r\n") == NULL) {
    text_add(l->text, sizeof l->text, "%s", text);
    return;
  }
  text_add(l->text, sizeof l->text, "\"");
  for (const char *c = text; *c; c++)
    if (*c == '"')
      text_add(l->text, sizeof l->text, "\"\"");
    else
      text_add(l->text, sizeof l->text, "%c", *c);
  text_add(l->text, sizeof l->text, "\"");
}

/* Column c's cell of row r, or its heading when r is NULL. `mode` is the
 * mode the cell belongs to; `csv` picks the CSV's format. */
static void add_cell(line *l, const bench *b, const column *c, const row *r,
                     const char *mode, int csv)
{
  const char *fmt = csv ? c->fmt : r ? c->cell : c->head;
  if (r == NULL) {
    text_add(l->text, sizeof l->text, fmt, c->title ? c->title : mode);
    return;
  }
  const char *at = (const char *)r + c->field;
  size_t size;
  double number;
  switch (c->kind) {
  case PROGRAM:
    if (csv)
      add_csv_text(l, b->ctx->opts->prog);
    else
      text_add(l->text, sizeof l->text, fmt, b->ctx->opts->prog);
    break;
  case RANKS: text_add(l->text, sizeof l->text, fmt, b->ctx->nranks); break;
  case GPU:
    if (csv)
      add_csv_text(l, b->gpu);
    break;
  case MODE: text_add(l->text, sizeof l->text, fmt, csv ? r->mode : ""); break;
  case TEXT:
    if (csv)
      add_csv_text(l, at);
    else
      text_add(l->text, sizeof l->text, fmt, at);
    break;
  case SIZE:
    memcpy(&size, at, sizeof size);
    text_add(l->text, sizeof l->text, fmt, size);
    break;
  case NUMBER:
  case RATIO:
    memcpy(&number, at, sizeof number);
    if (isnan(number))
      break;
    if (c->kind == RATIO && !csv && r->in_noise == 1) {
      char cell[32]; /* "~1.02x", right-aligned like the others */
      snprintf(cell, sizeof cell, "~%.2fx", number);
      text_add(l->text, sizeof l->text, "%9s", cell);
    } else {
      text_add(l->text, sizeof l->text, fmt, number);
    }
    break;
  }
}

/* One table line: the LINE columns, each mode's PER_MODE columns, then the
 * PER_RATIO columns of every mode but the baseline. rows is NULL for the
 * heading. */
static void print_table_line(const bench *b, const row *rows)
{
  line l = {0};
  const char *sep = "";
  for (size_t c = 0; c < NCOLUMNS; c++)
    if (columns[c].place == LINE) {
      text_add(l.text, sizeof l.text, "%s", sep);
      add_cell(&l, b, &columns[c], rows, NULL, 0);
      sep = " ";
    }
  for (int m = 0; m < b->nmodes; m++) {
    sep = " | ";
    for (size_t c = 0; c < NCOLUMNS; c++)
      if (columns[c].place == PER_MODE ||
          (columns[c].place == GRAPH_MODE && b->opts->graph)) {
        text_add(l.text, sizeof l.text, "%s", sep);
        add_cell(&l, b, &columns[c], rows ? &rows[m] : NULL,
                 b->modes[m].spec->name, 0);
        sep = " ";
      }
  }
  for (int m = 0; m < b->nmodes - 1; m++)
    for (size_t c = 0; c < NCOLUMNS; c++)
      if (columns[c].place == PER_RATIO) {
        text_add(l.text, sizeof l.text, " | ");
        add_cell(&l, b, &columns[c], rows ? &rows[m] : NULL,
                 b->modes[m].spec->name, 0);
      }
  print_root(b->ctx, "%s\n", l.text);
}

/* One CSV line: every column, comma-separated; the heading when r is NULL. */
void report_csv_line(bench *b, const row *r)
{
  line l = {0};
  for (size_t c = 0; c < NCOLUMNS; c++) {
    text_add(l.text, sizeof l.text, c ? "," : "");
    if (r)
      add_cell(&l, b, &columns[c], r, r->mode, 1);
    else
      text_add(l.text, sizeof l.text, "%s", columns[c].csv);
  }
  if (fprintf(b->csv, "%s\n", l.text) < 0 && b->csv_errno == 0)
    b->csv_errno = errno ? errno : EIO;
}

void report_header(bench *b)
{
  const rank_ctx *ctx = b->ctx;
  const instrument_options *o = b->opts;
  print_root(ctx,
             "# %s --bench: %d rank(s), float %s, out of place; %d timed"
             " + %d warm-up operations per size and mode, timed as %d"
             " loop(s)\n",
             ctx->opts->prog, ctx->nranks, b->coll->title, o->iters, o->warmup,
             o->repeat);
  print_root(ctx,
             "# time(us): the median loop's time per operation; spr%%: (slowest"
             " - fastest loop) / median; cv%%: the loops' standard deviation"
             " / mean; ~ before a ratio: the two modes' loops overlap, so the"
             " ratio is inside the noise\n");
  if (o->graph)
    print_root(ctx,
               "# graph(us): the same loops, each one launch of a CUDA graph"
               " of its operations (captured once per size and mode, replayed"
               " once untimed first): no host launch per operation\n");
  int loaded = 0;
  char have[32] = "unknown", built[32];
  ncclResult_t res;
  WATCHED(res, ncclGetVersion(&loaded));
  if (res == ncclSuccess)
    format_nccl_version(loaded, have, sizeof have);
  format_nccl_version(NCCL_VERSION_CODE, built, sizeof built);
  print_root(ctx, "# rank 0's GPU: %s\n", b->gpu);
  print_root(ctx, "# NCCL %s loaded (built against nccl.h %s)\n", have, built);
  char modes[512] = "";
  for (int i = 0; i < b->nmodes; i++)
    text_add(modes, sizeof modes, "%s%s = %s", i ? "; " : "",
             b->modes[i].spec->name, b->modes[i].spec->text);
  print_root(ctx, "# modes: %s\n", modes);
  print_root(ctx, "# size: %s; roof: %s, measured in this run\n",
             b->coll->size_text, roofline_text(b));
  if (ctx->gpu_shared)
    print_root(ctx,
               ctx->ranks_are_threads
                   ? "# %d ranks share %d GPU(s): times are one GPU doing every"
                     " rank's part, not a link's\n"
                   : "# WARNING: %d processes share %d GPU(s): without MPS the"
                     " GPU time-slices between processes, so these times"
                     " measure that, not NCCL (the pthread build measures)\n",
               ctx->nranks, ctx->ngpus);
  if (b->ranks_per_gpu > 1)
    print_root(ctx,
               "# %%roof: busbw x %d (what the GPU moves for its %d ranks) /"
               " roof; engine (CUPTI, each rank's own work): CE = copies only;"
               " SYM = NCCL's symmetric kernel; SM = other kernels; copy ="
               " one rank's local copy; mixed = the ranks differ (CSV:"
               " kernel_names); n/a = not measured\n",
               b->ranks_per_gpu, b->ranks_per_gpu);
  else
    print_root(ctx,
               "# %%roof: %s / roof; engine (CUPTI, each rank's own work): CE"
               " = copies only; SYM = NCCL's symmetric kernel; SM = other"
               " kernels; copy = one rank's local copy; mixed = the ranks"
               " differ (CSV: kernel_names); n/a = not measured\n",
               ctx->nranks == 1 ? "algbw" : "busbw");
  print_root(ctx,
             "# L2: the size's buffers (every rank's on the GPU, or the"
             " roof's copy) fit in the %zu MiB L2 cache: times there are the"
             " cache's, not memory's\n",
             b->l2_bytes >> 20);
  print_root(ctx,
             b->opts->cold
                 ? "# cache: cold (--cold): operation k of a size works on"
                   " part k mod P of the buffers (P parts of its size fit in"
                   " -e's), as nccl-tests does\n"
                 : "# cache: warm: every operation of a size works on the"
                   " same part of the buffers (--cold moves it, as"
                   " nccl-tests does)\n");
  print_table_line(b, NULL);
  if (b->csv)
    report_csv_line(b, NULL);
}

void report_size(bench *b, size_t bytes, size_t count, double roof_us,
                 const result *res, row *rows)
{
  const int n = b->ctx->nranks;
  double roof = roof_us > 0 ? bytes / roof_us / 1e3 : 0;
  /* Bytes the size touches on the GPU: each of its ranks' send and
   * receive buffers; the roof's copy, a source and a destination. */
  const size_t send = count * sizeof(float);
  /* With --cold, what the operations of a size cycle through: the
   * buffers' whole length. */
  const size_t parts = b->opts->cold ? b->max_count / count : 1;
  const int in_l2 =
      (size_t)b->ranks_per_gpu * parts * (send + bytes) <= b->l2_bytes ||
      2 * bytes <= b->l2_bytes;
  const result *base = &res[b->nmodes - 1];
  for (int i = 0; i < b->nmodes; i++) {
    double algbw = bytes / res[i].eager.us / 1e3;
    double busbw = algbw * b->coll->bus_factor(n);
    rows[i] = (row){
        .mode = b->modes[i].spec->name,
        .bytes = bytes,
        .count = count,
        .eager = res[i].eager,
        .graph = res[i].graph,
        .algbw = algbw,
        .busbw = busbw,
        .roof = roof,
        .pct = roof > 0
                   ? 100 * (n == 1 ? algbw : busbw * b->ranks_per_gpu) / roof
                   : 0,
        .kernels = (double)res[i].kernels,
        .copies = (double)res[i].copies,
        .speedup = base->eager.us / res[i].eager.us,
        .in_noise = res[i].eager.us_min <= base->eager.us_max &&
                    base->eager.us_min <= res[i].eager.us_max,
        .coll_slowdown = NAN,
        .gemm_slowdown = NAN,
    };
    snprintf(rows[i].cache, sizeof rows[i].cache, "%s", in_l2 ? "L2" : "");
    snprintf(rows[i].engine, sizeof rows[i].engine, "%s", res[i].engine);
    snprintf(rows[i].kernel_names, sizeof rows[i].kernel_names, "%s",
             res[i].kernel_names);
  }
  if (b->ctx->rank != 0)
    return;
  print_table_line(b, rows);
  for (int i = 0; b->csv && i < b->nmodes; i++)
    report_csv_line(b, &rows[i]);
}
