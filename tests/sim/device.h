/* ncclsim: what the simulation's files share about kernels and the device
 * API (included by sim.h): kernels.c launches, fibers.c runs every GPU
 * thread, device.c is the device API's host side, lsa.c its device side
 * (LSA barriers and their rules), lsa_windows.c ncclGetLsaPointer and the
 * windows' mappings across processes. Settings: SIM_SEED=S the schedule of every kernel's
 * threads (default: drawn per launch, and named in every rule message);
 * SIM_CTA_SLOTS=N resident CTAs per kernel (default: as many as an H100's
 * or H200's SMs keep, kernels.c); SIM_LSA_TEAM_SIZE=K LSA teams of K ranks (default: all);
 * SIM_STEP_US=U every step of a GPU thread U microseconds longer (slept a
 * millisecond at a time; a slow,
 * loaded machine: no wait for a peer may then time out while the team
 * makes progress). */
#ifndef NCCLSIM_DEVICE_INTERNAL_H
#define NCCLSIM_DEVICE_INTERNAL_H

#include <time.h> /* stall_clock */

/* A launched kernel, queued as WORK_KERNEL (kernels.c). */
struct sim_kernel {
  const char *name;
  dim3 grid, block;
  size_t shared; /* its dynamic shared memory, bytes */
  const struct ncclDevComm *devcomm; /* the device communicator it takes, if any:
                                   it then runs in lockstep with the team */
  int rank, device;
  void (*thread)(void *);
  void *args;
  void (*release)(void *);
  void *(*clone)(const void *); /* a copy of args, for a graph's replays */
};
/* A kernel recorded into a graph, launched again (streams.c): a copy of
 * k with a copy of its arguments; NULL if out of memory. */
struct sim_kernel *copy_kernel(const struct sim_kernel *k);
void free_kernel(struct sim_kernel *k);
/* Kernels queued or running that take the device communicator whose
 * simulated state is devcomm_state (queues.c). */
int kernels_queued_with(const void *devcomm_state);
/* Queues k on stream (it takes k). */
cudaError_t queue_kernel(struct sim_kernel *k, cudaStream_t stream);

/* A queued kernel, when it runs: every GPU thread, then freed (fibers.c). */
void run_kernel(struct sim_kernel *k, uint32_t correlation);
/* Inside a kernel's GPU thread: 1, with its rank, its lane of the
 * happens-before clocks (its CTA's index, or HB_NONE past HB_LANES) and
 * its thread index in the CTA; 0 elsewhere. */
int in_kernel(void);
/* Names a kernel's access that faults (memory.c), from its first launch. */
void sim_catch_kernel_faults(void);
int current_gpu_thread(int *rank, int *lane, unsigned *thread);
unsigned current_cta(void);
int current_kernel_rank(void); /* -1 outside a kernel */
/* Where the calling GPU thread is, for messages: "kernel K (CTA c,
 * thread t; schedule seed ...)". */
const char *current_place(char *buf, size_t len);
/* How many CTAs of `threads` threads a GPU keeps resident (kernels.c):
 * SIM_CTA_SLOTS, else as an H100's or H200's SMs do (SIM_SMS of them). */
long resident_ctas(unsigned threads);
/* In a kernel's GPU thread: every thread of its CTA (fibers.c). */
void cta_sync(void);
/* In a kernel's GPU thread waiting for its peers: let the others run. */
void spin_yield(void);
/* Is the calling GPU thread the first of its CTA? */
int cta_leader(void);

/* ------------------------------------------- happens-before (hb.c) */
/* Lanes: a unit per CTA of a kernel up to HB_LANES (a grid sized to an
 * H100 or H200, 132 SMs times up to 7 CTAs each, has fewer; a launch of
 * more is not simulated: kernels.c), one (HB_NONE) that no CTA uses since,
 * one for the rank's host (its copies and stream work). */
#define HB_LANES 1024
#define HB_NONE HB_LANES
#define HB_HOST (HB_LANES + 1)
#define HB_PER_RANK (HB_LANES + 2)
/* LSA barriers whose arrivals the clocks keep (past them: not simulated),
 * and the arrivals of each barrier and rank whose publication is kept. */
#define HB_BARRIERS (2 * HB_LANES)
#define HB_RING 4
typedef struct hb_domain hb_domain;
int hb_unit(int rank, int lane);
int hb_ranks(const hb_domain *d);
void hb_domain_make(const struct ncclComm *comm);  /* rank 0, before ... */
void hb_domain_attach(struct ncclComm *comm);      /* ... every rank, after */
void hb_domain_detach(struct ncclComm *comm);
/* A kernel of `rank` starts (start 1) or ends (0), on every domain of it. */
void hb_kernels(int rank, int nlanes, int start);
const uint32_t *hb_seen(hb_domain *d, int unit);
uint32_t hb_now(hb_domain *d, int unit);
void hb_arrive(hb_domain *d, int rank, int lane, unsigned index,
               unsigned long long epoch, int releases);
void hb_observe(hb_domain *d, int rank, int lane, unsigned index, int peer,
                unsigned long long epoch);
void hb_acquire(hb_domain *d, int rank, int lane);
const char *hb_missing(hb_domain *d, int me, int unit, uint32_t clock);
/* releases.c reads these: its part of the head of the file (8 KiB after
 * fences.c's notes), a unit's last release, rank's publication in ring
 * slot `slot` of barrier `index` (with its epoch, and the segment of the
 * arrive that made it: an access of its unit at a clock up to that came
 * before it; NULL if none). */
#define HB_HEAD_BYTES (HB_NOTES + 8192)
void *hb_head(hb_domain *d);
const uint32_t *hb_released(hb_domain *d, int unit);
const uint32_t *hb_publication(hb_domain *d, unsigned index, int rank,
                               int slot, unsigned long long *epoch,
                               uint32_t *segment);
/* releases.c: a kernel of rank starts or ends; a race whose other side (unit,
 * of a running kernel) released nothing yet waits for its verdict (1;
 * head: the report up to what is missing), given at that unit's next
 * release (releases_released) or its kernel's end (releases_writer_done); what
 * is missing, in words, for an access whose release came at a later sync
 * (NULL if none is kept). */
void releases_kernel(hb_domain *d, int rank, int running);
/* 0: report the race of `me` with `unit`'s access at `clock` now; 1: its
 * verdict waits (releases_defer it); 2: another race waits already (let it). */
int releases_deferred(hb_domain *d, int me, int unit, uint32_t clock);
int releases_defer(hb_domain *d, const char *dir, int me, int writes, int unit,
                int other_writes, uint32_t clock, const char *head,
                const char *missing);
void releases_released(hb_domain *d, int unit, unsigned index,
                    unsigned long long epoch);
void releases_writer_done(hb_domain *d, int rank);
const char *releases_released_at(hb_domain *d, int unit, uint32_t clock,
                              char *buf, size_t len);
/* lsa_windows.c: a window deregistered by this process is kept (rank: who
 * deregistered it, at: where, sites.c's exe_offset; 0 if out of memory);
 * where it was deregistered ("by rank 0's ncclCommWindowDeregister at
 * main.cu:182"), or NULL if it was not. */
int window_kept(const struct ncclWindow_vidmem *win, int rank, uint32_t at);
const char *window_deregistered(const void *win, char *buf, size_t len);
/* access.c: windows' shadows, and the host's copies into and out of them. */
size_t hb_shadow_bytes(size_t window_bytes, int nranks);
/* reach: the bytes from base to the end of the owner's allocation, mapped:
 * to the end of its mapping (whole pages): a kernel that touches a byte
 * past the window's `bytes` there breaks the rule memory-access (NCCL maps
 * peers the registered size), but for the owner inside its allocation. */
void hb_region_add(const void *window, const void *base, size_t bytes,
                   size_t reach, size_t mapped, void *shadow, int owner,
                   const struct ncclComm *comm);
void hb_region_remove(const void *window);
void hb_host_access(const void *p, size_t bytes, int writes);
/* HB_ALIGNED: the compiler emitted the access as one naturally aligned
 * load or store of its width (a GPU's vector instruction, which faults
 * on an address that is not a multiple of the width). */
enum { HB_READ = 0, HB_WRITE = 1, HB_ALIGNED = 2 };
void hb_device_access(const void *p, size_t bytes, int how, void *pc);
void hb_atomic_access(const volatile void *p, size_t bytes, int writes,
                      void *pc);

/* Window registration: what peers need to reach this rank's part of the
 * window, and, once every rank's is known, their parts mapped here. */
typedef struct lsa_share {
  long pid;
  int fd;
  void *base;     /* in the owner's address space */
  size_t mapped;  /* the allocation's mapping */
  size_t offset;  /* the window's start in it */
  size_t reach;   /* from the window's start to the allocation's end */
  int shadow_fd;  /* the window's shadow (access.c), a memfd */
  void *shadow;   /* ... in the owner's address space */
  size_t shadow_bytes;
} lsa_share;
void lsa_describe(const struct ncclComm *comm, const void *buff,
                  size_t bytes, lsa_share *out);
void lsa_map_peers(struct ncclWindow_vidmem *w, const lsa_share *all);
void lsa_unmap_peers(struct ncclWindow_vidmem *w);
/* ncclCommFinalize, ncclCommDestroy: a device communicator of comm still
 * alive is a rule violation (call names the call). */
void check_no_device_comms(const struct ncclComm *comm, const char *call);
/* cupti.c (weak: NULL without it): a kernel's record when it runs. */
void cupti_kernel(uint32_t correlation, int device, const char *name)
    __attribute__((weak));

/* One rank's state of one device communicator (device.c makes it, lsa.c
 * syncs its barriers). */
#define DEVCOMM_MAGIC 0x44455643u

/* One rank's state of one device communicator. */
typedef struct sim_devcomm {
  struct sim_devcomm *next;
  unsigned magic;
  struct ncclComm *comm;
  int nbarriers, lsa_rank, lsa_size, first; /* first: its team's rank 0 */
  /* Each rank's inboxes, shared: [rank][word], the word of barrier i from
   * team rank p at i * team size + p, as NCCL lays them out; each holds
   * the epoch stored (low 32 bits) and who stored it (lsa.c). */
  _Atomic unsigned long long *slots;
  size_t slots_bytes;
  unsigned long long *epochs; /* this rank's, per barrier */
  /* Per barrier: 1 + the CTA whose sessions are on it, in which launch,
   * and how many of its threads hold one. */
  unsigned *holders, *holders_open;
  unsigned long long *holders_launch;
  unsigned long long *observed; /* per word of this rank's inbox: the
                                   newest epoch a wait was credited with */
  struct lsa_team { int size, rank, stride; } *lane_team; /* per CTA lane:
                                   the team of its last session */
  /* The team's kernels in lockstep (lockstep.c), in the same file; the
   * turn, seed and progress are this rank's LSA team's own: */
  _Atomic int *turn;                    /* the member whose turn it is */
  _Atomic unsigned long long *seed;     /* the launch's schedule seed */
  _Atomic unsigned long long *launched; /* [rank]: its launches so far */
  _Atomic unsigned long long *finished; /* [rank]: its launches ended */
  /* The steps in which a thread of the team did more than look for its
   * peers: a wait for a peer times out (SIM_TIMEOUT_MS) only when this
   * stood still that long, so a slow, loaded machine is no deadlock. */
  _Atomic unsigned long long *progress;
} sim_devcomm;

/* lsa.c: the device communicator is destroyed (its last sessions' teams,
 * kept for messages, go with it); a note for a race between a CTA's
 * access and one of a rank outside its last session's team, or NULL. */
void lsa_forget_devcomm(const sim_devcomm *d);
/* lsa_windows.c: an LSA barrier session with multimem (1) needs the device
 * communicator's multicast handle (a rule), which the simulation never
 * grants (not simulated). */
void check_multicast(const struct ncclComm *comm, int multimem,
                     const void *multicast);
const char *lsa_team_note(int rank, int lane, int other_rank);

/* ---------------------------------------------- lockstep (lockstep.c) */
/* A kernel that takes a device communicator runs in lockstep with the
 * same launch on the team's other ranks: one rank's threads at a time, in
 * a fixed order, each rank's schedule drawn from one seed, so that
 * SIM_SEED repeats the whole run. */
size_t lockstep_bytes(int nranks);
void lockstep_map(sim_devcomm *d, unsigned char *area);
typedef struct lockstep {
  sim_devcomm *d;
  int member, members;
  unsigned long long launch;
} lockstep;
/* Enters the launch: waits until every member launched it; returns the
 * schedule seed the team shares. */
unsigned long long lockstep_enter(lockstep *ls, sim_devcomm *d,
                                  const char *kernel);
void lockstep_wait_turn(lockstep *ls);
void lockstep_pass(lockstep *ls, int done);
/* A thread of this rank did more than look for its peers. */
void lockstep_progress(lockstep *ls);
/* A wait's clock: restarted (now) while the team makes progress. */
typedef struct stall_clock {
  struct timespec start;
  unsigned long long seen;
} stall_clock;
void stall_start(stall_clock *c, const sim_devcomm *d);
/* Milliseconds since the team last made progress (since the start). */
long stall_ms(stall_clock *c, const sim_devcomm *d);

/* The first `bytes` of the file at path (a barriers' file, a peer's
 * memfd), mapped shared for reading and writing; MAP_FAILED if not. */
void *map_file(const char *path, size_t bytes);
/* The simulation itself failed (a file, a mapping, memory): says so,
 * naming the call, and ends the process (exit 70). Not a rule. */
_Noreturn void sim_failure(const char *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The ranks of an LSA team: every rank of the communicator, or, with
 * SIM_LSA_TEAM_SIZE=K, consecutive groups of K (a layout the simulation
 * offers so that a program's refusal of several teams can be seen). */
int lsa_team_size(const struct ncclComm *comm);

/* ------------------- GPU threads that interleave, fences and sites */
/* hb.c: a CTA barrier of `lane` completed (its later accesses in a new
 * segment); a unit's pending clock; a byte per unit, in the domain's
 * file, for fences.c's messages (units past HB_NOTES have none). */
void hb_cta_barrier(int rank, int lane);
const uint32_t *hb_pending(hb_domain *d, int unit);
#define HB_NOTES 16384
unsigned char *hb_notes(hb_domain *d);
/* fences.c: whether an arrive with `releases` from its memory order
 * releases, its CTA's fences counted; a wait observed `peer`'s arrival. */
int fences_release(hb_domain *d, int rank, int lane, int releases);
void fences_observed(hb_domain *d, int peer);
/* access.c: the kernel that ran ends: the shadows of the global memory
 * it touched go. */
void hb_kernel_memory_done(void);
/* fibers.c: before an access (a store or not) to p, the schedule may run
 * another GPU thread. */
void ncclsim_may_switch(const void *p, int writes);

#endif
