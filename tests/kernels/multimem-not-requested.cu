/* Wrong: the lesson's kernel with a multicast LSA barrier (multimem=true)
 * that the device communicator never asked for (the lesson leaves
 * ncclDevCommRequirements.lsaMultimem false): the session reaches its
 * inbox through the device communicator's multicast handle, which is
 * NULL (nccl_device/impl/lsa_barrier__funcs.h). */
__global__ void simpleAllReduceKernel(ncclWindow_t sendwin, size_t sendoffset,
                                      ncclWindow_t recvwin, size_t recvoffset,
                                      size_t count, struct ncclDevComm devComm)
{
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), devComm,
                                         ncclTeamTagLsa(), blockIdx.x,
                                         /*multimem=*/true};
  bar.sync(ncclCoopCta(), cuda::memory_order_acquire);
  const int rank = devComm.lsaRank, nRanks = devComm.lsaSize;
  const size_t globalTid =
      threadIdx.x + (size_t)blockDim.x * (rank + (size_t)blockIdx.x * nRanks);
  const size_t globalNthreads = (size_t)blockDim.x * gridDim.x * nRanks;
  for (size_t offset = globalTid; offset < count; offset += globalNthreads) {
    float v = 0.0f;
    for (int peer = 0; peer < nRanks; peer++)
      v += ((const float *)ncclGetLsaPointer(sendwin, sendoffset, peer))[offset];
    for (int peer = 0; peer < nRanks; peer++)
      ((float *)ncclGetLsaPointer(recvwin, recvoffset, peer))[offset] = v;
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}
