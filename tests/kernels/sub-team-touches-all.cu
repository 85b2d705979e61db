/* Wrong: the lesson's kernel with its barrier on a sub-team (the inner
 * half of the LSA team: ncclTeamInnerFactor), touching every rank of the
 * LSA team. NCCL's arrive and wait reach only the team's peers
 * (nccl_device/impl/lsa_barrier__funcs.h): nothing orders the accesses to
 * the ranks outside it. */
__global__ void simpleAllReduceKernel(ncclWindow_t sendwin, size_t sendoffset,
                                      ncclWindow_t recvwin, size_t recvoffset,
                                      size_t count, struct ncclDevComm devComm)
{
  const ncclTeam half = ncclTeamInnerFactor(
      ncclTeamLsa(devComm), devComm.lsaSize > 1 ? devComm.lsaSize / 2 : 1);
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), devComm, half,
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
