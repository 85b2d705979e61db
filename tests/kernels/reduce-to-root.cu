/* Reduce to a root, then broadcast, with one CTA per rank (each rank's
 * CTA 0; the others end at once, making no session): every rank but the
 * root puts its part into its own receive window, the middle barrier
 * publishes it, the root (the last rank) sums the parts with its own and stores the sum
 * into every rank's receive window, which the final barrier publishes. */
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
  const float *send = (const float *)ncclGetLsaPointer(sendwin, sendoffset, rank);
  float *part = (float *)ncclGetLsaPointer(recvwin, recvoffset, rank);
  const int root = nRanks - 1;
  if (rank != root)
    for (size_t i = threadIdx.x; i < count; i += blockDim.x)
      part[i] = send[i];
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel); /* the parts */
  if (rank == root)
    for (size_t i = threadIdx.x; i < count; i += blockDim.x) {
      float v = send[i];
      for (int peer = 0; peer < root; peer++)
        v += ((const float *)ncclGetLsaPointer(recvwin, recvoffset, peer))[i];
      for (int peer = 0; peer < nRanks; peer++)
        ((float *)ncclGetLsaPointer(recvwin, recvoffset, peer))[i] = v;
    }
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}
