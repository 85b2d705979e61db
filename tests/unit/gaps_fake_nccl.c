/* A stand-in libnccl for the case build/tools-gaps-forwards-nccl-calls:
 * prints the arguments each collective got and returns a value of its own,
 * so that the case can see that tools/libgaps.so passes every argument and
 * the result through unchanged. */
#include <stdio.h>

#include <nccl.h>

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream)
{
  printf("nccl got AllReduce %p %p %zu %d %d %p %p\n", send, recv, count,
         (int)type, (int)op, (void *)comm, (void *)stream);
  return ncclInvalidUsage;
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream)
{
  printf("nccl got AllGather %p %p %zu %d %p %p\n", send, recv, count,
         (int)type, (void *)comm, (void *)stream);
  return ncclInProgress;
}
