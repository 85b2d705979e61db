/* Wrong: the lesson's kernel storing the sums through the window's
 * multicast address (ncclGetLsaMultimemPointer), which the device
 * communicator never asked for (ncclDevCommRequirements.lsaMultimem): its
 * multicast handle is NULL, and so is the pointer's base
 * (nccl_device/impl/core__funcs.h). */
__global__ void simpleAllReduceKernel(ncclWindow_t sendwin, size_t sendoffset,
                                      ncclWindow_t recvwin, size_t recvoffset,
                                      size_t count, struct ncclDevComm devComm)
{
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), devComm,
                                         ncclTeamTagLsa(), blockIdx.x};
  bar.sync(ncclCoopCta(), cuda::memory_order_acquire);
  const int rank = devComm.lsaRank, nRanks = devComm.lsaSize;
  const size_t globalTid =
      threadIdx.x + (size_t)blockDim.x * (rank + (size_t)blockIdx.x * nRanks);
  const size_t globalNthreads = (size_t)blockDim.x * gridDim.x * nRanks;
  for (size_t offset = globalTid; offset < count; offset += globalNthreads) {
    float v = 0.0f;
    for (int peer = 0; peer < nRanks; peer++)
      v += ((const float *)ncclGetLsaPointer(sendwin, sendoffset, peer))[offset];
    /* one store to the multicast address reaches every rank's window */
    ((float *)ncclGetLsaMultimemPointer(recvwin, recvoffset, devComm))[offset] = v;
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}
