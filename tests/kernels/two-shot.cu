/* Two-shot: reduce-scatter into each owner's receive window, then
 * all-gather from the owners' windows. Each CTA handles, in both phases,
 * the same positions of every chunk, so the ranks' same CTA (one LSA
 * barrier each) is all that must meet. The middle barrier must release
 * this CTA's phase-1 stores and acquire the peers': acq_rel. */
__global__ void simpleAllReduceKernel(ncclWindow_t sendwin, size_t sendoffset,
                                      ncclWindow_t recvwin, size_t recvoffset,
                                      size_t count, struct ncclDevComm devComm)
{
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), devComm,
                                         ncclTeamLsa(devComm),
                                         devComm.lsaBarrier, blockIdx.x};
  bar.sync(ncclCoopCta(), cuda::memory_order_acquire);
  const int rank = devComm.lsaRank, nRanks = devComm.lsaSize;
  const size_t chunk = (count + nRanks - 1) / nRanks;
  const size_t tid = threadIdx.x + (size_t)blockDim.x * blockIdx.x;
  const size_t nthreads = (size_t)blockDim.x * gridDim.x;
  float *mine = (float *)ncclGetLsaPointer(recvwin, recvoffset, rank);
  const size_t begin = rank * chunk;
  for (size_t i = tid; i < chunk && begin + i < count; i += nthreads) {
    float v = 0.0f;
    for (int peer = 0; peer < nRanks; peer++)
      v += ((const float *)ncclGetLsaPointer(sendwin, sendoffset, peer))[begin + i];
    mine[begin + i] = v;
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel); /* middle */
  for (int peer = 0; peer < nRanks; peer++) {
    if (peer == rank)
      continue;
    const float *theirs = (const float *)ncclGetLsaPointer(recvwin, recvoffset, peer);
    for (size_t i = tid; i < chunk && peer * chunk + i < count; i += nthreads)
      mine[peer * chunk + i] = theirs[peer * chunk + i];
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}
