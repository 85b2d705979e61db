/* Wrong: reduce-to-root.cu with the middle barrier before the parts are
 * stored: the root's wait returns on the peers' arrivals that came before
 * their stores, and it reads the parts one barrier too early (they are
 * published only by the final barrier's arrive, which the root's wait
 * may or may not have seen: a GPU's load may return the older arrival). */
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
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel); /* too early */
  if (rank != root)
    for (size_t i = threadIdx.x; i < count; i += blockDim.x)
      part[i] = send[i];
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
