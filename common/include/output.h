/*
 * Output in rank order. Rank lines of one phase are gathered to rank 0 and
 * printed there as rank 0, 1, 2, ..., in both modes, so a run's output is
 * the same every time and can be compared with the README.
 */
#ifndef OUTPUT_H
#define OUTPUT_H

#include "bootstrap.h"

#define MiB (1024.0 * 1024.0)

/* Prints on rank 0 only. Not collective. */
void print_root(const rank_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Collective: every rank formats one line; rank 0 prints them in rank order.
 * A line is cut at ALL_RANKS_GATHER_MAX - 1 characters. (Macros, like the
 * collectives of bootstrap.h, so a rank waiting in one is reported at the
 * caller's line.) */
#define all_ranks_print(...) all_ranks_print_at(__FILE__, __LINE__, __VA_ARGS__)
void all_ranks_print_at(const char *file, int line, const rank_ctx *ctx,
                        const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Collective, like all_ranks_print, but a rank with nothing to say passes ""
 * and no line is printed for it. */
#define all_ranks_print_line(ctx, text)                                        \
  all_ranks_print_line_at(__FILE__, __LINE__, (ctx), (text))
void all_ranks_print_line_at(const char *file, int line, const rank_ctx *ctx,
                             const char *text);

/* Called first by run_example. Ignores SIGPIPE, so that writing to a pipe
 * whose reader is gone fails with EPIPE and takes the program's "writing
 * ... failed" path (exit 1) instead of killing it silently. Opens /dev/null
 * on a closed standard input or error, so that no file the program opens
 * later takes their place. Returns 0, or 1 if standard output is closed:
 * then nothing the program prints could be read, and it says so. */
int own_standard_streams(void);

#endif
