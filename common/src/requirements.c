#include "requirements.h"

#include <stdio.h>

#include "checks.h"
#include "output.h"

void format_nccl_version(int code, char *buf, size_t size)
{
  /* NCCL_VERSION() packs X.Y.Z as X*10000+Y*100+Z since 2.9, and as
   * X*1000+Y*100+Z before. */
  if (code >= 20900)
    snprintf(buf, size, "%d.%d.%d", code / 10000, code % 10000 / 100,
             code % 100);
  else
    snprintf(buf, size, "%d.%d.%d", code / 1000, code % 1000 / 100, code % 100);
}

int require_nccl_version(const rank_ctx *ctx, int min_code, const char *feature)
{
  int code = 0;
  NCCLCHECK(ncclGetVersion(&code));
  int ok = code >= min_code;
  if (!ok) {
    char have[32], need[32];
    format_nccl_version(code, have, sizeof have);
    format_nccl_version(min_code, need, sizeof need);
    print_error("NCCL %s is too old for %s: needs NCCL >= %s\n", have, feature,
                need);
  }
  return all_ranks_ok(ctx, ok);
}

int report_symmetric_windows(const rank_ctx *ctx, ncclWindow_t send_win,
                             ncclWindow_t recv_win)
{
  int real = send_win != NULL && recv_win != NULL;
  char line[RANK_GATHER_MAX] = "";
  if (!real)
    snprintf(line, sizeof line,
             "  Rank %d: no symmetric window: this communicator has no"
             " symmetric-memory support; the collective runs on NCCL's"
             " regular path\n",
             ctx->rank);
  print_ordered_line(ctx, line);
  return real;
}
