/* Over 350 lines: one job, the queued work and when it runs, in one list.
 * ncclsim: the streams' queues of work (see sim.h). CUDA and NCCL queue
 * work on a stream and return before it runs; the simulation does the
 * same, at its least convenient: queued work runs only when a host call
 * must wait for it (a synchronisation of its stream, an event's, the
 * device's, a copy into host memory, a freeing call), never in the
 * background. So a program that reads a collective's result without
 * waiting for its stream reads the old bytes, and a rank that never queues
 * its collective leaves the others waiting in their synchronisation, as on
 * a GPU. */
#include "sim.h"
#include "garbage.h"

#include "ncclsim_device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct work {
  struct work *next;
  const void *queue; /* queue_key of its stream */
  const void *owner; /* the queuing thread (its per-thread stream key) */
  int device;
  int running; /* a thread is running it now */
  int rank;    /* the queuing thread's (sim_rank) */
  enum work_kind kind;
  void *dst;
  const void *src; /* WORK_COPY: read when it runs; NULL: `bytes` */
  size_t size;
  unsigned char *bytes; /* WORK_COPY staged at the call; WORK_MEMSET's value */
  sim_node node;        /* WORK_COLLECTIVE */
  struct CUevent_st *event;
  unsigned long record; /* WORK_EVENT: which record of the event */
  uint32_t correlation; /* its CUPTI API record's (cupti.c), or 0 */
  int copy_kind;        /* WORK_COPY: CUPTI's word for its direction */
  float fill_value;     /* WORK_FILL */
  int lets_next_start;  /* WORK_FILL */
  struct sim_kernel *kernel; /* WORK_KERNEL */
  struct order_mark *mark;   /* its place in the rank's stream order */
} work;

static work *queued; /* oldest first; guarded by `lock` */
static pthread_cond_t ran = PTHREAD_COND_INITIALIZER; /* a work ended */
static const char legacy_keys[1024];                    /* per device */
static _Thread_local char per_thread_stream_key = 'T';

/* The legacy default stream of the current device: one per device (its
 * context), shared by the device's threads. */
static const void *legacy_key(void)
{
  int d = current_device;
  return &legacy_keys[d >= 0 && d < (int)sizeof legacy_keys ? d : 0];
}

static int is_legacy(const void *key)
{
  return (const char *)key >= legacy_keys &&
         (const char *)key < legacy_keys + sizeof legacy_keys;
}

const void *queue_key(cudaStream_t stream, int ptds_entry)
{
  if (stream == cudaStreamPerThread || (stream == NULL && ptds_entry))
    return &per_thread_stream_key;
  if (stream == NULL || stream == cudaStreamLegacy)
    return legacy_key();
  return stream;
}

/* How long a work takes on the simulated GPU (clock.c). */
static long long duration_ns(const work *w)
{
  if (w->kind == WORK_COLLECTIVE)
    return work_ns(w->kind,
                   w->node.count * sim_element_size(&w->node) *
                       (w->node.allgather ? (size_t)w->node.comm->nranks : 1),
                   0, w->node.comm->rank);
  const int d2d =
      w->kind == WORK_COPY && (w->copy_kind == 8 || w->copy_kind == 10);
  return work_ns(w->kind, w->size * (w->kind == WORK_FILL ? sizeof(float) : 1),
                 d2d, w->rank);
}

/* Runs one work, without the lock: a collective waits for its peers. It
 * starts on its device's simulated clock when the work before it ended
 * (a collective: when every rank's has), and moves the clock to its end;
 * the wall time it takes here counts for nothing. */
static void run(const work *w)
{
  long long start_ns = gpu_now_ns(w->device);
  order_begin(w->mark);
  switch (w->kind) {
  case WORK_COPY: /* into or out of a window: the host's access */
    if (w->src != NULL)
      hb_host_access(w->src, w->size, HB_READ);
    hb_host_access(w->dst, w->size, HB_WRITE);
    memmove(w->dst, w->src ? w->src : w->bytes, w->size);
    if (cupti_copy != NULL)
      cupti_copy(w->correlation, w->device, w->copy_kind, w->size);
    break;
  case WORK_MEMSET:
    hb_host_access(w->dst, w->size, HB_WRITE);
    sim_memset(w->dst, w->bytes[0], w->size);
    break;
  case WORK_FILL:
    for (size_t i = 0; i < w->size; i++)
      ((float *)w->dst)[i] = w->fill_value;
    break;
  case WORK_COLLECTIVE:
    start_ns = run_collective(&w->node, start_ns);
    if (cupti_collective != NULL)
      cupti_collective(w->correlation, &w->node);
    break;
  case WORK_EVENT:
    w->event->when_ns = start_ns; /* before it reads as landed */
    __atomic_store_n(&w->event->landed, w->record, __ATOMIC_RELEASE);
    break;
  case WORK_KERNEL: run_kernel(w->kernel, w->correlation); break;
  case WORK_GEMM: /* not computed (cublas.c): it only takes its time */
  case WORK_NOTHING: break;
  }
  order_end(w->mark); /* checked against the rank's other streams, kept */
  gpu_busy_until(w->device, start_ns + duration_ns(w));
}

/* Runs the oldest queued work that `take` selects, after any earlier work
 * of its queue that another thread is running. Returns 0 if none is left,
 * else 1 and, in *was, the event and record of the work run (for
 * land_event). */
static int land_one(int (*take)(const work *, const void *), const void *arg,
                    work *was)
{
  pthread_mutex_lock(&lock);
  work *w;
  for (;;) {
    w = queued;
    while (w != NULL && !take(w, arg))
      w = w->next;
    if (w == NULL || !w->running)
      break;
    pthread_cond_wait(&ran, &lock); /* its queue's order: wait, look again */
  }
  if (w == NULL) {
    pthread_mutex_unlock(&lock);
    return 0;
  }
  w->running = 1;
  pthread_mutex_unlock(&lock);
  run(w);
  pthread_mutex_lock(&lock);
  int found;
  LIST_UNLINK(queued, w, found);
  (void)found;
  pthread_cond_broadcast(&ran);
  pthread_mutex_unlock(&lock);
  if (was != NULL)
    *was = *w;
  free(w->bytes);
  free(w);
  return 1;
}

static int in_queue(const work *w, const void *key) { return w->queue == key; }
/* The calling thread's work on its current device. */
static int mine_here(const work *w, const void *unused)
{
  (void)unused;
  return w->owner == &per_thread_stream_key && w->device == current_device;
}
/* Work that names communicator `comm`, or anything queued before it on
 * that work's queue (land_comm). */
static int of_comm(const work *w, const void *comm)
{
  return w->kind == WORK_COLLECTIVE && w->node.comm == comm;
}

void land_queue(const void *key)
{
  while (land_one(in_queue, key, NULL))
    ;
}

int kernels_queued_with(const void *devcomm_state)
{
  int n = 0;
  pthread_mutex_lock(&lock);
  for (const work *w = queued; w != NULL; w = w->next)
    n += w->kind == WORK_KERNEL && w->kernel->devcomm != NULL &&
         w->kernel->devcomm->sim == devcomm_state;
  pthread_mutex_unlock(&lock);
  return n;
}

void land_racing(const struct order_mark *read, const void *p, size_t bytes)
{
  for (;;) {
    /* the thread's queued work, oldest first: its queue, mark, and the
     * communicator of a kernel's device communicator */
    struct { const void *key; const struct order_mark *mark; ncclComm_t comm; } c[64];
    int n = 0;
    pthread_mutex_lock(&lock);
    for (const work *w = queued; w != NULL && n < 64; w = w->next)
      if (w->owner == &per_thread_stream_key && !w->running && w->mark) {
        const sim_devcomm *d = w->kind == WORK_KERNEL && w->kernel->devcomm
                                   ? w->kernel->devcomm->sim : NULL;
        c[n].key = w->queue, c[n].mark = w->mark;
        c[n++].comm = d != NULL ? d->comm : NULL;
      }
    pthread_mutex_unlock(&lock);
    int i = 0, unknown = 0;
    while (i < n && !order_races_read(c[i].mark, read, p, bytes, &unknown) &&
           !(unknown && c[i].comm && in_symmetric_window(c[i].comm, p, bytes)))
      i++;
    if (i == n)
      return;
    work was;
    while (land_one(in_queue, c[i].key, &was) && was.mark != c[i].mark)
      ;
  }
}

void land_device_work(void)
{
  while (land_one(mine_here, NULL, NULL))
    ;
}

void land_comm(const struct ncclComm *comm)
{
  for (;;) { /* the oldest collective of comm, and its queue before it */
    pthread_mutex_lock(&lock);
    const work *w = queued;
    while (w != NULL && !of_comm(w, comm))
      w = w->next;
    const void *key = w ? w->queue : NULL;
    pthread_mutex_unlock(&lock);
    if (key == NULL)
      return;
    work was;
    while (land_one(in_queue, key, &was) &&
           !(was.kind == WORK_COLLECTIVE && was.node.comm == comm))
      ;
  }
}

void drop_comm(const struct ncclComm *comm)
{
  pthread_mutex_lock(&lock);
  for (work **link = &queued; *link;) {
    work *w = *link;
    if (of_comm(w, comm) && !w->running) {
      *link = w->next;
      order_drop(w->mark);
      free(w->bytes);
      free(w);
    } else {
      link = &w->next;
    }
  }
  pthread_mutex_unlock(&lock);
}

void land_event(struct CUevent_st *event)
{
  const void *key = event->queue;
  while (__atomic_load_n(&event->landed, __ATOMIC_ACQUIRE) < event->recorded &&
         land_one(in_queue, key, NULL))
    ;
}

void drop_event(const struct CUevent_st *event)
{
  pthread_mutex_lock(&lock);
  for (work *w = queued; w; w = w->next)
    if (w->kind == WORK_EVENT && w->event == event)
      w->kind = WORK_NOTHING; /* the event is gone */
  pthread_mutex_unlock(&lock);
}

/* Work on the legacy default stream waits for every blocking stream of its
 * device and the thread's per-thread default stream, and work on those
 * waits for the legacy default stream; non-blocking streams wait for neither.
 * The simulation runs that earlier work at once (a host wait where a GPU
 * would only order the streams), so the order holds. */
static void order_after_other_streams(const void *key, cudaStream_t stream)
{
  if (is_legacy(key)) {
    for (;;) {
      pthread_mutex_lock(&lock);
      const void *other = NULL;
      for (const work *w = queued; w && !other; w = w->next)
        if (w->device == current_device && !is_legacy(w->queue) &&
            w->owner == &per_thread_stream_key) {
          if (w->queue == (const void *)&per_thread_stream_key)
            other = w->queue;
          for (const struct CUstream_st *s = streams; s; s = s->next)
            if ((const void *)s == w->queue && !s->nonblocking)
              other = w->queue;
        }
      pthread_mutex_unlock(&lock);
      if (other == NULL)
        return;
      land_queue(other);
    }
  }
  int waits_for_legacy = key == &per_thread_stream_key;
  if (!waits_for_legacy) {
    pthread_mutex_lock(&lock);
    for (const struct CUstream_st *s = streams; s; s = s->next)
      if (s == stream)
        waits_for_legacy = !s->nonblocking;
    pthread_mutex_unlock(&lock);
  }
  if (waits_for_legacy)
    land_queue(legacy_key());
}

void stream_sync_point(cudaStream_t stream, int ptds_entry)
{
  const void *key = queue_key(stream, ptds_entry);
  order_after_other_streams(key, stream);
  land_queue(key);
  order_host_waits(key);
}

int enqueue(cudaStream_t stream, int ptds_entry, const work_item *item)
{
  const void *key = queue_key(stream, ptds_entry);
  order_after_other_streams(key, stream);
  work *w = calloc(1, sizeof *w);
  size_t staged = item->kind == WORK_COPY && item->src == NULL ? item->size
                  : item->kind == WORK_MEMSET                  ? 1
                                                               : 0;
  unsigned char *bytes = staged ? malloc(staged) : NULL;
  if (w == NULL || (staged && bytes == NULL)) {
    free(w);
    free(bytes);
    return 0;
  }
  if (item->kind == WORK_COPY && item->src == NULL)
    memcpy(bytes, item->staged, item->size); /* the host's bytes, now */
  if (item->kind == WORK_MEMSET)
    bytes[0] = (unsigned char)item->value;
  *w = (work){.queue = key,
              .owner = &per_thread_stream_key,
              .rank = sim_rank(),
              .device = current_device,
              .kind = item->kind,
              .dst = item->dst,
              .src = item->src,
              .size = item->size,
              .bytes = bytes,
              .event = item->event,
              .correlation = cupti_launch != NULL && item->kind != WORK_GEMM
                                 ? cupti_launch()
                                 : 0, /* (cuBLAS's kernels: unrecorded) */
              .copy_kind = item->copy_kind,
              .fill_value = item->fill_value,
              .lets_next_start = item->lets_next_start,
              .kernel = item->kernel};
  if (item->kind == WORK_COLLECTIVE)
    w->node = item->node;
  const int kind = queue_kind(stream, ptds_entry);
  if (item->kind == WORK_EVENT)
    order_event_record(&item->event->order, key, kind);
  else
    w->mark = order_work(key, kind, item);
  const int early = item->kind == WORK_COLLECTIVE && reads_early(&item->node);
  pthread_mutex_lock(&lock);
  if (item->kind == WORK_EVENT) {
    w->record = ++item->event->recorded;
    item->event->queue = key;
  }
  /* At the end, or, where NCCL reads early (reads_early), before a kernel
   * of its stream that lets it start: it reads what was there before. */
  work **link = &queued, **before_kernel = NULL;
  for (; *link; link = &(*link)->next)
    if ((*link)->queue == key)
      before_kernel = (*link)->kind == WORK_FILL && (*link)->lets_next_start &&
                              !(*link)->running
                          ? link
                          : NULL;
  if (before_kernel != NULL && early)
    link = before_kernel;
  w->next = *link;
  *link = w;
  pthread_mutex_unlock(&lock);
  return 1;
}
