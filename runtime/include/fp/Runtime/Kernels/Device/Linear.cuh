//===- Device/Linear.cuh - Linear maps of the CUDA kernels ------*- C++ -*-===//
//
// GEMMs through cuBLAS (bf16 ones on tensor cores with f32 accumulation),
// linear, linearTransposed, linearStrided, weightNorm and matmul, the batched
// products of small matrices.
//
// Counterpart: Host/Linear.h.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_DEVICE_LINEAR_CUH
#define FP_RUNTIME_KERNELS_DEVICE_LINEAR_CUH

#include "fp/Runtime/Kernels/Device/Context.cuh"
#include "fp/Runtime/Kernels/Device/Elementwise.cuh"
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

} // namespace fp::cuda

#endif // FP_RUNTIME_KERNELS_DEVICE_LINEAR_CUH
