/* Wrong: the lesson's kernel, where half of each warp meets the CTA at
 * two __syncthreads() while the other half syncs the LSA barrier, whose
 * arrive and wait each sync the CTA (ncclCoopCta's sync, __syncthreads()
 * too): the counts match, the barriers do not. __syncthreads() is
 * barrier.sync.aligned, undefined from divergent code (PTX): a GPU may
 * hang. Its correct twin is converged-barrier.cu. */
__global__ void simpleAllReduceKernel(ncclWindow_t sendwin, size_t sendoffset,
                                      ncclWindow_t recvwin, size_t recvoffset,
                                      size_t count, struct ncclDevComm devComm)
{
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), devComm,
                                         ncclTeamLsa(devComm),
                                         devComm.lsaBarrier, blockIdx.x};
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
  if (threadIdx.x % 32 < 16) {
    __syncthreads();
    __syncthreads();
  } else {
    bar.sync(ncclCoopCta(), cuda::memory_order_release);
  }
}
