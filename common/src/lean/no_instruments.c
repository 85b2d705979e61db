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

static void reset(void) {}
static int parse(int c, const char *value)
{
  (void)c, (void)value;
  return PARSE_BAD; /* never called: there are no such options */
}
static int check(int count_given)
{
  (void)count_given;
  return PARSE_OK;
}
static int values(unsigned long long *out, int max)
{
  (void)out, (void)max;
  return 0;
}
static void usage(FILE *out, const char *prog, enum usage_part part)
{
  (void)out, (void)prog, (void)part;
}
static const struct option no_long_options[] = {{NULL, 0, NULL, 0}};
const instruments_option_set instruments_options = {
    "", no_long_options, reset, parse, check, values, usage};

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
