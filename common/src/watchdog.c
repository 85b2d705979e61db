#include "watchdog.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "checks.h"

static pthread_t thread;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static int running, stopping;
static int limit_s, first, count;

/* Every rank of this process, in rank order: the call it is in, or none;
 * then which rank's call passed the limit. */
static void report(int late_rank)
{
  fflush(stdout);
  for (int r = first; r < first + count; r++) {
    char call[512];
    double ms = 0;
    int state = call_in_progress(r, call, sizeof call, &ms);
    if (state > 0)
      print_error("rank %d: in %s for %.1f s\n", r, call, ms / 1e3);
    else if (state == 0)
      print_error("rank %d: in no watched call\n", r);
  }
  print_error("rank %d's call has not returned after --timeout %d s: ending"
              " the job (exit %d); --timeout 0 waits for ever\n",
              late_rank, limit_s, EXIT_TIMEOUT);
}

static void *watch(void *arg)
{
  (void)arg;
  pthread_mutex_lock(&lock);
  while (!stopping) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 200 * 1000 * 1000; /* look five times a second */
    if (until.tv_nsec >= 1000000000) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&wake, &lock, &until);
    if (stopping)
      break;
    for (int r = first; r < first + count; r++) {
      char call[512];
      double ms = 0;
      if (call_in_progress(r, call, sizeof call, &ms) > 0 &&
          ms >= limit_s * 1e3) {
        pthread_mutex_unlock(&lock);
        report(r);
        fatal(EXIT_TIMEOUT);
      }
    }
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
