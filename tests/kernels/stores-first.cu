/* The kernel's first act is a store into the rank's own send window (the
 * lesson's fill, common/src/verify.c's pattern_value, over what the host
 * copied there): no barrier before it.
 * The one barrier after it must release those stores and acquire the
 * peers': acq_rel. Then each rank sums every peer's send window into its
 * own receive window, and the last barrier keeps every peer's reads
 * before any rank's kernel ends. */
__global__ void simpleAllReduceKernel(ncclWindow_t sendwin, size_t sendoffset,
                                      ncclWindow_t recvwin, size_t recvoffset,
                                      size_t count, struct ncclDevComm devComm)
{
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), devComm,
                                         ncclTeamLsa(devComm),
                                         devComm.lsaBarrier, blockIdx.x};
  const int rank = devComm.lsaRank, nRanks = devComm.lsaSize;
  const size_t tid = threadIdx.x + (size_t)blockDim.x * blockIdx.x;
  const size_t nthreads = (size_t)blockDim.x * gridDim.x;
  float *send = (float *)ncclGetLsaPointer(sendwin, sendoffset, rank);
  for (size_t i = tid; i < count; i += nthreads)
    send[i] = (float)(rank + 1) + 16.0f * (float)(i % 251);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel); /* middle */
  float *recv = (float *)ncclGetLsaPointer(recvwin, recvoffset, rank);
  for (size_t i = tid; i < count; i += nthreads) {
    float v = 0.0f;
    for (int peer = 0; peer < nRanks; peer++)
      v += ((const float *)ncclGetLsaPointer(sendwin, sendoffset, peer))[i];
    recv[i] = v;
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}
