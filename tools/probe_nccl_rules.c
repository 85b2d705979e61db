/*
 * What does this NCCL say when a program breaks the window rules? One rank,
 * one GPU: registers a window on cudaMalloc memory, one at an unaligned
 * offset, and frees a buffer whose window is still registered, printing
 * what each call returned. The README's troubleshooting table quotes it.
 *   make -C tools probe && tools/probe_nccl_rules
 */
#include <stdio.h>

#include <cuda_runtime.h>
#include <nccl.h>

#define SIZE (1 << 22)

static void show(const char *what, ncclResult_t res, ncclWindow_t win)
{
  printf("%-58s -> %s%s\n", what, ncclGetErrorString(res),
         res == ncclSuccess ? (win ? ", window handed out" : ", NULL window")
                            : "");
}

int main(void)
{
  int version = 0;
  ncclGetVersion(&version);
  printf("NCCL version code %d\n", version);
  ncclUniqueId id;
  ncclComm_t comm;
  if (cudaSetDevice(0) != cudaSuccess || ncclGetUniqueId(&id) != ncclSuccess ||
      ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) {
    fprintf(stderr, "probe_nccl_rules: no GPU or NCCL communicator\n");
    return 1;
  }
  ncclWindow_t win = NULL;
  void *plain = NULL;
  char *vmm = NULL;
  void *freed = NULL;

  cudaMalloc(&plain, SIZE);
  show("window on cudaMalloc memory",
       ncclCommWindowRegister(comm, plain, SIZE, &win, NCCL_WIN_COLL_SYMMETRIC),
       win);
  if (win)
    ncclCommWindowDeregister(comm, win);
  win = NULL;

  ncclMemAlloc((void **)&vmm, SIZE);
  show("window 256 bytes into an ncclMemAlloc buffer",
       ncclCommWindowRegister(comm, vmm + 256, SIZE / 2, &win,
                              NCCL_WIN_COLL_SYMMETRIC),
       win);
  if (win)
    ncclCommWindowDeregister(comm, win);
  win = NULL;

  ncclMemAlloc(&freed, SIZE);
  ncclCommWindowRegister(comm, freed, SIZE, &win, NCCL_WIN_COLL_SYMMETRIC);
  show("ncclMemFree of a buffer whose window is registered", ncclMemFree(freed),
       win);

  ncclMemFree(vmm);
  cudaFree(plain);
  ncclCommDestroy(comm); /* the freed buffer's window goes with it */
  return 0;
}
