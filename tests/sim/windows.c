/* ncclsim: ncclMemAlloc, ncclMemFree and symmetric windows (see sim.h). */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  pthread_mutex_unlock(&lock);
  free(a->base);
  free(a);
  return ncclSuccess;
}

ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size,
                                    ncclWindow_t *win, int flags)
{
  const char *call = "ncclCommWindowRegister";
  if (injected_failure(call))
    return ncclUnhandledCudaError;
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
              "%zu bytes at %p run past the end of the %zu-byte allocation",
              size, buff, a->size);

  exchange(comm, call, size, flags, NULL, 0);
  for (int r = 0; r < comm->nranks; r++) {
    msg_header peer;
    fetch(comm, r, &peer, NULL, 0);
    if (peer.size != size || peer.arg != flags)
      violation(comm, "symmetric-registration", call,
                "rank %d registered %zu bytes (flags %lld), this rank %zu"
                " bytes (flags %d); every rank must register the same size",
                r, peer.size, peer.arg, size, flags);
  }
  finish_exchange(comm);

  if (env_long("SIM_NO_SYMMETRIC", 0)) {
    *win = NULL; /* as real NCCL does without symmetric support */
    return ncclSuccess;
  }
  struct ncclWindow_vidmem *w = calloc(1, sizeof *w);
  if (w == NULL)
    return ncclSystemError;
  *w = (struct ncclWindow_vidmem){
      .comm = comm, .alloc = a, .ptr = buff, .size = size};
  pthread_mutex_lock(&lock);
  w->next = windows;
  windows = w;
  pthread_mutex_unlock(&lock);
  *win = w;
  return ncclSuccess;
}

ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
  if (win == NULL)
    return ncclSuccess; /* real NCCL accepts the NULL window it handed out */
  if (injected_failure("ncclCommWindowDeregister"))
    return ncclUnhandledCudaError;
  pthread_mutex_lock(&lock);
  const struct ncclWindow_vidmem *w = windows;
  while (w != NULL && w != win)
    w = w->next;
  if (w == NULL) /* win may be freed memory: do not read it */
    violation(comm, "window-owner", "ncclCommWindowDeregister",
              "not a registered window (deregistered twice?)");
  if (win->comm != comm)
    violation(comm, "window-owner", "ncclCommWindowDeregister",
              "the window was registered on another communicator");
  int found;
  LIST_UNLINK(windows, win, found);
  pthread_mutex_unlock(&lock);
  (void)found; /* it is there: found above */
  free(win);
  return ncclSuccess;
}
