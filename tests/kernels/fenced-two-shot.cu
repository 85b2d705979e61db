/* two-shot.cu with its middle barrier relaxed, and fences in its place
 * (PTX's memory model: a fence then a relaxed store of the same thread
 * releases, a relaxed load then a fence acquires; NCCL 2.30.7
 * nccl_device/impl/lsa_barrier__funcs.h: a relaxed arrive stores each
 * peer's epoch relaxed, a relaxed wait loads them relaxed):
 * __threadfence_system() before the arrive releases each thread's
 * phase-1 stores to the other GPUs, __threadfence_system() after the wait
 * acquires what the peers released, and __syncthreads() hands it to
 * every thread of the CTA. Its wrong twins (tests/suites/42-kernels.sh)
 * fence with __threadfence(), of device scope, on one side: it orders
 * nothing between GPUs. */
__global__ void simpleAllReduceKernel(ncclWindow_t sendwin, size_t sendoffset,
                                      ncclWindow_t recvwin, size_t recvoffset,
                                      size_t count, struct ncclDevComm devComm)
{
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), devComm,
                                         ncclTeamLsa(devComm),
                                         devComm.lsaBarrier, blockIdx.x};
  bar.sync(ncclCoopCta(), cuda::memory_order_acquire);
  const int rank = devComm.lsaRank, nRanks = devComm.lsaSize;
  const size_t chunk = (count + nRanks - 1) / nRanks;
  const size_t tid = threadIdx.x + (size_t)blockDim.x * blockIdx.x;
  const size_t nthreads = (size_t)blockDim.x * gridDim.x;
  float *mine = (float *)ncclGetLsaPointer(recvwin, recvoffset, rank);
  const size_t begin = rank * chunk;
  for (size_t i = tid; i < chunk && begin + i < count; i += nthreads) {
    float v = 0.0f;
    for (int peer = 0; peer < nRanks; peer++)
      v += ((const float *)ncclGetLsaPointer(sendwin, sendoffset, peer))[begin + i];
    mine[begin + i] = v;
  }
  __threadfence_system(); /* release */
  bar.arrive(ncclCoopCta(), cuda::memory_order_relaxed);
  bar.wait(ncclCoopCta(), cuda::memory_order_relaxed);
  __threadfence_system(); /* acquire */
  __syncthreads();
  for (int peer = 0; peer < nRanks; peer++) {
    if (peer == rank)
      continue;
    const float *theirs = (const float *)ncclGetLsaPointer(recvwin, recvoffset, peer);
    for (size_t i = tid; i < chunk && peer * chunk + i < count; i += nthreads)
      mine[peer * chunk + i] = theirs[peer * chunk + i];
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}
