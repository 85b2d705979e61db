#include "watchdog.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checks.h"
#include "transport.h"

#define LINE_MAX_CHARS 600
#define ANSWER_WAIT_S  3  /* how long the reporting process waits for lines */
#define ABORT_WAIT_S   15 /* how long an asked process waits to be ended */

static pthread_t thread;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake; /* on the monotonic clock: see watchdog_start */
static int running, stopping;
static int limit_s, first, count;

static double now_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

/* This process's ranks, one line each: the call each is in, and for how
 * long. */
static void my_lines(char *text, size_t size)
{
  size_t used = 0;
  text[0] = '\0';
  for (int r = first; r < first + count && used < size; r++) {
    char call[512];
    double ms = 0;
    int state = call_in_progress(r, call, sizeof call, &ms);
    int n = 0;
    if (state > 0)
      n = snprintf(text + used, size - used, "rank %d: in %s for %.1f s\n", r,
                   call, ms / 1e3);
    else if (state == 0)
      n = snprintf(text + used, size - used, "rank %d: in no watched call\n",
                   r);
    used += n > 0 ? (size_t)n : 0;
  }
}

static void print_lines(const char *text)
{
  for (const char *line = text; *line != '\0';) {
    const char *end = strchr(line, '\n');
    int len = end ? (int)(end - line) : (int)strlen(line);
    print_error("%.*s\n", len, line);
    line += len + (end != NULL);
  }
}

/* Room for this process's lines: every one of its ranks, in full. */
static size_t lines_size(void) { return (size_t)count * LINE_MAX_CHARS + 1; }

/* Another process's limit passed: it prints every rank's line, ours too. */
static void answer(int process)
{
  char *text = host_calloc(lines_size(), 1);
  my_lines(text, lines_size());
  transport_answer(process, text);
  free(text);
}

/* This process's rank late_rank passed the limit: asks the other processes
 * (MPI) for their lines and prints them all in rank order; returns -1.
 * If a process with a lower number asks meanwhile, it reports: this one
 * answers it and returns its number. */
static int report(int late_rank)
{
  const int peers = transport_peers(), me = transport_process();
  char **lines = calloc((size_t)peers + 1, sizeof *lines);
  char *mine = host_calloc(lines_size(), 1);
  my_lines(mine, lines_size()); /* as they are when the limit passed */
  if (peers > 0 && lines != NULL) {
    char text[LINE_MAX_CHARS * 4];
    int got = 0;
    transport_ask_peers();
    for (double until = now_s() + ANSWER_WAIT_S;
         got < peers && now_s() < until;) {
      int asker = transport_asked_by();
      if (asker >= 0 && asker < me) { /* it reports: answer, let it */
        answer(asker);
        free(lines);
        free(mine);
        return asker;
      }
      int from = transport_answer_from(text, sizeof text);
      if (from >= 0 && from <= peers && lines[from] == NULL) {
        lines[from] = strdup(text);
        got++;
      } else if (from < 0)
        nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
    }
  }
  flush_stdout_if_free();
  for (int p = 0; p <= peers; p++) {
    if (p == me)
      print_lines(mine);
    else if (lines == NULL)
      continue; /* no room to keep answers: none were asked for */
    else if (lines[p] != NULL)
      print_lines(lines[p]);
    else
      print_error("rank %d: no answer within %d s (its process may be"
                  " gone)\n",
                  p, ANSWER_WAIT_S);
  }
  for (int p = 0; lines != NULL && p <= peers; p++)
    free(lines[p]);
  free(lines);
  free(mine);
  print_error("rank %d's call has not returned after --timeout %d s: ending"
              " the job (exit %d); --timeout 0 waits for ever\n",
              late_rank, limit_s, EXIT_TIMEOUT);
  return -1;
}

/* Once a call of this process has passed the limit, the rank to blame:
 * the one whose call other than a wait for the other ranks has lasted
 * longest, however long (the others most often wait for it), else the
 * longest waiter. -1 while no call has passed the limit. */
static int late_rank(void)
{
  int late = -1, late_waits = 1, passed = 0;
  double longest = 0;
  for (int r = first; r < first + count; r++) {
    char call[512];
    double ms = 0;
    int state = call_in_progress(r, call, sizeof call, &ms);
    if (state <= 0)
      continue;
    passed |= ms >= limit_s * 1e3;
    int waits = state == 2;
    if (waits < late_waits || (waits == late_waits && ms > longest)) {
      late = r;
      late_waits = waits;
      longest = ms;
    }
  }
  return passed ? late : -1;
}

static void *watch(void *arg)
{
  (void)arg;
  double asked_at = 0; /* when another process asked for our lines */
  int asked_by = -1;
  pthread_mutex_lock(&lock);
  while (!stopping) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until); /* a clock step cannot stall it */
    until.tv_nsec += 200 * 1000 * 1000;     /* look five times a second */
    if (until.tv_nsec >= 1000000000) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&wake, &lock, &until);
    if (stopping)
      break;
    pthread_mutex_unlock(&lock);
    for (int asker; (asker = transport_asked_by()) >= 0;) {
      answer(asker); /* it ends the job in a few seconds */
      if (asked_by < 0) {
        asked_by = asker;
        asked_at = now_s();
      }
    }
    int late = asked_by < 0 ? late_rank() : -1;
    if (late >= 0) {
      asked_by = report(late);
      if (asked_by < 0)
        fatal(EXIT_TIMEOUT);
      asked_at = now_s();
    }
    if (asked_by >= 0 && now_s() - asked_at > ABORT_WAIT_S) {
      print_error("rank %d timed out, but the job has not ended %d s later:"
                  " ending this process (exit %d)\n",
                  asked_by, ABORT_WAIT_S, EXIT_TIMEOUT);
      fatal(EXIT_TIMEOUT);
    }
    pthread_mutex_lock(&lock);
  }
  pthread_mutex_unlock(&lock);
  return NULL;
}

void watchdog_start(int seconds, int first_rank, int nranks)
{
  if (seconds <= 0 || running)
    return;
  limit_s = seconds;
  first = first_rank;
  count = nranks;
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
