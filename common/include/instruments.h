/*
 * The seam between the lessons' layer (common/) and the instruments that
 * watch and measure a lesson (instruments/: the watchdog, What ran, the
 * bench). common/ calls only what this header declares, and includes no
 * header of instruments/.
 *
 * The Makefile links one implementation: instruments/src/instruments.c, or,
 * with make LEAN=1 or in a copy of common/ without instruments/,
 * common/src/lean/no_instruments.c, whose functions do nothing (a lesson
 * then runs as it would without them, with the options -n and -h only).
 */
#ifndef INSTRUMENTS_H
#define INSTRUMENTS_H

#include <getopt.h>
#include <stdio.h>

#include "bootstrap.h"

/* ------------------------------------------------ watching the calls
 * The CHECK macros (checks.h) and the transports' collectives note each
 * call a rank makes, so that the watchdog can say which call a rank is
 * stuck in. Cheap; no effect until the thread has a rank (watch_rank). */
void watch_begin(const char *call, const char *file, int line);
/* The same for a wait for the other ranks (a transport's collective). */
void watch_begin_wait(const char *call, const char *file, int line);
void watch_end(void);
/* The calling thread's calls are rank `rank`'s from now on (-1: no
 * rank's). set_error_rank calls it; the pthread build's main thread does
 * its setup as rank 0 this way, before the ranks' threads exist. */
void watch_rank(int rank);

/* ------------------------------------------------------- the options
 * What the instruments add to the lesson's options (-n and -h), all in
 * one table: parse_options (common/src/options.c) adds their letters and
 * long options to its own, hands every option it does not know to
 * `parse`, and prints their usage lines inside its usage text. */
enum usage_part {
  USAGE_SYNOPSIS_OPTIONS, /* " [--timeout SECONDS]" inside the first line */
  USAGE_SYNOPSIS_LINES,   /* further "       PROG ..." lines */
  USAGE_OPTION_LINES,     /* "  --bench ..." lines after -n and -h */
};
typedef struct instruments_option_set {
  const char *short_options;         /* getopt letters, or "" */
  const struct option *long_options; /* {NULL} ends them */
  /* Before the first option: back to the defaults (a process may parse
   * its command line twice: quietly, then saying why). */
  void (*reset)(void);
  /* One option `c` (getopt's value) with its value (or NULL): PARSE_OK
   * or, after option_error, PARSE_BAD. */
  int (*parse)(int c, const char *value);
  /* After the last option: checks them together (count_given: -n was
   * given). PARSE_OK, or PARSE_BAD after option_error. */
  int (*check)(int count_given);
  /* Writes up to `max` values that every rank must agree on (the options
   * as parsed); returns how many. */
  int (*values)(unsigned long long *values, int max);
  /* One part of the usage text. */
  void (*usage)(FILE *out, const char *prog, enum usage_part part);
} instruments_option_set;
extern const instruments_option_set instruments_options;

/* ------------------------------------------------------------ the run */

/* Once the options are parsed on every process (options_ok: they were
 * good; else the defaults hold): from here on nothing waits for ever. */
void instruments_start(int options_ok);
/* The ranks this process runs are first_rank .. first_rank + nranks - 1. */
void instruments_watch_ranks(int first_rank, int nranks);
/* On every rank: the lesson, with what NCCL ran for it measured around
 * it, or, with --bench, the benchmark of the example's collective
 * instead. Returns the lesson's (or the bench's) status. */
int instruments_run(const rank_ctx *ctx, example_fn lesson);
/* After the ranks: prints what was measured (process 0). */
void instruments_report(void);
/* Before the transport stops: the watchdog stops talking to the other
 * processes (its thread may call MPI), and goes on watching this one's
 * calls (MPI_Finalize among them). */
void instruments_finalizing(void);
/* After the transport has stopped. */
void instruments_stop(void);

#endif
