/* libwhatran's splits whose new communicator NCCL writes after the call
 * returned (whatran.h): on a non-blocking parent, ncclCommSplit returns
 * ncclSuccess with *newcomm NULL, and NCCL's own thread writes the new
 * communicator there before a poll of the parent says ncclSuccess (NCCL
 * 2.27.7 to 2.30.7, src/init.cc ncclCommInitChildComm, ncclCommSplit).
 * The program's variable is read then, while the program waits on it: at
 * its poll of the parent, or when the thread that split first uses a
 * communicator the library does not know (a program that waits for the
 * pointer itself, as PyTorch does). */
#include <stdlib.h>

#include "whatran.h"

typedef struct pending_split {
  ncclComm_t parent;
  ncclComm_t *where;  /* the program's variable NCCL writes */
  ncclUniqueId id;    /* its label's bytes, as a split's (whatran.c) */
  int nonblocking;    /* the new communicator's */
  uint32_t thread;    /* the thread that split */
  struct pending_split *next;
} pending_split;

static pending_split *pending; /* guarded by `lock` */

void split_later(ncclComm_t parent, ncclComm_t *where, const ncclUniqueId *id,
                 int nonblocking)
{
  pending_split *p = malloc(sizeof *p);
  if (p == NULL)
    return; /* out of memory: met as a communicator of its own */
  *p = (pending_split){.parent = parent, .where = where, .id = *id,
                       .nonblocking = nonblocking,
                       .thread = engine_probe_thread()};
  pthread_mutex_lock(&lock);
  p->next = pending;
  pending = p;
  pthread_mutex_unlock(&lock);
}

/* Notes the communicator p's program variable holds (NULL: none), and
 * drops p. */
static comm_rec *resolve(pending_split **link)
{
  pending_split *p = *link;
  ncclComm_t child = __atomic_load_n(p->where, __ATOMIC_ACQUIRE);
  comm_rec *c = child == NULL ? NULL : find(child);
  if (child != NULL && c == NULL)
    c = note_comm_locked(child, label_of(&p->id), p->nonblocking);
  *link = p->next;
  free(p);
  return c;
}

/* NCCL wrote the new communicator before this poll said ready, and made
 * it ready: its rank may be asked. */
void splits_ready(ncclComm_t parent)
{
  for (pending_split **link = &pending; *link;) {
    if ((*link)->parent != parent) {
      link = &(*link)->next;
      continue;
    }
    comm_rec *c = resolve(link);
    if (c != NULL)
      settle(c, READY_SAID);
  }
}

comm_rec *adopt_split(ncclComm_t comm)
{
  uint32_t me = engine_probe_thread();
  for (pending_split **link = &pending; *link; link = &(*link)->next)
    if ((*link)->thread == me &&
        __atomic_load_n((*link)->where, __ATOMIC_ACQUIRE) == comm)
      return resolve(link);
  return NULL;
}
