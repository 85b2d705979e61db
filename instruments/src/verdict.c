/* The watchdog's decisions (verdict.h). */
#include "verdict.h"

int verdict_suspicion(const rank_view *r, int limit_s)
{
  switch (r->state) {
  case 1: return 4;
  case 0: return r->ms >= limit_s * 1e3 ? 3 : 0;
  case 3: return 2;
  case 2: return 1;
  default: return 0;
  }
}

void verdict_blame(const rank_view *r, int limit_s, rank_view *best)
{
  int mine = verdict_suspicion(r, limit_s);
  int theirs = best->state >= 0 ? verdict_suspicion(best, limit_s) : 0;
  if (mine > theirs || (mine > 0 && mine == theirs && r->ms > best->ms))
    *best = *r;
}

int verdict_hangs(const rank_view *ranks, int n, int limit_s)
{
  const double limit_ms = limit_s * 1e3;
  int waited = 0, progress = 0;
  for (int i = 0; i < n; i++) {
    const rank_view *r = &ranks[i];
    if ((r->state == 1 || r->state == 3) && r->ms >= limit_ms)
      return 1;
    if (r->state == 2 && r->ms >= limit_ms)
      waited = 1;
    if (r->state >= 0 && r->idle_ms < limit_ms)
      progress = 1;
  }
  return waited && !progress;
}
