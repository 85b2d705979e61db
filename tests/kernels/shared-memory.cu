/* The lesson's kernel with each sum passed through the CTA's __shared__
 * memory: thread t stores its sum in tile[t], and after __syncthreads
 * writes its neighbour's sum to its neighbour's element. A zero set by
 * thread 0 alone is read by every thread. Rounds are the same for every
 * thread of the CTA, so that each reaches every __syncthreads. */
__global__ void simpleAllReduceKernel(ncclWindow_t sendwin, size_t sendoffset,
                                      ncclWindow_t recvwin, size_t recvoffset,
                                      size_t count, struct ncclDevComm devComm)
{
  __shared__ float zero;
  __shared__ float tile[NCCL_DEVICE_THREADS_PER_CTA];
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), devComm,
                                         ncclTeamLsa(devComm),
                                         devComm.lsaBarrier, blockIdx.x};
  bar.sync(ncclCoopCta(), cuda::memory_order_acquire);
  if (threadIdx.x == 0)
    zero = 0.0f;
  __syncthreads();
  const int rank = devComm.lsaRank, nRanks = devComm.lsaSize;
  const size_t first =
      (size_t)blockDim.x * (rank + (size_t)blockIdx.x * nRanks);
  const size_t globalNthreads = (size_t)blockDim.x * gridDim.x * nRanks;
  const unsigned next = (threadIdx.x + 1) % blockDim.x;
  for (size_t base = first; base < count; base += globalNthreads) {
    float v = zero;
    if (base + threadIdx.x < count)
      for (int peer = 0; peer < nRanks; peer++)
        v += ((const float *)ncclGetLsaPointer(sendwin, sendoffset, peer))[base + threadIdx.x];
    tile[threadIdx.x] = v;
    __syncthreads();
    if (base + next < count)
      for (int peer = 0; peer < nRanks; peer++)
        ((float *)ncclGetLsaPointer(recvwin, recvoffset, peer))[base + next] = tile[next];
    __syncthreads();
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}
