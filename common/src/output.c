#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checks.h"

/* Writing to stdout can block (a pipe nobody reads): it is watched like a
 * call, so that the watchdog names it instead of seeing a rank in no call. */
#define STDOUT_CALL "writing to standard output"

void print_root(const rank_ctx *ctx, const char *fmt, ...)
{
  if (ctx->rank != 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  watch_begin(STDOUT_CALL, __FILE__, __LINE__);
  vprintf(fmt, ap);
  fflush(stdout); /* keep order with stderr and with other processes */
  watch_end();
  va_end(ap);
}

void all_ranks_print_line_at(const char *file, int line, const rank_ctx *ctx,
                             const char *text)
{
  char mine[ALL_RANKS_GATHER_MAX] = "";
  snprintf(mine, sizeof mine, "%s", text);
  char *all = NULL;
  if (ctx->rank == 0)
    all = host_calloc((size_t)ctx->nranks, ALL_RANKS_GATHER_MAX);
  all_ranks_gather_at(ctx, mine, sizeof mine, all, file, line);
  if (ctx->rank == 0) {
    watch_begin(STDOUT_CALL, __FILE__, __LINE__);
    for (int r = 0; r < ctx->nranks; r++)
      fputs(all + (size_t)r * ALL_RANKS_GATHER_MAX, stdout);
    fflush(stdout);
    watch_end();
    free(all);
  }
}

void all_ranks_print_at(const char *file, int line, const rank_ctx *ctx,
                        const char *fmt, ...)
{
  char text[ALL_RANKS_GATHER_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  all_ranks_print_line_at(file, line, ctx, text);
}

int own_standard_streams(void)
{
  signal(SIGPIPE, SIG_IGN);
  int stdout_closed = 0;
  for (int fd = 0; fd <= 2; fd++) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
      continue;
    /* open returns the lowest free descriptor: this one. */
    int got = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (got != fd) {
      if (got >= 0)
        close(got);
      return 1;
    }
    stdout_closed |= fd == STDOUT_FILENO;
  }
  if (stdout_closed)
    print_error("standard output is closed: nothing this program prints"
                " could be read; run it with a standard output\n");
  return stdout_closed;
}
