/*
 * What the files of tools/nccl_facts share. The probe is in eight files:
 *
 *   main.c      the parent: options, one child process per fact, the lines
 *   child.c     a child: one fact on N ranks (threads), its TSV fields
 *   helpers.c   handles, outcomes and the control every fact shares
 *   register.c  the facts about registering and freeing windows
 *   more.c      the facts about what ran (and which buffers must be
 *               windows), grouping, local handles, destroy, graph capture
 *               and the communicator's properties
 *   order.c     the facts about order on one stream (early reads)
 *   devcomm.c   the fact about the device API's communicator
 *   table.c     the facts in the order they are asked
 */
#ifndef FACTS_H
#define FACTS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>
#include <nccl.h>

#define MIB        ((size_t)1 << 20)
#define LOOP_TIMES 1000

/* What every window handle holds before the call that should write it: a
 * value NCCL never hands out, so that "NCCL wrote NULL" and "NCCL wrote
 * nothing" differ (NCCL 2.28.3 returns ncclSuccess without writing the
 * handle where it has no window to give). */
#define NOT_WRITTEN ((ncclWindow_t)(uintptr_t)0x5e47)

/* outcome.window: what the handle held after the call. */
enum { WIN_NONE = -1, WIN_NULL = 0, WIN_SET = 1, WIN_NOT_WRITTEN = 2 };

/* What one rank saw for one fact. */
typedef struct outcome {
  int control_ok;        /* the control behaved normally */
  char control_why[128]; /* else why not */
  ncclResult_t result;   /* the call the fact is about */
  int window;            /* WIN_SET, WIN_NULL, WIN_NOT_WRITTEN, WIN_NONE */
  char last_error[160];  /* ncclGetLastError after the call */
  char detail[320];      /* the fact's own finding, if any */
  int wrong;             /* elements of a result wrong on this rank, or -1
                            (not checked): every rank's is reported */
  char na[160];          /* the fact cannot be asked here: why */
} outcome;

typedef struct fact fact;
typedef void (*fact_fn)(const fact *, ncclComm_t, int rank, int nranks,
                        outcome *);
struct fact {
  const char *id;
  const char *question;
  const char *env;     /* "NAME=VALUE" set in the child, or NULL */
  const char *control; /* the fact run without env that is its control, or
                          NULL: the control runs inside the fact */
  int min_ranks;       /* 1, or 2 for facts about communication */
  int cta_zero;        /* the communicator asks for CTAPolicy ZERO */
  fact_fn run;
};

/* --------------------------------------------------------- helpers.c */

/* Note: record() takes the result of a call made before it, never the call
 * itself: C leaves the order of argument evaluation open, and the window
 * must be read after the call. */

/* The state of a handle (WIN_*), and in words. */
int window_state(ncclWindow_t w);
const char *window_word(int state);
/* 1 if NCCL wrote a handle there that must be deregistered. */
int held(ncclWindow_t w);
/* Deregisters win if NCCL wrote it, then frees buf (an ncclMemAlloc
 * buffer, or NULL). */
void release(ncclComm_t comm, ncclWindow_t win, void *buf);
/* snprintf into buf. */
void note(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The result and last error of a call the fact is about. */
void record(outcome *o, ncclComm_t comm, ncclResult_t res, int window);
/* ncclMemAlloc, or a note in the fact's detail that it failed. */
int mem_alloc(void **buf, size_t size, outcome *o);
/* ncclMemAlloc of size bytes into *buf (NULL if it failed), then its
 * registration as a window into *win (NOT_WRITTEN until NCCL writes it);
 * the first failure's result. */
ncclResult_t alloc_and_register(ncclComm_t comm, size_t size, void **buf,
                                ncclWindow_t *win);
/* The control: a whole ncclMemAlloc buffer must get a window. */
int control(ncclComm_t comm, outcome *o);

/* ------------------------------------------- register.c and more.c */

#define FACT(name)                                                             \
  void name(const fact *f, ncclComm_t comm, int rank, int nranks, outcome *o)
FACT(fact_memalloc);
FACT(fact_cudamalloc);
FACT(fact_part);
FACT(fact_twice);
FACT(fact_free_first);
FACT(fact_sizes_differ);
FACT(fact_loop);
FACT(fact_what_ran);
FACT(fact_ag_recv_window);
FACT(fact_ag_send_window);
FACT(fact_ar_windows);
FACT(fact_ar_recv_window);
FACT(fact_ar_send_window);
FACT(fact_early_reads);
FACT(fact_early_reads_plain);
FACT(fact_grouped);
FACT(fact_local_handle);
FACT(fact_destroy_registered);
FACT(fact_graph_capture);
FACT(fact_properties);
FACT(fact_devcomm);

/* ------------------------------------------------------------ table.c */

extern const fact facts[];
extern const int nfacts;

/* ------------------------------------------------------------ child.c */

/* Runs fact f on nranks threads and writes its TSV fields (after id and
 * ranks) to stdout: control, result, window, last error, detail. Returns
 * 0, or 1 if the fact could not be run. */
int child(const fact *f, int nranks);

#endif
