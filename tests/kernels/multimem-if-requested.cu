/* The lesson's kernel with a multicast LSA barrier where the device
 * communicator has one: the host asks for it (reqs.lsaMultimem) only where
 * ncclCommQueryProperties reports multimemSupport, and the kernel uses it
 * only if the device communicator got a multicast handle; else the
 * barrier is the unicast one. */
__global__ void simpleAllReduceKernel(ncclWindow_t sendwin, size_t sendoffset,
                                      ncclWindow_t recvwin, size_t recvoffset,
                                      size_t count, struct ncclDevComm devComm)
{
  const bool multimem = devComm.lsaMultimem.mcBasePtr != nullptr;
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), devComm,
                                         ncclTeamTagLsa(), blockIdx.x,
                                         multimem};
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
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}
