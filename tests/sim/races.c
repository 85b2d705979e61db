/* ncclsim: the messages of a race between two accesses (shadow.c found
 * it): both accesses, by whom and where, and what order is missing. Each
 * ends the process with exit 70, after marking the communicator's folder
 * so that its peers stop too. */
#include "sim.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fibers.h"
#include "shadow.h"

static const char *scope_name(int scope)
{
  return scope == SCOPE_BLOCK    ? "CTA scope (_block)"
         : scope == SCOPE_DEVICE ? "device scope (no suffix)"
                                 : "system scope (_system)";
}

/* "rank 1's kernel (CTA 3, thread 17, main.cu:63)", "rank 1's host (a
 * copy or memset)", or a reader the kept one stands for. */
static void who(const mem_access *a, char *buf, size_t len)
{
  char line[160] = "";
  if (a->lane == HB_HOST) {
    snprintf(buf, len, "rank %d's host (a copy or memset)", a->rank);
    return;
  }
  if (a->thread == ~0u) {
    snprintf(buf, len, "another thread of rank %d's kernel (CTA %d; of the"
             " threads of a CTA that read a word between the same two CTA"
             " barriers, one is kept with its line)", a->rank, a->lane);
    return;
  }
  line_of(a->site, line + 2, sizeof line - 2);
  if (line[2] != '\0')
    line[0] = ',', line[1] = ' ';
  if (a->lane == HB_NONE)
    snprintf(buf, len, "rank %d's kernel (a CTA past the %d with a clock of"
             " their own, thread %u%s)", a->rank, HB_LANES, a->thread,
             line[2] ? line : "");
  else
    snprintf(buf, len, "rank %d's kernel (CTA %d, thread %u%s)", a->rank,
             a->lane, a->thread, line[2] ? line : "");
}

static const char *atomic_note(const mem_access *now, const mem_access *other)
{
  static _Thread_local char buf[400];
  const mem_access *narrow = now->scope < other->scope ? now : other;
  snprintf(buf, sizeof buf,
           "both are atomics, but one is of %s: an atomic is indivisible"
           " only among the threads of its scope, and %s (use %s)",
           scope_name(narrow->scope),
           now->rank != other->rank
               ? "the other GPU's threads are outside any scope but the"
                 " system's"
               : "another CTA's threads are outside the CTA's scope",
           now->rank != other->rank
               ? "the _system variants, atomicAdd_system and the rest, on a"
                 " word that other GPUs update"
               : "atomicAdd, of device scope, or a _system variant");
  return buf;
}

/* Two threads at one line, one of them writing: an update of one word by
 * several threads (a plain +=), which no barrier can make whole. */
static const char *same_line(const mem_access *now, const mem_access *other)
{
  char a[160], b[160];
  if (other->thread == ~0u || other->lane == HB_HOST)
    return "";
  line_of(now->site, a, sizeof a);
  line_of(other->site, b, sizeof b);
  if (a[0] == '\0' || strcmp(a, b) != 0)
    return "";
  return now->rank != other->rank
             ? "; both are that line's, run by two ranks: an update of one"
               " word by several GPUs (a plain +=) loses some, whatever"
               " orders the rest: make it an atomic of system scope"
               " (atomicAdd_system), or give each word one writer"
             : "; both are that line's, run by two threads: an update of one"
               " word by several threads (a plain +=) loses some: make it an"
               " atomic, or give each word one writer";
}

static const char *same_cta =
    "no CTA barrier between them: __syncthreads() orders what every thread"
    " of a CTA did before it for all of them, __syncwarp() only among the"
    " threads of one warp";

static const char *two_ctas =
    "they are of two CTAs of one kernel, and nothing orders two CTAs of a"
    " kernel: a CTA barrier orders one CTA's threads, and an LSA barrier"
    " orders only the same CTA of each rank (barrier index blockIdx.x); let"
    " the CTA that writes an element be the one that reads it, on every"
    " rank, or end the kernel between";

_Noreturn void shared_race(const void *block, size_t byte, const mem_access *now,
                           const mem_access *other, int scope_only)
{
  char by[256], them[256], place[320];
  (void)block;
  who(now, by, sizeof by);
  who(other, them, sizeof them);
  fflush(stdout);
  fprintf(stderr,
          "ncclsim: RULE VIOLATION [shared-data-race] rank %d in %s: %s %s"
          " the word at byte %zu of a __shared__ object of its CTA, which"
          " %s %s, and nothing orders the two: %s%s\n",
          now->rank, current_place(place, sizeof place), by,
          now->writes ? "writes" : "reads", byte, them,
          other->writes ? "wrote" : "read",
          scope_only ? atomic_note(now, other) : same_cta,
          scope_only ? "" : same_line(now, other));
  if (kernel_comm() != NULL)
    mark_abort(kernel_comm()->dir);
  _exit(SIM_EXIT_VIOLATION);
}

void memory_race(const char *dir, hb_domain *d, int owner, size_t byte,
                 const mem_access *now, const mem_access *other,
                 int scope_only)
{
  const int me_unit = hb_unit(now->rank, now->lane);
  const int unit = hb_unit(other->rank, other->lane);
  /* Of two ranks, the other's released nothing yet: its verdict may wait
   * for that side (releases.c). */
  const int waits = d != NULL && !scope_only && now->rank != other->rank
                        ? releases_deferred(d, me_unit, unit, other->clock)
                        : 0;
  if (waits == 2)
    return; /* another race's verdict waits: it ends the run */
  char by[256], them[256], place[320] = "a copy or memset";
  char whose[64];
  who(now, by, sizeof by);
  who(other, them, sizeof them);
  if (now->lane != HB_HOST)
    current_place(place, sizeof place);
  if (owner >= 0)
    snprintf(whose, sizeof whose, "rank %d's window", owner);
  else
    snprintf(whose, sizeof whose, "rank %d's device memory", now->rank);
  const char *why = "nothing orders them", *more = "";
  if (scope_only) {
    why = atomic_note(now, other);
  } else if (now->rank == other->rank && now->lane == other->lane) {
    why = same_cta, more = same_line(now, other);
  } else if (now->rank == other->rank && now->lane != HB_HOST &&
             other->lane != HB_HOST) {
    why = two_ctas, more = same_line(now, other);
  } else if (d != NULL) {
    why = hb_missing(d, me_unit, unit, other->clock);
    more = same_line(now, other);
    if (more[0] == '\0')
      more = fences_note(d, me_unit, unit,
                         hb_pending(d, me_unit)[unit] >= other->clock);
  }
  char head[1536], tail[1536];
  snprintf(head, sizeof head,
           "%s rank %d in %s: %s %s the word at byte %zu of %s, which %s %s,"
           " and nothing orders the two: ",
           owner >= 0 ? "ncclsim: RULE VIOLATION [lsa-data-race]"
                      : "ncclsim: RULE VIOLATION [data-race]",
           now->rank, place, by, now->writes ? "writes" : "reads", byte,
           whose, them, other->writes ? "wrote" : "read");
  snprintf(tail, sizeof tail, "%s%s", why, more);
  if (dir == NULL && kernel_comm() != NULL)
    dir = kernel_comm()->dir;
  if (waits && dir != NULL && more[0] == '\0' && /* (else a cause no */
      releases_defer(d, dir, me_unit, now->writes, unit, /* release fixes) */
                     other->writes, other->clock, head, tail))
    return;
  fflush(stdout);
  fprintf(stderr, "%s%s\n", head, tail);
  if (dir != NULL)
    mark_abort(dir);
  _exit(SIM_EXIT_VIOLATION);
}
