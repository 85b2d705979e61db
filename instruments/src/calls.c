/* Which call each rank of this process is in (calls.h): the seam's
 * watch_* hooks (instruments.h) write it, the watchdog reads it. */
#include "calls.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "checks.h"
#include "instruments.h"

#define MAX_SLOTS 1024 /* ranks one process may run (NTHREADS_MAX) */
#define MAX_DEPTH 4

typedef struct call_slot {
  int rank; /* -1: free */
  int depth;
  double ended_ms; /* when its last call ended (or it took the rank) */
  struct {
    const char *call, *file;
    int line;
    double since_ms;
    int kind; /* what call_in_progress returns: 1, 2 or 3 */
  } stack[MAX_DEPTH];
} call_slot;

static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static call_slot slots[MAX_SLOTS];
static int nslots;
static _Thread_local call_slot *my_slot;

double monotonic_ms(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

void watch_rank(int rank)
{
  pthread_mutex_lock(&slots_lock);
  if (my_slot != NULL) { /* a new rank, or -1: the slot is free again */
    my_slot->rank = rank;
    my_slot->depth = 0;
    my_slot->ended_ms = monotonic_ms();
    if (rank < 0)
      my_slot = NULL;
  } else if (rank >= 0) {
    for (int i = 0; i < nslots && my_slot == NULL; i++)
      if (slots[i].rank < 0)
        my_slot = &slots[i];
    if (my_slot == NULL && nslots < MAX_SLOTS)
      my_slot = &slots[nslots++];
    if (my_slot != NULL)
      *my_slot = (call_slot){.rank = rank, .ended_ms = monotonic_ms()};
  }
  pthread_mutex_unlock(&slots_lock);
}

static void begin(const char *call, const char *file, int line, int kind)
{
  if (my_slot == NULL)
    return;
  pthread_mutex_lock(&slots_lock);
  int d = my_slot->depth++;
  if (d < MAX_DEPTH) {
    my_slot->stack[d].call = call;
    my_slot->stack[d].file = file;
    my_slot->stack[d].line = line;
    my_slot->stack[d].since_ms = monotonic_ms();
    my_slot->stack[d].kind = kind;
  }
  pthread_mutex_unlock(&slots_lock);
}

/* NCCL's calls that every rank of the communicator makes together: a rank
 * in one may be waiting for another rank (nccl.h, and NCCL's docs: the
 * communicator functions and the collectives). */
static int nccl_collective(const char *call)
{
  static const char *const names[] = {
      "ncclCommInitRank",       "ncclCommInitAll",
      "ncclCommWindowRegister", "ncclCommWindowDeregister",
      "ncclCommFinalize",       "ncclCommDestroy",
      "ncclAllReduce",          "ncclAllGather",
      "ncclBroadcast",          "ncclReduce",
      "ncclReduceScatter",      "ncclGroupEnd"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strncmp(call, names[i], strlen(names[i])) == 0)
      return 1;
  return 0;
}

void watch_begin(const char *call, const char *file, int line)
{
  begin(call, file, line, nccl_collective(call) ? 3 : 1);
}

void watch_begin_wait(const char *call, const char *file, int line)
{
  begin(call, file, line, 2);
}

void watch_end(void)
{
  if (my_slot == NULL)
    return;
  pthread_mutex_lock(&slots_lock);
  if (my_slot->depth > 0)
    my_slot->depth--;
  my_slot->ended_ms = monotonic_ms();
  pthread_mutex_unlock(&slots_lock);
}

int call_in_progress(int rank, char *call_text, size_t size, double *ms,
                     double *idle_ms)
{
  int found = -1;
  pthread_mutex_lock(&slots_lock);
  for (int i = 0; i < nslots && found < 0; i++) {
    const call_slot *s = &slots[i];
    if (s->rank != rank)
      continue;
    *idle_ms = *ms = monotonic_ms() - s->ended_ms;
    call_text[0] = '\0';
    found = s->depth > 0;
    if (found) {
      int d = (s->depth < MAX_DEPTH ? s->depth : MAX_DEPTH) - 1;
      snprintf(call_text, size, "%s (%s:%d)", s->stack[d].call,
               path_base_name(s->stack[d].file), s->stack[d].line);
      *ms = monotonic_ms() - s->stack[d].since_ms;
      found = s->stack[d].kind;
    }
  }
  pthread_mutex_unlock(&slots_lock);
  return found;
}


void text_add(char *buf, size_t size, const char *fmt, ...)
{
  size_t len = strlen(buf);
  if (len + 1 >= size)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + len, size - len, fmt, ap);
  va_end(ap);
}
