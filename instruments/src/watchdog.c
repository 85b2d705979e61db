/* The watchdog (watchdog.h). One thread per process, five times a second:
 * answer another process that asks, or, once a call of this process has
 * passed the limit, report (watchdog_report.c: every rank's line, whom to
 * blame) and end the job. */
#include "watchdog_impl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "calls.h"
#include "checks.h"
#include "peers.h"

#define ABORT_WAIT_S 15 /* how long an asked process waits to be ended */

static pthread_t thread;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake; /* on the monotonic clock: see watchdog_start */
static int running, stopping, limit_s;
/* The ranks watched (under lock): until watchdog_watch_ranks, the
 * process's own setup, watched as rank `first` (its process number). */
static int first, count = 1, setting_up = 1;

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
      char *mine = watchdog_collect(from, n);
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
        watchdog_limit_passed(from, n, limit_s)) {
      switch (watchdog_report(from, n, in_setup, limit_s, &asked_by)) {
      case REPORTED: fatal(EXIT_TIMEOUT); break;
      case ANOTHER_REPORTS: asked_at = monotonic_ms(); break;
      case NO_HANG:
        quiet_until = monotonic_ms() + limit_s * 1e3 / 2;
        continue;
      }
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
