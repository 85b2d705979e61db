/* The lesson's kernel with warp shuffles: each warp checks that a
 * butterfly sum of ones is its size (__shfl_xor_sync), then each thread
 * writes the sum of its neighbour lane (__shfl_sync) to its neighbour's
 * element. Every lane of a warp runs every round. */
__global__ void simpleAllReduceKernel(ncclWindow_t sendwin, size_t sendoffset,
                                      ncclWindow_t recvwin, size_t recvoffset,
                                      size_t count, struct ncclDevComm devComm)
{
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), devComm,
                                         ncclTeamLsa(devComm),
                                         devComm.lsaBarrier, blockIdx.x};
  bar.sync(ncclCoopCta(), cuda::memory_order_acquire);
  const int rank = devComm.lsaRank, nRanks = devComm.lsaSize;
  const unsigned lane = threadIdx.x % 32, all = 0xffffffffu;
  float ones = 1.0f;
  for (int mask = 16; mask > 0; mask /= 2)
    ones += __shfl_xor_sync(all, ones, mask);
  const size_t first =
      (size_t)blockDim.x * (rank + (size_t)blockIdx.x * nRanks);
  const size_t globalNthreads = (size_t)blockDim.x * gridDim.x * nRanks;
  for (size_t base = first; base < count; base += globalNthreads) {
    const size_t mine = base + threadIdx.x;
    float v = ones - 32.0f; /* 0 where the shuffles are right */
    if (mine < count)
      for (int peer = 0; peer < nRanks; peer++)
        v += ((const float *)ncclGetLsaPointer(sendwin, sendoffset, peer))[mine];
    const float theirs = __shfl_sync(all, v, (lane + 1) % 32);
    const size_t at = mine - lane + (lane + 1) % 32;
    if (at < count)
      for (int peer = 0; peer < nRanks; peer++)
        ((float *)ncclGetLsaPointer(recvwin, recvoffset, peer))[at] = theirs;
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}
