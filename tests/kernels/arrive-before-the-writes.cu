/* Wrong: split-arrive-wait.cu with the arrive before the writes it should
 * publish. A peer's wait returns on that arrive, which released nothing of
 * this rank's chunk, and the peer reads it one barrier too early: it is
 * released only by the final barrier's arrive. (A GPU's load may return
 * the older arrival even where the newer one was stored.) */
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
  bar.arrive(ncclCoopCta(), cuda::memory_order_release); /* too early */
  for (size_t i = threadIdx.x; i < chunk && rank * chunk + i < count;
       i += blockDim.x) {
    float v = 0.0f;
    for (int peer = 0; peer < nRanks; peer++)
      v += ((const float *)ncclGetLsaPointer(sendwin, sendoffset, peer))[rank * chunk + i];
    mine[rank * chunk + i] = v;
  }
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
