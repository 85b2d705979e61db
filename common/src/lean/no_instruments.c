/* The seam (instruments.h) with no instruments behind it: what make LEAN=1,
 * or a copy of common/ without instruments/, links. Nothing is watched or
 * measured; the lesson runs as it is, and the options are -n and -h. */
#include "instruments.h"

void watch_begin(const char *call, const char *file, int line)
{
  (void)call, (void)file, (void)line;
}
void watch_begin_wait(const char *call, const char *file, int line)
{
  (void)call, (void)file, (void)line;
}
void watch_end(void) {}
void watch_rank(int rank) { (void)rank; }

const char instruments_short_options[] = "";
const struct option instruments_long_options[] = {{NULL, 0, NULL, 0}};
void instruments_options_reset(void) {}
int instruments_option(int c, const char *value)
{
  (void)c, (void)value;
  return PARSE_BAD; /* never called: there are no such options */
}
int instruments_options_check(int count_given)
{
  (void)count_given;
  return PARSE_OK;
}
int instruments_options_values(unsigned long long *values, int max)
{
  (void)values, (void)max;
  return 0;
}
void instruments_usage(FILE *out, const char *prog, enum usage_part part)
{
  (void)out, (void)prog, (void)part;
}

void instruments_start(int options_ok) { (void)options_ok; }
void instruments_watch_ranks(int first_rank, int nranks)
{
  (void)first_rank, (void)nranks;
}
int instruments_run(const rank_ctx *ctx, example_fn lesson)
{
  return lesson(ctx);
}
void instruments_report(void) {}
void instruments_finalizing(void) {}
void instruments_stop(void) {}
