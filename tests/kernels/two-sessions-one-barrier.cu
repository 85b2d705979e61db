/* Wrong: the lesson's kernel with a second session on the CTA's barrier
 * for the final sync, made while the first is alive: both copy the same
 * epoch (nccl_device/impl/lsa_barrier__funcs.h), so the second's wait
 * passes at once on the peers' first arrivals, and the kernel may end
 * before the peers' stores into this rank's window arrive. */
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
  ncclLsaBarrierSession<ncclCoopCta> last{ncclCoopCta(), devComm,
                                          ncclTeamLsa(devComm),
                                          devComm.lsaBarrier, blockIdx.x};
  last.sync(ncclCoopCta(), cuda::memory_order_release);
}
