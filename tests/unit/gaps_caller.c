/* Calls the two collectives of tests/unit/gaps_fake_nccl.c with arguments
 * no real call would have, three times each, and prints what came back
 * (the case build/tools-gaps-forwards-nccl-calls). */
#include <stdint.h>
#include <stdio.h>

#include <nccl.h>

int main(void)
{
  for (int i = 0; i < 3; i++) {
    ncclResult_t r = ncclAllReduce((void *)0x1000, (void *)0x2000, 12345,
                                   ncclFloat, ncclSum, (ncclComm_t)0x3000,
                                   (cudaStream_t)0x4000);
    printf("AllReduce returned %d\n", (int)r);
    r = ncclAllGather((void *)0x5000, (void *)0x6000, 678, ncclInt8,
                      (ncclComm_t)0x7000, (cudaStream_t)0x8000);
    printf("AllGather returned %d\n", (int)r);
  }
  return 0;
}
