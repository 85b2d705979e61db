/*
 * The kernel of 04_allreduce_fast, stage by stage: a sum AllReduce of floats
 * on symmetric windows, read and written through the device API (LSA).
 *
 *   stage 1  vectors   16 bytes per load and store (float4), a scalar head
 *                     and tail where the windows are not 16-byte aligned or
 *                     the count is not a multiple of 4; 16 CTAs, as lesson
 *                     03 (allreduce_push with a small grid)
 *   stage 2  the grid  as many CTAs as the GPU holds at once, shared by the
 *                     ranks on it (allreduce_push with the launch of
 *                     main.cu's grid_for)
 *   stage 3  one-shot  every rank reads every peer's whole buffer and writes
 *                     only its own (allreduce_one_shot); two-shot: each
 *                     rank reduces its own slice into its own window, then
 *                     copies the other slices from their owners' windows
 *                     (allreduce_two_shot)
 *
 * Every kernel: the CTA with index c meets the CTA c of every peer at LSA
 * barrier c, and touches, in every rank's windows, only the elements that
 * the CTA c of each rank touches (a pattern that depends on the CTA and
 * thread index alone). Every element's sum is taken in the same order,
 * peer 0 first, so that every rank gets the same bits.
 */
#ifndef ALLREDUCE_FAST_KERNELS_CUH
#define ALLREDUCE_FAST_KERNELS_CUH

#include <stdint.h>

#include <nccl_device.h>

#define FLOATS_PER_VECTOR 4 /* float4: one 16-byte load or store */
#define UNROLL            4 /* vectors in flight per thread and peer */

/* The two windows, as one rank's kernel sees them. */
struct Windows {
  ncclWindow_t send, recv;
  size_t send_offset, recv_offset; /* bytes; a multiple of sizeof(float) */
  size_t count;                    /* floats per rank */
};

__device__ inline const float *send_of(const Windows &w, int peer)
{
  return (const float *)ncclGetLsaPointer(w.send, w.send_offset, peer);
}

__device__ inline float *recv_of(const Windows &w, int peer)
{
  return (float *)ncclGetLsaPointer(w.recv, w.recv_offset, peer);
}

/* The elements as a scalar head, whole 16-byte vectors, and a scalar tail.
 * NCCL maps every rank's part of a window at the same alignment, so this
 * rank's pointers tell every peer's. Where send and recv differ in their
 * alignment within 16 bytes, no element can be moved as part of a vector
 * on both sides: all of them are scalars. */
struct Layout {
  size_t head;       /* scalars before the first vector */
  size_t vectors;    /* whole vectors after the head */
  size_t tail_begin; /* first scalar after the vectors */
};

__device__ inline Layout layout_of(const Windows &w, int rank)
{
  const uintptr_t s = (uintptr_t)send_of(w, rank);
  const uintptr_t r = (uintptr_t)recv_of(w, rank);
  Layout l;
  if ((s - r) % 16 != 0) {
    l.head = w.count;
  } else {
    const size_t to_aligned = (16 - s % 16) % 16 / sizeof(float);
    l.head = to_aligned < w.count ? to_aligned : w.count;
  }
  l.vectors = (w.count - l.head) / FLOATS_PER_VECTOR;
  l.tail_begin = l.head + l.vectors * FLOATS_PER_VECTOR;
  return l;
}

/* The scalars, numbered 0 .. scalars-1: the head, then the tail. */
__device__ inline size_t scalars_of(const Layout &l, size_t count)
{
  return l.head + (count - l.tail_begin);
}

__device__ inline size_t scalar_element(const Layout &l, size_t k)
{
  return k < l.head ? k : l.tail_begin + (k - l.head);
}

/* Part `part` of `parts` equal parts of [0, n): the rank's slice. */
struct Range {
  size_t begin, end;
};

__device__ inline Range slice(size_t n, int part, int parts)
{
  return Range{n * part / parts, n * (part + 1) / parts};
}

__device__ inline float4 add4(float4 a, float4 b)
{
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

/* The vectors of every peer's send window, from the head on. */
__device__ inline const float4 *send_vectors(const Windows &w, const Layout &l,
                                             int peer)
{
  return (const float4 *)(send_of(w, peer) + l.head);
}

__device__ inline float4 *recv_vectors(const Windows &w, const Layout &l,
                                       int peer)
{
  return (float4 *)(recv_of(w, peer) + l.head);
}

/* How this thread walks a range: UNROLL vectors a blockDim.x apart, then
 * the whole grid's stride. The same function of (CTA, thread) on every
 * rank, so the CTA c of every rank touches the same elements. */
__device__ inline size_t first_of(const Range &r)
{
  return r.begin + (size_t)blockIdx.x * blockDim.x * UNROLL + threadIdx.x;
}

__device__ inline size_t grid_stride(void)
{
  return (size_t)gridDim.x * blockDim.x * UNROLL;
}

/* The sum over every peer of the vectors i, i + blockDim.x, ... (UNROLL of
 * them, those below `end`) into sum[]. */
__device__ inline void sum_vectors(const Windows &w, const Layout &l,
                                   int npeers, size_t i, size_t end,
                                   float4 sum[UNROLL])
{
  for (int u = 0; u < UNROLL; u++)
    sum[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int peer = 0; peer < npeers; peer++) {
    const float4 *src = send_vectors(w, l, peer);
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
      const size_t k = i + (size_t)u * blockDim.x;
      if (k < end)
        sum[u] = add4(sum[u], src[k]);
    }
  }
}

__device__ inline void store_vectors(float4 *dst, size_t i, size_t end,
                                     const float4 sum[UNROLL])
{
#pragma unroll
  for (int u = 0; u < UNROLL; u++) {
    const size_t k = i + (size_t)u * blockDim.x;
    if (k < end)
      dst[k] = sum[u];
  }
}

/* Element e summed over every peer's send window. */
__device__ inline float sum_scalar(const Windows &w, int npeers, size_t e)
{
  float v = 0.0f;
  for (int peer = 0; peer < npeers; peer++)
    v += send_of(w, peer)[e];
  return v;
}

/* This CTA's barrier with the same CTA of every rank of the LSA team: one
 * per CTA, as the device communicator was asked (main.cu). */
__device__ inline ncclLsaBarrierSession<ncclCoopCta>
cta_barrier(const ncclDevComm &devComm)
{
  return ncclLsaBarrierSession<ncclCoopCta>{ncclCoopCta(), devComm,
                                            ncclTeamLsa(devComm),
                                            devComm.lsaBarrier, blockIdx.x};
}

/* Stages 1 and 2. Each rank owns a slice of the elements: it sums them from
 * every peer's send window and stores the sum into every peer's receive
 * window (lesson 03's kernel, 16 bytes at a time). Per rank: reads the
 * count's worth of floats, writes the count's worth. */
__global__ void allreduce_push(Windows w, ncclDevComm devComm)
{
  /* Acquire: the peers' send windows, written before their kernels
   * started, are visible after it, and no peer still reads the receive
   * windows this kernel is about to write (as in lesson 03). */
  ncclLsaBarrierSession<ncclCoopCta> bar = cta_barrier(devComm);
  bar.sync(ncclCoopCta(), cuda::memory_order_acquire);

  const int rank = devComm.lsaRank, n = devComm.lsaSize;
  const Layout l = layout_of(w, rank);
  const Range mine = slice(l.vectors, rank, n);
  for (size_t i = first_of(mine); i < mine.end; i += grid_stride()) {
    float4 sum[UNROLL];
    sum_vectors(w, l, n, i, mine.end, sum);
    for (int peer = 0; peer < n; peer++)
      store_vectors(recv_vectors(w, l, peer), i, mine.end, sum);
  }
  const Range scalars = slice(scalars_of(l, w.count), rank, n);
  for (size_t k = scalars.begin + (size_t)blockIdx.x * blockDim.x + threadIdx.x;
       k < scalars.end; k += (size_t)gridDim.x * blockDim.x) {
    const size_t e = scalar_element(l, k);
    const float v = sum_scalar(w, n, e);
    for (int peer = 0; peer < n; peer++)
      recv_of(w, peer)[e] = v;
  }

  /* Release: this CTA's stores into the peers' windows are visible to them
   * once they pass the barrier, and this kernel ends only when every peer
   * has stopped reading this rank's send window. */
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}

/* Stage 3, one-shot: each rank sums every element from every peer's send
 * window into its own receive window. Per rank: reads the count's worth
 * of floats from each of n ranks, writes the count's worth, all local. One
 * phase: for small messages, the fewest steps between the barriers. */
__global__ void allreduce_one_shot(Windows w, ncclDevComm devComm)
{
  ncclLsaBarrierSession<ncclCoopCta> bar = cta_barrier(devComm);
  /* Acquire: the peers' send windows are visible after it. */
  bar.sync(ncclCoopCta(), cuda::memory_order_acquire);

  const int rank = devComm.lsaRank, n = devComm.lsaSize;
  const Layout l = layout_of(w, rank);
  const Range all = {0, l.vectors};
  float4 *dst = recv_vectors(w, l, rank);
  for (size_t i = first_of(all); i < all.end; i += grid_stride()) {
    float4 sum[UNROLL];
    sum_vectors(w, l, n, i, all.end, sum);
    store_vectors(dst, i, all.end, sum);
  }
  const size_t scalars = scalars_of(l, w.count);
  for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < scalars;
       k += (size_t)gridDim.x * blockDim.x) {
    const size_t e = scalar_element(l, k);
    recv_of(w, rank)[e] = sum_scalar(w, n, e);
  }

  /* Release: this kernel ends only when no peer still reads this rank's
   * send window. */
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}

/* Stage 3, two-shot: a reduce-scatter into the owner's own receive window,
 * then an all-gather from the owners' windows. Per rank: reads the count's
 * worth of floats in the first phase and (n-1)/n of it in the second,
 * writes 1/n of it, then (n-1)/n of it, all local. */
__global__ void allreduce_two_shot(Windows w, ncclDevComm devComm)
{
  ncclLsaBarrierSession<ncclCoopCta> bar = cta_barrier(devComm);
  bar.sync(ncclCoopCta(), cuda::memory_order_acquire);

  const int rank = devComm.lsaRank, n = devComm.lsaSize;
  const Layout l = layout_of(w, rank);
  const size_t nscalars = scalars_of(l, w.count);
  const size_t scalar_first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  const size_t scalar_stride = (size_t)gridDim.x * blockDim.x;

  /* Phase 1: this rank's slice, summed into its own receive window. */
  const Range mine = slice(l.vectors, rank, n);
  float4 *dst = recv_vectors(w, l, rank);
  for (size_t i = first_of(mine); i < mine.end; i += grid_stride()) {
    float4 sum[UNROLL];
    sum_vectors(w, l, n, i, mine.end, sum);
    store_vectors(dst, i, mine.end, sum);
  }
  const Range my_scalars = slice(nscalars, rank, n);
  for (size_t k = my_scalars.begin + scalar_first; k < my_scalars.end;
       k += scalar_stride) {
    const size_t e = scalar_element(l, k);
    recv_of(w, rank)[e] = sum_scalar(w, n, e);
  }

  /* acq_rel (sync = arrive with releaseOrderOf(order), then wait with
   * acquireOrderOf(order): NCCL's nccl_device/impl/lsa_barrier__funcs.h).
   * Release: this CTA's slice, just stored, is visible to the peers that
   * read it next. Acquire: theirs is visible here. Either half alone
   * leaves a peer reading a slice that is not yet its sum. */
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);

  /* Phase 2: every other slice, copied from its owner's window. */
  for (int owner = 0; owner < n; owner++) {
    if (owner == rank)
      continue;
    const Range theirs = slice(l.vectors, owner, n);
    const float4 *src = recv_vectors(w, l, owner);
    for (size_t i = first_of(theirs); i < theirs.end; i += grid_stride()) {
      /* Every load before the first store: the compiler cannot tell that
       * the two windows never overlap. */
      float4 v[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; u++) {
        const size_t k = i + (size_t)u * blockDim.x;
        if (k < theirs.end)
          v[u] = src[k];
      }
      store_vectors(dst, i, theirs.end, v);
    }
    const Range their_scalars = slice(nscalars, owner, n);
    for (size_t k = their_scalars.begin + scalar_first; k < their_scalars.end;
         k += scalar_stride) {
      const size_t e = scalar_element(l, k);
      recv_of(w, rank)[e] = recv_of(w, owner)[e];
    }
  }

  /* Release: this kernel ends only when no peer still reads this rank's
   * windows (the next operation's first phase writes them). */
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}

#endif
