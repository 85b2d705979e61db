/* Gather to rank 0, overlapped: every other rank stores its send window
 * into its own receive window, arrives with release (its stores are
 * published), does other work while the barrier completes (here CTA-wide
 * steps), then waits; rank 0 syncs (acq_rel), sums every rank's part and
 * stores the sum into every receive window, which the final barrier
 * publishes. One CTA per rank (each rank's CTA 0; the others end at once,
 * making no session). */
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
  if (rank != 0) {
    for (size_t i = threadIdx.x; i < count; i += blockDim.x)
      part[i] = send[i];
    bar.arrive(ncclCoopCta(), cuda::memory_order_release); /* the part */
    for (int step = 0; step < 16; step++) /* other work meanwhile */
      __syncthreads();
    bar.wait(ncclCoopCta(), cuda::memory_order_acquire);
  } else {
    bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel); /* the parts */
    for (size_t i = threadIdx.x; i < count; i += blockDim.x) {
      float v = send[i];
      for (int peer = 1; peer < nRanks; peer++)
        v += ((const float *)ncclGetLsaPointer(recvwin, recvoffset, peer))[i];
      for (int peer = 0; peer < nRanks; peer++)
        ((float *)ncclGetLsaPointer(recvwin, recvoffset, peer))[i] = v;
    }
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}
