/* The instruments behind the seam (common/include/instruments.h): the
 * watchdog from the options on, What ran around the lesson, or the bench
 * instead of it. The watch_* hooks are in calls.c, the options in
 * options.c. */
#include "instruments.h"

#include "bench.h"
#include "instrument_options.h"
#include "peers.h"
#include "watchdog.h"
#include "what_ran.h"

void instruments_start(int options_ok)
{
  peers_start(); /* every process, at the same point: see peers.h */
  watchdog_start(options_ok ? instrument_opts()->timeout : WATCHDOG_DEFAULT_S);
}

void instruments_watch_ranks(int first_rank, int nranks)
{
  watchdog_watch_ranks(first_rank, nranks);
}

int instruments_run(const rank_ctx *ctx, example_fn lesson)
{
  if (instrument_opts()->bench)
    return run_bench(ctx, ctx->example);
  /* The lesson, with a measurement of what NCCL ran for it around it. */
  what_ran_start(ctx);
  int status = lesson(ctx);
  all_ranks_finish_what_ran(ctx);
  return status;
}

void instruments_report(void) { what_ran_print(); }

void instruments_finalizing(void) { peers_stop(); }

void instruments_stop(void) { watchdog_stop(); }
