/* Two levels of teams (ncclTeamInnerFactor and ncclTeamOuterFactor of the
 * LSA team): each rank sums its inner team's send windows into its own
 * receive window; then, for its slice of the elements, the sums of its
 * outer team, read from their receive windows, into every receive window
 * of that team. Each level's barrier syncs only that team's ranks, and each
 * rank touches only the ranks of the team whose barrier ordered the access.
 * NCCL lays a barrier handle's inboxes out by the session's team: barrier
 * i's words from i * team size (nccl_device/impl/lsa_barrier__types.h), so
 * the outer team's barriers start at index gridDim.x * inner size, past
 * every word of the inner team's (lsaBarrierCount: the CTA count times the
 * ranks + 1). */
__global__ void simpleAllReduceKernel(ncclWindow_t sendwin, size_t sendoffset,
                                      ncclWindow_t recvwin, size_t recvoffset,
                                      size_t count, struct ncclDevComm devComm)
{
  const ncclTeam lsa = ncclTeamLsa(devComm);
  const ncclTeam inner = ncclTeamInnerFactor(lsa, devComm.lsaSize > 1 ? devComm.lsaSize / 2 : 1);
  const ncclTeam outer = ncclTeamOuterFactor(lsa, inner.nRanks);
  ncclLsaBarrierSession<ncclCoopCta> in{ncclCoopCta(), devComm, inner,
                                        devComm.lsaBarrier, blockIdx.x};
  ncclLsaBarrierSession<ncclCoopCta> out{
      ncclCoopCta(), devComm, outer, devComm.lsaBarrier,
      gridDim.x * inner.nRanks + blockIdx.x};
  const size_t tid = threadIdx.x + (size_t)blockDim.x * blockIdx.x;
  const size_t nthreads = (size_t)blockDim.x * gridDim.x;
  float *mine = (float *)ncclGetLsaPointer(recvwin, recvoffset, devComm.lsaRank);
  in.sync(ncclCoopCta(), cuda::memory_order_acquire); /* the inner sends */
  for (size_t i = tid; i < count; i += nthreads) {
    float v = 0.0f;
    for (int t = 0; t < inner.nRanks; t++)
      v += ((const float *)ncclGetLsaPointer(
          sendwin, sendoffset, ncclTeamRankToLsa(devComm, inner, t)))[i];
    mine[i] = v;
  }
  out.sync(ncclCoopCta(), cuda::memory_order_acq_rel); /* the outer sums */
  const size_t slice = (count + outer.nRanks - 1) / outer.nRanks;
  for (size_t i = tid; i < count; i += nthreads) {
    if (i / slice != (size_t)outer.rank)
      continue;
    float v = 0.0f;
    for (int t = 0; t < outer.nRanks; t++)
      v += ((const float *)ncclGetLsaPointer(
          recvwin, recvoffset, ncclTeamRankToLsa(devComm, outer, t)))[i];
    for (int t = 0; t < outer.nRanks; t++)
      ((float *)ncclGetLsaPointer(recvwin, recvoffset,
                                  ncclTeamRankToLsa(devComm, outer, t)))[i] = v;
  }
  out.sync(ncclCoopCta(), cuda::memory_order_release);
}
