/* ncclsim: a communicator's state, and communicators made with
 * config.blocking = 0, as NCCL runs them (nonblocking.h says what a
 * program sees). NCCL 2.30.7 (src/group.cc ncclGroupEndInternal): a call
 * that gives NCCL work on more than one rank starts a thread of NCCL's
 * own, which does that work, and the communicator is ncclInProgress until
 * it is done; a collective returns the communicator's state (src/enqueue.cc
 * ncclEnqueueCheck); a window's handle is NULL when ncclCommWindowRegister
 * returns and written by that thread later (src/dev_runtime.cc). Here the
 * work is done at the call, and what NCCL may leave undone at the return
 * is left undone: the state says ncclInProgress to the first look, and the
 * handles are written before a look says ncclSuccess. */
#include "sim.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

_Thread_local int launched_by_nccl_thread;

/* This thread's open group: the communicators its calls joined (job: by a
 * call NCCL runs as a job of its own, which is in progress at any size),
 * and the splits whose results NCCL writes only once the group has ended. */
#define GROUP_MAX 64
static _Thread_local struct joined {
  ncclComm_t comm;
  int job;
} joined[GROUP_MAX];
static _Thread_local int njoined;
static _Thread_local struct late_child *pending[GROUP_MAX];
static _Thread_local int npending;

static void join_group(ncclComm_t comm, int job)
{
  for (int i = 0; i < njoined; i++)
    if (joined[i].comm == comm) {
      joined[i].job |= job;
      return;
    }
  if (njoined == GROUP_MAX)
    not_simulated("a group of more than %d communicators", GROUP_MAX);
  joined[njoined++] = (struct joined){comm, job};
}

/* The call on comm did `res`; `job`: NCCL runs it as a job of its own. */
static ncclResult_t handed(ncclComm_t comm, ncclResult_t res, int job)
{
  if (comm == NULL || !comm->nb.nonblocking || res != ncclSuccess ||
      (comm->nranks == 1 && !job))
    return res;
  if (in_group()) {
    join_group(comm, job);
    return res;
  }
  pthread_mutex_lock(&lock);
  comm->nb.in_progress = 1;
  pthread_mutex_unlock(&lock);
  return ncclInProgress;
}

ncclResult_t nonblocking_result(ncclComm_t comm, ncclResult_t res)
{
  return handed(comm, res, 0);
}

ncclResult_t nonblocking_job(ncclComm_t comm, ncclResult_t res)
{
  return handed(comm, res, 1);
}

void group_made(ncclComm_t comm)
{
  comm->nb.made_in_group = 1;
  join_group(comm, 0);
}

/* At one rank too: NCCL 2.30.7's ncclCommWindowRegister
 * (src/dev_runtime.cc) joins the communicator to a group as a
 * registration task, and ncclGroupEndInternal (src/group.cc) hands a
 * non-blocking group with any communicator in it to its own thread,
 * whatever the communicator's size. */
int nonblocking_late_handle(ncclComm_t comm, ncclWindow_t *win)
{
  if (comm == NULL || !comm->nb.nonblocking)
    return 0;
  pthread_mutex_lock(&lock);
  struct comm_state *s = &comm->nb;
  int kept = s->nlate < (int)(sizeof s->late_where / sizeof *s->late_where);
  if (kept) {
    s->late_where[s->nlate] = win;
    s->late_handle[s->nlate++] = *win;
    s->in_progress = 1;
    *win = NULL;
  }
  pthread_mutex_unlock(&lock);
  return kept;
}

/* ------------------------------------------------ a split's late result */

/* What NCCL's thread owes a split: *where = child. Shared by that thread
 * and the parent (refs), under `lock`. */
struct late_child {
  ncclComm_t *where, child, parent;
  pid_t caller; /* the thread that called ncclCommSplit */
  int nonblocking, written, refs;
};

static void write_child(struct late_child *l)
{
  if (!l->written)
    __atomic_store_n(l->where, l->child, __ATOMIC_RELEASE);
  l->written = 1;
}

static void drop_child(struct late_child *l)
{
  if (--l->refs == 0)
    free(l);
}

/* Whether thread `tid` of this process sleeps (nanosleep, usleep,
 * std::this_thread::sleep_for): a program waiting for the pointer. */
static int sleeping(pid_t tid)
{
  char path[64], text[32] = "";
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return 0;
  int read = fgets(text, sizeof text, f) != NULL;
  fclose(f);
  long nr = read ? strtol(text, NULL, 10) : -1;
#ifdef SYS_nanosleep
  if (nr == SYS_nanosleep)
    return 1;
#endif
  return nr == SYS_clock_nanosleep;
}

/* NCCL's thread, as far as the split's result goes: it writes it when the
 * caller sleeps, or after a second, unless a look wrote it first. */
static void *nccl_thread(void *arg)
{
  struct late_child *l = arg;
  const struct timespec nap = {0, 1000 * 1000};
  for (int ms = 0;; ms++) {
    int now = ms >= 1000 || sleeping(l->caller);
    pthread_mutex_lock(&lock);
    if (now)
      write_child(l);
    int done = l->written;
    if (done)
      drop_child(l);
    pthread_mutex_unlock(&lock);
    if (done)
      return NULL;
    nanosleep(&nap, NULL);
  }
}

/* The split's result is now NCCL's thread's to write (outside a group, or
 * at its end): at once for a blocking parent, later for a non-blocking
 * one, the parent then in progress. The lock held. */
static void hand_over(struct late_child *l)
{
  if (!l->nonblocking || l->parent == NULL) {
    write_child(l);
    free(l);
    return;
  }
  l->parent->nb.child = l;
  l->parent->nb.in_progress = 1;
  l->refs = 2; /* the parent's, NCCL's thread's */
  pthread_t t;
  if (pthread_create(&t, NULL, nccl_thread, l) == 0)
    pthread_detach(t);
  else
    l->refs = 1; /* no thread: a look at the parent writes it */
}

void nonblocking_late_child(ncclComm_t parent, ncclComm_t *where,
                            ncclComm_t child)
{
  struct late_child *l = malloc(sizeof *l);
  if (l == NULL) {
    fprintf(stderr, "ncclsim: ncclCommSplit: out of memory\n");
    _exit(SIM_EXIT_VIOLATION);
  }
  *l = (struct late_child){.where = where, .child = child, .parent = parent,
                           .caller = (pid_t)syscall(SYS_gettid),
                           .nonblocking = parent->nb.nonblocking};
  if (in_group() && npending < GROUP_MAX) {
    pending[npending++] = l;
    join_group(parent, 1);
    return;
  }
  pthread_mutex_lock(&lock);
  hand_over(l);
  pthread_mutex_unlock(&lock);
}

void nonblocking_publish(ncclComm_t comm)
{
  pthread_mutex_lock(&lock);
  struct comm_state *s = &comm->nb;
  for (int i = 0; i < s->nlate; i++)
    *s->late_where[i] = s->late_handle[i];
  s->nlate = 0;
  if (s->child != NULL) {
    write_child(s->child);
    drop_child(s->child);
    s->child = NULL;
  }
  pthread_mutex_unlock(&lock);
}

void nonblocking_forget(ncclComm_t comm)
{
  pthread_mutex_lock(&lock);
  if (comm->nb.child != NULL) {
    comm->nb.child->parent = NULL;
    drop_child(comm->nb.child);
    comm->nb.child = NULL;
  }
  pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------ the end of a group */

ncclResult_t nonblocking_group_end(ncclResult_t res)
{
  int to_nccl_thread = 0;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < npending; i++)
    hand_over(pending[i]);
  npending = 0;
  for (int i = 0; i < njoined; i++) {
    ncclComm_t c = joined[i].comm;
    c->nb.made_in_group = 0;
    if (c->nb.nonblocking && (c->nranks > 1 || joined[i].job)) {
      c->nb.in_progress = 1;
      to_nccl_thread = 1;
    }
  }
  njoined = 0;
  pthread_mutex_unlock(&lock);
  return res == ncclSuccess && to_nccl_thread ? ncclInProgress : res;
}

/* ------------------------------------------------- looks at the state */

ncclResult_t comm_state_look(ncclComm_t comm)
{
  pthread_mutex_lock(&lock);
  int busy = comm->nb.in_progress;
  comm->nb.in_progress = 0;
  pthread_mutex_unlock(&lock);
  if (!busy)
    nonblocking_publish(comm);
  return busy ? ncclInProgress : ncclSuccess;
}

/* NCCL's libnccl.so.2 (PyPI, 2.30.7) calls ncclCommGetAsyncError through
 * its PLT, so a preloaded library's definition runs. The simulation's
 * library binds its own calls (-Bsymbolic-functions): the first
 * definition in the process is asked for by name. */
ncclResult_t ensure_ready(ncclComm_t comm, const char *call)
{
  typedef ncclResult_t ask_fn(ncclComm_t, ncclResult_t *);
  ask_fn *ask = (ask_fn *)dlsym(RTLD_DEFAULT, "ncclCommGetAsyncError");
  ncclResult_t state = ncclSuccess;
  (ask != NULL ? ask : ncclCommGetAsyncError)(comm, &state);
  if (state != ncclInProgress)
    return ncclSuccess;
  nccl_warn(call, "Attempt to use communicator before the previous"
                  " operation returned ncclSuccess");
  return ncclInvalidArgument;
}
