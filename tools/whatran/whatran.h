/* libwhatran.so's parts (tools/whatran): the records of communicators,
 * windows and calls (records.c), their classification and the report at
 * exit (report.c), the wrapped NCCL calls (whatran.c, whose header says
 * what the library does, and collectives.c), and NCCL, CUPTI and the CUDA
 * runtime found at run time wherever the process loaded them (loader.c).
 * Everything here is hidden from the program the library is preloaded
 * into: only the wrappers are its interface. */
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
  ncclWindow_t *where;   /* inside a group: the program's handle, read at
                            the group's end (then NULL); on a non-blocking
                            communicator, once the program's poll of
                            ncclCommGetAsyncError says ncclSuccess */
  uint32_t thread;       /* ... by the thread that registered it */
  ncclWindow_t handle;   /* what NCCL wrote: NULL is no window */
  int read;              /* handle is what NCCL wrote */
  int live;
} window;

typedef struct call {
  enum coll coll;
  size_t send_bytes, recv_bytes;
  size_t bytes;          /* the larger of its buffers */
  int in_place;          /* works in place: at one rank, nothing to move */
  int send_in, recv_in;  /* each buffer inside a window of the communicator */
  int send_null, recv_null; /* ... inside a registration whose handle is NULL */
  int captured;          /* queued into a CUDA graph being captured */
  uint32_t thread;
  uint64_t t0, t1;
  int in_group;          /* t1 is the end of its group's ncclGroupEnd */
  int in_progress;       /* it returned ncclInProgress: a non-blocking
                            communicator, whose work NCCL's own thread
                            launches after the call */
  char ran[256];         /* its outcome, once classified */
  enum what_class cls;
} call;

typedef struct comm_rec {
  ncclComm_t comm;
  int label;             /* communicator N, as this process numbers them */
  int rank, nranks;      /* -1 and 0 until NCCL said them */
  int nonblocking;       /* NCCL's thread does its work: the library never
                            asks its state, and waits for the program's poll */
  int done;              /* destroyed: classified, and its handle reusable */
  window windows[MAX_WINDOWS];
  int nwindows;
  call *calls;
  int ncalls;
  long unrecorded;       /* calls past MAX_CALLS */
  struct comm_rec *next;
} comm_rec;

/* measuring: engine_probe_start's 1 (CUPTI records) or 0, or one of: */
#define MEASURING_NOT_STARTED (-1)
#define MEASURING_FORKED 2 /* a child forked from this process: no CUPTI */

extern pthread_mutex_t lock;      /* held for every record below */
extern comm_rec *comms;          /* newest first */
extern int measuring;            /* MEASURING_NOT_STARTED, then as above */
extern _Thread_local int group_depth; /* inside ncclGroupStart .. End */
extern _Thread_local int asking_nccl; /* settle's calls of NCCL run */

/* loader.c */
/* The definition of `name` in an object this process loaded, other than
 * this library and the program, wherever it was loaded: in the global
 * scope or inside a library opened with RTLD_LOCAL, as Python opens
 * PyTorch's libtorch_cuda.so and, with it, libnccl.so.2 (no dlsym on a
 * global handle sees it there). NULL if none. */
void *find_loaded(const char *name);
/* NCCL's definition of `name`: the next one after this library
 * (dlsym(RTLD_NEXT)), else find_loaded's. NULL if none. */
void *next_of(const char *name);
/* A wrapped call that no loaded library defines (NCCL not loaded, or older
 * than the call): says so on stderr, once per call name (*said), and
 * returns ncclSystemError. It never ends the program. */
ncclResult_t no_nccl(const char *name, int *said);
/* `next_fn`: the real call, resolved at its first use that finds it (an
 * atomic pointer: threads may resolve it at once, and get the same
 * value); where none is found, the wrapper returns no_nccl's result. */
#define NEXT(name)                                                             \
  static __typeof__(name) *next_##name;                                        \
  static int unfound_##name;                                                   \
  __typeof__(name) *next_fn = __atomic_load_n(&next_##name, __ATOMIC_ACQUIRE); \
  if (next_fn == NULL) {                                                       \
    next_fn = (__typeof__(name) *)next_of(#name);                              \
    if (next_fn == NULL)                                                       \
      return no_nccl(#name, &unfound_##name);                                  \
    __atomic_store_n(&next_##name, next_fn, __ATOMIC_RELEASE);                 \
  }

/* whatran.c */
uint64_t now(void);          /* CUPTI's clock while measuring, else 0 */
void start_measuring(void);  /* once, at the first communicator */

/* records.c (the lock held unless said) */
comm_rec *find(ncclComm_t comm);
int label_of(const ncclUniqueId *id);
/* How settle may learn that a communicator is ready: by a look of its own
 * (ncclCommGetAsyncError), on a blocking one only (on a non-blocking one
 * a look joins NCCL's thread in the program's place); by any look (at
 * exit); or the program's poll just said so. */
enum look { LOOK_IF_BLOCKING, LOOK_ANY, READY_SAID };
void settle(comm_rec *c, enum look how); /* asks NCCL c's rank once ready */
/* NCCL's ncclCommGetAsyncError (not this library's wrapper of it). */
ncclResult_t real_async_error(ncclComm_t comm, ncclResult_t *state);
/* The program's poll said comm is ready: its rank, and the handles NCCL
 * wrote since. Takes the lock. */
void now_ready(ncclComm_t comm);
void settle_all(enum look how);
void note_comm(ncclComm_t comm, int label, int nonblocking); /* takes the lock */
int is_nonblocking(ncclComm_t comm);              /* takes the lock */
comm_rec *note_comm_locked(ncclComm_t comm, int label, int nonblocking);
/* A split whose new communicator NCCL writes into *where later (a
 * non-blocking parent): noted, under `id`, when the program's poll says
 * the parent is ready, or when the calling thread first uses it. Takes
 * the lock. */
void split_later(ncclComm_t parent, ncclComm_t *where, const ncclUniqueId *id,
                 int nonblocking);
int size_of(ncclComm_t comm);                     /* takes the lock */
int rank_of(ncclComm_t comm);                     /* takes the lock */
/* A collective on comm: `what` holds its sizes and in_place; a
 * communicator not seen before is noted then. Takes the lock. */
void note_call(ncclComm_t comm, enum coll coll, const call *what,
               const void *send, const void *recv, cudaStream_t stream,
               uint64_t t0, uint64_t t1);
void end_group(uint64_t t1);                      /* takes the lock */
/* A line of the report: stderr, or appended to WHATRAN_OUT. */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* splits.c (the lock held) */
/* The program's poll said `parent` is ready: the splits of it that NCCL
 * owed are written now (or never: NCCL_SPLIT_NOCOLOR, a failure). */
void splits_ready(ncclComm_t parent);
/* comm, not known yet, as the result of a split of this thread's: noted
 * under the split's label, else NULL. */
comm_rec *adopt_split(ncclComm_t comm);

/* report.c */
void classify(comm_rec *c);
void report(void); /* at exit, once measuring started */

#pragma GCC visibility pop

#endif
