//===- DeviceGradients.cuh - CUDA kernels of the gradient ops --*- C++ -*-===//
//
// The CUDA counterpart of HostGradients.h: the adjoints fp-derive-backward
// introduces (docs/backward.md), with HostGradients.h's names and argument
// lists in namespace fp::cuda, so that a derived backward compiles against
// either header. Same conventions as Device.cuh: device buffers, the
// calling thread's current Scope's stream, DeviceError on failure.
//
// Every sum runs in a fixed order (a thread's own loop, or a fixed shuffle
// tree), so results do not depend on scheduling; they are not Host.h's
// order, so host and device gradients agree to rounding, not bit for bit.
// On bf16 buffers the arithmetic, the recomputed scan states and every
// partial sum are Compute<Real> (float).
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_DEVICEGRADIENTS_CUH
#define FP_RUNTIME_KERNELS_DEVICEGRADIENTS_CUH

#include "fp/Runtime/Kernels/Device.cuh"

namespace fp::cuda {

namespace detail {

template <typename Real>
__global__ void accumulateKernel(const Real *in, int64_t n, Real *out) {
  using C = Compute<Real>;
  for (int64_t i = firstThread(); i < n; i += allThreads())
    out[i] = Real(C(out[i]) + C(in[i]));
}

/// Up to kSums accumulations, passed by value: the sums' elements in tiles
/// of kTile, tiles [firstTile[i], firstTile[i + 1]) belonging to sum i.
template <typename Real> struct GradientSums {
  static constexpr int kSums = 32;
  static constexpr int64_t kTile = 4 * kThreads;
  const Real *in[kSums];
  Real *out[kSums];
  int64_t n[kSums];
  int64_t firstTile[kSums + 1];
  int count;
};

/// One block per tile (grid-stride), its sum found by a scan of at most
/// kSums tile offsets.
template <typename Real>
__global__ void accumulateAllKernel(GradientSums<Real> sums) {
  using C = Compute<Real>;
  using Sums = GradientSums<Real>;
  for (int64_t tile = blockIdx.x; tile < sums.firstTile[sums.count];
       tile += gridDim.x) {
    int s = 0;
    while (tile >= sums.firstTile[s + 1])
      ++s;
    const int64_t first = (tile - sums.firstTile[s]) * Sums::kTile;
    const int64_t last = std::min(first + Sums::kTile, sums.n[s]);
    const Real *in = sums.in[s];
    Real *out = sums.out[s];
    for (int64_t i = first + threadIdx.x; i < last; i += blockDim.x)
      out[i] = Real(C(out[i]) + C(in[i]));
  }
}

template <typename Real>
__global__ void transposeKernel(const Real *in, int64_t rows, int64_t cols,
                                Real *out) {
  for (int64_t index = firstThread(); index < rows * cols;
       index += allThreads()) {
    const int64_t i = index / cols, j = index % cols;
    out[j * rows + i] = in[index];
  }
}

/// Column-major C[m×n] = A[m×k] · B[n×k]ᵀ with leading dimensions lda, ldb
/// and m.
inline cublasStatus_t gemmNT(int m, int n, int k, const float *a, int lda,
                             const float *b, int ldb, float *c) {
  const float one = 1.0f, zero = 0.0f;
  return cublasSgemm(blas(), CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &one, a, lda, b,
                     ldb, &zero, c, m);
}
inline cublasStatus_t gemmNT(int m, int n, int k, const double *a, int lda,
                             const double *b, int ldb, double *c) {
  const double one = 1.0, zero = 0.0;
  return cublasDgemm(blas(), CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &one, a, lda, b,
                     ldb, &zero, c, m);
}
/// bf16 operands on tensor cores, f32 accumulation, one rounding.
inline cublasStatus_t gemmNT(int m, int n, int k, const bf16 *a, int lda,
                             const bf16 *b, int ldb, bf16 *c) {
  const float one = 1.0f, zero = 0.0f;
  return cublasGemmEx(blas(), CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &one, a,
                      CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, &zero, c,
                      CUDA_R_16BF, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

/// Rows a thread of sumColumns sums before its partial goes to a second
/// pass.
inline constexpr int64_t kColumnChunk = 256;

/// partial[c, j] = Σ of in[r, j] over the rows r of chunk c, in row order,
/// summed in the arithmetic type.
template <typename In, typename Out>
__global__ void sumColumnChunksKernel(const In *in, int64_t rows, int64_t width,
                                      int64_t chunk, Out *partial) {
  using C = Compute<Out>;
  const int64_t chunks = (rows + chunk - 1) / chunk;
  for (int64_t index = firstThread(); index < chunks * width;
       index += allThreads()) {
    const int64_t c = index / width, j = index % width;
    const int64_t end = std::min(rows, (c + 1) * chunk);
    C sum = 0;
    for (int64_t r = c * chunk; r < end; ++r)
      sum += C(in[r * width + j]);
    partial[index] = Out(sum);
  }
}

/// out[j] = Σ_r in[r, j], each column summed in row order by one thread per
/// chunk of kColumnChunk rows, the chunks' sums (in the arithmetic type)
/// then in order.
template <typename In, typename Out>
inline void sumColumnsOf(const In *in, int64_t rows, int64_t width, Out *out) {
  using C = Compute<Out>;
  if (width <= 0)
    return;
  if (rows <= kColumnChunk) {
    launch("sumColumns", sumColumnChunksKernel<In, Out>, blocksFor(width),
           kThreads, 0, stream(), in, rows, width, std::max<int64_t>(rows, 1),
           out);
    return;
  }
  const int64_t chunks = (rows + kColumnChunk - 1) / kColumnChunk;
  LaunchBuffer partial(size_t(chunks * width) * sizeof(C), stream());
  launch("sumColumns", sumColumnChunksKernel<In, C>, blocksFor(chunks * width),
         kThreads, 0, stream(), in, rows, width, kColumnChunk, partial.as<C>());
  launch("sumColumns", sumColumnChunksKernel<C, Out>, blocksFor(width),
         kThreads, 0, stream(), static_cast<const C *>(partial.as<C>()), chunks,
         width, chunks, out);
}

template <typename Real>
__global__ void triuPackKernel(const Real *in, int64_t rows, int64_t m,
                               Real *out) {
  const int64_t packed = m * (m + 1) / 2;
  for (int64_t index = firstThread(); index < rows * m * m;
       index += allThreads()) {
    const int64_t r = index / (m * m), i = index / m % m, j = index % m;
    if (j >= i)
      out[r * packed + i * m - i * (i - 1) / 2 + (j - i)] = in[index];
  }
}

/// Per output element: grad to the first input position (row-major) that
/// attains the maximum, as HostGradients.h's strict comparison picks it.
template <typename Real>
__global__ void reduceMaxGradKernel(const Real *in, const Real *grad,
                                    ReduceMap map, Real *out) {
  for (int64_t o = firstThread(); o < map.outCount; o += allThreads()) {
    const int64_t base = reduceOffset(map, o, false);
    int64_t best = -1;
    for (int64_t k = 0; k < map.reducedCount; ++k) {
      const int64_t at = base + reduceOffset(map, k, true);
      if (best < 0 || in[at] > in[best])
        best = at;
    }
    if (best >= 0)
      out[best] = grad[o];
  }
}

template <typename Real>
__global__ void l2normGradKernel(const Real *in, const Real *grad, int64_t rows,
                                 int64_t width, Compute<Real> eps, Real *out) {
  using C = Compute<Real>;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const Real *x = in + r * width;
    const Real *g = grad + r * width;
    C sum = 0, dot = 0;
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
      sum += C(x[j]) * C(x[j]);
      dot += C(x[j]) * C(g[j]);
    }
    sum = blockReduce(sum, SumOp());
    dot = blockReduce(dot, SumOp());
    const C norm = std::sqrt(sum);
    if (!(norm > eps)) {
      for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
        out[r * width + j] = Real(C(g[j]) / eps);
      continue;
    }
    const C along = dot / (norm * norm);
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
      out[r * width + j] = Real((C(g[j]) - C(x[j]) * along) / norm);
  }
}

template <typename Real>
__global__ void weightNormGradKernel(const Real *weight, const Real *gain,
                                     const Real *grad, int64_t rows,
                                     int64_t cols, Real *dweight, Real *dgain) {
  using C = Compute<Real>;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const Real *v = weight + r * cols;
    const Real *g = grad + r * cols;
    C sum = 0, dot = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      sum += C(v[c]) * C(v[c]);
      dot += C(v[c]) * C(g[c]);
    }
    sum = blockReduce(sum, SumOp());
    dot = blockReduce(dot, SumOp());
    const C norm = std::sqrt(sum);
    const C scale = C(gain[r]) / norm, along = dot / (norm * norm);
    if (threadIdx.x == 0)
      dgain[r] = Real(dot / norm);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      dweight[r * cols + c] = Real(scale * (C(g[c]) - C(v[c]) * along));
  }
}

template <typename Real>
__global__ void causalConvInputGradKernel(const Real *weight, const Real *grad,
                                          int64_t batch, int64_t length,
                                          int64_t channels, int64_t width,
                                          Real *dIn) {
  using C = Compute<Real>;
  const int64_t n = batch * length * channels;
  for (int64_t index = firstThread(); index < n; index += allThreads()) {
    const int64_t c = index % channels, bs = index / channels;
    const int64_t s = bs % length, base = bs - s;
    C sum = 0;
    for (int64_t k = 0; k < width; ++k) {
      const int64_t t = s + width - 1 - k;
      if (t < length)
        sum += C(weight[c * width + k]) * C(grad[(base + t) * channels + c]);
    }
    dIn[index] = Real(sum);
  }
}

/// Tokens whose terms of a causal convolution's weight gradient one thread
/// sums.
inline constexpr int64_t kConvGradTokens = 256;

/// partial[chunk, c, k] = Σ over the tokens bt of the chunk (kConvGradTokens
/// of them, across samples), in token order, of grad[bt, c] ·
/// in[bt − K + 1 + k, c] where that token lies in bt's sample, the rows of
/// `in` starting `inStride` elements apart. One thread per (chunk, k, c),
/// c fastest, so that a warp reads consecutive channels.
template <typename Real, typename Out>
__global__ void causalConvWeightGradKernel(const Real *in, int64_t inStride,
                                           const Real *grad, int64_t batch,
                                           int64_t length, int64_t channels,
                                           int64_t width, Out *partial) {
  using C = Compute<Real>;
  const int64_t tokens = batch * length;
  const int64_t chunks =
      std::max<int64_t>(1, (tokens + kConvGradTokens - 1) / kConvGradTokens);
  for (int64_t index = firstThread(); index < chunks * width * channels;
       index += allThreads()) {
    const int64_t c = index % channels, k = index / channels % width;
    const int64_t chunk = index / (channels * width);
    const int64_t first = chunk * kConvGradTokens;
    const int64_t end = std::min(tokens, first + kConvGradTokens);
    C sum = 0;
    // t: bt's position in its sample, kept without a division per token.
    for (int64_t bt = first, t = length > 0 ? first % length : 0; bt < end;
         ++bt) {
      if (t >= width - 1 - k)
        sum += C(grad[bt * channels + c]) *
               C(in[(bt - width + 1 + k) * inStride + c]);
      if (++t == length)
        t = 0;
    }
    partial[(chunk * channels + c) * width + k] = Out(sum);
  }
}

// The selective scan's adjoint runs in two passes over a scratch of the
// states, [B, T, N, d] values (d = channels, innermost so that the threads
// of a warp, one channel each, touch consecutive addresses). A block holds
// `blockDim.x` channels of one sample, a thread one channel:
//   1. each thread recomputes S_t forward into the scratch, and the block
//      sums g_t[i] S_t[i, n] over its channels: its part of dC_t[n];
//   2. each thread runs Λ backward in time, reading S_{t−1} from the
//      scratch, writes du and dΔ and keeps its dA sums per sample; the
//      block sums Λ_t[i, n] Δ_t[i] u_t[i] over its channels: its part of
//      dB_t[n].
// With one block per sample those sums are dC and dB; otherwise they are
// partial sums per block of channels, which sumColumns then adds in order,
// as it adds the samples' dA sums. Up to 16 states, a thread keeps its
// states, Λ and dA sums in registers and the sums over channels are a
// warp's (scanStatesRegistersKernel, scanAdjointRegistersKernel below).

/// Sums terms[n · blockDim.x + j] over the block's threads j for every
/// n < state, in a fixed order (each lane the threads j ≡ lane mod 32 in
/// order, then a shuffle tree), and stores the sum of n at out[n]; warp w
/// sums n = w, w + warps, .... blockDim.x is a multiple of 32 and every
/// thread calls it; it synchronises before and after.
template <typename C, typename Out>
__device__ void blockSumTerms(const C *terms, int64_t state, Out *out) {
  __syncthreads();
  const int64_t lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (int64_t n = threadIdx.x / 32; n < state; n += warps) {
    C sum = 0;
    for (int64_t j = lane; j < blockDim.x; j += 32)
      sum += terms[n * blockDim.x + j];
    for (int offset = 16; offset > 0; offset /= 2)
      sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (lane == 0)
      out[n] = Out(sum);
  }
  __syncthreads();
}

/// Runs `body(b, block, i, active)` for every block of blockDim.x channels
/// of every sample b that falls to this block of the grid: `block` is the
/// index of the channels' block within the sample, `i` the thread's channel
/// and `active` whether it is one (i < channels; the threads past the last
/// channel still take part in the block's sums).
template <typename Body>
__device__ void forEachChannelBlock(int64_t batch, int64_t channels,
                                    Body &&body) {
  const int64_t stride = blockDim.x;
  const int64_t blocksPerSample = (channels + stride - 1) / stride;
  for (int64_t task = blockIdx.x; task < batch * blocksPerSample;
       task += gridDim.x) {
    const int64_t b = task / blocksPerSample, block = task % blocksPerSample;
    const int64_t i = block * stride + threadIdx.x;
    body(b, block, i, i < channels);
  }
}

/// Pass 1. Per thread, S_{t−1}[n] and its terms of dC live in dynamic
/// shared memory as Compute<Real>, element n at [n · blockDim.x]; the block
/// of channels `block` of sample b writes its sums of token bt at
/// partialC[(block · B·T + bt) · N].
template <typename Real, typename Out>
__global__ void
scanStatesKernel(const Real *u, const Real *delta, const Real *a,
                 const Real *bm, const Real *grad, int64_t batch,
                 int64_t length, int64_t channels, int64_t state,
                 Compute<Real> *states, Out *partialC) {
  using C = Compute<Real>;
  const int64_t stride = blockDim.x;
  C *terms = reinterpret_cast<C *>(sharedBytes());
  C *st = terms + state * stride + threadIdx.x;
  const int64_t rows = batch * length;
  forEachChannelBlock(
      batch, channels, [&](int64_t b, int64_t block, int64_t i, bool active) {
        for (int64_t t = 0; t < length; ++t) {
          const int64_t bt = b * length + t;
          if (active) {
            const C dt = C(delta[bt * channels + i]);
            const C dtu = dt * C(u[bt * channels + i]);
            const C g = C(grad[bt * channels + i]);
            C *cur = states + bt * state * channels + i;
            for (int64_t n = 0; n < state; ++n) {
              const C s = std::exp(dt * C(a[i * state + n])) *
                              (t > 0 ? st[n * stride] : C(0)) +
                          dtu * C(bm[bt * state + n]);
              st[n * stride] = s;
              cur[n * channels] = s;
              terms[n * stride + threadIdx.x] = g * s;
            }
          } else {
            for (int64_t n = 0; n < state; ++n)
              terms[n * stride + threadIdx.x] = C(0);
          }
          blockSumTerms(terms, state, partialC + (block * rows + bt) * state);
        }
      });
}

/// Pass 2. Per thread, Λ[n] (holding a_{t+1} ⊙ Λ_{t+1}), its dA sums and
/// its terms of dB live in dynamic shared memory as Compute<Real>, element
/// n at [n · blockDim.x]; the block's sums of dB go to partialB as pass 1's
/// go to partialC.
template <typename Real, typename Out>
__global__ void
scanAdjointKernel(const Real *u, const Real *delta, const Real *a,
                  const Real *bm, const Real *cm, const Real *grad,
                  int64_t batch, int64_t length, int64_t channels,
                  int64_t state, const Compute<Real> *states, Real *du,
                  Real *dDelta, Compute<Real> *partialA, Out *partialB) {
  using C = Compute<Real>;
  const int64_t stride = blockDim.x;
  C *terms = reinterpret_cast<C *>(sharedBytes());
  C *lambda = terms + state * stride + threadIdx.x;
  C *sumA = lambda + state * stride;
  const int64_t rows = batch * length;
  forEachChannelBlock(
      batch, channels, [&](int64_t b, int64_t block, int64_t i, bool active) {
        for (int64_t n = 0; n < state; ++n) {
          lambda[n * stride] = C(0);
          sumA[n * stride] = C(0);
        }
        for (int64_t t = length - 1; t >= 0; --t) {
          const int64_t bt = b * length + t;
          if (active) {
            const C dt = C(delta[bt * channels + i]);
            const C ut = C(u[bt * channels + i]);
            const C g = C(grad[bt * channels + i]);
            const C *prev = states + (bt - 1) * state * channels + i;
            C sumU = 0, sumDelta = 0;
            for (int64_t n = 0; n < state; ++n) {
              const int64_t k = i * state + n;
              const C ak = C(a[k]);
              const C l = g * C(cm[bt * state + n]) + lambda[n * stride];
              const C at = std::exp(dt * ak);
              const C bn = C(bm[bt * state + n]);
              const C sp = t > 0 ? prev[n * channels] : C(0);
              sumU += l * bn;
              sumDelta += l * (ak * at * sp + bn * ut);
              sumA[n * stride] += l * dt * at * sp;
              terms[n * stride + threadIdx.x] = l * dt * ut;
              lambda[n * stride] = at * l;
            }
            du[bt * channels + i] = Real(dt * sumU);
            dDelta[bt * channels + i] = Real(sumDelta);
          } else {
            for (int64_t n = 0; n < state; ++n)
              terms[n * stride + threadIdx.x] = C(0);
          }
          blockSumTerms(terms, state, partialB + (block * rows + bt) * state);
        }
        if (active)
          for (int64_t n = 0; n < state; ++n)
            partialA[b * channels * state + i * state + n] = sumA[n * stride];
      });
}

/// For up to kScanRegisterStates states the two passes keep a thread's
/// states (pass 1), Λ and dA sums (pass 2) in registers, one thread per
/// channel of a sample, and each warp sums its 32 channels' terms of dC and
/// dB itself (warpTransposeSum): no shared memory and no block barrier, so
/// the warps of a block walk their tokens independently. The partial sums
/// of warp w of a sample go to partial[(w · B·T + bt) · N + n].
inline constexpr int kScanGradRegisterThreads = 64;

/// One step of warpTransposeSum: a lane keeps the half of v[0, 2·kHalf)
/// that bit kHalf·2 of its index selects and adds the other lane's copy of
/// it, which that lane sends.
template <int kHalf, typename C> __device__ void halveAcrossLanes(C (&v)[16]) {
  const bool upper = threadIdx.x & (2 * kHalf);
#pragma unroll
  for (int j = 0; j < kHalf; ++j) {
    const C keep = upper ? v[kHalf + j] : v[j];
    const C send = upper ? v[j] : v[kHalf + j];
    v[j] = keep + __shfl_xor_sync(0xffffffffu, send, 2 * kHalf);
  }
}

/// Σ over the warp's lanes of v[n] for every n < 16, by halving: at offset
/// 16 a lane keeps the half of v its bit 4 selects and adds the other half
/// of lane ^ 16, and so on down to offset 2, then the pair at offset 1
/// (16 shuffles where 16 separate sums take 80). Lane l returns the sum of
/// state l / 2; the order is fixed, so results do not depend on scheduling.
template <typename C> __device__ C warpTransposeSum(C (&v)[16]) {
  static_assert(kScanRegisterStates == 16, "one state per pair of lanes");
  halveAcrossLanes<8>(v);
  halveAcrossLanes<4>(v);
  halveAcrossLanes<2>(v);
  halveAcrossLanes<1>(v);
  return v[0] + __shfl_xor_sync(0xffffffffu, v[0], 1);
}

/// The warp of this thread, firstWarp + its warp across the grid: its
/// sample b, its index w among the sample's warps, and the thread's channel
/// i; false for a warp past the last (the whole warp returns). A launch
/// covers at most kMaxBlocks blocks of warps, so larger problems take
/// several, each from its firstWarp (a loop over warps in the kernel would
/// keep its counters live across the token loop: 28 more registers a thread
/// in f32, a spill in f64).
__device__ inline bool channelWarp(int64_t batch, int64_t channels,
                                   int64_t firstWarp, int64_t &b, int64_t &w,
                                   int64_t &i) {
  const int64_t warpsPerSample = (channels + 31) / 32;
  const int64_t warp =
      firstWarp + (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (warp >= batch * warpsPerSample)
    return false;
  b = warp / warpsPerSample;
  w = warp % warpsPerSample;
  i = w * 32 + threadIdx.x % 32;
  return true;
}

/// Pass 1 with states in registers (N ≤ kN): scanStatesKernel's arithmetic
/// per thread, its sums of dC per warp. A token's loads are issued together
/// ahead of its arithmetic, which runs on all kN slots without a branch
/// (slots past `state` hold zeros and are not stored): a load behind each
/// state's `n < state` test would wait for the state before it, sixteen
/// round trips to memory per token where one suffices.
template <typename Real, int kN, typename Out>
__global__ void __launch_bounds__(kScanGradRegisterThreads)
    scanStatesRegistersKernel(const Real *u, const Real *delta, const Real *a,
                              const Real *bm, const Real *grad, int64_t batch,
                              int64_t length, int64_t channels, int64_t state,
                              int64_t firstWarp, Compute<Real> *states,
                              Out *partialC) {
  using C = Compute<Real>;
  using fp::fused::input;
  int64_t b = 0, w = 0, i = 0;
  if (!channelWarp(batch, channels, firstWarp, b, w, i))
    return;
  const bool active = i < channels;
  const int lane = threadIdx.x % 32;
  const int64_t rows = batch * length;
  C ak[kN], st[kN];
#pragma unroll
  for (int n = 0; n < kN; ++n) {
    ak[n] = active && n < state ? C(a[i * state + n]) : C(0);
    st[n] = C(0);
  }
  for (int64_t t = 0; t < length; ++t) {
    const int64_t bt = b * length + t;
    const C dt = active ? C(input(delta, bt * channels + i)) : C(0);
    const C ut = active ? C(input(u, bt * channels + i)) : C(0);
    const C g = active ? C(input(grad, bt * channels + i)) : C(0);
    C bn[kN];
#pragma unroll
    for (int n = 0; n < kN; ++n)
      bn[n] = active && n < state ? C(input(bm, bt * state + n)) : C(0);
    const C dtu = dt * ut;
    C terms[kN];
#pragma unroll
    for (int n = 0; n < kN; ++n) {
      st[n] = std::exp(dt * ak[n]) * (t > 0 ? st[n] : C(0)) + dtu * bn[n];
      terms[n] = n < state ? g * st[n] : C(0);
    }
    if (active) {
      C *cur = states + bt * state * channels + i;
#pragma unroll
      for (int n = 0; n < kN; ++n)
        if (n < state)
          cur[n * channels] = st[n];
    }
    const C sum = warpTransposeSum(terms);
    if (lane % 2 == 0 && lane / 2 < state)
      partialC[(w * rows + bt) * state + lane / 2] = Out(sum);
  }
}

/// Pass 2 with Λ and the dA sums in registers (N ≤ kN): scanAdjointKernel's
/// arithmetic per thread, its sums of dB per warp. As in pass 1, a token's
/// loads (the scratch's S_{t−1} among them, which no launch writes while
/// this one runs) are issued together ahead of its arithmetic, and slots
/// past `state` contribute exact zeros.
template <typename Real, int kN, typename Out>
__global__ void __launch_bounds__(kScanGradRegisterThreads)
    scanAdjointRegistersKernel(const Real *u, const Real *delta, const Real *a,
                               const Real *bm, const Real *cm, const Real *grad,
                               int64_t batch, int64_t length, int64_t channels,
                               int64_t state, int64_t firstWarp,
                               const Compute<Real> *states, Real *du,
                               Real *dDelta, Compute<Real> *partialA,
                               Out *partialB) {
  using C = Compute<Real>;
  using fp::fused::input;
  int64_t b = 0, w = 0, i = 0;
  if (!channelWarp(batch, channels, firstWarp, b, w, i))
    return;
  const bool active = i < channels;
  const int lane = threadIdx.x % 32;
  const int64_t rows = batch * length;
  C ak[kN], lambda[kN], sumA[kN];
#pragma unroll
  for (int n = 0; n < kN; ++n) {
    ak[n] = active && n < state ? C(a[i * state + n]) : C(0);
    lambda[n] = C(0);
    sumA[n] = C(0);
  }
  for (int64_t t = length - 1; t >= 0; --t) {
    const int64_t bt = b * length + t;
    const C dt = active ? C(input(delta, bt * channels + i)) : C(0);
    const C ut = active ? C(input(u, bt * channels + i)) : C(0);
    const C g = active ? C(input(grad, bt * channels + i)) : C(0);
    const C *prev = states + (bt - 1) * state * channels + i;
    C bn[kN], cn[kN], sp[kN];
#pragma unroll
    for (int n = 0; n < kN; ++n) {
      const bool here = active && n < state;
      bn[n] = here ? C(input(bm, bt * state + n)) : C(0);
      cn[n] = here ? C(input(cm, bt * state + n)) : C(0);
      sp[n] = here && t > 0 ? input(prev, n * channels) : C(0);
    }
    C sumU = 0, sumDelta = 0;
    C terms[kN];
#pragma unroll
    for (int n = 0; n < kN; ++n) {
      const bool real = n < state;
      const C l = real ? g * cn[n] + lambda[n] : C(0);
      const C at = std::exp(dt * ak[n]);
      sumU += real ? l * bn[n] : C(0);
      sumDelta += real ? l * (ak[n] * at * sp[n] + bn[n] * ut) : C(0);
      sumA[n] += real ? l * dt * at * sp[n] : C(0);
      terms[n] = real ? l * dt * ut : C(0);
      lambda[n] = at * l;
    }
    if (active) {
      du[bt * channels + i] = Real(dt * sumU);
      dDelta[bt * channels + i] = Real(sumDelta);
    }
    const C sum = warpTransposeSum(terms);
    if (lane % 2 == 0 && lane / 2 < state)
      partialB[(w * rows + bt) * state + lane / 2] = Out(sum);
  }
  if (active) {
#pragma unroll
    for (int n = 0; n < kN; ++n)
      if (n < state)
        partialA[b * channels * state + i * state + n] = sumA[n];
  }
}

} // namespace detail

/// out[i] += in[i]: a parameter gradient accumulated into the caller's. One
/// thread per element.
template <typename Real>
inline void accumulate(In<Real> in, int64_t n, Real *out) {
  detail::launch("accumulate", detail::accumulateKernel<Real>,
                 detail::blocksFor(n), detail::kThreads, 0, detail::stream(),
                 in, n, out);
}

/// Every accumulation of `sums` (distinct outputs) in one launch per
/// GradientSums::kSums of them; a derived backward ends with one.
template <typename Real>
inline void accumulateAll(const GradientSum<Real> *sums, int count) {
  using Sums = detail::GradientSums<Real>;
  for (int begin = 0; begin < count; begin += Sums::kSums) {
    Sums batch{};
    batch.count = std::min(count - begin, Sums::kSums);
    for (int i = 0; i < batch.count; ++i) {
      const GradientSum<Real> &sum = sums[begin + i];
      batch.in[i] = sum.in;
      batch.out[i] = sum.out;
      batch.n[i] = sum.n;
      batch.firstTile[i + 1] =
          batch.firstTile[i] + (sum.n + Sums::kTile - 1) / Sums::kTile;
    }
    detail::launch("accumulateAll", detail::accumulateAllKernel<Real>,
                   batch.firstTile[batch.count], detail::kThreads, 0,
                   detail::stream(), batch);
  }
}

/// out[j, i] = in[i, j] for a rows × cols matrix. One thread per element.
template <typename Real>
inline void transpose(In<Real> in, int64_t rows, int64_t cols, Real *out) {
  detail::launch("transpose", detail::transposeKernel<Real>,
                 detail::blocksFor(rows * cols), detail::kThreads, 0,
                 detail::stream(), in, rows, cols, out);
}

/// out[o, i] = Σ_r grad[r, o] · in[r, i]: the weight gradient of a linear
/// map (fp.weight_grad), one cuBLAS GEMM over the tokens, with the rows of
/// `grad` and `in` starting `gradStride` and `inStride` elements apart
/// (column ranges of wider matrices: fp.slice read in place).
template <typename Real>
inline void weightGradStrided(In<Real> grad, int64_t gradStride, In<Real> in,
                              int64_t inStride, int64_t rows,
                              int64_t outFeatures, int64_t inFeatures,
                              Real *out) {
  if (outFeatures == 0 || inFeatures == 0)
    return;
  if (rows == 0) {
    fill(out, outFeatures * inFeatures, Compute<Real>(0));
    return;
  }
  if (rows > INT_MAX || inStride > INT_MAX || gradStride > INT_MAX ||
      inFeatures > INT_MAX || outFeatures > INT_MAX)
    throw DeviceError("fp::cuda::weightGrad: a dimension exceeds cuBLAS's "
                      "32-bit sizes");
  // Row-major out [O × I] is column-major I × O: inᵀ-as-stored times grad.
  detail::checkBlas(
      detail::gemmNT(int(inFeatures), int(outFeatures), int(rows), in,
                     int(inStride), grad, int(gradStride), out),
      std::is_same_v<Real, float>    ? "weightGrad (cublasSgemm)"
      : std::is_same_v<Real, double> ? "weightGrad (cublasDgemm)"
                                     : "weightGrad (cublasGemmEx, "
                                       "bf16)");
}

/// weightGradStrided of packed rows.
template <typename Real>
inline void weightGrad(In<Real> grad, In<Real> in, int64_t rows,
                       int64_t outFeatures, int64_t inFeatures, Real *out) {
  weightGradStrided<Real>(grad, outFeatures, in, inFeatures, rows, outFeatures,
                          inFeatures, out);
}

/// out[j] = Σ_r in[r, j]: each column summed in row order by one thread per
/// chunk of kColumnChunk rows, then the chunks in order.
template <typename Real>
inline void sumColumns(In<Real> in, int64_t rows, int64_t width, Real *out) {
  detail::sumColumnsOf(in, rows, width, out);
}

/// Packs the upper triangle of each m×m matrix into m(m+1)/2 entries,
/// row-major over the triangle (the adjoint of triu). One thread per input
/// element.
template <typename Real>
inline void triuPack(In<Real> in, int64_t rows, int64_t m, Real *out) {
  detail::launch("triuPack", detail::triuPackKernel<Real>,
                 detail::blocksFor(rows * m * m), detail::kThreads, 0,
                 detail::stream(), in, rows, m, out);
}

/// The cotangent of fp.reduce_max: grad of each output element goes to the
/// first input position (row-major) attaining its maximum; zero elsewhere.
/// One thread per output element.
template <typename Real>
inline void reduceMaxGrad(In<Real> in, In<Real> grad, const Shape &inShape,
                          const bool *reduced, Real *out) {
  const detail::ReduceMap map = detail::reduceMapFor(inShape, reduced);
  fill(out, inShape.numElements(), Compute<Real>(0));
  detail::launch("reduceMaxGrad", detail::reduceMaxGradKernel<Real>,
                 detail::blocksFor(map.outCount), detail::kThreads, 0,
                 detail::stream(), in, grad, map, out);
}

/// The cotangent of in / max(‖in‖₂, eps) per row: (g − y⟨y, g⟩) / ‖in‖
/// where the norm exceeds eps, g / eps where the clamp holds. One block per
/// row.
template <typename Real>
inline void l2normGrad(In<Real> in, In<Real> grad, int64_t rows, int64_t width,
                       Compute<Real> eps, Real *out) {
  detail::launch("l2normGrad", detail::l2normGradKernel<Real>, rows,
                 detail::rowThreads(width), 0, detail::stream(), in, grad, rows,
                 width, eps, out);
}

/// The cotangents of fp.weight_norm (HostGradients.h). One block per row.
template <typename Real>
inline void weightNormGrad(In<Real> weight, In<Real> gain, In<Real> grad,
                           int64_t rows, int64_t cols, Real *dweight,
                           Real *dgain) {
  detail::launch("weightNormGrad", detail::weightNormGradKernel<Real>, rows,
                 detail::rowThreads(cols), 0, detail::stream(), weight, gain,
                 grad, rows, cols, dweight, dgain);
}

/// The cotangents of fp.causal_conv without its bias (HostGradients.h):
/// dIn by one thread per element; dWeight by one thread per weight and
/// chunk of kConvGradTokens tokens, the chunks' partial sums (in the
/// arithmetic type) then added in order by sumColumns, so that every
/// channel's B·T terms spread over the GPU rather than one thread each.
/// The rows of `in` start `inStride` elements apart (fp.slice read in
/// place).
template <typename Real>
inline void causalConvGradStrided(In<Real> in, int64_t inStride,
                                  In<Real> weight, In<Real> grad, int64_t batch,
                                  int64_t length, int64_t channels,
                                  int64_t width, Real *dIn, Real *dWeight) {
  using C = Compute<Real>;
  detail::launch(
      "causalConvGrad (input)", detail::causalConvInputGradKernel<Real>,
      detail::blocksFor(batch * length * channels), detail::kThreads, 0,
      detail::stream(), weight, grad, batch, length, channels, width, dIn);
  const int64_t taps = channels * width;
  if (taps <= 0)
    return;
  const int64_t chunks =
      std::max<int64_t>(1, (batch * length + detail::kConvGradTokens - 1) /
                               detail::kConvGradTokens);
  if (chunks == 1) {
    detail::launch("causalConvGrad (weight)",
                   detail::causalConvWeightGradKernel<Real, Real>,
                   detail::blocksFor(taps), detail::kThreads, 0,
                   detail::stream(), in, inStride, grad, batch, length,
                   channels, width, dWeight);
    return;
  }
  detail::LaunchBuffer partial(size_t(chunks * taps) * sizeof(C),
                               detail::stream());
  detail::launch(
      "causalConvGrad (weight)", detail::causalConvWeightGradKernel<Real, C>,
      detail::blocksFor(chunks * taps), detail::kThreads, 0, detail::stream(),
      in, inStride, grad, batch, length, channels, width, partial.as<C>());
  detail::sumColumnsOf(static_cast<const C *>(partial.as<C>()), chunks, taps,
                       dWeight);
}

/// causalConvGradStrided of packed rows.
template <typename Real>
inline void causalConvGrad(In<Real> in, In<Real> weight, In<Real> grad,
                           int64_t batch, int64_t length, int64_t channels,
                           int64_t width, Real *dIn, Real *dWeight) {
  causalConvGradStrided<Real>(in, channels, weight, grad, batch, length,
                              channels, width, dIn, dWeight);
}

/// selectiveScanGrad for N ≤ kScanRegisterStates: the register passes, one
/// warp per 32 channels of a sample, and with more than one warp per sample
/// two buffers of the warps' partial sums of dB and dC, added in warp order.
template <typename Real>
inline void selectiveScanGradInRegisters(In<Real> u, In<Real> delta, In<Real> a,
                                         In<Real> bm, In<Real> cm,
                                         In<Real> grad, int64_t batch,
                                         int64_t length, int64_t channels,
                                         int64_t state, Real *du, Real *dDelta,
                                         Real *dA, Real *dB, Real *dC) {
  using C = Compute<Real>;
  constexpr int kN = int(detail::kScanRegisterStates);
  constexpr int kThreads = detail::kScanGradRegisterThreads;
  const int64_t rows = batch * length, cell = channels * state;
  const int64_t warpsPerSample = (channels + 31) / 32;
  const int64_t warps = batch * warpsPerSample;
  // Warps per launch: a grid of at most kMaxBlocks blocks.
  constexpr int64_t kLaunchWarps = detail::kMaxBlocks * (kThreads / 32);
  cudaStream_t stream = detail::stream();
  detail::LaunchBuffer states(size_t(rows * cell) * sizeof(C), stream);
  detail::LaunchBuffer partialA(size_t(batch * cell) * sizeof(C), stream);
  C *scratch = states.as<C>();
  auto passes = [&](auto *sumsC, auto *sumsB) {
    using Out = std::remove_pointer_t<decltype(sumsC)>;
    for (int64_t first = 0; first < warps; first += kLaunchWarps) {
      const int64_t blocks =
          (std::min(warps - first, kLaunchWarps) * 32 + kThreads - 1) /
          kThreads;
      detail::launch("selectiveScanGrad (states, dC)",
                     detail::scanStatesRegistersKernel<Real, kN, Out>, blocks,
                     kThreads, 0, stream, u, delta, a, bm, grad, batch, length,
                     channels, state, first, scratch, sumsC);
    }
    for (int64_t first = 0; first < warps; first += kLaunchWarps) {
      const int64_t blocks =
          (std::min(warps - first, kLaunchWarps) * 32 + kThreads - 1) /
          kThreads;
      detail::launch("selectiveScanGrad (adjoint, dB)",
                     detail::scanAdjointRegistersKernel<Real, kN, Out>, blocks,
                     kThreads, 0, stream, u, delta, a, bm, cm, grad, batch,
                     length, channels, state, first,
                     static_cast<const C *>(scratch), du, dDelta,
                     partialA.as<C>(), sumsB);
    }
  };
  if (warpsPerSample == 1) {
    passes(dC, dB);
  } else {
    const size_t partialBytes =
        size_t(warpsPerSample * rows * state) * sizeof(C);
    detail::LaunchBuffer partialC(partialBytes, stream);
    detail::LaunchBuffer partialB(partialBytes, stream);
    passes(partialC.as<C>(), partialB.as<C>());
    detail::sumColumnsOf(static_cast<const C *>(partialC.as<C>()),
                         warpsPerSample, rows * state, dC);
    detail::sumColumnsOf(static_cast<const C *>(partialB.as<C>()),
                         warpsPerSample, rows * state, dB);
  }
  detail::sumColumnsOf(static_cast<const C *>(partialA.as<C>()), batch, cell,
                       dA);
}

/// The cotangents of the recurrence of fp.selective_scan (no skip term),
/// HostGradients.h's formulas, in the two passes described above; the
/// scratch holds B·T·N·d values, and with more than one block of channels
/// per sample two buffers hold the blocks' partial sums of dB and dC.
template <typename Real>
inline void selectiveScanGrad(In<Real> u, In<Real> delta, In<Real> a,
                              In<Real> bm, In<Real> cm, In<Real> grad,
                              int64_t batch, int64_t length, int64_t channels,
                              int64_t state, Real *du, Real *dDelta, Real *dA,
                              Real *dB, Real *dC) {
  using C = Compute<Real>;
  if (channels <= 0 || state <= 0)
    return;
  if (batch <= 0 || length <= 0) {
    // No token: dA is an empty sum (du, dΔ, dB and dC have no elements).
    detail::check(cudaMemsetAsync(dA, 0,
                                  size_t(channels * state) * sizeof(Real),
                                  detail::stream()),
                  "selectiveScanGrad");
    return;
  }
  if (state <= detail::kScanRegisterStates) {
    selectiveScanGradInRegisters<Real>(u, delta, a, bm, cm, grad, batch, length,
                                       channels, state, du, dDelta, dA, dB, dC);
    return;
  }
  // Pass 2's Λ, dA sums and dB terms; pass 1 uses two of the three.
  const size_t perThread = 3 * size_t(state) * sizeof(C);
  int threads = 128;
  while (threads > 32 && perThread * threads > detail::kMaxSharedBytes)
    threads /= 2;
  if (perThread * threads > detail::kMaxSharedBytes)
    throw DeviceError("fp::cuda::selectiveScanGrad: a state of " +
                      std::to_string(state) + " does not fit in shared memory");
  const int64_t rows = batch * length, cell = channels * state;
  const int64_t blocksPerSample = (channels + threads - 1) / threads;
  const int64_t blocks = batch * blocksPerSample;
  cudaStream_t stream = detail::stream();
  detail::LaunchBuffer states(size_t(rows * cell) * sizeof(C), stream);
  detail::LaunchBuffer partialA(size_t(batch * cell) * sizeof(C), stream);
  C *scratch = states.as<C>();

  auto passes = [&](auto *sumsC, auto *sumsB) {
    using Out = std::remove_pointer_t<decltype(sumsC)>;
    detail::launch("selectiveScanGrad (states, dC)",
                   detail::scanStatesKernel<Real, Out>, blocks, threads,
                   2 * size_t(state) * sizeof(C) * threads, stream, u, delta, a,
                   bm, grad, batch, length, channels, state, scratch, sumsC);
    detail::launch(
        "selectiveScanGrad (adjoint, dB)", detail::scanAdjointKernel<Real, Out>,
        blocks, threads, perThread * threads, stream, u, delta, a, bm, cm, grad,
        batch, length, channels, state, static_cast<const C *>(scratch), du,
        dDelta, partialA.as<C>(), sumsB);
  };
  if (blocksPerSample == 1) {
    passes(dC, dB);
  } else {
    const size_t partialBytes =
        size_t(blocksPerSample * rows * state) * sizeof(C);
    detail::LaunchBuffer partialC(partialBytes, stream);
    detail::LaunchBuffer partialB(partialBytes, stream);
    passes(partialC.as<C>(), partialB.as<C>());
    detail::sumColumnsOf(static_cast<const C *>(partialC.as<C>()),
                         blocksPerSample, rows * state, dC);
    detail::sumColumnsOf(static_cast<const C *>(partialB.as<C>()),
                         blocksPerSample, rows * state, dB);
  }
  detail::sumColumnsOf(static_cast<const C *>(partialA.as<C>()), batch, cell,
                       dA);
}

} // namespace fp::cuda

#endif // FP_RUNTIME_KERNELS_DEVICEGRADIENTS_CUH
