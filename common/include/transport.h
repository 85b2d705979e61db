/*
 * What the driver (common/src/driver.c) needs from a transport, the part that
 * differs between the two builds. Exactly one transport is linked in, chosen
 * by the Makefile: common/src/transport/threads.c (ranks are threads of one
 * process) or common/src/transport/mpi.c (ranks are MPI processes). Private
 * to common/: the examples see only bootstrap.h.
 */
#ifndef TRANSPORT_H
#define TRANSPORT_H

#include "bootstrap.h"

/* Starts the transport (MPI_Init for MPI; nothing for threads) and arranges
 * for fatal errors to end the whole job. */
void transport_start(int *argc, char ***argv);

/* Ends it (MPI_Finalize). */
void transport_stop(void);

/* This process's number among those launched: 0 for threads. Process 0
 * prints what concerns the whole job. */
int transport_process(void);

/* How many ranks the job has: NTHREADS (default ngpus) for threads, the
 * MPI world size for MPI. Returns 0, or EXIT_USAGE after a message naming
 * the bad value (ngpus < 0: the GPU count is unknown). */
int transport_rank_count(int ngpus, int *nranks);

/* This process's rank among those on its node, and how many there are (for
 * threads: 0 and nranks). The node-local rank picks the GPU. */
void transport_node(int nranks, int *local_rank, int *local_size);

/* The ranks this process runs: first .. first + count - 1 (threads: all of
 * them; MPI: its own). */
void transport_my_ranks(int nranks, int *first, int *count);

/* Collective over processes, before any rank runs: the largest value any
 * process passed (for threads: value). A macro, like the collectives of
 * bootstrap.h: the watchdog names the caller's line. */
#define transport_worst(value) transport_worst_at((value), __FILE__, __LINE__)
int transport_worst_at(int value, const char *file, int line);

/* Collective over the node's processes: how many of its ranks use its
 * busiest GPU (each uses CUDA device `device` of the `ngpus` it sees).
 * Threads see the same GPUs; processes may each see others (Slurm's
 * --gpus-per-task), so MPI compares GPU UUIDs and writes the ranks that
 * share one into `who` ("ranks 0 and 1 use GPU-..."; threads: ""). */
int transport_gpu_load(int device, int ngpus, int local_size, char *who,
                       size_t who_size);

/* Prints why a node's ranks do not fit its GPUs, in the transport's terms
 * (NTHREADS, or processes per node and which share a GPU: `who`). */
void transport_too_few_gpus(int local_size, int ngpus, const char *who);

/* Prints the line that opens the original examples' output. */
void transport_banner(int nranks, int ngpus);

#endif
