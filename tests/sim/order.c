/* ncclsim: the order of one rank's work on its streams, as CUDA defines
 * it (see sim.h; stream_races.c checks the work against it). hb.c orders what
 * the ranks' kernels do to each other's windows; this file orders what
 * one rank queues on its streams against each other:
 *  - work on one stream runs in the order it was queued, after what the
 *    host had waited for when it queued it;
 *  - work on two streams is unordered unless the host waited between
 *    (cudaStreamSynchronize, cudaEventSynchronize, cudaDeviceSynchronize,
 *    a copy into host memory), an event orders it (cudaEventRecord on the
 *    first, cudaStreamWaitEvent on the second), or the legacy default
 *    stream's implicit synchronisation does: work on it waits for the
 *    work queued before on every blocking stream (cudaStreamCreate) and on
 *    the thread's per-thread default stream, and theirs for its. A
 *    non-blocking stream (cudaStreamNonBlocking) has none of that, and the
 *    per-thread default stream (what a program built with
 *    --default-stream per-thread uses) is ordered with no other stream
 *    but the legacy one.
 * Each queued work gets a vector clock over the thread's streams when it is
 * queued (one entry a stream: how much of that stream's work is ordered
 * before it). */
#include "order_state.h"
#include "shadow.h" /* exe_offset */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pthread_mutex_t order_lock = PTHREAD_MUTEX_INITIALIZER;
rank_order *orders;
static _Thread_local rank_order *mine;
_Thread_local const void *order_caller;          /* the program's call */
_Thread_local void *order_frames[ORDER_FRAMES]; /* ... or these (a launch) */
_Thread_local int order_nframes;

static void join(uint32_t *into, const uint32_t *from)
{
  for (int i = 0; i < SLOTS; i++)
    if (from[i] > into[i])
      into[i] = from[i];
}

static rank_order *this_thread(void)
{
  if (mine == NULL) {
    mine = calloc(1, sizeof *mine);
    if (mine == NULL)
      sim_failure("a stream's work", "no memory for its order");
    pthread_mutex_lock(&order_lock);
    mine->next = orders;
    orders = mine;
    pthread_mutex_unlock(&order_lock);
  }
  return mine;
}

static int slot_used(const rank_order *ro, int s)
{
  for (const struct order_mark *m = ro->done; m; m = m->next)
    if (m->slot == s)
      return 1;
  for (const struct order_mark *m = ro->pending; m; m = m->next)
    if (m->slot == s)
      return 1;
  return 0;
}

/* The slot of queue `key` (kind: what stream it is), made if new. A slot
 * is used again only once nothing kept is of it, and its count goes on, so
 * that no clock that knew the old stream orders the new one. */
static int slot_of(rank_order *ro, const void *key, int kind)
{
  int free_slot = -1;
  for (int s = 0; s < SLOTS; s++) {
    if (ro->kind[s] != SLOT_FREE && ro->key[s] == key)
      return s;
    if (ro->kind[s] == SLOT_FREE && free_slot < 0 && !slot_used(ro, s))
      free_slot = s;
  }
  if (free_slot < 0)
    sim_failure("a stream's work", "more than %d streams of one thread"
                " (not simulated)", SLOTS);
  const uint32_t count = ro->stream[free_slot][free_slot];
  memset(ro->stream[free_slot], 0, sizeof ro->stream[free_slot]);
  ro->stream[free_slot][free_slot] = count;
  ro->key[free_slot] = key;
  ro->kind[free_slot] = kind;
  ro->label[free_slot] = kind == SLOT_BLOCKING || kind == SLOT_NONBLOCKING
                             ? ++ro->streams_made : 0;
  return free_slot;
}

/* The work kept: what ran and may still race with work queued or to be
 * queued (not yet ordered after it by the host and every queued work). */
void order_prune(rank_order *ro)
{
  if (ro->done == NULL)
    return;
  uint32_t least[SLOTS]; /* of each stream, what every queued work is after */
  memcpy(least, ro->host, sizeof least);
  for (const struct order_mark *p = ro->pending; p; p = p->next)
    for (int i = 0; i < SLOTS; i++)
      if (p->vc[i] < least[i])
        least[i] = p->vc[i];
  for (struct order_mark **link = &ro->done; *link;) {
    struct order_mark *m = *link;
    if (least[m->slot] < m->seq) {
      link = &m->next;
    } else {
      *link = m->next;
      free(m->spans);
      free(m);
    }
  }
}

const char *order_stream_name(const rank_order *ro, int s, char *buf,
                              size_t len)
{
  switch (ro->kind[s]) {
  case SLOT_LEGACY: return "the legacy default stream";
  case SLOT_PER_THREAD: return "the per-thread default stream";
  default:
    snprintf(buf, len, "stream %u (the %s stream it created %s)", ro->label[s],
             ro->kind[s] == SLOT_BLOCKING ? "blocking" : "non-blocking",
             ro->label[s] == 1 ? "first" : ro->label[s] == 2 ? "second"
             : ro->label[s] == 3 ? "third" : "later");
    return buf;
  }
}

int queue_kind(cudaStream_t stream, int ptds_entry)
{
  const void *key = queue_key(stream, ptds_entry);
  if (key == queue_key(NULL, 0))
    return ORDER_LEGACY;
  if (key == queue_key(cudaStreamPerThread, 0))
    return ORDER_PER_THREAD;
  int kind = ORDER_BLOCKING;
  pthread_mutex_lock(&lock);
  for (const struct CUstream_st *s = streams; s; s = s->next)
    if (s == stream && s->nonblocking)
      kind = ORDER_NONBLOCKING;
  pthread_mutex_unlock(&lock);
  return kind;
}

struct order_mark *order_queue(const void *key, int kind, const char *what)
{
  struct order_mark *m = calloc(1, sizeof *m);
  if (m == NULL)
    return NULL;
  rank_order *ro = this_thread();
  pthread_mutex_lock(&order_lock);
  const int s = slot_of(ro, key, kind);
  uint32_t *clock = ro->stream[s];
  join(clock, ro->host);
  for (int o = 0; o < SLOTS; o++) /* the legacy default stream's order */
    if (o != s && ((kind == SLOT_LEGACY &&
                    (ro->kind[o] == SLOT_BLOCKING || ro->kind[o] == SLOT_PER_THREAD)) ||
                   ((kind == SLOT_BLOCKING || kind == SLOT_PER_THREAD) &&
                    ro->kind[o] == SLOT_LEGACY)))
      join(clock, ro->stream[o]);
  clock[s]++;
  m->ro = ro, m->slot = s, m->seq = clock[s];
  memcpy(m->vc, clock, sizeof m->vc);
  snprintf(m->what, sizeof m->what, "%s", what);
  if (order_nframes > 0) { /* a kernel's launch: from a header's wrapper */
    for (int i = 0; i < order_nframes && i < SITES; i++)
      m->site[i] = exe_offset(order_frames[i]);
    order_nframes = 0;
  } else {
    m->site[0] = order_caller ? exe_offset(order_caller) : 0;
  }
  m->queued = ++ro->queued;
  m->next = ro->pending;
  ro->pending = m;
  pthread_mutex_unlock(&order_lock);
  return m;
}

/* The host waited for the work queued on the stream of `key` (for the
 * legacy default stream: and on the streams it waits for). */
void order_host_waits(const void *key)
{
  rank_order *ro = this_thread();
  pthread_mutex_lock(&order_lock);
  int legacy = 0;
  for (int s = 0; s < SLOTS; s++)
    if (ro->kind[s] != SLOT_FREE && ro->key[s] == key) {
      join(ro->host, ro->stream[s]);
      legacy = ro->kind[s] == SLOT_LEGACY;
    }
  for (int s = 0; s < SLOTS && legacy; s++)
    if (ro->kind[s] == SLOT_BLOCKING || ro->kind[s] == SLOT_PER_THREAD)
      join(ro->host, ro->stream[s]);
  order_prune(ro);
  pthread_mutex_unlock(&order_lock);
}

void order_host_waits_all(void)
{
  rank_order *ro = this_thread();
  pthread_mutex_lock(&order_lock);
  for (int s = 0; s < SLOTS; s++)
    join(ro->host, ro->stream[s]);
  order_prune(ro);
  pthread_mutex_unlock(&order_lock);
}

/* An event recorded on the stream of `key` (kind: ORDER_...): its clock
 * then, kept in *clock (freed with order_event_gone); a host or a stream
 * that waits for it joins it. */
struct order_clock {
  const rank_order *ro;
  uint32_t vc[SLOTS];
};

void order_event_record(struct order_clock **clock, const void *key, int kind)
{
  struct order_mark *m = order_queue(key, kind, "cudaEventRecord");
  if (m == NULL)
    return;
  if (*clock == NULL)
    *clock = malloc(sizeof **clock);
  pthread_mutex_lock(&order_lock);
  if (*clock != NULL) {
    (*clock)->ro = m->ro;
    memcpy((*clock)->vc, m->vc, sizeof m->vc);
  }
  int found;
  LIST_UNLINK(m->ro->pending, m, found);
  (void)found;
  pthread_mutex_unlock(&order_lock);
  free(m);
}

void order_event_gone(struct order_clock *clock) { free(clock); }

/* Only an event of the same thread orders: its streams are the ones its
 * clock counts (another thread's event orders nothing here: never
 * kinder). */
void order_host_waits_event(const struct order_clock *clock)
{
  rank_order *ro = this_thread();
  if (clock == NULL || clock->ro != ro)
    return;
  pthread_mutex_lock(&order_lock);
  join(ro->host, clock->vc);
  order_prune(ro);
  pthread_mutex_unlock(&order_lock);
}

void order_stream_waits_event(const void *key, int kind,
                              const struct order_clock *clock)
{
  rank_order *ro = this_thread();
  if (clock == NULL || clock->ro != ro)
    return;
  pthread_mutex_lock(&order_lock);
  join(ro->stream[slot_of(ro, key, kind)], clock->vc);
  pthread_mutex_unlock(&order_lock);
}

/* cudaStreamDestroy: its slot may go to another stream. */
void order_stream_gone(const void *key)
{
  rank_order *ro = this_thread();
  pthread_mutex_lock(&order_lock);
  for (int s = 0; s < SLOTS; s++)
    if (ro->kind[s] != SLOT_FREE && ro->key[s] == key)
      ro->kind[s] = SLOT_FREE, ro->key[s] = NULL;
  pthread_mutex_unlock(&order_lock);
}
