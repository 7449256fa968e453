//===- Host/Linear.h - Linear maps of the host kernels ----------*- C++ -*-===//
//
// GEMMs through CBLAS (bf16 ones widened to float), linear, linearTransposed,
// linearStrided, weightNorm, matmul, the batched products of small matrices,
// and matrixExp.
//
// Counterpart: Device/Linear.cuh.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_HOST_LINEAR_H
#define FP_RUNTIME_KERNELS_HOST_LINEAR_H

#include "fp/Runtime/Kernels/Host/Context.h"
#include "fp/Runtime/Kernels/Host/Launch.h"

namespace fp::host {

/// C[m×n] = A[m×k] · op(B) (+ C when accumulate), where op(B) is B[n×k]ᵀ
/// when `transposeB`, else B[k×n]; the rows of A and B start `lda` and
/// `ldb` elements apart.
inline void gemm(bool transposeB, int64_t m, int64_t n, int64_t k,
                 const float *a, int64_t lda, const float *b, int64_t ldb,
                 float *c, bool accumulate) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans,
              transposeB ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, lda, b,
              ldb, accumulate ? 1.0f : 0.0f, c, n);
}
inline void gemm(bool transposeB, int64_t m, int64_t n, int64_t k,
                 const double *a, int64_t lda, const double *b, int64_t ldb,
                 double *c, bool accumulate) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans,
              transposeB ? CblasTrans : CblasNoTrans, m, n, k, 1.0, a, lda, b,
              ldb, accumulate ? 1.0 : 0.0, c, n);
}
/// The n values at `in` widened to float: CBLAS has no bf16 GEMM here, and
/// a float GEMM of widened bf16 operands multiplies them exactly.
inline std::vector<float> widen(const bf16 *in, int64_t n) {
  std::vector<float> out(n);
  for (int64_t i = 0; i < n; ++i)
    out[i] = in[i];
  return out;
}
/// The rows × cols matrix at `in`, whose rows start `stride` apart, widened
/// to float with its rows packed.
inline std::vector<float> widen(const bf16 *in, int64_t rows, int64_t cols,
                                int64_t stride) {
  std::vector<float> out(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[r * cols + c] = in[r * stride + c];
  return out;
}

namespace detail {

/// linear, linearTransposed and linearStrided: `weight` is out × in, or
/// in × out when `transposed`; the rows of `in` and `weight` start
/// `inStride` and `weightStride` elements apart.
template <typename Real>
inline void linear(In<Real> in, int64_t inStride, int64_t rows,
                   int64_t inFeatures, In<Real> weight, int64_t weightStride,
                   bool transposed, int64_t outFeatures, In<Real> bias,
                   Real *out) {
  if (rows == 0)
    return;
  if constexpr (std::is_same_v<Real, bf16>) {
    std::vector<float> a = widen(in, rows, inFeatures, inStride);
    const int64_t weightRows = transposed ? inFeatures : outFeatures;
    const int64_t weightCols = transposed ? outFeatures : inFeatures;
    std::vector<float> w = widen(weight, weightRows, weightCols, weightStride);
    std::vector<float> product(rows * outFeatures);
    gemm(!transposed, rows, outFeatures, inFeatures, a.data(), inFeatures,
         w.data(), weightCols, product.data(), false);
    parallelFor(rows, outFeatures, [&](int64_t r) {
      const float *row = product.data() + r * outFeatures;
      for (int64_t o = 0; o < outFeatures; ++o)
        out[r * outFeatures + o] = bf16(bias ? row[o] + bias[o] : row[o]);
    });
  } else {
    gemm(!transposed, rows, outFeatures, inFeatures, in, inStride, weight,
         weightStride, out, false);
    if (bias)
      parallelFor(rows, outFeatures, [&](int64_t r) {
        Real *row = out + r * outFeatures;
        for (int64_t o = 0; o < outFeatures; ++o)
          row[o] += bias[o];
      });
  }
}

} // namespace detail

/// out[r, o] = Σ_i weight[o, i] · in[r, i] + bias[o] (bias may be null),
/// with `weight` in PyTorch's out × in layout. bf16 operands are multiplied
/// and summed in float, the bias added, and the sum rounded once.
template <typename Real>
FP_KERNEL void linear(In<Real> in, int64_t rows, int64_t inFeatures,
                      In<Real> weight, int64_t outFeatures, In<Real> bias,
                      Real *out) {
  detail::linear<Real>(in, inFeatures, rows, inFeatures, weight, inFeatures,
                       false, outFeatures, bias, out);
}

/// linear with the weight given transposed (in × out): the GEMM reads it
/// as it lies, so that `fp.linear(x, fp.transpose(W))` needs no transpose.
template <typename Real>
FP_KERNEL void linearTransposed(In<Real> in, int64_t rows, int64_t inFeatures,
                                In<Real> weightT, int64_t outFeatures,
                                In<Real> bias, Real *out) {
  detail::linear<Real>(in, inFeatures, rows, inFeatures, weightT, outFeatures,
                       true, outFeatures, bias, out);
}

/// linear (or linearTransposed) of operands whose rows start `inStride` and
/// `weightStride` elements apart: column ranges of wider matrices (fp.slice
/// read in place), which the GEMM reads as they lie.
template <typename Real>
FP_KERNEL void linearStrided(In<Real> in, int64_t inStride, int64_t rows,
                             int64_t inFeatures, In<Real> weight,
                             int64_t weightStride, bool transposed,
                             int64_t outFeatures, In<Real> bias, Real *out) {
  detail::linear<Real>(in, inStride, rows, inFeatures, weight, weightStride,
                       transposed, outFeatures, bias, out);
}

/// out[i, :] = gain[i] · weight[i, :] / ‖weight[i, :]‖₂ (PyTorch's
/// weight_norm over dim 0: no epsilon).
template <typename Real>
FP_KERNEL void weightNorm(In<Real> weight, In<Real> gain, int64_t rows,
                          int64_t cols, Real *out) {
  using C = Compute<Real>;
  parallelFor(rows, cols, [&](int64_t r) {
    In<Real> v = weight + r * cols;
    C sum = 0;
    for (int64_t c = 0; c < cols; ++c)
      sum += C(v[c]) * C(v[c]);
    C scale = C(gain[r]) / std::sqrt(sum);
    for (int64_t c = 0; c < cols; ++c)
      out[r * cols + c] = Real(C(v[c]) * scale);
  });
}

/// Batched products of small matrices: out[b] = op(lhs[b]) · op(rhs[b]) with
/// op(L) of shape m×k and op(R) of shape k×n. Every out[i, j] sums over p in
/// order; the loops run i, p, j so that the innermost one is contiguous
/// (a transposed rhs is first copied to k×n). A bf16 product sums each
/// output in a float register instead, over p in the same order.
template <typename Real>
FP_KERNEL void matmul(In<Real> lhs, In<Real> rhs, int64_t batch, int64_t m,
                      int64_t n, int64_t k, bool transposeLhs,
                      bool transposeRhs, Real *out) {
  using C = Compute<Real>;
  if constexpr (std::is_same_v<Real, C>) {
    parallelFor(batch, m * n * k, [&](int64_t b) {
      In<Real> l = lhs + b * m * k;
      In<Real> r = rhs + b * k * n;
      Real *o = out + b * m * n;
      std::vector<Real> transposed;
      if (transposeRhs) {
        transposed.resize(k * n);
        for (int64_t j = 0; j < n; ++j)
          for (int64_t p = 0; p < k; ++p)
            transposed[p * n + j] = r[j * k + p];
        r = transposed.data();
      }
      for (int64_t i = 0; i < m; ++i) {
        Real *oi = o + i * n;
        std::fill(oi, oi + n, Real(0));
        for (int64_t p = 0; p < k; ++p) {
          const Real lip = transposeLhs ? l[p * m + i] : l[i * k + p];
          In<Real> rp = r + p * n;
#pragma omp simd
          for (int64_t j = 0; j < n; ++j)
            oi[j] += lip * rp[j];
        }
      }
    });
  } else {
    parallelFor(batch, m * n * k, [&](int64_t b) {
      In<Real> l = lhs + b * m * k;
      In<Real> r = rhs + b * k * n;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          C sum = 0;
          for (int64_t p = 0; p < k; ++p)
            sum += C(transposeLhs ? l[p * m + i] : l[i * k + p]) *
                   C(transposeRhs ? r[j * k + p] : r[p * n + j]);
          out[(b * m + i) * n + j] = Real(sum);
        }
    });
  }
}

/// out = e^A for the n × n matrix A (fp.matrix_exp) by scaling and
/// squaring (Common.h, matrixExp): X = A / 2^s, the Taylor polynomial of
/// degree m summed by Horner's rule, P = I + X (I + X/2 (… (I + X/m))),
/// then P squared s times; m − 1 + s GEMMs in Compute<Real>.
template <typename Real>
FP_KERNEL void matrixExp(In<Real> in, int64_t n, Real *out) {
  using C = Compute<Real>;
  const int64_t size = n * n;
  std::vector<C> x(size), p(size), t(size);
  C norm = 0;
  for (int64_t j = 0; j < n; ++j) {
    C column = 0;
    for (int64_t i = 0; i < n; ++i)
      column += std::abs(C(in[i * n + j]));
    norm = std::max(norm, column);
  }
  const int halvings = matrixExpHalvings(norm);
  const C scale = std::ldexp(C(1), -halvings);
  for (int64_t i = 0; i < size; ++i)
    x[i] = C(in[i]) * scale;
  auto identityPlus = [&](const std::vector<C> &term, C factor,
                          std::vector<C> &result) {
    for (int64_t i = 0; i < size; ++i)
      result[i] = term[i] * factor + C(i % (n + 1) == 0 ? 1 : 0);
  };
  const int degree = matrixExpDegree<C>();
  identityPlus(x, C(1) / C(degree), p);
  for (int k = degree - 1; k >= 1; --k) {
    gemm(false, n, n, n, x.data(), n, p.data(), n, t.data(), false);
    identityPlus(t, C(1) / C(k), p);
  }
  for (int i = 0; i < halvings; ++i) {
    gemm(false, n, n, n, p.data(), n, p.data(), n, t.data(), false);
    std::swap(p, t);
  }
  for (int64_t i = 0; i < size; ++i)
    out[i] = Real(p[i]);
}

} // namespace fp::host

#endif // FP_RUNTIME_KERNELS_HOST_LINEAR_H
