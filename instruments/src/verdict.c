/* The watchdog's decisions (verdict.h). */
#include "verdict.h"

int verdict_suspicion(const rank_view *r, int limit_s)
{
  switch (r->state) {
  case CALL_OWN: return 4;
  case CALL_NONE: return r->ms >= limit_s * 1e3 ? 3 : 0;
  case CALL_NCCL: return 2;
  case CALL_WAIT: return 1;
  default: return 0;
  }
}

/* Whether a is more to blame than b (both suspect). */
static int worse(const rank_view *a, const rank_view *b, int limit_s)
{
  int own_a = a->state == CALL_OWN, own_b = b->state == CALL_OWN;
  if (own_a != own_b)
    return own_a;
  if (a->seq != b->seq)
    return a->seq < b->seq; /* behind the others */
  int sa = verdict_suspicion(a, limit_s), sb = verdict_suspicion(b, limit_s);
  if (sa != sb)
    return sa > sb;
  return a->ms > b->ms;
}

void verdict_blame(const rank_view *r, int limit_s, rank_view *best)
{
  if (verdict_suspicion(r, limit_s) == 0)
    return;
  if (best->state < 0 || verdict_suspicion(best, limit_s) == 0 ||
      worse(r, best, limit_s))
    *best = *r;
}

int verdict_hangs(const rank_view *ranks, int n, int limit_s)
{
  const double limit_ms = limit_s * 1e3;
  int waited = 0, progress = 0;
  for (int i = 0; i < n; i++) {
    const rank_view *r = &ranks[i];
    if ((r->state == CALL_OWN || r->state == CALL_NCCL) && r->ms >= limit_ms)
      return 1;
    if (r->state == CALL_WAIT && r->ms >= limit_ms)
      waited = 1;
    if (r->state >= 0 && r->idle_ms < limit_ms)
      progress = 1;
  }
  return waited && !progress;
}
