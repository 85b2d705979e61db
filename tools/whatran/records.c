/* libwhatran's records: the communicators of this process, their windows
 * and their collectives, as the wrappers (whatran.c) note them. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "whatran.h"

const char *const coll_names[NCOLLS] = {
    "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce",
    "CUDA graph replays"};

pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
comm_rec *comms;
int measuring = MEASURING_NOT_STARTED;
_Thread_local int group_depth;
_Thread_local int asking_nccl;

/* Communicators are labelled by their ncclUniqueId: the ranks of one
 * communicator that live in this process get one label. */
#define MAX_LABELS 256
static unsigned char label_ids[MAX_LABELS][sizeof(ncclUniqueId)];
static int nlabels;

comm_rec *find(ncclComm_t comm)
{
  for (comm_rec *c = comms; c; c = c->next)
    if (c->comm == comm && !c->done)
      return c;
  return NULL;
}

int label_of(const ncclUniqueId *id)
{
  for (int i = 0; i < nlabels; i++)
    if (memcmp(label_ids[i], id, sizeof *id) == 0)
      return i + 1;
  if (nlabels == MAX_LABELS)
    return 0;
  memcpy(label_ids[nlabels++], id, sizeof *id);
  return nlabels;
}

static void add_comm(ncclComm_t comm, int label, int rank, int nranks)
{
  comm_rec *c = calloc(1, sizeof *c);
  call *calls = calloc(MAX_CALLS, sizeof *calls);
  if (c == NULL || calls == NULL) {
    free(c);
    free(calls);
    return; /* out of memory: this communicator goes unsaid */
  }
  *c = (comm_rec){.comm = comm, .label = label, .rank = rank,
                  .nranks = nranks, .calls = calls, .next = comms};
  comms = c;
}

/* NCCL's calls that this library does not wrap, found as the wrappers
 * find theirs (loader.c): the dynamic linker would look for them in the
 * global scope only, and end the program where NCCL is not there. */
static ncclResult_t real_user_rank(ncclComm_t comm, int *rank)
{
  NEXT(ncclCommUserRank);
  return next_fn(comm, rank);
}

static ncclResult_t real_count(ncclComm_t comm, int *count)
{
  NEXT(ncclCommCount);
  return next_fn(comm, count);
}

/* Asks NCCL for c's rank and size once the communicator is ready: not
 * while an operation is in progress (NCCL 2.30.7's ncclCommUserRank then
 * fails and warns, src/init.cc ncclCommEnsureReady). A look at its state
 * (ncclCommGetAsyncError) says when; on a non-blocking communicator the
 * library takes no look of its own (a look that says ncclSuccess joins
 * NCCL's thread, src/init.cc, in the program's place), but waits for the
 * program's poll (READY_SAID), or the end of the program (LOOK_ANY).
 * Inside a group a communicator made there reads as ready, with 0 ranks:
 * asked again later. The lock held. */
void settle(comm_rec *c, enum look how)
{
  ncclResult_t state = ncclInProgress;
  if (c->rank >= 0 || (how == LOOK_IF_BLOCKING && c->nonblocking))
    return;
  if (how != READY_SAID &&
      (real_async_error(c->comm, &state) != ncclSuccess || state != ncclSuccess))
    return; /* an operation in progress, or a failed communicator */
  int rank = -1, nranks = 0;
  asking_nccl = 1;
  int known = real_user_rank(c->comm, &rank) == ncclSuccess &&
              real_count(c->comm, &nranks) == ncclSuccess;
  asking_nccl = 0;
  if (known && nranks > 0 && rank >= 0 && rank < nranks) {
    c->rank = rank;
    c->nranks = nranks;
  }
}

ncclResult_t real_async_error(ncclComm_t comm, ncclResult_t *state)
{
  NEXT(ncclCommGetAsyncError);
  return next_fn(comm, state);
}

void now_ready(ncclComm_t comm)
{
  pthread_mutex_lock(&lock);
  splits_ready(comm);
  comm_rec *c = find(comm);
  if (c == NULL)
    c = adopt_split(comm);
  if (c != NULL) {
    settle(c, READY_SAID);
    for (int i = 0; i < c->nwindows; i++) {
      window *w = &c->windows[i];
      if (w->live && !w->read && w->where != NULL && w->thread == 0) {
        w->handle = *w->where;
        w->read = 1;
        w->where = NULL;
      }
    }
  }
  pthread_mutex_unlock(&lock);
}

void settle_all(enum look how)
{
  for (comm_rec *c = comms; c; c = c->next)
    if (!c->done)
      settle(c, how);
}

comm_rec *note_comm_locked(ncclComm_t comm, int label, int nonblocking)
{
  if (find(comm) == NULL)
    add_comm(comm, label, -1, 0);
  comm_rec *c = find(comm);
  if (c != NULL)
    c->nonblocking |= nonblocking;
  return c;
}

/* A communicator just made: its rank and size from NCCL, now or (inside a
 * group, or while a non-blocking init runs) later. */
void note_comm(ncclComm_t comm, int label, int nonblocking)
{
  pthread_mutex_lock(&lock);
  comm_rec *c = note_comm_locked(comm, label, nonblocking);
  if (c != NULL)
    settle(c, LOOK_IF_BLOCKING);
  pthread_mutex_unlock(&lock);
}

int is_nonblocking(ncclComm_t comm)
{
  pthread_mutex_lock(&lock);
  comm_rec *c = find(comm);
  int nonblocking = c ? c->nonblocking : 0;
  pthread_mutex_unlock(&lock);
  return nonblocking;
}

/* The size of comm as far as known, else 0: no NCCL call. */
int size_of(ncclComm_t comm)
{
  pthread_mutex_lock(&lock);
  comm_rec *c = find(comm);
  int n = c ? c->nranks : 0;
  pthread_mutex_unlock(&lock);
  return n;
}

/* Its rank as far as known, else -1. */
int rank_of(ncclComm_t comm)
{
  pthread_mutex_lock(&lock);
  comm_rec *c = find(comm);
  int r = c ? c->rank : -1;
  pthread_mutex_unlock(&lock);
  return r;
}

/* The window of c that holds [p, p + bytes), or NULL; *null: a
 * registration holding it came back NULL. */
static const window *window_of(comm_rec *c, const void *p, size_t bytes,
                               int *null)
{
  const char *b = p;
  for (int i = 0; i < c->nwindows; i++) {
    window *w = &c->windows[i];
    if (!w->live || !w->read || b < w->buf || b + bytes > w->buf + w->size)
      continue;
    if (w->handle != NULL)
      return w;
    *null = 1;
  }
  return NULL;
}

/* A communicator first met in a collective: the result of a split that
 * NCCL wrote after the call returned (splits.c), or one made by a call
 * this library does not wrap, noted then, a communicator of its own. */
static comm_rec *met(ncclComm_t comm)
{
  comm_rec *split = adopt_split(comm);
  if (split != NULL)
    return split;
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  memcpy(id.internal, "met:", 4);
  memcpy(id.internal + 4, &comm, sizeof comm);
  add_comm(comm, label_of(&id), -1, 0);
  return find(comm);
}

void note_call(ncclComm_t comm, enum coll coll, const call *what,
               const void *send, const void *recv, cudaStream_t stream,
               uint64_t t0, uint64_t t1)
{
  enum cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (stream != NULL && cudaStreamIsCapturing(stream, &capture) != cudaSuccess)
    capture = cudaStreamCaptureStatusNone;
  if (measuring == MEASURING_NOT_STARTED)
    start_measuring();
  pthread_mutex_lock(&lock);
  comm_rec *c = find(comm);
  if (c == NULL && comm != NULL)
    c = met(comm);
  if (c != NULL && what->in_progress)
    c->nonblocking = 1;
  if (c != NULL)
    settle(c, LOOK_IF_BLOCKING);
  if (c != NULL && c->ncalls == MAX_CALLS)
    c->unrecorded++;
  else if (c != NULL) {
    call *k = &c->calls[c->ncalls++];
    *k = *what;
    k->coll = coll;
    k->bytes = what->send_bytes > what->recv_bytes ? what->send_bytes
                                                   : what->recv_bytes;
    k->captured = capture != cudaStreamCaptureStatusNone;
    k->thread = engine_probe_thread();
    k->t0 = t0;
    k->t1 = t1;
    k->in_group = group_depth > 0;
    k->send_in = window_of(c, send, what->send_bytes, &k->send_null) != NULL;
    k->recv_in = window_of(c, recv, what->recv_bytes, &k->recv_null) != NULL;
  }
  pthread_mutex_unlock(&lock);
}

/* ncclGroupEnd ended: this thread's calls of the group end with it, and
 * the handles it registered in the group are written now. */
void end_group(uint64_t t1)
{
  uint32_t me = engine_probe_thread();
  pthread_mutex_lock(&lock);
  settle_all(LOOK_IF_BLOCKING);
  for (comm_rec *c = comms; c; c = c->next) {
    for (int i = 0; i < c->ncalls; i++)
      if (c->calls[i].in_group && c->calls[i].thread == me &&
          c->calls[i].t1 < t1 && !c->done)
        c->calls[i].t1 = t1;
    for (int i = 0; i < c->nwindows; i++) {
      window *w = &c->windows[i];
      if (w->live && !w->read && w->where != NULL && w->thread == me &&
          me != 0) {
        w->handle = *w->where;
        w->read = 1;
        w->where = NULL;
      }
    }
  }
  pthread_mutex_unlock(&lock);
}

/* One line of the report: on stderr, or appended to WHATRAN_OUT. */
void say(const char *fmt, ...)
{
  const char *path = getenv("WHATRAN_OUT");
  FILE *out = path && *path ? fopen(path, "a") : stderr;
  if (out == NULL) {
    fprintf(stderr, "libwhatran: WHATRAN_OUT=%s cannot be opened\n", path);
    out = stderr;
  }
  va_list ap;
  va_start(ap, fmt);
  vfprintf(out, fmt, ap);
  va_end(ap);
  if (out != stderr)
    fclose(out);
}
