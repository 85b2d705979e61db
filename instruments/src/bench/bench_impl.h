/*
 * Inside --bench (instruments/src/bench/): what the files share. The public
 * entry point is run_bench() in instruments/include/bench.h.
 *
 *   collectives.c  the table: what differs between the AllReduce and the
 *                  AllGather (the only place that knows which is which)
 *   modes.c        communicators, buffers and windows for each mode
 *   timing.c       the one timing routine: N operations between two events
 *   roofline.c     the copy bandwidth every result is compared with
 *   measure.c      one size and mode: time, verify, which engine ran it
 *   report.c       the table and the CSV, from one list of columns
 *   csv.c          --csv's file: opened, refused or written through stdout
 *   overlap.c      --overlap: the collective beside an SGEMM (cuBLAS)
 *   run.c          run_bench: setup, the size sweep, summary, teardown
 */
#ifndef BENCH_IMPL_H
#define BENCH_IMPL_H

#include <math.h> /* NAN */
#include <stdio.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "bench.h"
#include "instrument_options.h"

#define MAX_MODES       (DEVICE_KERNEL_MAX_VARIANTS + 2)
#define MAX_COMMS       2
#define ATTRIBUTION_OPS 3 /* operations watched by CUPTI, apart from timing */

/* ------------------------------------------------------ collectives.c */

/* One way of running the collective: on which communicator, with windows
 * or not. */
typedef struct mode_spec {
  const char *name;
  int comm;    /* index into bench_coll.comms */
  int windows; /* register both buffers as symmetric windows */
  int kernel;  /* 0: NCCL's collective; k > 0: the lesson's own kernel
                  (example_desc.kernel), variant k - 1, on the windows */
  const char *text; /* what it is, for the header */
} mode_spec;

/* A communicator the modes share: its CTAPolicy and, for the setup line,
 * what to call its init time. */
typedef struct comm_spec {
  int cta_policy;
  const char *label;
} comm_spec;

typedef struct bench_coll {
  const char *title;      /* "sum AllReduce": in the header */
  const char *size_text;  /* what "size" means: in the header */
  /* Elements per rank for a message of `bytes` on nranks ranks. */
  size_t (*count_for)(size_t bytes, int nranks);
  /* Elements of one rank's result when each rank sends `count`. */
  size_t (*result_count)(size_t count, int nranks);
  /* NCCL's perf-test bus bandwidth factor: busbw = algbw * factor. */
  double (*bus_factor)(int nranks);
  void (*run)(const void *send, void *recv, size_t count, ncclComm_t comm,
              cudaStream_t stream);
  /* Wrong elements in `result`, when rank r sent `count` floats of value r. */
  size_t (*count_wrong)(const float *result, size_t count, int nranks);
  int ncomms, nmodes;
  comm_spec comms[MAX_COMMS];
  mode_spec modes[MAX_MODES]; /* the last one is the baseline */
} bench_coll;

const bench_coll *bench_coll_of(const example_desc *example);

/* ------------------------------------------------------------ state */

/* A mode once set up: two buffers from ncclMemAlloc at the largest size
 * and, if the mode uses them, symmetric windows on them. */
typedef struct mode {
  const mode_spec *spec;
  ncclComm_t comm;
  void *send, *recv;
  ncclWindow_t send_win, recv_win;
  int borrowed; /* the buffers and windows are an earlier kernel mode's:
                   the variants of one kernel share them */
  double register_ms; /* both registrations, slowest rank */
  double max_us;      /* time per operation at the largest size */
  double peak_algbw, peak_busbw;
  size_t peak_bytes; /* where busbw peaked (algbw with one rank), among
                        the sizes that do not fit in the L2 cache */
} mode;

/* The -r loops of one size and mode, timed one way (eager or graph): each
 * loop's time per operation, its slowest rank's. */
#define LOOPS_TEXT 256
typedef struct loops {
  double us;             /* the median loop's */
  double us_min, us_max; /* the fastest and slowest loop's */
  double spread;         /* 100 * (slowest - fastest) / median (%) */
  double cv;             /* 100 * sample standard deviation / mean (%);
                            NaN for one loop */
  char text[LOOPS_TEXT]; /* every loop's, ';'-separated, 3 decimals; empty
                            when they do not fit */
} loops;
/* Not timed (--graph not asked for): every number NaN. */
#define LOOPS_NOT_TIMED ((loops){NAN, NAN, NAN, NAN, NAN, ""})

/* What one size and mode measured; on rank 0, the worst over all ranks. */
typedef struct result {
  loops eager;            /* the -r loops, each operation launched alone */
  loops graph;            /* --graph: each loop replayed from a CUDA graph;
                             NaN times without --graph */
  long kernels, copies;   /* most of any rank, per ATTRIBUTION_OPS operations;
                             -1: not known */
  char engine[8];         /* what ran on each rank: CE, SYM, SM, copy, none,
                             n/a, or mixed when the ranks differ (rank 0) */
  char kernel_names[160]; /* rank 0's kernels, or each rank's if mixed */
  int wrong;              /* some rank's result was wrong (eager) */
  int wrong_graph;        /* --graph: some rank's replayed result was */
} result;

typedef struct bench {
  const rank_ctx *ctx;
  const instrument_options *opts;
  const bench_coll *coll;
  cudaStream_t stream;
  cudaEvent_t start, stop;
  ncclComm_t comms[MAX_COMMS];
  double init_ms[MAX_COMMS]; /* communicator init, slowest rank */
  mode modes[MAX_MODES];
  void *kernel_state;        /* the lesson's kernel's, if a mode runs it */
  int nmodes;
  int engine_known;          /* CUPTI records are available */
  size_t max_count;          /* floats per rank at the largest size */
  float *host;               /* room for one whole result */
  FILE *csv;                 /* rank 0 only; NULL without --csv */
  int csv_is_stdout;         /* --csv names stdout's file: b->csv is stdout */
  int csv_errno;             /* why the first CSV write failed (0: none) */
  int roof_peer;             /* device the roofline copies to (rank 0 only) */
  size_t l2_bytes;           /* L2 cache of rank 0's GPU */
  char gpu[256];             /* rank 0's GPU, as CUDA names it */
  int ranks_per_gpu;         /* ranks on rank 0's GPU: 1, or more sharing it */
  void *roof_src, *roof_dst; /* its buffers, at the largest size */
  /* --overlap's results: 0 GEMMs when not measured; per mode the
   * collective's time per operation beside the GEMMs (us), then the GEMM
   * loop's time alone and beside the collective (ms), slowest rank */
  int overlap_gemms;
  size_t overlap_bytes, overlap_count;
  double overlap[MAX_MODES][3];
} bench;

/* ----------------------------------------------------------- modes.c */

/* Collective: creates the table's communicators, then every mode's buffers
 * (and windows). */
void modes_setup(bench *b);
/* Collective: windows, buffers, then communicators. */
void modes_teardown(bench *b);

/* ---------------------------------------------------------- timing.c */

typedef void (*bench_op)(void *arg);

/* Queues `warmup` operations, then `iters` between the events start and
 * stop, on `stream`. No host synchronisation inside. */
void time_ops(cudaStream_t stream, cudaEvent_t start, cudaEvent_t stop,
              int warmup, int iters, bench_op op, void *arg);
/* Waits for stop; returns the time per operation, in us. */
double time_per_op_us(cudaEvent_t start, cudaEvent_t stop, int iters);

/* Collective: the largest value any rank passed, on rank 0. */
double slowest(const rank_ctx *ctx, double value);

/* The median of n values (sorts them). */
double median_of(double *values, int n);
/* (max - min) / median, as a percentage; 0 for a median of 0. */
double spread_pct(double median, double min, double max);
/* 100 * sample standard deviation / mean of n values; NaN for n < 2 or a
 * mean of 0. */
double cv_pct(const double *values, int n);
/* The statistics of n loop times (the values are left sorted). */
loops loops_of(double *us, int n);

/* -------------------------------------------------------- roofline.c */

/* Rank 0 allocates (before any communicator exists) and frees (after every
 * rank's communicators are gone) the roofline's buffers. */
void roofline_alloc(bench *b, size_t max_bytes);
void roofline_free(bench *b);
/* What the roofline copies between, for the header. */
const char *roofline_text(const bench *b);
/* Time of one roofline copy of `bytes`, in us, on rank 0 (0 elsewhere). */
double roofline_us(const bench *b, size_t bytes);

/* --------------------------------------------------------- measure.c */

/* Collective: times and verifies one size and mode. */
result measure(bench *b, const mode *m, size_t count);
/* Collective: which engine ran a few more operations of that size and mode
 * (CUPTI), into res's engine, kernels, copies and kernel_names. Called
 * only once every size was timed: CUPTI, once started, slows every later
 * launch. */
void attribute(bench *b, const mode *m, size_t count, result *res);

/* One collective of `count` elements per rank in mode m, as a bench_op.
 * With --cold, operation k (queued counts them) works on part k mod P of
 * the buffers, P parts of the operation's size fitting in them. */
typedef struct coll_op {
  const bench *b;
  const mode *m;
  size_t count;
  size_t queued;
} coll_op;
void collective_op(void *arg);
/* The part of the buffers operation k of `count` elements works on. */
size_t part_of(const bench *b, size_t count, size_t k);

/* ---------------------------------------------------------- report.c */

/* One line of results: a size in one mode (overlap rows use fewer cells;
 * a NaN or NULL cell is empty). */
typedef struct row {
  const char *mode;
  size_t bytes, count;
  char cache[4]; /* "L2": the size's buffers fit in the L2 cache */
  loops eager, graph; /* the loops' statistics, timed each way */
  double algbw, busbw, roof, pct;
  char engine[8];
  char kernel_names[160];
  double kernels, copies, speedup;
  double in_noise; /* 1: the loops' ranges of this mode and the baseline
                      overlap, so the speed-up is inside the noise */
  double coll_slowdown, gemm_slowdown;
} row;

/* The table's header lines (rank 0) and the CSV's heading. */
void report_header(bench *b);
/* One size: fills rows[i] for every mode from res, prints the table line
 * and writes the CSV lines (rank 0). */
void report_size(bench *b, size_t bytes, size_t count, double roof_us,
                 const result *res, row *rows);
/* Writes one row to --csv's file (call only when b->csv is set): a size's
 * mode, or an --overlap row. */
void report_csv_line(bench *b, const row *r);

/* ------------------------------------------------------------- csv.c */

/* Opens --csv for writing (rank 0): a path naming the file stdout goes to
 * (/dev/stdout, or the file stdout was redirected to) writes to stdout
 * itself, in order with the table; a FIFO no process reads is refused
 * rather than waited on. Returns 1, or 0 after saying why on stderr. */
int report_csv_open(bench *b);
/* Closes the CSV; returns 1 if every write to it succeeded, else says why
 * on stderr and returns 0. 1 without --csv. */
int report_csv_close(bench *b);

/* --------------------------------------------------------- overlap.c */

/* Collective: --overlap at the largest size, timed with the sweep (before
 * CUPTI starts) into b->overlap*. */
void measure_overlap(bench *b, size_t bytes, size_t count);
/* Its lines under the table, and its CSV rows (rank 0 prints). */
void report_overlap(bench *b);

#endif
