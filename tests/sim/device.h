/* ncclsim: what the simulation's files share about kernels and the device
 * API (included by sim.h): kernels.c launches, fibers.c runs every GPU
 * thread, device.c is the device API's host side, lsa.c its device side
 * (LSA barriers, ncclGetLsaPointer, the rules) and the windows' mappings
 * across processes. Settings: SIM_SEED=S the schedule of every kernel's
 * threads (default: drawn per launch, and named in every rule message);
 * SIM_CTA_SLOTS=N resident CTAs per kernel (default 132, an H100's or
 * H200's SMs); SIM_LSA_TEAM_SIZE=K LSA teams of K ranks (default: all). */
#ifndef NCCLSIM_DEVICE_INTERNAL_H
#define NCCLSIM_DEVICE_INTERNAL_H

/* A launched kernel, queued as WORK_KERNEL (kernels.c). */
struct sim_kernel {
  const char *name;
  dim3 grid, block;
  int rank, device;
  void (*thread)(void *);
  void *args;
  void (*release)(void *);
};

/* A queued kernel, when it runs: every GPU thread, then freed (fibers.c). */
void run_kernel(struct sim_kernel *k, uint32_t correlation);
/* What the LSA rules follow of one GPU thread (lsa.c reads and writes
 * it; fibers.c keeps one per thread). */
typedef struct lsa_view {
  int barriers;        /* LSA barrier syncs it passed */
  int acquired;        /* one of them acquired (acquire or stronger) */
  int unreleased_peer; /* 1 + the peer whose window it reached since its
                          last release barrier; 0: none */
} lsa_view;
/* The calling GPU thread's, or NULL outside a kernel; where it is, for
 * messages: "kernel K (CTA c, thread t)" and the kernel's rank. */
lsa_view *current_lsa(void);
const char *current_place(char *buf, size_t len);
int current_kernel_rank(void);
/* In a kernel's GPU thread: every thread of its CTA (fibers.c). */
void cta_sync(void);
/* In a kernel's GPU thread waiting for its peers: let the others run. */
void spin_yield(void);
/* Is the calling GPU thread the first of its CTA? */
int cta_leader(void);
/* At the end of each GPU thread (lsa.c: the release rule). */
void lsa_thread_end(const lsa_view *view);
/* Window registration: what peers need to reach this rank's part of the
 * window, and, once every rank's is known, their parts mapped here. */
typedef struct lsa_share {
  long pid;
  int fd;
  void *base;     /* in the owner's address space */
  size_t mapped;  /* the allocation's mapping */
  size_t offset;  /* the window's start in it */
} lsa_share;
void lsa_describe(const void *buff, lsa_share *out);
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
  _Atomic unsigned long long *slots; /* [barrier][rank], shared */
  size_t slots_bytes;
  unsigned long long *epochs; /* this rank's, per barrier */
} sim_devcomm;

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

#endif
