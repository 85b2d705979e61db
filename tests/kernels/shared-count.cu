/* The lesson's kernel, where each CTA first counts its threads in a
 * __shared__ float, every thread adding 1 with an atomic (of the CTA's
 * scope: atomicAdd_block), and scales each sum by count / blockDim.x (1).
 * Its wrong twin adds with a plain += (tests/suites/42-kernels.sh): a load
 * and a store of each thread, which the threads of a CTA interleave, so
 * that updates are lost, and the count is short of blockDim.x. */
__global__ void simpleAllReduceKernel(ncclWindow_t sendwin, size_t sendoffset,
                                      ncclWindow_t recvwin, size_t recvoffset,
                                      size_t count, struct ncclDevComm devComm)
{
  __shared__ float threads;
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), devComm,
                                         ncclTeamLsa(devComm),
                                         devComm.lsaBarrier, blockIdx.x};
  if (threadIdx.x == 0)
    threads = 0.0f;
  __syncthreads();
  atomicAdd_block(&threads, 1.0f); /* count */
  __syncthreads();
  const float scale = threads / (float)blockDim.x;
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
      ((float *)ncclGetLsaPointer(recvwin, recvoffset, peer))[offset] = v * scale;
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}
