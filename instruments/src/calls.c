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
#include "verdict.h"

#define MAX_SLOTS 1024 /* ranks one process may run (NTHREADS_MAX) */
#define MAX_DEPTH 4

/* What a call is to the watchdog besides its state (role_of). */
enum call_role {
  ROLE_OTHER,
  ROLE_QUEUES,   /* an NCCL collective: returns once its work is queued */
  ROLE_GPU_WAIT, /* waits for the GPU's queued work */
};

typedef struct call_slot {
  int rank; /* -1: free */
  int depth;
  double ended_ms; /* when its last call ended (or it took the rank) */
  unsigned long seq;    /* calls all ranks make that it has begun */
  unsigned long queued; /* NCCL collectives it has queued */
  unsigned long waited; /* `queued` when its last wait for the GPU ended */
  struct {
    const char *call, *file;
    int line;
    double since_ms;
    enum call_state kind; /* what call_in_progress returns */
    enum call_role role;
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

static void begin(const char *call, const char *file, int line,
                  enum call_state kind, enum call_role role)
{
  if (my_slot == NULL)
    return;
  pthread_mutex_lock(&slots_lock);
  int d = my_slot->depth++;
  if (role == ROLE_GPU_WAIT && my_slot->queued > my_slot->waited)
    kind = CALL_WAIT; /* its collectives may wait for the others in there */
  if (kind == CALL_NCCL || (kind == CALL_WAIT && role != ROLE_GPU_WAIT))
    my_slot->seq++;
  if (d < MAX_DEPTH) {
    my_slot->stack[d].call = call;
    my_slot->stack[d].file = file;
    my_slot->stack[d].line = line;
    my_slot->stack[d].since_ms = monotonic_ms();
    my_slot->stack[d].kind = kind;
    my_slot->stack[d].role = role;
  }
  pthread_mutex_unlock(&slots_lock);
}

/* Whether `call` (its text: "NAME(ARGS)") is one of `names`. */
static int named(const char *call, const char *const *names, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(names[i]);
    if (strncmp(call, names[i], len) == 0 &&
        (call[len] == '(' || call[len] == '\0'))
      return 1;
  }
  return 0;
}
#define NAMED(call, names) named(call, names, sizeof names / sizeof names[0])

/* What a call is to the watchdog. NCCL's calls that every rank of the
 * communicator makes together, where a rank may be waiting for another
 * rank (nccl.h, and NCCL's docs: the communicator functions and the
 * collectives); of those, the collectives return once queued (NCCL's docs,
 * "CUDA stream semantics"). And CUDA's calls that wait for queued GPU
 * work: a stream, an event, the device, a copy into host memory. */
static enum call_role role_of(const char *call, enum call_state *kind)
{
  static const char *const all_ranks[] = {
      "ncclCommInitRank",       "ncclCommInitRankConfig",
      "ncclCommInitAll",        "ncclCommSplit",
      "ncclCommWindowRegister", "ncclCommWindowDeregister",
      "ncclCommFinalize",       "ncclCommDestroy",
      "ncclGroupEnd"};
  static const char *const queued[] = {"ncclAllReduce", "ncclAllGather",
                                       "ncclBroadcast", "ncclReduce",
                                       "ncclReduceScatter"};
  static const char *const gpu_waits[] = {
      "cudaStreamSynchronize", "cudaEventSynchronize",
      "cudaDeviceSynchronize", "cudaMemcpy", "cudaStreamQuery",
      "cudaEventQuery"};
  *kind = CALL_OWN;
  if (NAMED(call, queued)) {
    *kind = CALL_NCCL;
    return ROLE_QUEUES;
  }
  if (NAMED(call, all_ranks))
    *kind = CALL_NCCL;
  return NAMED(call, gpu_waits) ? ROLE_GPU_WAIT : ROLE_OTHER;
}

int call_waits_for_gpu(const char *call)
{
  enum call_state kind;
  return role_of(call, &kind) == ROLE_GPU_WAIT;
}

void watch_begin(const char *call, const char *file, int line)
{
  enum call_state kind;
  enum call_role role = role_of(call, &kind);
  begin(call, file, line, kind, role);
}

void watch_begin_wait(const char *call, const char *file, int line)
{
  begin(call, file, line, CALL_WAIT, ROLE_OTHER);
}

void watch_end(void)
{
  if (my_slot == NULL)
    return;
  pthread_mutex_lock(&slots_lock);
  int d = --my_slot->depth;
  if (d < 0)
    my_slot->depth = 0;
  else if (d < MAX_DEPTH && my_slot->stack[d].role == ROLE_QUEUES)
    my_slot->queued++;
  else if (d < MAX_DEPTH && my_slot->stack[d].role == ROLE_GPU_WAIT)
    my_slot->waited = my_slot->queued;
  my_slot->ended_ms = monotonic_ms();
  pthread_mutex_unlock(&slots_lock);
}

int call_in_progress(int rank, char *call_text, size_t size, double *ms,
                     double *idle_ms, unsigned long *seq)
{
  int found = CALL_GONE;
  *seq = 0;
  pthread_mutex_lock(&slots_lock);
  for (int i = 0; i < nslots && found < 0; i++) {
    const call_slot *s = &slots[i];
    if (s->rank != rank)
      continue;
    *idle_ms = *ms = monotonic_ms() - s->ended_ms;
    *seq = s->seq;
    call_text[0] = '\0';
    found = s->depth > 0 ? CALL_OWN : CALL_NONE;
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
