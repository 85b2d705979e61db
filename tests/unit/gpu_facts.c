/* Prints what the GPU test cases need to know about this machine, as the
 * programs see it: "nccl=CODE sms=N" (the loaded NCCL's version code and
 * GPU 0's multiprocessor count, 0 without a GPU). */
#include <stdio.h>

#include <cuda_runtime.h>
#include <nccl.h>

int main(void)
{
  int code = 0, sms = 0;
  if (ncclGetVersion(&code) != ncclSuccess)
    return 1;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) !=
      cudaSuccess)
    sms = 0;
  printf("nccl=%d sms=%d\n", code, sms);
  return 0;
}
