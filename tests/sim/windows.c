/* ncclsim: ncclMemAlloc, ncclMemFree and symmetric windows (see sim.h). */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shadow.h" /* exe_offset */

ncclResult_t ncclMemAlloc(void **ptr, size_t size)
{
  if (injected_failure("ncclMemAlloc"))
    return ncclUnhandledCudaError;
  if (size == 0)
    return ncclInvalidArgument;
  *ptr = new_alloc(size, FROM_NCCL_MEM_ALLOC);
  return *ptr ? ncclSuccess : ncclSystemError;
}

ncclResult_t ncclMemFree(void *ptr)
{
  if (injected_failure("ncclMemFree"))
    return ncclUnhandledCudaError;
  if (ptr == NULL)
    return ncclSuccess;
  land_device_work(); /* no queued work may land in freed memory */
  pthread_mutex_lock(&lock);
  sim_alloc *a = find_alloc(ptr, 1);
  if (a == NULL || a->base != ptr)
    violation(NULL, "free-with-ncclMemFree", "ncclMemFree",
              "%p is not the start of an ncclMemAlloc buffer", ptr);
  else if (a->kind != FROM_NCCL_MEM_ALLOC)
    violation(NULL, "free-with-ncclMemFree", "ncclMemFree",
              "%p came from cudaMalloc; release it with cudaFree", ptr);
  for (struct ncclWindow_vidmem *w = windows; w; w = w->next)
    if (w->alloc == a)
      violation(w->comm, "deregister-before-free", "ncclMemFree",
                "the buffer at %p still has a registered window;"
                " call ncclCommWindowDeregister first",
                ptr);
  take_alloc(ptr);
  order_forget(a->base, a->size);
  pthread_mutex_unlock(&lock);
  release_alloc(a);
  return ncclSuccess;
}

/* Registrations made inside ncclGroupStart/ncclGroupEnd: NCCL does them,
 * and writes their handles, at the group's end (NCCL 2.30.7,
 * src/dev_runtime.cc: a registration is a group task). Per thread, as
 * NCCL's groups are. */
typedef struct deferred_registration {
  struct deferred_registration *next;
  ncclComm_t comm;
  void *buff;
  size_t size;
  ncclWindow_t *win;
  int flags;
} deferred_registration;


static _Thread_local int group_depth;
static _Thread_local deferred_registration *deferred;

/* Adds a registration to the list and hands it out in *win: a window, or
 * (local_only) a local registration counting one registration. */
static ncclResult_t add_registration(ncclComm_t comm, sim_alloc *a,
                                     void *buff, size_t size, int local_only,
                                     ncclWindow_t *win)
{
  struct ncclWindow_vidmem *w = calloc(1, sizeof *w);
  if (w == NULL)
    return ncclSystemError;
  *w = (struct ncclWindow_vidmem){.comm = comm,
                                  .alloc = a,
                                  .ptr = buff,
                                  .size = size,
                                  .local_only = local_only,
                                  .references = local_only,
                                  .magic = WINDOW_MAGIC};
  pthread_mutex_lock(&lock);
  w->next = windows;
  windows = w;
  pthread_mutex_unlock(&lock);
  *win = w;
  return ncclSuccess;
}

static ncclResult_t local_registration(ncclComm_t comm, sim_alloc *a,
                                       void *buff, size_t size,
                                       ncclWindow_t *win)
{
  pthread_mutex_lock(&lock);
  struct ncclWindow_vidmem *w = windows;
  while (w != NULL && !(w->local_only && w->comm == comm && w->ptr == buff))
    w = w->next;
  if (w != NULL) {
    w->references++;
    pthread_mutex_unlock(&lock);
    *win = w;
    return ncclSuccess;
  }
  pthread_mutex_unlock(&lock);
  return add_registration(comm, a, buff, size, 1, win);
}

/* The registration itself: collective, checks the rules, writes *win. */
static ncclResult_t register_now(ncclComm_t comm, void *buff, size_t size,
                                 ncclWindow_t *win, int flags)
{
  const char *call = "ncclCommWindowRegister";
  pthread_mutex_lock(&lock);
  sim_alloc *a = find_alloc(buff, 1);
  pthread_mutex_unlock(&lock);
  if (a == NULL)
    violation(comm, "window-on-ncclMemAlloc", call,
              "%p is not device memory from ncclMemAlloc", buff);
  else if (a->kind != FROM_NCCL_MEM_ALLOC)
    violation(comm, "window-on-ncclMemAlloc", call,
              "%p comes from cudaMalloc; windows need ncclMemAlloc memory",
              buff);
  size_t offset = (size_t)((unsigned char *)buff - a->base);
  if (offset % NCCL_WIN_REQUIRED_ALIGNMENT != 0)
    violation(comm, "window-alignment", call,
              "%p is %zu bytes into its allocation; windows must start at a"
              " multiple of NCCL_WIN_REQUIRED_ALIGNMENT (%d)",
              buff, offset, NCCL_WIN_REQUIRED_ALIGNMENT);
  if (size == 0 || size > a->size - offset)
    violation(comm, "window-inside-allocation", call,
              "%zu bytes at %p, %zu bytes into its allocation, run past the"
              " end of that %zu-byte allocation",
              size, buff, offset, a->size);

  /* From 2.30.7 the ranks' sizes may differ (NCCL 2.30.7's release notes;
   * recorded on 2.30.7: docs/facts, register.sizes-differ). */
  const int sizes_may_differ = simulated_version() >= NCCL_VERSION(2, 30, 7);
  /* With each rank's size, where peers find its memory (device.c). */
  lsa_share mine, *all = calloc((size_t)comm->nranks, sizeof *all);
  if (all == NULL)
    return ncclSystemError;
  const int symmetric = symmetric_support(comm);
  lsa_describe(comm, buff, symmetric ? size : 0, &mine);
  if (symmetric)
    hb_domain_make(comm); /* rank 0, before the others look for it */
  exchange(comm, LANE_HOST, call, size, flags, &mine, sizeof mine);
  for (int r = 0; r < comm->nranks; r++) {
    msg_header peer;
    fetch(comm, LANE_HOST, r, &peer, &all[r], sizeof all[r]);
    if ((peer.size != size && !sizes_may_differ) || peer.arg != flags)
      violation(comm, "symmetric-registration", call,
                "rank %d registered %zu bytes (flags %lld), this rank %zu"
                " bytes (flags %d); every rank must register the same size",
                r, peer.size, peer.arg, size, flags);
  }
  finish_exchange(comm, LANE_HOST);

  if (!symmetric) {
    free(all);
    if (gives_local_registration())
      return local_registration(comm, a, buff, size, win);
    if (writes_null_first())
      *win = NULL;
    return ncclSuccess; /* before 2.29.2: *win as the caller left it */
  }
  hb_domain_attach(comm);
  ncclResult_t res = add_registration(comm, a, buff, size, 0, win);
  if (res == ncclSuccess)
    lsa_map_peers(*win, all);
  free(all);
  return res;
}

ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size,
                                    ncclWindow_t *win, int flags)
{
  if (injected_failure("ncclCommWindowRegister"))
    return ncclUnhandledCudaError;
  if (writes_null_first())
    *win = NULL;
  /* Where NCCL registers anything, it wants a ready communicator (2.30.7
   * src/dev_runtime.cc: with symmetric support; 2.28.9 and 2.27.7: a local
   * registration too, src/register/register.cc). */
  if ((symmetric_support(comm) || gives_local_registration()) &&
      ensure_ready(comm, "ncclCommWindowRegister") != ncclSuccess)
    return ncclInvalidArgument;
  if (group_depth == 0) {
    ncclResult_t res = register_now(comm, buff, size, win, flags);
    if (res == ncclSuccess)
      nonblocking_late_handle(comm, win);
    return res;
  }
  deferred_registration *d = calloc(1, sizeof *d);
  if (d == NULL)
    return ncclSystemError;
  *d = (deferred_registration){.comm = comm,
                               .buff = buff,
                               .size = size,
                               .win = win,
                               .flags = flags};
  deferred_registration **link = &deferred;
  while (*link)
    link = &(*link)->next;
  *link = d;
  return ncclSuccess;
}

int in_group(void) { return group_depth > 0; }

ncclResult_t ncclGroupStart(void)
{
  group_depth++;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void)
{
  if (group_depth == 0) {
    snprintf(last_error, sizeof last_error,
             "ncclsim: ncclGroupEnd without ncclGroupStart");
    return ncclInvalidUsage;
  }
  if (--group_depth > 0)
    return ncclSuccess;
  ncclResult_t result = ncclSuccess;
  while (deferred != NULL) {
    deferred_registration *d = deferred;
    deferred = d->next;
    if (result == ncclSuccess)
      result = register_now(d->comm, d->buff, d->size, d->win, d->flags);
    if (result == ncclSuccess) /* a non-blocking group: NCCL's thread's */
      nonblocking_late_handle(d->comm, d->win);
    free(d);
  }
  return nonblocking_group_end(result);
}

ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
  if (win == NULL)
    return ncclSuccess; /* real NCCL accepts a NULL window (2.28.3, 2.30.7) */
  if (injected_failure("ncclCommWindowDeregister"))
    return ncclUnhandledCudaError;
  pthread_mutex_lock(&lock);
  const struct ncclWindow_vidmem *w = windows;
  while (w != NULL && w != win)
    w = w->next;
  char where[200];
  if (w == NULL && window_deregistered(win, where, sizeof where) != NULL)
    violation(comm, "window-owner", "ncclCommWindowDeregister",
              "the window was deregistered already, %s", where);
  if (w == NULL) /* win may be freed memory or garbage: do not read it */
    violation(comm, "window-owner", "ncclCommWindowDeregister",
              "%p is not a registered window (a handle that"
              " ncclCommWindowRegister never wrote?)",
              (void *)win);
  if (win->comm != comm)
    violation(comm, "window-owner", "ncclCommWindowDeregister",
              "the window was registered on another communicator");
  if (win->local_only && --win->references > 0) {
    pthread_mutex_unlock(&lock);
    return ncclSuccess;
  }
  int found;
  LIST_UNLINK(windows, win, found);
  pthread_mutex_unlock(&lock);
  (void)found; /* it is there: found above */
  lsa_unmap_peers(win); /* (its magic now 0) */
  /* Kept, not freed, so that a kernel or a call that uses it later is
   * told where it was deregistered (and no new window takes its address). */
  return window_kept(win, comm->rank,
                     exe_offset(__builtin_return_address(0)))
             ? ncclSuccess
             : ncclSystemError;
}


/* ncclCommRegister, NCCL's ordinary local registration (only
 * tools/nccl_facts calls it here): the same handle for the same buffer,
 * shared with the local registrations ncclCommWindowRegister hands back
 * before 2.29.2 (see gives_local_registration). */
ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size,
                              void **handle)
{
  pthread_mutex_lock(&lock);
  sim_alloc *a = find_alloc(buff, size);
  pthread_mutex_unlock(&lock);
  if (a == NULL) {
    snprintf(last_error, sizeof last_error,
             "ncclsim: %p is not device memory", buff);
    return ncclInvalidArgument;
  }
  ncclWindow_t w = NULL;
  ncclResult_t res = local_registration(comm, a, buff, size, &w);
  *handle = w;
  return res;
}

ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle)
{
  pthread_mutex_lock(&lock);
  struct ncclWindow_vidmem *w = windows;
  while (w != NULL && !(w == handle && w->local_only && w->comm == comm))
    w = w->next;
  if (w == NULL) {
    pthread_mutex_unlock(&lock);
    snprintf(last_error, sizeof last_error,
             "ncclsim: %p is not a local registration of this communicator",
             handle);
    return ncclInvalidArgument;
  }
  int found = 1;
  if (--w->references == 0)
    LIST_UNLINK(windows, w, found);
  pthread_mutex_unlock(&lock);
  if (w->references == 0 && found)
    free(w);
  return ncclSuccess;
}

int in_symmetric_window(ncclComm_t comm, const void *p, size_t bytes)
{
  const unsigned char *b = p;
  int found = 0;
  pthread_mutex_lock(&lock);
  for (const struct ncclWindow_vidmem *w = windows; w && !found; w = w->next)
    found = w->comm == comm && !w->local_only &&
            b >= (const unsigned char *)w->ptr &&
            b + bytes <= (const unsigned char *)w->ptr + w->size;
  pthread_mutex_unlock(&lock);
  return found;
}
