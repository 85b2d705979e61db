/* Each rank zeroes its own receive window, then adds its send window into
 * every rank's receive window with an atomic of system scope
 * (atomicAdd_system): atomics of several GPUs on one word are indivisible
 * only at system scope (CUDA's atomic functions: atomicAdd is of device
 * scope, atomic only among one GPU's threads). Each CTA touches the same
 * elements on every rank, so that its LSA barrier orders them: the zeros
 * before the adds (acq_rel), the adds before the owners read them. Its
 * wrong twins (tests/suites/42-kernels.sh) add with atomicAdd, and with a
 * plain +=. */
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
  float *mine = (float *)ncclGetLsaPointer(recvwin, recvoffset, rank);
  for (size_t i = tid; i < count; i += nthreads)
    mine[i] = 0.0f;
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
  const float *send = (const float *)ncclGetLsaPointer(sendwin, sendoffset, rank);
  for (int peer = 0; peer < nRanks; peer++) {
    float *theirs = (float *)ncclGetLsaPointer(recvwin, recvoffset, peer);
    for (size_t i = tid; i < count; i += nthreads)
      atomicAdd_system(&theirs[i], send[i]); /* add */
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}
