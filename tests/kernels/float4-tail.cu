/* Wrong: the float4 kernel for any count, rounding the vectors up: where
 * the count is no multiple of 4, the last vector runs up to 3 elements
 * past the end of every window (run with -n 4099). */
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
  for (size_t i = globalTid; i < (count + 3) / 4; i += globalNthreads) {
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int peer = 0; peer < nRanks; peer++) {
      const float4 x =
          ((const float4 *)ncclGetLsaPointer(sendwin, sendoffset, peer))[i];
      v.x += x.x, v.y += x.y, v.z += x.z, v.w += x.w;
    }
    for (int peer = 0; peer < nRanks; peer++)
      ((float4 *)ncclGetLsaPointer(recvwin, recvoffset, peer))[i] = v;
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}
