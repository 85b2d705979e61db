/* The watchdog (watchdog.h). One thread per process, five times a second:
 * answer another process that asks, or, once a call of this process has
 * passed the limit, collect every rank's line (ask), print them (report),
 * name the rank to blame (blame) and end the job. It takes no lock a rank
 * can hold while stuck: the calls in progress are read under checks.c's
 * short lock, messages go to stderr with write(2), and stdout is flushed
 * only if it is free. */
#include "watchdog.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checks.h"
#include "calls.h"
#include "peers.h"
#include "verdict.h"

#define ANSWER_WAIT_S 3  /* how long the reporting process waits for lines */
#define ABORT_WAIT_S  15 /* how long an asked process waits to be ended */
#define CALL_CHARS    512

static pthread_t thread;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake; /* on the monotonic clock: see watchdog_start */
static int running, stopping, limit_s;
/* The ranks watched (under lock): until watchdog_watch_ranks, the
 * process's own setup, watched as rank `first` (its process number). */
static int first, count = 1, setting_up = 1;

/* ------------------------------------------------------------ collect */

/* One rank's state (verdict.h) and the call it is in. */
static int look_at(int rank, rank_view *v, char *call, size_t size)
{
  *v = (rank_view){.rank = rank};
  v->state =
      call_in_progress(rank, call, size, &v->ms, &v->idle_ms, &v->seq);
  return v->state;
}

/* This process's ranks, one line each. A line is "RANK STATE MS IDLE
 * SEQ\t" (read back by the reporting process, read_view) then the words
 * printed. Returns malloc'd text, or NULL without memory. */
static char *collect(int from, int n)
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

/* The rank to blame among the lines in text (collect's form), kept in
 * *best (verdict.h). */
static void blame(const char *text, rank_view *best)
{
  for (const char *line = text; line && *line; line = strchr(line, '\n')) {
    if (*line == '\n')
      line++;
    rank_view s;
    if (read_view(line, &s))
      verdict_blame(&s, limit_s, best);
  }
}

static int limit_passed(int from, int n);

/* Whether the ranks of these lines (collect's form) hang (verdict.h). */
static int lines_hang(char *const *texts, int ntexts)
{
  int n = 0, cap = 64, hangs = 0;
  rank_view *views = malloc((size_t)cap * sizeof *views);
  for (int t = 0; views != NULL && t < ntexts; t++)
    for (const char *line = texts[t]; line && *line;
         line = strchr(line, '\n')) {
      if (*line == '\n')
        line++;
      rank_view s;
      if (!read_view(line, &s) || s.state == CALL_GONE)
        continue;
      if (n == cap) {
        rank_view *more = realloc(views, (size_t)(cap *= 2) * sizeof *views);
        if (more == NULL)
          break;
        views = more;
      }
      views[n++] = s;
    }
  hangs = views == NULL || verdict_hangs(views, n, limit_s);
  free(views);
  return hangs;
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

static void free_lines(char *mine, char **answers, int processes)
{
  for (int p = 0; answers != NULL && p < processes; p++)
    free(answers[p]);
  free(answers);
  free(mine);
}

/* This process's rank passed the limit: prints every rank's line in rank
 * order (other processes' as they answered), then whom it blames. Returns
 * -1; the process that reports instead (see ask); or CARRY_ON when the
 * other processes' answers show progress (a rank there ends call after
 * call: the wait here is for it), after telling them so. */
#define CARRY_ON (-2)
static int report(int from, int n, int in_setup)
{
  const int processes = peers_others() + 1, me = peers_me();
  char *mine = collect(from, n); /* as they are when the limit passed */
  char **answers = calloc((size_t)processes, sizeof *answers);
  int asker = -1;
  if (processes > 1 && peers_can_ask() && answers != NULL)
    asker = ask(answers, processes, me, mine ? mine : "");
  if (asker >= 0) {
    free_lines(mine, answers, processes);
    return asker;
  }
  /* Asking takes time: a rank here that has moved on meanwhile (or the
   * job that began to finalize) was no hang. */
  if (processes > 1 && answers != NULL) {
    int hangs = 1; /* the local verdict, unless the whole job says else */
    if (!limit_passed(from, n)) {
      hangs = 0;
    } else if (peers_can_ask()) {
      int all = 1; /* every process answered */
      answers[me] = mine;
      for (int p = 0; p < processes; p++)
        all &= answers[p] != NULL;
      hangs = !all || lines_hang(answers, processes);
      answers[me] = NULL;
    }
    if (!hangs) {
      for (int p = 0; p < processes; p++)
        if (p != me)
          peers_carry_on(p);
      free_lines(mine, answers, processes);
      return CARRY_ON;
    }
  }
  flush_stdout_if_free();
  rank_view late = {.state = CALL_GONE};
  for (int p = 0; p < processes; p++) {
    const char *lines = p == me ? mine : answers ? answers[p] : NULL;
    if (lines != NULL) {
      print_lines(lines);
      blame(lines, &late);
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
  if (late.state == CALL_NONE)
    print_error("rank %d has been in no watched call for %.1f s while the"
                " others wait (--timeout %d s): ending the job (exit %d);"
                " --timeout 0 waits for ever\n",
                late.rank, late.ms / 1e3, limit_s, EXIT_TIMEOUT);
  else
    print_error("rank %d's call has not returned after --timeout %d s:"
                " ending the job (exit %d); --timeout 0 waits for ever\n",
                late.rank < 0 ? 0 : late.rank, limit_s, EXIT_TIMEOUT);
  free_lines(mine, answers, processes);
  return -1;
}

/* ------------------------------------------------------------ decide */

/* Whether ranks from .. from + n - 1 hang (verdict.h). */
static int limit_passed(int from, int n)
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

/* Waits 200 ms or until stopped; returns 0 once stopped, else 1 and the
 * ranks to watch now. */
static int next_look(int *from, int *n, int *in_setup)
{
  pthread_mutex_lock(&lock);
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until); /* a clock step cannot stall it */
  until.tv_nsec += 200 * 1000 * 1000;
  if (until.tv_nsec >= 1000000000) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000;
  }
  if (!stopping)
    pthread_cond_timedwait(&wake, &lock, &until);
  int go_on = !stopping;
  *from = first;
  *n = count;
  *in_setup = setting_up;
  pthread_mutex_unlock(&lock);
  return go_on;
}

static void *watch(void *arg)
{
  (void)arg;
  double asked_at = 0;   /* when another process asked for our lines */
  double quiet_until = 0; /* after a look that found progress elsewhere */
  int asked_by = -1, from, n, in_setup;
  while (next_look(&from, &n, &in_setup)) {
    for (int asker; (asker = peers_asked_by()) >= 0;) {
      char *mine = collect(from, n);
      peers_answer(asker, mine ? mine : ""); /* it ends the job, or says
                                               carry on */
      free(mine);
      if (asked_by < 0) {
        asked_by = asker;
        asked_at = monotonic_ms();
      }
    }
    if (asked_by >= 0 && peers_told_carry_on())
      asked_by = -1;
    if (asked_by < 0 && monotonic_ms() >= quiet_until &&
        limit_passed(from, n)) {
      asked_by = report(from, n, in_setup);
      if (asked_by == CARRY_ON) {
        asked_by = -1;
        quiet_until = monotonic_ms() + limit_s * 1e3 / 2;
        continue;
      }
      if (asked_by < 0)
        fatal(EXIT_TIMEOUT);
      asked_at = monotonic_ms();
    }
    if (asked_by >= 0 && monotonic_ms() - asked_at > ABORT_WAIT_S * 1e3) {
      print_error("rank %d timed out, but the job has not ended %d s later:"
                  " ending this process (exit %d)\n",
                  asked_by, ABORT_WAIT_S, EXIT_TIMEOUT);
      fatal(EXIT_TIMEOUT);
    }
  }
  return NULL;
}

void watchdog_start(int seconds)
{
  if (seconds <= 0 || running)
    return;
  limit_s = seconds;
  first = peers_me();
  count = 1;
  setting_up = 1;
  stopping = 0;
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&wake, &attr);
  pthread_condattr_destroy(&attr);
  int err = pthread_create(&thread, NULL, watch, NULL);
  if (err != 0) {
    print_error("watchdog: pthread_create failed: %s; --timeout is not"
                " enforced\n",
                strerror(err));
    return;
  }
  running = 1;
}

void watchdog_watch_ranks(int first_rank, int nranks)
{
  pthread_mutex_lock(&lock);
  first = first_rank;
  count = nranks;
  setting_up = 0;
  pthread_mutex_unlock(&lock);
}

void watchdog_stop(void)
{
  if (!running)
    return;
  pthread_mutex_lock(&lock);
  stopping = 1;
  pthread_cond_signal(&wake);
  pthread_mutex_unlock(&lock);
  pthread_join(thread, NULL);
  running = 0;
}
