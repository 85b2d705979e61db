/* Wrong: the lesson's kernel, then a last sync of each rank with its pair
 * (ncclTeamInnerFactor of 2) on barriers gridDim.x and up of the same
 * handle. NCCL lays a handle's inboxes out by the session's team: barrier
 * i's word from team rank p at i * team size + p
 * (nccl_device/impl/lsa_barrier__types.h), so past 2 ranks the pairs'
 * words (2 * (gridDim.x + b) + p) are words of the LSA team's barriers
 * (4 * b' + p'), and a pair's wait may pass on an arrival of another
 * barrier. (lsaBarrierCount: twice the CTA count.) */
__global__ void simpleAllReduceKernel(ncclWindow_t sendwin, size_t sendoffset,
                                      ncclWindow_t recvwin, size_t recvoffset,
                                      size_t count, struct ncclDevComm devComm)
{
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
  }
  const ncclTeam pair = ncclTeamInnerFactor(ncclTeamLsa(devComm), 2);
  ncclLsaBarrierSession<ncclCoopCta> last{ncclCoopCta(), devComm, pair,
                                          devComm.lsaBarrier,
                                          gridDim.x + blockIdx.x};
  last.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}
