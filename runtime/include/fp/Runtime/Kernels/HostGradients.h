//===- HostGradients.h - Host kernels of the gradient ops -------*- C++ -*-===//
//
// The host kernels of the ops fp-derive-backward introduces (docs/backward.md):
// the adjoints that are not compositions of forward kernels. Same
// conventions as Host.h: dense row-major buffers of one element type, the
// arithmetic in Compute<Real>, a "row" is the trailing feature dimension,
// `rows` the product of everything before it. Sums over tokens run in token
// order, so results do not depend on the number of threads.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_HOSTGRADIENTS_H
#define FP_RUNTIME_KERNELS_HOSTGRADIENTS_H

#include "fp/Runtime/Kernels/Host.h"

#include <vector>

namespace fp::host {

//===----------------------------------------------------------------------===//
// Linear maps and layout
//===----------------------------------------------------------------------===//

/// out[i] += in[i]: a parameter gradient accumulated into the caller's.
template <typename Real>
FP_KERNEL void accumulate(In<Real> in, int64_t n, Real *out) {
  using C = Compute<Real>;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    out[i] = Real(C(out[i]) + C(in[i]));
}

/// Every accumulation of `sums` (distinct outputs), as accumulate does.
template <typename Real>
FP_KERNEL void accumulateAll(const GradientSum<Real> *sums, int count) {
  for (int i = 0; i < count; ++i)
    accumulate<Real>(sums[i].in, sums[i].n, sums[i].out);
}

/// out[j, i] = in[i, j] for a rows × cols matrix.
template <typename Real>
FP_KERNEL void transpose(In<Real> in, int64_t rows, int64_t cols, Real *out) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      out[j * rows + i] = in[i * cols + j];
}

/// out[o, i] = Σ_r grad[r, o] · in[r, i]: the weight gradient of a linear
/// map (fp.weight_grad), as one GEMM over the tokens, with the rows of
/// `grad` and `in` starting `gradStride` and `inStride` elements apart
/// (column ranges of wider matrices: fp.slice read in place).
inline void weightGradStrided(const float *grad, int64_t gradStride,
                              const float *in, int64_t inStride, int64_t rows,
                              int64_t outFeatures, int64_t inFeatures,
                              float *out) {
  if (rows == 0) {
    std::fill(out, out + outFeatures * inFeatures, 0.0f);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, outFeatures, inFeatures,
              rows, 1.0f, grad, gradStride, in, inStride, 0.0f, out,
              inFeatures);
}
inline void weightGradStrided(const double *grad, int64_t gradStride,
                              const double *in, int64_t inStride, int64_t rows,
                              int64_t outFeatures, int64_t inFeatures,
                              double *out) {
  if (rows == 0) {
    std::fill(out, out + outFeatures * inFeatures, 0.0);
    return;
  }
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, outFeatures, inFeatures,
              rows, 1.0, grad, gradStride, in, inStride, 0.0, out, inFeatures);
}
/// bf16 operands widened, summed in float, each result rounded once.
inline void weightGradStrided(const bf16 *grad, int64_t gradStride,
                              const bf16 *in, int64_t inStride, int64_t rows,
                              int64_t outFeatures, int64_t inFeatures,
                              bf16 *out) {
  std::vector<float> product(outFeatures * inFeatures);
  weightGradStrided(widen(grad, rows, outFeatures, gradStride).data(),
                    outFeatures, widen(in, rows, inFeatures, inStride).data(),
                    inFeatures, rows, outFeatures, inFeatures, product.data());
  for (int64_t i = 0; i < outFeatures * inFeatures; ++i)
    out[i] = bf16(product[i]);
}

/// weightGradStrided of packed rows.
template <typename Real>
inline void weightGrad(In<Real> grad, In<Real> in, int64_t rows,
                       int64_t outFeatures, int64_t inFeatures, Real *out) {
  weightGradStrided(grad, outFeatures, in, inFeatures, rows, outFeatures,
                    inFeatures, out);
}

/// out[j] = Σ_r in[r, j]: a reduction over every token (bias and norm
/// weight gradients), in token order for each column, accumulated in
/// Accum<Real>.
template <typename Real>
FP_KERNEL void sumColumns(In<Real> in, int64_t rows, int64_t width, Real *out) {
  std::vector<Accum<Real>> sum(width, Accum<Real>(0));
  Accum<Real> *acc = sum.data();
  for (int64_t r = 0; r < rows; ++r) {
    In<Real> row = in + r * width;
#pragma omp simd
    for (int64_t j = 0; j < width; ++j)
      acc[j] += Accum<Real>(row[j]);
  }
  for (int64_t j = 0; j < width; ++j)
    out[j] = Real(acc[j]);
}

/// Packs the upper triangle of each m×m matrix into m(m+1)/2 entries,
/// row-major over the triangle (the adjoint of triu).
template <typename Real>
FP_KERNEL void triuPack(In<Real> in, int64_t rows, int64_t m, Real *out) {
  const int64_t packed = m * (m + 1) / 2;
  parallelFor(rows, m * m, [&](int64_t r) {
    In<Real> src = in + r * m * m;
    Real *dst = out + r * packed;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = i; j < m; ++j)
        *dst++ = src[i * m + j];
  });
}

/// The cotangent of fp.reduce_max: grad of each output element goes to the
/// first input position (row-major) attaining its maximum; zero elsewhere.
template <typename Real>
FP_KERNEL void reduceMaxGrad(In<Real> in, In<Real> grad, const Shape &inShape,
                             const bool *reduced, Real *out) {
  int64_t outStride[kMaxRank] = {};
  int64_t stride = 1;
  for (int d = inShape.rank - 1; d >= 0; --d) {
    if (reduced[d])
      continue;
    outStride[d] = stride;
    stride *= inShape.extent[d];
  }
  const int64_t outN = stride, n = inShape.numElements();
  std::vector<int64_t> argmax(outN, -1);
  for (int64_t index = 0; index < n; ++index) {
    int64_t rest = index, offset = 0;
    for (int d = inShape.rank - 1; d >= 0; --d) {
      offset += (rest % inShape.extent[d]) * outStride[d];
      rest /= inShape.extent[d];
    }
    int64_t &best = argmax[offset];
    if (best < 0 || in[index] > in[best])
      best = index;
  }
  std::fill(out, out + n, Real(0));
  for (int64_t o = 0; o < outN; ++o)
    if (argmax[o] >= 0)
      out[argmax[o]] = grad[o];
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

/// The cotangent of in / max(‖in‖₂, eps) per row: (g − y⟨y, g⟩) / ‖in‖
/// where the norm exceeds eps, g / eps where the clamp holds.
template <typename Real>
FP_KERNEL void l2normGrad(In<Real> in, In<Real> grad, int64_t rows,
                          int64_t width, Compute<Real> eps, Real *out) {
  using C = Compute<Real>;
  parallelFor(rows, 2 * width, [&](int64_t r) {
    In<Real> x = in + r * width;
    In<Real> g = grad + r * width;
    Real *dx = out + r * width;
    C sum = 0, dot = 0;
    for (int64_t j = 0; j < width; ++j) {
      sum += C(x[j]) * C(x[j]);
      dot += C(x[j]) * C(g[j]);
    }
    const C norm = std::sqrt(sum);
    if (!(norm > eps)) {
      for (int64_t j = 0; j < width; ++j)
        dx[j] = Real(C(g[j]) / eps);
      return;
    }
    // y = x / n, so g − y⟨y, g⟩ = g − x · ⟨x, g⟩ / n².
    const C along = dot / (norm * norm);
    for (int64_t j = 0; j < width; ++j)
      dx[j] = Real((C(g[j]) - C(x[j]) * along) / norm);
  });
}

/// The cotangents of fp.weight_norm, w[i, :] = gain[i] · v[i, :] / n_i with
/// n_i = ‖v[i, :]‖₂, for the cotangent `grad` of w: per row
/// dgain[i] = ⟨G_i, v_i⟩ / n_i and
/// dweight[i, :] = (gain[i] / n_i) · (G_i − v_i · ⟨G_i, v_i⟩ / n_i²).
template <typename Real>
FP_KERNEL void weightNormGrad(In<Real> weight, In<Real> gain, In<Real> grad,
                              int64_t rows, int64_t cols, Real *dweight,
                              Real *dgain) {
  using C = Compute<Real>;
  parallelFor(rows, 2 * cols, [&](int64_t r) {
    In<Real> v = weight + r * cols;
    In<Real> g = grad + r * cols;
    C sum = 0, dot = 0;
    for (int64_t c = 0; c < cols; ++c) {
      sum += C(v[c]) * C(v[c]);
      dot += C(v[c]) * C(g[c]);
    }
    const C norm = std::sqrt(sum);
    const C scale = C(gain[r]) / norm, along = dot / (norm * norm);
    dgain[r] = Real(dot / norm);
    for (int64_t c = 0; c < cols; ++c)
      dweight[r * cols + c] = Real(scale * (C(g[c]) - C(v[c]) * along));
  });
}

//===----------------------------------------------------------------------===//
// Time-coupling ops on [B, T, F] buffers
//===----------------------------------------------------------------------===//

/// Tokens whose terms of a causal convolution's weight gradient one partial
/// sum covers.
inline constexpr int64_t kConvGradTokens = 256;

/// The cotangents of fp.causal_conv (without its bias):
/// dIn[b, s, c] = Σ_k weight[c, k] · grad[b, s + K − 1 − k, c] and
/// dWeight[c, k] = Σ_{b,t} grad[b, t, c] · in[b, t − K + 1 + k, c].
/// dWeight streams the tokens row by row: each chunk of kConvGradTokens
/// tokens (across samples) sums its terms in token order into a partial sum
/// per weight, in Accum<Real>, and the chunks' partial sums are added in
/// chunk order, so the result does not depend on the number of threads.
/// The rows of `in` (one per token) start `inStride` elements apart: a
/// column range of a wider matrix (fp.slice read in place).
template <typename Real>
FP_KERNEL void causalConvGradStrided(In<Real> in, int64_t inStride,
                                     In<Real> weight, In<Real> grad,
                                     int64_t batch, int64_t length,
                                     int64_t channels, int64_t width, Real *dIn,
                                     Real *dWeight) {
  using C = Compute<Real>;
  using A = Accum<Real>;
  parallelFor(batch * length, channels * width, [&](int64_t bs) {
    const int64_t s = bs % length, base = bs - s;
    Real *dst = dIn + bs * channels;
    for (int64_t c = 0; c < channels; ++c) {
      C sum = 0;
      for (int64_t k = 0; k < width; ++k) {
        const int64_t t = s + width - 1 - k;
        if (t < length)
          sum += C(weight[c * width + k]) * C(grad[(base + t) * channels + c]);
      }
      dst[c] = Real(sum);
    }
  });
  // Partial sums as [chunk][k][c], so that a token's terms are contiguous.
  const int64_t tokens = batch * length, taps = channels * width;
  const int64_t chunks = (tokens + kConvGradTokens - 1) / kConvGradTokens;
  std::vector<A> partial(size_t(chunks * taps), A(0));
  parallelFor(chunks, kConvGradTokens * taps, [&](int64_t chunk) {
    A *acc = partial.data() + chunk * taps;
    const int64_t end = std::min(tokens, (chunk + 1) * kConvGradTokens);
    for (int64_t bt = chunk * kConvGradTokens; bt < end; ++bt) {
      const int64_t t = bt % length;
      In<Real> g = grad + bt * channels;
      for (int64_t k = std::max<int64_t>(0, width - 1 - t); k < width; ++k) {
        In<Real> x = in + (bt - width + 1 + k) * inStride;
        A *sum = acc + k * channels;
#pragma omp simd
        for (int64_t c = 0; c < channels; ++c)
          sum[c] += A(g[c]) * A(x[c]);
      }
    }
  });
  parallelFor(channels, chunks * width, [&](int64_t c) {
    for (int64_t k = 0; k < width; ++k) {
      A sum = 0;
      for (int64_t chunk = 0; chunk < chunks; ++chunk)
        sum += partial[size_t(chunk * taps + k * channels + c)];
      dWeight[c * width + k] = Real(sum);
    }
  });
}

/// causalConvGradStrided of packed rows.
template <typename Real>
FP_KERNEL void causalConvGrad(In<Real> in, In<Real> weight, In<Real> grad,
                              int64_t batch, int64_t length, int64_t channels,
                              int64_t width, Real *dIn, Real *dWeight) {
  causalConvGradStrided(in, channels, weight, grad, batch, length, channels,
                        width, dIn, dWeight);
}

/// The cotangents of the recurrence of fp.selective_scan (no skip term):
/// with a_t = exp(Δ_t A), S_t = a_t ⊙ S_{t−1} + (Δ_t u_t) B_t and
/// y_t = S_t C_t, the adjoint state Λ_t = g_t C_tᵀ + a_{t+1} ⊙ Λ_{t+1} runs
/// backward in time and
///   du_t[i] = Δ_t[i] Σ_n Λ_t[i,n] B_t[n],
///   dΔ_t[i] = Σ_n Λ_t[i,n] (A[i,n] a_t[i,n] S_{t−1}[i,n] + B_t[n] u_t[i]),
///   dA[i,n] = Σ_{b,t} Λ_t[i,n] Δ_t[i] a_t[i,n] S_{t−1}[i,n],
///   dB_t[n] = Σ_i Λ_t[i,n] Δ_t[i] u_t[i],  dC_t[n] = Σ_i g_t[i] S_t[i,n].
/// Each sample recomputes its states forward; dA sums the samples in order.
template <typename Real>
FP_KERNEL void selectiveScanGrad(In<Real> u, In<Real> delta, In<Real> a,
                                 In<Real> bm, In<Real> cm, In<Real> grad,
                                 int64_t batch, int64_t length,
                                 int64_t channels, int64_t state, Real *du,
                                 Real *dDelta, Real *dA, Real *dB, Real *dC) {
  // States, adjoint states and the sums of dA and dB are Compute<Real>.
  using C = Compute<Real>;
  const int64_t cell = channels * state;
  std::vector<C> partialA(batch * cell, C(0));
  parallelFor(batch, 4 * length * cell, [&](int64_t b) {
    // States S_{−1} = 0, S_0, ..., S_{T−1}: slot t + 1 holds S_t.
    std::vector<C> states((length + 1) * cell, C(0));
    for (int64_t t = 0; t < length; ++t) {
      const int64_t bt = b * length + t;
      const C *prev = states.data() + t * cell;
      C *cur = states.data() + (t + 1) * cell;
      for (int64_t i = 0; i < channels; ++i) {
        const C dt = C(delta[bt * channels + i]);
        const C dtu = dt * C(u[bt * channels + i]);
        for (int64_t n = 0; n < state; ++n)
          cur[i * state + n] =
              std::exp(dt * C(a[i * state + n])) * prev[i * state + n] +
              dtu * C(bm[bt * state + n]);
      }
    }
    std::vector<C> lambda(cell, C(0)), sumB(state);
    C *gradA = partialA.data() + b * cell;
    for (int64_t t = length - 1; t >= 0; --t) {
      const int64_t bt = b * length + t;
      const C *prev = states.data() + t * cell;
      const C *cur = states.data() + (t + 1) * cell;
      In<Real> g = grad + bt * channels;
      // Λ_t = g_t C_tᵀ + a_{t+1} ⊙ Λ_{t+1}; lambda holds a_{t+1} ⊙ Λ_{t+1}.
      for (int64_t n = 0; n < state; ++n) {
        C sum = 0;
        for (int64_t i = 0; i < channels; ++i)
          sum += C(g[i]) * cur[i * state + n];
        dC[bt * state + n] = Real(sum);
        sumB[n] = 0;
      }
      for (int64_t i = 0; i < channels; ++i) {
        const C dt = C(delta[bt * channels + i]);
        const C ut = C(u[bt * channels + i]);
        const C gi = C(g[i]);
        C sumU = 0, sumDelta = 0;
        for (int64_t n = 0; n < state; ++n) {
          const int64_t k = i * state + n;
          const C ak = C(a[k]);
          const C l = gi * C(cm[bt * state + n]) + lambda[k];
          const C at = std::exp(dt * ak);
          const C bn = C(bm[bt * state + n]);
          sumU += l * bn;
          sumDelta += l * (ak * at * prev[k] + bn * ut);
          gradA[k] += l * dt * at * prev[k];
          sumB[n] += l * dt * ut;
          lambda[k] = at * l; // a_t ⊙ Λ_t, for step t − 1
        }
        du[bt * channels + i] = Real(dt * sumU);
        dDelta[bt * channels + i] = Real(sumDelta);
      }
      for (int64_t n = 0; n < state; ++n)
        dB[bt * state + n] = Real(sumB[n]);
    }
  });
  for (int64_t k = 0; k < cell; ++k) {
    C sum = 0;
    for (int64_t b = 0; b < batch; ++b)
      sum += partialA[b * cell + k];
    dA[k] = Real(sum);
  }
}

} // namespace fp::host

#endif // FP_RUNTIME_KERNELS_HOSTGRADIENTS_H
