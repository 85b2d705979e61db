/* Wrong: the lesson's kernel, then it rescales its own receive window
 * after the final barrier, which only released: the peers' stores into it
 * are not acquired (NCCL's acquireOrderOf(release) is relaxed). Each CTA
 * rescales what the same CTA of every rank stored (the elements its
 * barrier would order, had it acquired). */
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
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
  float *mine = (float *)ncclGetLsaPointer(recvwin, recvoffset, rank);
  for (int peer = 0; peer < nRanks; peer++)
    for (size_t i = threadIdx.x + (size_t)blockDim.x * (peer + (size_t)blockIdx.x * nRanks);
         i < count; i += globalNthreads)
      mine[i] *= 1.0f;
}
