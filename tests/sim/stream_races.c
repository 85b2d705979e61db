/* ncclsim: the races between one rank's streams (see sim.h; order.c
 * orders them). When a queued work runs, what it touched of device memory
 * (a copy's or memset's bytes, a collective's buffers, the span from the
 * lowest to the highest byte a kernel touched of each buffer, apart for
 * reads, writes and atomics) is checked against the work of the rank that
 * ran before and is not ordered with it: a byte both touch, one of them
 * writing (two atomics do not conflict), is the rule stream-data-race,
 * which names both works, their streams and where they were queued, and
 * the order that is missing. */
#include "order_state.h"
#include "shadow.h" /* exe_offset, line_of */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local struct order_mark *current; /* the work running here */

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

struct order_mark *order_work(const void *key, int kind, const work_item *item)
{
  char what[96];
  const sim_node *n = &item->node;
  switch (item->kind) {
  case WORK_KERNEL:
    snprintf(what, sizeof what, "kernel %s", item->kernel->name);
    break;
  case WORK_COLLECTIVE:
    snprintf(what, sizeof what, "%s", n->allgather ? "ncclAllGather" : "ncclAllReduce");
    break;
  case WORK_FILL: snprintf(what, sizeof what, "kernel fill"); break;
  default:
    snprintf(what, sizeof what, "%s", item->call ? item->call
                                      : item->kind == WORK_MEMSET ? "cudaMemsetAsync"
                                                                  : "a copy");
  }
  struct order_mark *m = order_queue(key, kind, what);
  if (item->kind == WORK_COPY || item->kind == WORK_MEMSET) {
    order_touch(m, item->dst, item->size, 1);
    order_touch(m, item->src, item->size, 0);
  } else if (item->kind == WORK_FILL) {
    order_touch(m, item->dst, item->size * sizeof(float), 1);
  } else if (item->kind == WORK_COLLECTIVE) {
    const size_t bytes = n->count * sim_element_size(n);
    order_touch(m, n->send, bytes, 0);
    order_touch(m, n->recv, n->allgather ? bytes * (size_t)n->comm->nranks : bytes, 1);
  }
  return m;
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
            order_stream_name(ro, now->slot, s1, sizeof s1),
            a->writes ? "writes" : "reads", where, other->what,
            at2[0] ? " at " : "", at2,
            order_stream_name(ro, other->slot, s2, sizeof s2),
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
  order_prune(ro);
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
