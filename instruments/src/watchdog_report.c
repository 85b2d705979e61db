/* The watchdog's report (watchdog_impl.h): every rank's line, asked of
 * the other processes too, the verdict on the whole job, the rank to
 * blame. It takes no lock a rank can hold while stuck: the calls in
 * progress are read under checks.c's short lock, messages go to stderr
 * with write(2), and stdout is flushed only if it is free. */
#include "watchdog_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "calls.h"
#include "checks.h"
#include "peers.h"
#include "verdict.h"

#define ANSWER_WAIT_S 3 /* how long the reporting process waits for lines */

/* ------------------------------------------------------------ collect */

/* One rank's state (verdict.h) and the call it is in. */
static int look_at(int rank, rank_view *v, char *call, size_t size)
{
  *v = (rank_view){.rank = rank};
  v->state =
      call_in_progress(rank, call, size, &v->ms, &v->idle_ms, &v->seq);
  return v->state;
}

char *watchdog_collect(int from, int n)
{
  const size_t line_chars = CALL_CHARS + 128;
  char *text = calloc((size_t)n * line_chars + 1, 1);
  for (int r = from; text != NULL && r < from + n; r++) {
    rank_view s;
    char call[CALL_CHARS];
    look_at(r, &s, call, sizeof call);
    char *end = text + strlen(text);
    int head = snprintf(end, line_chars, "%d %d %.0f %.0f %lu\trank %d: ", r,
                        (int)s.state, s.ms, s.idle_ms, s.seq, r);
    if (s.state == CALL_GONE) /* its thread has returned, or not started */
      snprintf(end + head, line_chars - (size_t)head,
               "in no call: no thread"
               " runs it now (not started, or done)\n");
    else if (s.state == CALL_NONE)
      snprintf(end + head, line_chars - (size_t)head,
               "in no watched call (its last call ended %.1f s ago)\n",
               s.ms / 1e3);
    else
      snprintf(end + head, line_chars - (size_t)head, "in %s%s for %.1f s\n",
               call, s.state == CALL_WAIT ? ", waiting for the other ranks" : "",
               s.ms / 1e3);
  }
  return text;
}

int watchdog_limit_passed(int from, int n, int limit_s)
{
  rank_view *views = calloc((size_t)n, sizeof *views);
  if (views == NULL)
    return 0;
  int seen = 0;
  for (int r = from; r < from + n; r++) {
    char call[CALL_CHARS];
    if (look_at(r, &views[seen], call, sizeof call) != CALL_GONE)
      seen++;
  }
  int hangs = verdict_hangs(views, seen, limit_s);
  free(views);
  return hangs;
}

/* --------------------------------------------------------------- ask */

/* Asks the other processes (MPI) for their lines; answers[p] gets process
 * p's (malloc'd) or stays NULL. If a process with a lower number asks
 * meanwhile, it reports: this one answers it with `mine` and returns its
 * number; else -1. */
static int ask(char **answers, int processes, int me, const char *mine)
{
  int got = 0;
  peers_ask();
  for (double until = monotonic_ms() + ANSWER_WAIT_S * 1e3;
       got < processes - 1 && monotonic_ms() < until;) {
    int asker = peers_asked_by();
    if (asker >= 0 && asker < me) { /* it reports: answer, let it */
      peers_answer(asker, mine);
      return asker;
    }
    int from = -1;
    char *text = peers_answer_from(&from);
    if (text != NULL && from >= 0 && from < processes && !answers[from]) {
      answers[from] = text;
      got++;
    } else {
      free(text);
      if (text == NULL)
        nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
    }
  }
  return -1;
}

/* ------------------------------------------------------------- blame */

/* One line of collect's form into *v; 0 if it is not one. */
static int read_view(const char *line, rank_view *v)
{
  int state;
  *v = (rank_view){0};
  if (sscanf(line, "%d %d %lf %lf %lu", &v->rank, &state, &v->ms,
             &v->idle_ms, &v->seq) != 5)
    return 0;
  v->state = (enum call_state)state;
  return 1;
}

/* The ranks read from lines of collect's form, in a growing array. */
typedef struct views {
  rank_view *v;
  int n, cap;
  int short_of_memory;
} views;

/* Appends the ranks of text's lines to *all. */
static void read_views(const char *text, views *all)
{
  for (const char *line = text; line && *line; line = strchr(line, '\n')) {
    if (*line == '\n')
      line++;
    rank_view s;
    if (!read_view(line, &s))
      continue;
    if (all->n == all->cap) {
      int cap = all->cap ? 2 * all->cap : 64;
      rank_view *more = realloc(all->v, (size_t)cap * sizeof *more);
      if (more == NULL) {
        all->short_of_memory = 1;
        return;
      }
      all->v = more;
      all->cap = cap;
    }
    all->v[all->n++] = s;
  }
}

/* The rank to blame among the lines in text, kept in *best (verdict.h). */
static void blame(const char *text, int limit_s, rank_view *best)
{
  views all = {0};
  read_views(text, &all);
  for (int i = 0; i < all.n; i++)
    verdict_blame(&all.v[i], limit_s, best);
  free(all.v);
}

/* Whether the ranks of these texts' lines hang (verdict.h); ranks whose
 * thread is gone do not count. Without memory: they hang. */
static int lines_hang(char *const *texts, int ntexts, int limit_s)
{
  views all = {0};
  for (int t = 0; t < ntexts; t++)
    read_views(texts[t], &all);
  int n = 0;
  for (int i = 0; i < all.n; i++)
    if (all.v[i].state != CALL_GONE)
      all.v[n++] = all.v[i];
  int hangs = all.short_of_memory || verdict_hangs(all.v, n, limit_s);
  free(all.v);
  return hangs;
}

/* Whether every rank of these texts' lines is inside one NCCL call that
 * all ranks make (the same one: as many such calls begun), so that none
 * can be told from the others; their number in *n. */
static int all_in_one_call(char *const *texts, int ntexts, int *n)
{
  views all = {0};
  for (int t = 0; t < ntexts; t++)
    read_views(texts[t], &all);
  int same = all.n > 1 && !all.short_of_memory;
  for (int i = 0; same && i < all.n; i++)
    same = all.v[i].state == CALL_NCCL && all.v[i].seq == all.v[0].seq;
  *n = all.n;
  free(all.v);
  return same;
}

/* Whether rank's line in these texts shows it in a call that waits for
 * its GPU (the call named after "rank R: in "). */
static int waits_for_gpu(char *const *texts, int ntexts, int rank)
{
  char key[32], call[64];
  snprintf(key, sizeof key, "rank %d: in ", rank);
  for (int t = 0; t < ntexts; t++) {
    const char *at = texts[t] != NULL ? strstr(texts[t], key) : NULL;
    if (at != NULL) {
      at += strlen(key);
      snprintf(call, sizeof call, "%.*s", (int)strcspn(at, "( "), at);
      return call_waits_for_gpu(call);
    }
  }
  return 0;
}

/* ------------------------------------------------------------ report */

/* Prints the lines in text (collect's form), without their heads. */
static void print_lines(const char *text)
{
  for (const char *line = text; line && *line;) {
    const char *tab = strchr(line, '\t'), *end = strchr(line, '\n');
    if (tab == NULL || end == NULL)
      return;
    print_error("%.*s\n", (int)(end - tab - 1), tab + 1);
    line = end + 1;
  }
}

/* Every rank's lines in rank order (other processes' as they answered;
 * answers may be NULL), why some are missing, then whom it blames. */
static void print_report(const char *mine, char *const *answers,
                         int in_setup, int limit_s)
{
  const int processes = peers_others() + 1, me = peers_me();
  flush_stdout_if_free();
  rank_view late = {.state = CALL_GONE};
  for (int p = 0; p < processes; p++) {
    const char *lines = p == me ? mine : answers ? answers[p] : NULL;
    if (lines != NULL) {
      print_lines(lines);
      blame(lines, limit_s, &late);
    } else if (p != me && peers_can_ask()) {
      print_error("rank %d: no answer within %d s (its process may be"
                  " gone)\n",
                  p, ANSWER_WAIT_S);
    }
  }
  if (processes > 1 && peers_stopped())
    print_error("the other %d process(es) were not asked: the job was"
                " finalizing MPI; each process reports its own ranks\n",
                processes - 1);
  else if (processes > 1 && !peers_can_ask())
    print_error("the other %d process(es) were not asked: this MPI gives no"
                " MPI_THREAD_MULTIPLE, so the watchdog's thread may not call"
                " MPI; each process reports its own ranks\n",
                processes - 1);
  if (in_setup && processes == 1)
    print_error("the ranks had not started: the job was still being set"
                " up\n");
  /* Every rank's lines, this process's among them: none may be missing. */
  char **texts = processes > 0 ? calloc((size_t)processes, sizeof *texts)
                                : NULL;
  int nranks = 0, answered = texts != NULL;
  for (int p = 0; answered && p < processes; p++) {
    texts[p] = p == me ? (char *)mine : answers ? answers[p] : NULL;
    answered = texts[p] != NULL;
  }
  const int together = answered && all_in_one_call(texts, processes, &nranks);
  const int on_gpu = answered && late.state == CALL_OWN &&
                     waits_for_gpu(texts, processes, late.rank);
  free(texts);
  if (together)
    print_error("all %d ranks are inside the same NCCL call, one every rank"
                " makes, after --timeout %d s: nothing here shows which of"
                " them holds the others up. To find it: NCCL's log"
                " (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL), or each"
                " rank's stack (gdb -p PID -batch -ex 'thread apply all bt');"
                " ending the job (exit %d); --timeout 0 waits for ever\n",
                nranks, limit_s, EXIT_TIMEOUT);
  else if (late.state == CALL_NONE)
    print_error("rank %d has been in no watched call for %.1f s while the"
                " others wait (--timeout %d s): ending the job (exit %d);"
                " --timeout 0 waits for ever\n",
                late.rank, late.ms / 1e3, limit_s, EXIT_TIMEOUT);
  else
    print_error("rank %d's call has not returned after --timeout %d s:"
                " ending the job (exit %d); --timeout 0 waits for ever\n",
                late.rank < 0 ? 0 : late.rank, limit_s, EXIT_TIMEOUT);
  if (on_gpu && !together)
    print_error("rank %d waits for its GPU, whose queued work has not"
                " ended: a kernel of your own that syncs LSA barriers"
                " waits there for the same CTA of every peer, so the rank"
                " to look at may be a peer whose kernel synced a barrier"
                " fewer times, or never launched it\n",
                late.rank);
}

/* Whether the whole job hangs, now that the other processes answered (or
 * did not): asking takes time, and a rank here that has moved on meanwhile
 * (or the job that began to finalize) was no hang; a rank of another
 * process that ends call after call is what the wait here is for. */
static int job_hangs(int from, int n, int limit_s, char *mine, char **answers)
{
  const int processes = peers_others() + 1, me = peers_me();
  if (!watchdog_limit_passed(from, n, limit_s))
    return 0;
  if (!peers_can_ask())
    return 1; /* the local verdict */
  int all = 1; /* every process answered */
  answers[me] = mine;
  for (int p = 0; p < processes; p++)
    all &= answers[p] != NULL;
  int hangs = !all || lines_hang(answers, processes, limit_s);
  answers[me] = NULL;
  return hangs;
}

enum report_outcome watchdog_report(int from, int n, int in_setup,
                                    int limit_s, int *asker)
{
  const int processes = peers_others() + 1, me = peers_me();
  char *mine = watchdog_collect(from, n); /* as they are when the limit passed */
  char **answers = calloc((size_t)processes, sizeof *answers);
  enum report_outcome outcome = REPORTED;
  *asker = -1;
  if (processes > 1 && peers_can_ask() && answers != NULL)
    *asker = ask(answers, processes, me, mine ? mine : "");
  if (*asker >= 0) {
    outcome = ANOTHER_REPORTS;
  } else if (processes > 1 && answers != NULL &&
             !job_hangs(from, n, limit_s, mine, answers)) {
    for (int p = 0; p < processes; p++)
      if (p != me)
        peers_carry_on(p);
    outcome = NO_HANG;
  } else {
    print_report(mine, answers, in_setup, limit_s);
  }
  for (int p = 0; answers != NULL && p < processes; p++)
    free(answers[p]);
  free(answers);
  free(mine);
  return outcome;
}
