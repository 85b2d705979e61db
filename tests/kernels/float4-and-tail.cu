/* The float4 kernel for any count: whole vectors, then the last count % 4
 * elements one at a time, so that no access runs past a window's end. */
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
  for (size_t i = globalTid; i < count / 4; i += globalNthreads) {
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int peer = 0; peer < nRanks; peer++) {
      const float4 x =
          ((const float4 *)ncclGetLsaPointer(sendwin, sendoffset, peer))[i];
      v.x += x.x, v.y += x.y, v.z += x.z, v.w += x.w;
    }
    for (int peer = 0; peer < nRanks; peer++)
      ((float4 *)ncclGetLsaPointer(recvwin, recvoffset, peer))[i] = v;
  }
  for (size_t i = count / 4 * 4 + globalTid; i < count; i += globalNthreads) {
    float v = 0.0f;
    for (int peer = 0; peer < nRanks; peer++)
      v += ((const float *)ncclGetLsaPointer(sendwin, sendoffset, peer))[i];
    for (int peer = 0; peer < nRanks; peer++)
      ((float *)ncclGetLsaPointer(recvwin, recvoffset, peer))[i] = v;
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}
