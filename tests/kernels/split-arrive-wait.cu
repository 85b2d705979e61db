/* Two-shot with the middle barrier split into its halves: each rank
 * reduces its chunk into its own receive window, arrives with release
 * (its chunk is published), may do other work, then waits with acquire
 * (the peers' chunks are visible) and gathers them. One CTA per rank does
 * the work: each rank's CTA 0 (the others end at once, making no session). */
__global__ void simpleAllReduceKernel(ncclWindow_t sendwin, size_t sendoffset,
                                      ncclWindow_t recvwin, size_t recvoffset,
                                      size_t count, struct ncclDevComm devComm)
{
  if (blockIdx.x != 0)
    return;
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), devComm,
                                         ncclTeamLsa(devComm),
                                         devComm.lsaBarrier, 0};
  bar.sync(ncclCoopCta(), cuda::memory_order_acquire);
  const int rank = devComm.lsaRank, nRanks = devComm.lsaSize;
  const size_t chunk = (count + nRanks - 1) / nRanks;
  float *mine = (float *)ncclGetLsaPointer(recvwin, recvoffset, rank);
  for (size_t i = threadIdx.x; i < chunk && rank * chunk + i < count;
       i += blockDim.x) {
    float v = 0.0f;
    for (int peer = 0; peer < nRanks; peer++)
      v += ((const float *)ncclGetLsaPointer(sendwin, sendoffset, peer))[rank * chunk + i];
    mine[rank * chunk + i] = v;
  }
  bar.arrive(ncclCoopCta(), cuda::memory_order_release); /* after the writes */
  bar.wait(ncclCoopCta(), cuda::memory_order_acquire);
  for (int peer = 0; peer < nRanks; peer++) {
    if (peer == rank)
      continue;
    const float *theirs = (const float *)ncclGetLsaPointer(recvwin, recvoffset, peer);
    for (size_t i = threadIdx.x; i < chunk && peer * chunk + i < count;
         i += blockDim.x)
      mine[peer * chunk + i] = theirs[peer * chunk + i];
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}
