/* The lesson's kernel, then each thread reads back, in its own receive
 * window, the element it stored there itself, and scales it by 1 before
 * the final barrier: the element's CTA (`owner`) is the thread's own, so
 * program order orders the two. Its wrong twin (tests/suites/
 * 42-kernels.sh) reads back the next CTA's element of this rank, which
 * no peer touches: nothing orders two CTAs of a kernel. */
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
  const size_t owner = blockIdx.x; /* the CTA whose element is read back */
  float *mine = (float *)ncclGetLsaPointer(recvwin, recvoffset, rank);
  for (size_t offset = threadIdx.x + (size_t)blockDim.x * (rank + owner * nRanks);
       offset < count; offset += globalNthreads)
    mine[offset] *= 1.0f;
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}
