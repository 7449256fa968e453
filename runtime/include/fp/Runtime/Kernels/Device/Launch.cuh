//===- Device/Launch.cuh - Launch helpers and block reductions --*- C++ -*-===//
//
// The block and grid sizes of the elementwise and row kernels, launch(), which
// checks every launch, and the block reductions with their fixed shuffle trees.
//
// Counterpart: Host/Launch.h.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_DEVICE_LAUNCH_CUH
#define FP_RUNTIME_KERNELS_DEVICE_LAUNCH_CUH

#include "fp/Runtime/Kernels/Device/Context.cuh"

namespace fp::cuda {

namespace detail {

/// Threads of the elementwise and per-row-of-work kernels.
inline constexpr int kThreads = 256;
/// Grids are capped; kernels cover the rest with grid-stride loops.
inline constexpr int64_t kMaxBlocks = int64_t(1) << 16;

inline int64_t blocksFor(int64_t work) {
  return (work + kThreads - 1) / kThreads;
}

/// Threads of a block that reduces rows of `width` elements: a power of two
/// between one warp and kThreads.
inline int rowThreads(int64_t width) {
  int threads = 32;
  while (threads < width && threads < kThreads)
    threads *= 2;
  return threads;
}

/// Launches kernel<<<blocks, threads, sharedBytes, stream>>>(args...) unless
/// there is no work, and reports a failed launch.
template <typename... Params, typename... Args>
inline void launch(const char *name, void (*kernel)(Params...), int64_t blocks,
                   int threads, size_t sharedBytes, cudaStream_t stream,
                   const Args &...args) {
  if (blocks <= 0)
    return;
  kernel<<<unsigned(std::min(blocks, kMaxBlocks)), unsigned(threads),
           sharedBytes, stream>>>(args...);
  check(cudaGetLastError(), name);
}

__device__ inline int64_t firstThread() {
  return int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t allThreads() {
  return int64_t(gridDim.x) * blockDim.x;
}

struct SumOp {
  template <typename Real> __device__ Real operator()(Real a, Real b) const {
    return a + b;
  }
};
/// std::max(a, b): a NaN b is ignored, as in Host.h's running maxima.
struct MaxOp {
  template <typename Real> __device__ Real operator()(Real a, Real b) const {
    return a < b ? b : a;
  }
};

/// Combines `value` over the calling warp (all 32 lanes call it) along a
/// fixed tree; every lane gets lane 0's result.
template <typename Real, typename Combine>
__device__ Real warpReduce(Real value, Combine combine) {
  for (unsigned offset = 16; offset > 0; offset /= 2)
    value = combine(value, __shfl_down_sync(0xffffffffu, value, offset));
  return __shfl_sync(0xffffffffu, value, 0);
}

/// Combines `value` over the block (blockDim.x a multiple of 32) along a
/// fixed tree: within warps, then over warp results in the first warp.
/// Every thread must call it; every thread gets the result.
template <typename Real, typename Combine>
__device__ Real blockReduce(Real value, Combine combine) {
  __shared__ Real partial[32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const unsigned warps = blockDim.x / 32;
  for (unsigned offset = 16; offset > 0; offset /= 2)
    value = combine(value, __shfl_down_sync(0xffffffffu, value, offset));
  __syncthreads(); // earlier readers of `partial` are done
  if (lane == 0)
    partial[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = partial[lane < warps ? lane : 0];
    for (unsigned offset = 16; offset > 0; offset /= 2) {
      Real other = __shfl_down_sync(0xffffffffu, value, offset);
      if (lane + offset < warps)
        value = combine(value, other);
    }
    if (lane == 0)
      partial[0] = value;
  }
  __syncthreads();
  return partial[0];
}

/// Combines `value` over a block of `Warps` warps as blockReduce does,
/// with one barrier instead of three: each warp's result goes to
/// partial[buffer], and every thread then combines the partials itself
/// along blockReduce's tree (the pairs its shuffles form in the first
/// warp), so every thread has blockReduce's result. Consecutive calls must
/// alternate `buffer` (BlockTeam does): a call's partials are overwritten
/// two calls later, by threads that have passed the barrier of the call
/// between, which every thread reaches only once it has read them.
template <int Warps, typename Real, typename Combine>
__device__ Real blockReduceAlternating(Real value, Combine combine,
                                       unsigned buffer) {
  static_assert(Warps >= 1 && Warps <= 32, "a block of 1 to 32 warps");
  __shared__ Real partial[2][32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (unsigned offset = 16; offset > 0; offset /= 2)
    value = combine(value, __shfl_down_sync(0xffffffffu, value, offset));
  if (lane == 0)
    partial[buffer][warp] = value;
  __syncthreads();
  Real tree[Warps];
#pragma unroll
  for (int w = 0; w < Warps; ++w)
    tree[w] = partial[buffer][w];
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
#pragma unroll
    for (int w = 0; w < offset && w + offset < Warps; ++w)
      tree[w] = combine(tree[w], tree[w + offset]);
  return tree[0];
}

/// Dynamic shared memory, as bytes (its element type varies by kernel).
__device__ inline unsigned char *sharedBytes() {
  extern __shared__ __align__(16) unsigned char dynamicShared[];
  return dynamicShared;
}

} // namespace detail

} // namespace fp::cuda

#endif // FP_RUNTIME_KERNELS_DEVICE_LAUNCH_CUH
