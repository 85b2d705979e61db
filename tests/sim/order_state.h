/* ncclsim: what order.c (one rank's streams, their clocks) and stream_races.c
 * (what the rank's work touched, and its races) share. Internal to the
 * two. */
#ifndef NCCLSIM_ORDER_STATE_H
#define NCCLSIM_ORDER_STATE_H

#include "sim.h"

#define SLOTS 64 /* streams of one thread at once */
#define SITES 6

/* What a slot's stream is: ORDER_... (order.h), or free. */
enum { SLOT_FREE = 0, SLOT_LEGACY = ORDER_LEGACY,
       SLOT_PER_THREAD = ORDER_PER_THREAD, SLOT_BLOCKING = ORDER_BLOCKING,
       SLOT_NONBLOCKING = ORDER_NONBLOCKING };

typedef struct span {
  const unsigned char *base; /* the buffer (a kernel's spans are per buffer) */
  const unsigned char *lo, *hi; /* [lo, hi) */
  int writes, atomic;
} span;

struct order_mark {
  struct order_mark *next;
  struct rank_order *ro;
  int slot;
  uint32_t seq;          /* its place on its stream */
  uint32_t vc[SLOTS];    /* what of each stream is ordered before it */
  char what[96];         /* "cudaMemsetAsync", "kernel k" */
  uint32_t site[SITES];  /* where the program queued it (sites.c), 0: no
                            more: its call, and the calls around it */
  unsigned long queued;  /* the thread's how manieth work */
  span *spans;
  int nspans, cap;
};

typedef struct rank_order { /* one thread's streams */
  struct rank_order *next;
  const void *key[SLOTS];   /* each slot's queue (queue_key) */
  int kind[SLOTS];
  unsigned label[SLOTS];    /* its stream's number, for messages */
  uint32_t stream[SLOTS][SLOTS]; /* the clock of each stream's last work */
  uint32_t host[SLOTS];     /* what the host has waited for */
  unsigned streams_made;
  unsigned long queued;
  struct order_mark *done, *pending; /* run (kept while they may race), and queued */
} rank_order;

extern pthread_mutex_t order_lock; /* guards every rank_order */
extern rank_order *orders;         /* every thread's */
/* Forgets the work of ro that can no longer race (order_lock held). */
void order_prune(rank_order *ro);
/* "the per-thread default stream", "stream 2 (...)": slot s of ro. */
const char *order_stream_name(const rank_order *ro, int s, char *buf,
                              size_t len);

#endif
