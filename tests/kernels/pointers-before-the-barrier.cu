/* The lesson's kernel with its peer pointers taken before the first
 * barrier: ncclGetLsaPointer is address arithmetic, and only the accesses
 * through the pointers must come after the acquire. */
__global__ void simpleAllReduceKernel(ncclWindow_t sendwin, size_t sendoffset,
                                      ncclWindow_t recvwin, size_t recvoffset,
                                      size_t count, struct ncclDevComm devComm)
{
  const int rank = devComm.lsaRank, nRanks = devComm.lsaSize;
  const float *sendPtrs[8];
  float *recvPtrs[8];
  for (int peer = 0; peer < nRanks && peer < 8; peer++) {
    sendPtrs[peer] = (const float *)ncclGetLsaPointer(sendwin, sendoffset, peer);
    recvPtrs[peer] = (float *)ncclGetLsaPointer(recvwin, recvoffset, peer);
  }
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), devComm,
                                         ncclTeamLsa(devComm),
                                         devComm.lsaBarrier, blockIdx.x};
  bar.sync(ncclCoopCta(), cuda::memory_order_acquire);
  const size_t globalTid =
      threadIdx.x + (size_t)blockDim.x * (rank + (size_t)blockIdx.x * nRanks);
  const size_t globalNthreads = (size_t)blockDim.x * gridDim.x * nRanks;
  for (size_t offset = globalTid; offset < count; offset += globalNthreads) {
    float v = 0.0f;
    for (int peer = 0; peer < nRanks; peer++)
      v += sendPtrs[peer][offset];
    for (int peer = 0; peer < nRanks; peer++)
      recvPtrs[peer][offset] = v;
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}
