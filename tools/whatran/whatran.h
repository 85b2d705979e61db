/* libwhatran.so's parts (tools/whatran): the records of communicators,
 * windows and calls (records.c), their classification and the report at
 * exit (report.c), and the wrapped NCCL calls (whatran.c, whose header
 * says what the library does). Everything here is hidden from the program
 * the library is preloaded into: only the wrappers are its interface. */
#ifndef WHATRAN_H
#define WHATRAN_H

#include <pthread.h>
#include <stdint.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "calls.h"
#include "engine.h"
#include "what_ran.h"

#pragma GCC visibility push(hidden)

#define MAX_WINDOWS 64
#define MAX_CALLS   4096
#define TEXT        512

enum coll { ALLREDUCE, ALLGATHER, REDUCESCATTER, BROADCAST, REDUCE, REPLAY,
            NCOLLS };
extern const char *const coll_names[NCOLLS];

typedef struct window {
  const char *buf;
  size_t size;
  ncclWindow_t *where; /* the program's handle: read once NCCL wrote it */
  ncclWindow_t handle;
  int live;
} window;

typedef struct call {
  enum coll coll;
  size_t bytes;          /* the larger of its buffers */
  int send_in, recv_in;  /* each buffer inside a window of the communicator */
  int send_null, recv_null; /* ... inside a registration whose handle is NULL */
  int captured;          /* queued into a CUDA graph being captured */
  uint32_t thread;
  uint64_t t0, t1;
  int in_group;          /* t1 is the end of its group's ncclGroupEnd */
  char ran[256];         /* its outcome, once classified */
  enum what_class cls;
} call;

typedef struct comm_rec {
  ncclComm_t comm;
  int label;             /* communicator N, as this process numbers them */
  int rank, nranks;
  int done;              /* destroyed: classified, and its handle reusable */
  window windows[MAX_WINDOWS];
  int nwindows;
  call *calls;
  int ncalls;
  long unrecorded;       /* calls past MAX_CALLS */
  struct comm_rec *next;
} comm_rec;

extern pthread_mutex_t lock;      /* held for every record below */
extern comm_rec *comms;          /* newest first */
extern int measuring;            /* -1: not started; then engine_probe_start's */
extern _Thread_local int group_depth; /* inside ncclGroupStart .. End */

/* records.c (the lock held unless said) */
comm_rec *find(ncclComm_t comm);
int label_of(const ncclUniqueId *id);
void settle(comm_rec *c);
void note_comm(ncclComm_t comm, int label);       /* takes the lock */
int size_of(ncclComm_t comm);                     /* takes the lock */
void note_call(ncclComm_t comm, enum coll coll, const void *send,
               size_t send_bytes, const void *recv, size_t recv_bytes,
               cudaStream_t stream, uint64_t t0, uint64_t t1); /* takes it */
void end_group(uint64_t t1);                      /* takes the lock */

/* report.c */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void classify(comm_rec *c);
void report(void); /* at exit, once measuring started */

#pragma GCC visibility pop

#endif
