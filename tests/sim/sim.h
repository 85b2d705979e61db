/*
 * ncclsim: a host-memory simulation of the CUDA runtime and NCCL calls that
 * the examples make, for testing them on machines without a GPU. It is linked
 * in place of libcudart and libnccl, with the real cuda_runtime.h and nccl.h
 * declarations, and is never part of what users build or install.
 *
 * "Device" memory is host memory. Ranks meet through files in a directory
 * named after the ncclUniqueId (under SIM_DIR, else TMPDIR, else /tmp), so
 * the same code works for threads (pthread build) and processes (MPI
 * build). Collectives really combine the ranks' data.
 *
 * It is as unkind as real CUDA and NCCL, per simulated NCCL version: fresh
 * device memory reads as NaN; work queued on a stream (collectives, copies,
 * memsets, events) runs only when a host call waits for that stream, as
 * late as a GPU may run it (queues.c): a collective's result is there only
 * after its stream is waited for, and a rank that never queues its
 * collective leaves the others waiting in their synchronisation; a
 * host-to-device copy from pageable memory is staged at the call;
 * ncclCommWindowRegister without symmetric support leaves the handle
 * unwritten before 2.30.7 (2.30.7 writes NULL), hands back a local
 * registration instead of a window before 2.30.7 while NCCL_LOCAL_REGISTER
 * is on, and before 2.28.7 has no symmetric support for ranks each alone on
 * their node (NCCL_HOSTID); inside ncclGroupStart/End the handle is written
 * at ncclGroupEnd; from 2.29.7 ncclCommDestroy frees the windows left
 * registered (windows.c, nccl.c). The test builds also make uninitialised
 * locals read as a pattern (tests/Makefile), as stack garbage may.
 *
 * It also enforces the rules of the symmetric-memory lifecycle that real
 * NCCL does not reliably catch. A violation prints
 *   ncclsim: RULE VIOLATION [rule] rank R in CALL: details
 * and ends the process with status SIM_EXIT_VIOLATION (70, apart from the
 * programs' own 0-3).
 *
 * Settings (environment):
 *   SIM_DEVICES=N        visible devices (default 8; 0 = no GPU)
 *   SIM_NCCL_VERSION=C   version code ncclGetVersion reports (default: the
 *                        headers' NCCL_VERSION_CODE)
 *   SIM_NO_SYMMETRIC=1   no symmetric support (what the handle then holds
 *                        depends on the version: see above)
 *   SIM_FAIL=CALL:R[,CALL:R...]  CALL fails on rank R (e.g. ncclMemAlloc:2);
 *                        an unknown CALL or a rank that is not a number
 *                        ends the process
 *   SIM_HANG=CALL:R[,...] CALL never returns on rank R
 *   SIM_SLOW=CALL:R:MS   CALL takes MS ms longer on rank R (a loaded machine)
 *   SIM_WRONG_RESULT=R[:I[,J...]]  rank R's collective result is wrong at
 *                           index I (and J...), at 0 without one
 *   SIM_TIMEOUT_MS=T     how long a rank waits for its peers (default 10000)
 *   SIM_DRIVER_VERSION=V what cudaDriverGetVersion reports (default 13000)
 *   SIM_L2_BYTES=N       the L2 size cudaDeviceGetAttribute reports (50 MiB)
 *   SIM_SEED, SIM_CTA_SLOTS, SIM_LSA_TEAM_SIZE: kernels, device API (device.h)
 *   SIM_NO_P2P=1         no GPU pair has CUDA P2P access
 *   SIM_REPLAYS_DO_NOTHING=1  cudaGraphLaunch succeeds and runs nothing
 *   SIM_CUPTI_FAIL=CALL:R[,...]  that CUPTI call fails on rank R (cupti.c)
 *   SIM_LEAKS=warn       objects left at exit listed, not a violation
 *                        (tools/simulate.sh --preload: CUDA frees them)
 *   SIM_GPU_US=WHAT:R:US[,...]  each collective (WHAT collective) or device
 *                        copy (copy) of rank R (* every rank) takes US
 *                        microseconds of simulated GPU time (clock.c)
 * Like NCCL >= 2.30, it lets several ranks of one communicator use one
 * device only with NCCL_MULTI_RANK_GPU_ENABLE set to a non-zero number and a
 * simulated version >= 2.30. Ranks that are threads sharing a device share
 * its context: a call on the legacy default stream (a program built without
 * per-thread default streams) or cudaDeviceSynchronize there would wait for
 * the other ranks' queued collectives, so it is a rule violation.
 * cuBLAS's SGEMM (only with HAVE_CUBLAS) is accepted and not computed (only
 * --bench --overlap calls it, and its result is not used). A "rank" is the rank
 * of the calling thread's communicator; without one, the rank the thread
 * gave common/'s set_error_rank (heard through -Wl,--wrap=set_error_rank);
 * for a pthread program's main thread, before it starts the ranks, its
 * current device (0). An injection says so on stderr ("ncclsim: injected
 * failure of CALL on rank R", "ncclsim: injected hang: CALL on rank R never
 * returns").
 *
 * The simulation's files, one per API area, share this header:
 *   state.c       the process-wide state, settings, rule violations, leaks
 *   rendezvous.c  how ranks (threads or processes) meet through files
 *   cuda.c        CUDA: devices, errors
 *   memory.c      CUDA: memory, copies, memsets
 *   queues.c      CUDA: the streams' queues of work, and when it runs
 *   clock.c       CUDA: the simulated GPU's clock, and how long work takes
 *   streams.c     CUDA: streams, events, cudaDeviceSynchronize
 *   graphs.c      CUDA: graph capture, instantiation and replay
 *   nccl.c        NCCL: versions, ids, communicators
 *   split.c       NCCL: communicators split from one, or made all at once
 *   nonblocking.c NCCL: a communicator's state, non-blocking ones
 *   queries.c     NCCL: a communicator's state, size and rank
 *   unsimulated.c, unsimulated_cuda.c  NCCL's, CUDA's calls it lacks, said so
 *   windows.c     ncclMemAlloc/ncclMemFree and symmetric windows
 *   support.c     what a registration gets, per NCCL version and setting
 *   collectives.c ncclAllReduce and ncclAllGather
 *   cublas.c      cuBLAS's SGEMM (only with HAVE_CUBLAS)
 *   cupti.c       CUPTI's activity records (only where cupti.h is)
 */
#ifndef NCCLSIM_H
#define NCCLSIM_H

#include <cuda_runtime.h>
#include <nccl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "nonblocking.h" /* a communicator's state */

#define SIM_EXIT_VIOLATION 70
#define SIM_MAGIC          "ncclsim:"
#define PATH_LEN           512

/* ------------------------------------------------------------------------
 * Process-wide state (state.c), guarded by one lock (ranks may be threads).
 * --------------------------------------------------------------------- */

enum alloc_kind { FROM_NCCL_MEM_ALLOC, FROM_CUDA_MALLOC };

typedef struct sim_alloc {
  struct sim_alloc *next;
  unsigned char *base;
  size_t size;
  enum alloc_kind kind;
  int device;
  /* ncclMemAlloc memory is a memfd mapping that peers of other processes
   * map too, as NCCL exports its memory (device.c), a guard page after it
   * faulting on an access past the end; cudaMalloc's: -1, 0 (garbage.h). */
  int fd;
  size_t mapped; /* bytes mapped, a whole number of pages */
} sim_alloc;

struct ncclComm {
  struct ncclComm *next;
  char dir[PATH_LEN];
  int rank, nranks, device;
  /* Rendezvous counters, the same sequence on every rank: the host calls
   * all ranks make, and the collectives as their queued work runs. */
  unsigned long seq[2];
  int cta_policy;
  int alone_on_nodes, hosts; /* every rank alone on its host; hosts > 1 */
  int ce_ready; /* NCCL's copy-engine sync window is registered */
  struct hb_domain *hb; /* happens-before of its windows (hb.c), once one
                           is registered */
  struct comm_state nb; /* its state, non-blocking or not: nonblocking.h */
};

struct ncclWindow_vidmem {
  struct ncclWindow_vidmem *next;
  struct ncclComm *comm;
  sim_alloc *alloc;
  void *ptr;
  size_t size;
  int local_only; /* an ordinary local registration, not a window */
  int references; /* local_only: registrations of this buffer */
  unsigned magic; /* WINDOW_MAGIC while registered (device.c checks it) */
  void **peers;   /* each rank's part of the window, as this rank reaches
                     it (ncclGetLsaPointer); NULL: not mapped */
  size_t *peer_mapped; /* bytes this rank mapped of each peer's (0: none) */
  size_t *peer_offset; /* the window's start in that mapping */
  void **shadows;      /* the shadows this rank mapped (its own, and in
                          MPI its peers'): access.c */
  size_t *shadow_bytes;
  int shadow_fd; /* its own shadow's memfd: peers map it through /proc */
};
#define WINDOW_MAGIC 0x57494e44u

struct CUstream_st {
  struct CUstream_st *next;
  int device;
  int nonblocking; /* cudaStreamNonBlocking: no ordering with the legacy
                      default stream */
  struct CUgraph_st *capture; /* being captured into this graph, or NULL */
};

#include "graphs.h" /* captured graphs: sim_node, record_collective */

struct CUevent_st {
  struct CUevent_st *next;
  long long when_ns; /* when its last landed record ran (clock.c) */
  const void *queue;    /* the stream it was last recorded on (queue_key) */
  unsigned long recorded, landed; /* records queued, and run (queues.c) */
  struct order_clock *order; /* the stream order at its last record (order.c) */
};

extern pthread_mutex_t lock;
extern sim_alloc *allocs;
extern struct ncclComm *comms;
extern struct ncclWindow_vidmem *windows;
extern struct CUstream_st *streams;
extern struct CUevent_st *events;

extern _Thread_local int current_device;
extern _Thread_local int thread_rank;  /* -1 until the thread has a comm */
extern _Thread_local int program_rank; /* what set_error_rank said, or -1 */
extern _Thread_local char last_error[1024];

/* Unlinks `node` from the list at `head` (any of the lists above, linked
 * through `next`); sets `found` to 1 if it was there, else 0. */
#define LIST_UNLINK(head, node, found)                                         \
  do {                                                                         \
    (found) = 0;                                                               \
    for (__typeof__(head) *link_ = &(head); *link_; link_ = &(*link_)->next)   \
      if (*link_ == (node)) {                                                  \
        *link_ = (node)->next;                                                 \
        (found) = 1;                                                           \
        break;                                                                 \
      }                                                                        \
  } while (0)

/* ------------------------------------------------------------- state.c */
long env_long(const char *name, long fallback);
int sim_rank(void);
void __real_set_error_rank(int rank) __attribute__((weak));
void __wrap_set_error_rank(int rank);
void mark_abort(const char *dir);
_Noreturn void violation(const struct ncclComm *comm, const char *rule,
                         const char *call, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int injected_failure(const char *call);
void install_exit_check(void);
sim_alloc *find_alloc(const void *p, size_t len);

/* -------------------------------------------------------- rendezvous.c */
typedef struct msg_header {
  char call[64];
  size_t size;   /* call-specific: bytes or count */
  long long arg; /* call-specific: device, flags, ... */
  size_t payload;
} msg_header;

/* Ranks meet in two lanes of their own: in the host calls they all make
 * (communicator, windows), and in their collectives' queued work, which
 * runs later and in another order against those calls. */
enum lane { LANE_HOST, LANE_WORK };
void exchange(struct ncclComm *c, enum lane lane, const char *call,
              size_t size, long long arg, const void *payload,
              size_t payload_len);
void fetch(const struct ncclComm *c, enum lane lane, int r, msg_header *h,
           void *buf, size_t len);
void finish_exchange(struct ncclComm *c, enum lane lane);
/* At ncclCommDestroy/Abort: the last rank of the communicator to leave
 * removes its rendezvous directory. */
void leave_rendezvous(const struct ncclComm *c);

/* -------------------------------------------------------------- nccl.c */
int simulated_version(void);

/* -------------------------------------------------------------- cuda.c */
/* The devices this process sees (CUDA_VISIBLE_DEVICES), and the machine's
 * index of one of them (-1: none). */
int visible_devices(void);
int machine_device(int device);

/* ----------------------------------------------------------- windows.c */
/* Whether NCCL gives comm symmetric support (and so its device API). */
int symmetric_support(const struct ncclComm *comm); /* support.c */
int writes_null_first(void);
int gives_local_registration(void);
/* Does a symmetric window of comm hold [p, p + bytes)? */
int in_symmetric_window(ncclComm_t comm, const void *p, size_t bytes);

/* ------------------------------------------------------- collectives.c */
/* Bytes per element of a collective's data type. */
size_t sim_element_size(const sim_node *node);

/* ----------------------------------------------------------- kernels.c */
/* Does NCCL (the simulated version) start this collective before the
 * kernel queued before it on its stream has ended, when that kernel lets
 * it? NCCL 2.28 to 2.30.4 launch their symmetric kernels so, and do not
 * wait inside them. */
int reads_early(const sim_node *node);

/* ------------------------------------------------------------ queues.c
 * Work queued on a stream runs only when a host call waits for it (see
 * queues.c). queue_key names a stream's queue: `ptds_entry` says the call
 * came through a per-thread-default-stream entry point, where stream 0 is
 * the calling thread's own stream. A host-to-device copy from pageable
 * memory is staged at the call (CUDA returns once the bytes are staged)
 * and written when it runs, so that a reader on another stream sees the
 * old bytes. */
enum work_kind { WORK_COPY, WORK_MEMSET, WORK_COLLECTIVE, WORK_EVENT,
                 WORK_FILL, WORK_KERNEL, WORK_GEMM, WORK_NOTHING };
typedef struct work_item {
  enum work_kind kind;
  void *dst;
  const void *src;    /* WORK_COPY: read when it runs, or NULL: ... */
  const void *staged; /* ... these bytes, copied at the call */
  size_t size; /* bytes (WORK_FILL: floats; WORK_GEMM: multiply-adds) */
  int value;          /* WORK_MEMSET */
  sim_node node;      /* WORK_COLLECTIVE */
  struct CUevent_st *event; /* WORK_EVENT */
  int copy_kind;      /* WORK_COPY: CUPTI's CUpti_ActivityMemcpyKind */
  float fill_value;   /* WORK_FILL: every float of dst (size floats) */
  int lets_next_start; /* WORK_FILL: the kernel lets the next kernel on its
                          stream start early (kernels.c) */
  struct sim_kernel *kernel; /* WORK_KERNEL: run, then freed, when it runs */
  const char *call;   /* the call that queued it, for messages (or NULL) */
} work_item;
const void *queue_key(cudaStream_t stream, int ptds_entry);
/* Queues the item on the stream, after the work of the streams it waits
 * for; 0 if out of memory. */
int enqueue(cudaStream_t stream, int ptds_entry, const work_item *item);
/* Runs the work queued on that stream (and on the streams it waits for). */
void stream_sync_point(cudaStream_t stream, int ptds_entry);
void land_queue(const void *key);
/* cudaDeviceSynchronize and the freeing calls: the calling thread's work
 * on its device. */
void land_device_work(void);
/* Until the event's last record has run. */
void land_event(struct CUevent_st *event);
void drop_event(const struct CUevent_st *event);
/* ncclCommFinalize, ncclCommDestroy: the communicator's collectives (and
 * what their queues hold before them); ncclCommAbort: they never run. */
void land_comm(const struct ncclComm *comm);
void drop_comm(const struct ncclComm *comm);
/* collectives.c: a queued collective, when it runs (returns when it
 * starts: its ranks' latest ready_ns, clock.c); a captured one that a
 * graph replays (graphs.c). */
long long run_collective(const sim_node *node, long long ready_ns);
ncclResult_t replay_collective(const sim_node *node, cudaStream_t stream);

/* clock.c: a device's simulated clock (ns), moved on to `ns`; a work's
 * time on it (SIM_GPU_US's, else the model's; d2d: a device copy). */
long long gpu_now_ns(int device);
void gpu_busy_until(int device, long long ns);
long long work_ns(enum work_kind kind, size_t bytes, int d2d, int rank);

/* cupti.c, only in the builds that have it (weak: NULL elsewhere): an API
 * record for a call that queues work, by the calling thread (its
 * correlation id; 0 when CUPTI records nothing); the records of a copy
 * (copy_kind: CUpti_ActivityMemcpyKind) or of a collective, when it runs. */
uint32_t cupti_launch(void) __attribute__((weak));
/* Between cupti_graph_launch(1) and (0) the calling thread launches a
 * graph: its work shares one API record, a cudaGraphLaunch's, as CUDA's
 * records of a replay do. */
void cupti_graph_launch(int begin) __attribute__((weak));
void cupti_copy(uint32_t correlation, int device, int copy_kind,
                size_t bytes) __attribute__((weak));
void cupti_collective(uint32_t correlation, const sim_node *node)
    __attribute__((weak));

/* The rule for ranks that share a device's context: nothing may wait for
 * the whole device or the legacy default stream (stream NULL). */
void check_shared_context(const char *call, cudaStream_t stream);
/* memory.c: a new allocation of `kind`, and the one that starts at p,
 * taken out of the list (NULL: none). */
void *new_alloc(size_t size, enum alloc_kind kind);
sim_alloc *take_alloc(const void *p);
/* Unmaps or frees an allocation taken out of the list, and the record. */
void release_alloc(sim_alloc *a);

#include "device.h"
#include "order.h" /* one rank's streams ordered: order.c, stream_races.c */

#endif
