/* ncclsim: the order of one rank's work on its streams, as CUDA defines
 * it, and the races between its streams (see sim.h). hb.c orders what
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
 * before it). When it runs, what it touched of device memory (a copy's or
 * memset's bytes, a collective's buffers, the span from the lowest to the
 * highest byte a kernel touched of each buffer, apart for reads, writes
 * and atomics) is checked against the work of the rank that ran before
 * and is not ordered with it: a byte both touch, one of them writing
 * (two atomics do not conflict), is the rule stream-data-race, which
 * names both works, their streams and where they were queued, and the
 * order that is missing. */
#include "sim.h"
#include "shadow.h" /* exe_offset, line_of */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 64 /* streams of one thread at once */
#define SITES 6

enum { SLOT_FREE = 0, SLOT_LEGACY = ORDER_LEGACY,
       SLOT_PER_THREAD = ORDER_PER_THREAD, SLOT_BLOCKING = ORDER_BLOCKING,
       SLOT_NONBLOCKING = ORDER_NONBLOCKING };

typedef struct span {
  const unsigned char *base; /* the buffer (a kernel's spans are per buffer) */
  const unsigned char *lo, *hi; /* [lo, hi) */
  int writes, atomic;
} span;

struct order_mark {
  struct order_mark *next;
  struct rank_order *ro;
  int slot;
  uint32_t seq;          /* its place on its stream */
  uint32_t vc[SLOTS];    /* what of each stream is ordered before it */
  char what[96];         /* "cudaMemsetAsync", "kernel k" */
  uint32_t site[SITES];  /* where the program queued it (sites.c), 0: no
                            more: its call, and the calls around it */
  unsigned long queued;  /* the thread's how manieth work */
  span *spans;
  int nspans, cap;
};

typedef struct rank_order {
  struct rank_order *next;
  const void *key[SLOTS];   /* each slot's queue (queue_key) */
  int kind[SLOTS];
  unsigned label[SLOTS];    /* its stream's number, for messages */
  uint32_t stream[SLOTS][SLOTS]; /* the clock of each stream's last work */
  uint32_t host[SLOTS];     /* what the host has waited for */
  unsigned streams_made;
  unsigned long queued;
  struct order_mark *done, *pending; /* run (kept while they may race), and queued */
} rank_order;

static pthread_mutex_t order_lock = PTHREAD_MUTEX_INITIALIZER;
static rank_order *orders;
static _Thread_local rank_order *mine;
static _Thread_local struct order_mark *current; /* the work running here */
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
static void prune(rank_order *ro)
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

static const char *stream_name(const rank_order *ro, int s, char *buf,
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
  prune(ro);
  pthread_mutex_unlock(&order_lock);
}

void order_host_waits_all(void)
{
  rank_order *ro = this_thread();
  pthread_mutex_lock(&order_lock);
  for (int s = 0; s < SLOTS; s++)
    join(ro->host, ro->stream[s]);
  prune(ro);
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
  prune(ro);
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

/* A touch of [p, p + bytes) of the buffer at base, by the work m. */
static void touch(struct order_mark *m, const void *base, const void *p,
                  size_t bytes, int writes, int atomic)
{
  const unsigned char *lo = p, *hi = lo + bytes;
  for (int i = 0; i < m->nspans; i++) {
    span *s = &m->spans[i];
    if (s->base == base && s->writes == writes && s->atomic == atomic) {
      if (lo < s->lo)
        s->lo = lo;
      if (hi > s->hi)
        s->hi = hi;
      return;
    }
  }
  if (m->nspans == m->cap) {
    const int cap = m->cap ? 2 * m->cap : 4;
    span *more = realloc(m->spans, (size_t)cap * sizeof *more);
    if (more == NULL)
      sim_failure("a stream's work", "no memory for what it touched");
    m->spans = more, m->cap = cap;
  }
  m->spans[m->nspans++] = (span){base, lo, hi, writes, atomic};
}

void order_touch(struct order_mark *m, const void *p, size_t bytes, int writes)
{
  if (m != NULL && p != NULL && bytes > 0)
    touch(m, p, p, bytes, writes, 0);
}

/* A kernel's access (access.c), in the buffer at base. */
void order_kernel_access(const void *base, const void *p, size_t bytes,
                         int writes, int atomic)
{
  if (current != NULL)
    touch(current, base, p, bytes, writes, atomic);
}

void order_begin(struct order_mark *m) { current = m; }

/* Is queued work m unordered with `read` (a read of [p, p + bytes) that
 * is about to run), and does it write any of those bytes, as far as is
 * known before it runs? *unknown: what it touches is known only once it
 * runs (a kernel's). */
int order_races_read(const struct order_mark *m, const struct order_mark *read,
                     const void *p, size_t bytes, int *unknown)
{
  *unknown = 0;
  if (m == NULL || read == NULL || m->ro != read->ro)
    return 0;
  pthread_mutex_lock(&order_lock);
  int races = 0;
  if (read->vc[m->slot] < m->seq && m->vc[read->slot] < read->seq) {
    const unsigned char *lo = p, *hi = lo + bytes;
    *unknown = m->nspans == 0;
    for (int i = 0; i < m->nspans && !races; i++)
      races = m->spans[i].writes && m->spans[i].lo < hi && lo < m->spans[i].hi;
  }
  pthread_mutex_unlock(&order_lock);
  return races;
}

/* "main.cu:63": the first of m's places that is a line of a source file
 * (a header's wrapper is passed by), else "". */
static void site_of(const struct order_mark *m, char *buf, size_t len)
{
  char line[160];
  buf[0] = '\0';
  for (int i = 0; i < SITES && m->site[i] != 0; i++) {
    line_of(m->site[i], line, sizeof line);
    const char *colon = strrchr(line, ':');
    if (line[0] == '\0' || (colon && colon > line + 1 && colon[-2] == '.' &&
                             colon[-1] == 'h'))
      continue;
    snprintf(buf, len, "%s", line);
    return;
  }
}

static void report(const struct order_mark *now, const span *a,
                   const struct order_mark *other, const span *b)
{
  const rank_order *ro = now->ro;
  const struct order_mark *first = now->queued < other->queued ? now : other;
  const struct order_mark *second = first == now ? other : now;
  char s1[96], s2[96], at1[160] = "", at2[160] = "", where[160] = "";
  const unsigned char *lo = a->lo > b->lo ? a->lo : b->lo;
  site_of(now, at1, sizeof at1);
  site_of(other, at2, sizeof at2);
  pthread_mutex_lock(&lock);
  const sim_alloc *buf = find_alloc(lo, 1);
  if (buf != NULL)
    snprintf(where, sizeof where, "byte %zu of the %zu-byte buffer at %p",
             (size_t)(lo - buf->base), buf->size, (void *)buf->base);
  else
    snprintf(where, sizeof where, "the byte at %p", (const void *)lo);
  pthread_mutex_unlock(&lock);
  violation(NULL, "stream-data-race", now->what,
            "%s%s%s on %s %s %s, which %s%s%s on %s %s, and nothing orders"
            " the two (work on two streams is unordered but for a host wait"
            " or an event): record an event after %s (cudaEventRecord on"
            " its stream) and cudaStreamWaitEvent on %s's stream before"
            " queuing it, or synchronize %s's stream (cudaStreamSynchronize)"
            " before queuing %s",
            now->what, at1[0] ? " at " : "", at1,
            stream_name(ro, now->slot, s1, sizeof s1),
            a->writes ? "writes" : "reads", where, other->what,
            at2[0] ? " at " : "", at2,
            stream_name(ro, other->slot, s2, sizeof s2),
            b->writes ? "writes" : "reads", first->what, second->what,
            first->what, second->what);
}

/* The work m ran: checked against the rank's work that ran before it and
 * is not ordered with it, then kept. */
void order_end(struct order_mark *m)
{
  current = NULL;
  if (m == NULL)
    return;
  rank_order *ro = m->ro;
  pthread_mutex_lock(&order_lock);
  for (const struct order_mark *o = ro->done; o; o = o->next) {
    if (o->vc[m->slot] >= m->seq || m->vc[o->slot] >= o->seq)
      continue; /* ordered */
    for (int i = 0; i < m->nspans; i++)
      for (int j = 0; j < o->nspans; j++) {
        const span *a = &m->spans[i], *b = &o->spans[j];
        if (a->lo < b->hi && b->lo < a->hi && (a->writes || b->writes) &&
            !(a->atomic && b->atomic)) {
          pthread_mutex_unlock(&order_lock);
          report(m, a, o, b);
        }
      }
  }
  int found;
  LIST_UNLINK(ro->pending, m, found);
  (void)found;
  m->next = ro->done;
  ro->done = m;
  prune(ro);
  pthread_mutex_unlock(&order_lock);
}

/* A work that never runs (its communicator aborted, its event gone). */
void order_drop(struct order_mark *m)
{
  if (m == NULL)
    return;
  pthread_mutex_lock(&order_lock);
  int found;
  LIST_UNLINK(m->ro->pending, m, found);
  (void)found;
  pthread_mutex_unlock(&order_lock);
  free(m->spans);
  free(m);
}

/* Memory freed: what any work touched of it is forgotten (a later buffer
 * may take its place). */
void order_forget(const void *base, size_t bytes)
{
  const unsigned char *lo = base, *hi = lo + bytes;
  pthread_mutex_lock(&order_lock);
  for (rank_order *ro = orders; ro; ro = ro->next)
    for (struct order_mark *m = ro->done; m; m = m->next)
      for (int i = 0; i < m->nspans; i++)
        if (m->spans[i].lo < hi && lo < m->spans[i].hi)
          m->spans[i].lo = m->spans[i].hi = NULL; /* meets nothing */
  pthread_mutex_unlock(&order_lock);
}
