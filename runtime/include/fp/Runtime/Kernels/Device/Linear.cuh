//===- Device/Linear.cuh - Linear maps of the CUDA kernels ------*- C++ -*-===//
//
// GEMMs through cuBLAS (bf16 ones on tensor cores with f32 accumulation),
// linear, linearTransposed, linearStrided, weightNorm, matmul, the batched
// products of small matrices, and matrixExp.
//
// Counterpart: Host/Linear.h.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_DEVICE_LINEAR_CUH
#define FP_RUNTIME_KERNELS_DEVICE_LINEAR_CUH

#include "fp/Runtime/Kernels/Device/Context.cuh"
#include "fp/Runtime/Kernels/Device/Elementwise.cuh"
#include "fp/Runtime/Kernels/Device/FusedKernels.cuh"
#include "fp/Runtime/Kernels/Device/Launch.cuh"

namespace fp::cuda {

namespace detail {

/// Column-major C[m×n] = op(A) · B[k×n], where op(A) is A[k×m]ᵀ when
/// `transposeA`, else A[m×k]; `lda` and `ldb` are the leading dimensions of
/// A and B (C's is m). Row-major: C[n×m] = B[n×k] · A[m×k]ᵀ, or
/// B[n×k] · A[k×m], with the rows of B and A starting ldb and lda apart.
inline cublasStatus_t gemm(bool transposeA, int m, int n, int k, const float *a,
                           int lda, const float *b, int ldb, float *c) {
  const float one = 1.0f, zero = 0.0f;
  return cublasSgemm(blas(), transposeA ? CUBLAS_OP_T : CUBLAS_OP_N,
                     CUBLAS_OP_N, m, n, k, &one, a, lda, b, ldb, &zero, c, m);
}
inline cublasStatus_t gemm(bool transposeA, int m, int n, int k,
                           const double *a, int lda, const double *b, int ldb,
                           double *c) {
  const double one = 1.0, zero = 0.0;
  return cublasDgemm(blas(), transposeA ? CUBLAS_OP_T : CUBLAS_OP_N,
                     CUBLAS_OP_N, m, n, k, &one, a, lda, b, ldb, &zero, c, m);
}
/// bf16 operands on tensor cores, f32 accumulation, one rounding of
/// op(A)·B + beta·C (beta 0 or 1).
inline cublasStatus_t gemm(bool transposeA, int m, int n, int k, const bf16 *a,
                           int lda, const bf16 *b, int ldb, bf16 *c,
                           float beta = 0.0f) {
  const float one = 1.0f;
  return cublasGemmEx(blas(), transposeA ? CUBLAS_OP_T : CUBLAS_OP_N,
                      CUBLAS_OP_N, m, n, k, &one, a, CUDA_R_16BF, lda, b,
                      CUDA_R_16BF, ldb, &beta, c, CUDA_R_16BF, m,
                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

template <typename Real>
__global__ void addBiasKernel(Real *out, int64_t n, int64_t width,
                              const Real *bias) {
  using C = Compute<Real>;
  for (int64_t i = firstThread(); i < n; i += allThreads())
    out[i] = Real(C(out[i]) + C(bias[i % width]));
}

/// out[r, o] = bias[o]: the C operand of a GEMM that adds the bias before
/// its one rounding.
template <typename Real>
__global__ void broadcastBiasKernel(Real *out, int64_t n, int64_t width,
                                    const Real *bias) {
  for (int64_t i = firstThread(); i < n; i += allThreads())
    out[i] = bias[i % width];
}

template <typename Real>
__global__ void weightNormKernel(const Real *weight, const Real *gain,
                                 int64_t rows, int64_t cols, Real *out) {
  using C = Compute<Real>;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const Real *v = weight + r * cols;
    C sum = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      sum += C(v[c]) * C(v[c]);
    sum = blockReduce(sum, SumOp());
    const C scale = C(gain[r]) / std::sqrt(sum);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      out[r * cols + c] = Real(C(v[c]) * scale);
  }
}

template <typename Real>
__global__ void matmulKernel(const Real *lhs, const Real *rhs, int64_t batch,
                             int64_t m, int64_t n, int64_t k, bool transposeLhs,
                             bool transposeRhs, Real *out) {
  using C = Compute<Real>;
  const int64_t total = batch * m * n;
  for (int64_t index = firstThread(); index < total; index += allThreads()) {
    const int64_t b = index / (m * n), i = index / n % m, j = index % n;
    const Real *l = lhs + b * m * k, *r = rhs + b * k * n;
    C sum = 0;
    for (int64_t p = 0; p < k; ++p) {
      const C lip = C(transposeLhs ? l[p * m + i] : l[i * k + p]);
      const C rpj = C(transposeRhs ? r[j * k + p] : r[p * n + j]);
      sum += lip * rpj;
    }
    out[index] = Real(sum);
  }
}

} // namespace detail

namespace detail {

/// linear, linearTransposed and linearStrided: `weight` is out × in, or
/// in × out when `transposed`; the rows of `in` and `weight` start
/// `inStride` and `weightStride` elements apart.
template <typename Real>
inline void linear(In<Real> in, int64_t inStride, int64_t rows,
                   int64_t inFeatures, In<Real> weight, int64_t weightStride,
                   bool transposed, int64_t outFeatures, In<Real> bias,
                   Real *out) {
  if (rows == 0 || outFeatures == 0)
    return;
  const int64_t n = rows * outFeatures;
  if (inFeatures == 0) {
    fill(out, n, Compute<Real>(0));
  } else {
    if (rows > INT_MAX || inStride > INT_MAX || weightStride > INT_MAX ||
        outFeatures > INT_MAX)
      throw DeviceError("fp::cuda::linear: a dimension exceeds cuBLAS's "
                        "32-bit sizes");
    // Column-major, out is outFeatures × rows and `weight` is the A operand:
    // in × out row-major is out × in column-major, so a transposed weight
    // needs no transposition. A row stride is a leading dimension.
    const bool transposeA = !transposed;
    if constexpr (std::is_same_v<Real, bf16>) {
      if (bias)
        launch("linear (bias)", broadcastBiasKernel<Real>, blocksFor(n),
               kThreads, 0, stream(), out, n, outFeatures, bias);
      checkBlas(gemm(transposeA, int(outFeatures), int(rows), int(inFeatures),
                     weight, int(weightStride), in, int(inStride), out,
                     bias ? 1.0f : 0.0f),
                "linear (cublasGemmEx, bf16)");
      return;
    }
    checkBlas(gemm(transposeA, int(outFeatures), int(rows), int(inFeatures),
                   weight, int(weightStride), in, int(inStride), out),
              std::is_same_v<Real, float> ? "linear (cublasSgemm)"
                                          : "linear (cublasDgemm)");
  }
  if (bias)
    launch("linear (bias)", addBiasKernel<Real>, blocksFor(n), kThreads, 0,
           stream(), out, n, outFeatures, bias);
}

} // namespace detail

/// out[r, o] = Σ_i weight[o, i] · in[r, i] + bias[o] (bias may be null),
/// with `weight` in PyTorch's out × in layout: one cuBLAS GEMM, then the
/// bias added by one thread per element (the host's order of rounding). A
/// bf16 GEMM instead starts from the bias broadcast into `out` and adds it
/// in f32, so that each output is rounded once, as on the host.
template <typename Real>
inline void linear(In<Real> in, int64_t rows, int64_t inFeatures,
                   In<Real> weight, int64_t outFeatures, In<Real> bias,
                   Real *out) {
  detail::linear<Real>(in, inFeatures, rows, inFeatures, weight, inFeatures,
                       false, outFeatures, bias, out);
}

/// linear with the weight given transposed (in × out): the GEMM reads it
/// as it lies, so that `fp.linear(x, fp.transpose(W))` needs no transpose.
template <typename Real>
inline void linearTransposed(In<Real> in, int64_t rows, int64_t inFeatures,
                             In<Real> weightT, int64_t outFeatures,
                             In<Real> bias, Real *out) {
  detail::linear<Real>(in, inFeatures, rows, inFeatures, weightT, outFeatures,
                       true, outFeatures, bias, out);
}

/// linear (or linearTransposed) of operands whose rows start `inStride` and
/// `weightStride` elements apart: column ranges of wider matrices (fp.slice
/// read in place), which cuBLAS reads as they lie.
template <typename Real>
inline void linearStrided(In<Real> in, int64_t inStride, int64_t rows,
                          int64_t inFeatures, In<Real> weight,
                          int64_t weightStride, bool transposed,
                          int64_t outFeatures, In<Real> bias, Real *out) {
  detail::linear<Real>(in, inStride, rows, inFeatures, weight, weightStride,
                       transposed, outFeatures, bias, out);
}

/// out[i, :] = gain[i] · weight[i, :] / ‖weight[i, :]‖₂ (PyTorch's
/// weight_norm over dim 0: no epsilon). One block per row.
template <typename Real>
inline void weightNorm(In<Real> weight, In<Real> gain, int64_t rows,
                       int64_t cols, Real *out) {
  detail::launch("weightNorm", detail::weightNormKernel<Real>, rows,
                 detail::rowThreads(cols), 0, detail::stream(), weight, gain,
                 rows, cols, out);
}

/// Batched products of small matrices: out[b] = op(lhs[b]) · op(rhs[b]) with
/// op(L) of shape m×k and op(R) of shape k×n. One thread per output element,
/// summing over p in order as Host.h does.
template <typename Real>
inline void matmul(In<Real> lhs, In<Real> rhs, int64_t batch, int64_t m,
                   int64_t n, int64_t k, bool transposeLhs, bool transposeRhs,
                   Real *out) {
  detail::launch("matmul", detail::matmulKernel<Real>,
                 detail::blocksFor(batch * m * n), detail::kThreads, 0,
                 detail::stream(), lhs, rhs, batch, m, n, k, transposeLhs,
                 transposeRhs, out);
}

namespace detail {

/// matrixExp's start, one block: the halvings s of A (its 1-norm, one
/// column per thread, reduced over the block) into `*halvings`.
template <typename Real>
__global__ void matrixExpHalvingsKernel(const Real *in, int64_t n,
                                        int *halvings) {
  using C = Compute<Real>;
  C norm = 0;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    C column = 0;
    for (int64_t i = 0; i < n; ++i)
      column += std::abs(C(in[i * n + j]));
    norm = column > norm ? column : norm;
  }
  norm = blockReduce(norm, MaxOp());
  if (threadIdx.x == 0)
    *halvings = fp::host::matrixExpHalvings(norm);
}

/// x = A / 2^s.
template <typename Real, typename C>
__global__ void matrixExpScaleKernel(const Real *in, int64_t size,
                                     const int *halvings, C *x) {
  const C scale = ldexp(C(1), -*halvings);
  for (int64_t i = firstThread(); i < size; i += allThreads())
    x[i] = C(in[i]) * scale;
}

/// result = I + factor · term (n × n).
template <typename C>
__global__ void identityPlusKernel(const C *term, C factor, int64_t n,
                                   C *result) {
  for (int64_t i = firstThread(); i < n * n; i += allThreads())
    result[i] = term[i] * factor + C(i % (n + 1) == 0 ? 1 : 0);
}

/// Squaring `step` of matrixExp: t = p · p where step < *halvings, else
/// nothing, so that the host queues the most squarings and never waits for
/// the norm. 16 × 16 tiles through shared memory.
inline constexpr int kSquareTile = 16;
template <typename C>
__global__ void matrixExpSquareKernel(const C *p, int64_t n, int step,
                                      const int *halvings, C *t) {
  if (step >= *halvings)
    return;
  __shared__ C left[kSquareTile][kSquareTile];
  __shared__ C right[kSquareTile][kSquareTile];
  const int64_t row = int64_t(blockIdx.y) * kSquareTile + threadIdx.y;
  const int64_t col = int64_t(blockIdx.x) * kSquareTile + threadIdx.x;
  C sum = 0;
  for (int64_t k0 = 0; k0 < n; k0 += kSquareTile) {
    const int64_t lc = k0 + threadIdx.x, rr = k0 + threadIdx.y;
    left[threadIdx.y][threadIdx.x] = row < n && lc < n ? p[row * n + lc] : C(0);
    right[threadIdx.y][threadIdx.x] =
        rr < n && col < n ? p[rr * n + col] : C(0);
    __syncthreads();
    for (int k = 0; k < kSquareTile; ++k)
      sum += left[threadIdx.y][k] * right[k][threadIdx.x];
    __syncthreads();
  }
  if (row < n && col < n)
    t[row * n + col] = sum;
}

/// Squaring `step`'s second half: p = t where step < *halvings.
template <typename C>
__global__ void matrixExpTakeKernel(const C *t, int64_t size, int step,
                                    const int *halvings, C *p) {
  if (step >= *halvings)
    return;
  for (int64_t i = firstThread(); i < size; i += allThreads())
    p[i] = t[i];
}

template <typename Real, typename C>
__global__ void matrixExpStoreKernel(const C *p, int64_t size, Real *out) {
  for (int64_t i = firstThread(); i < size; i += allThreads())
    out[i] = Real(p[i]);
}

} // namespace detail

/// out = e^A for the n × n matrix A (fp.matrix_exp), as Host.h computes it
/// (Common.h, matrixExp) in Compute<Real>: the halvings s found on the
/// device, the Taylor polynomial by Horner's rule with cuBLAS GEMMs, then
/// kMatrixExpMaxHalvings squaring launches of which those past s return at
/// once, so that the host never waits. Scratch: three n × n matrices.
template <typename Real>
inline void matrixExp(In<Real> in, int64_t n, Real *out) {
  using C = Compute<Real>;
  const int64_t size = n * n;
  cudaStream_t stream = detail::stream();
  detail::LaunchBuffer scratch(3 * size * sizeof(C) + sizeof(int), stream);
  C *x = scratch.as<C>(), *p = x + size, *t = p + size;
  int *halvings = reinterpret_cast<int *>(t + size);
  const int64_t blocks = detail::blocksFor(size);
  detail::launch("matrixExp (norm)", detail::matrixExpHalvingsKernel<Real>, 1,
                 detail::kThreads, 0, stream, in, n, halvings);
  detail::launch("matrixExp (scale)", detail::matrixExpScaleKernel<Real, C>,
                 blocks, detail::kThreads, 0, stream, in, size,
                 static_cast<const int *>(halvings), x);
  const int degree = fp::host::matrixExpDegree<C>();
  detail::launch("matrixExp (Taylor)", detail::identityPlusKernel<C>, blocks,
                 detail::kThreads, 0, stream, static_cast<const C *>(x),
                 C(1) / C(degree), n, p);
  for (int k = degree - 1; k >= 1; --k) {
    // Row-major t = x · p is column-major tᵀ = pᵀ · xᵀ.
    detail::checkBlas(
        detail::gemm(false, int(n), int(n), int(n), p, int(n), x, int(n), t),
        "matrixExp (GEMM)");
    detail::launch("matrixExp (Taylor)", detail::identityPlusKernel<C>, blocks,
                   detail::kThreads, 0, stream, static_cast<const C *>(t),
                   C(1) / C(k), n, p);
  }
  const dim3 tiles(
      unsigned((n + detail::kSquareTile - 1) / detail::kSquareTile),
      unsigned((n + detail::kSquareTile - 1) / detail::kSquareTile));
  const dim3 tile(detail::kSquareTile, detail::kSquareTile);
  for (int step = 0; step < fp::host::kMatrixExpMaxHalvings; ++step) {
    detail::matrixExpSquareKernel<C>
        <<<tiles, tile, 0, stream>>>(p, n, step, halvings, t);
    detail::check(cudaGetLastError(), "matrixExp (square)");
    detail::launch("matrixExp (square)", detail::matrixExpTakeKernel<C>, blocks,
                   detail::kThreads, 0, stream, static_cast<const C *>(t), size,
                   step, static_cast<const int *>(halvings), p);
  }
  detail::launch("matrixExp (store)", detail::matrixExpStoreKernel<Real, C>,
                 blocks, detail::kThreads, 0, stream, static_cast<const C *>(p),
                 size, out);
}

} // namespace fp::cuda

#endif // FP_RUNTIME_KERNELS_DEVICE_LINEAR_CUH
