//===- Fused.h - Per-token building blocks of fused kernels -----*- C++ -*-===//
//
// The operations of an fp.kernel body, at the level of one token. fpc emits
// each fp.kernel as a function object whose call computes one token: it
// calls these functions on that token's rows, in the body's order, with
// intermediate values in a scratch buffer that never leaves the kernel. The
// launchers (forEachToken and forEachSample in Host.h and Device.cuh) run
// it over all tokens, sample by sample in time order when the body holds a
// scan, whose state lives between tokens in a per-sample state buffer.
//
// A token is computed by a team of threads: one on the host
// (SerialTeam), the threads of a block on CUDA. Every function splits its
// elements over the team, `for (i = rank; i < n; i += size)`; reductions
// combine per-thread partial results with team.sum / team.max, which every
// member calls and whose result every member gets. The caller synchronises
// the team between operations. With the serial team every element and
// every reduction is computed in exactly the order of the unfused kernels
// of Host.h, so fusion does not change the host's results.
//
// Shapes are per token: `rows` × `width` is the token's part of a
// (B, T, rows..., width) tensor. Uniform operands (parameters, constants)
// are the same for every token.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_FUSED_H
#define FP_RUNTIME_KERNELS_FUSED_H

#include "fp/Runtime/Kernels/Common.h"

#include <cstdint>

namespace fp::fused {

using fp::host::In;

/// The type a team's row sums and norms accumulate in: on the host Host.h's
/// Accum (double for f32); on the device the element type.
#ifdef __CUDA_ARCH__
template <typename Real> using Wide = Real;
#else
template <typename Real> using Wide = fp::host::Accum<Real>;
#endif

/// The team of one host thread.
struct SerialTeam {
  static constexpr int rank() { return 0; }
  static constexpr int size() { return 1; }
  void sync() const {}
  template <typename Real> Real sum(Real partial) const { return partial; }
  template <typename Real> Real max(Real partial) const { return partial; }
};

/// A loop over the team's share of n independent elements (SIMD on the
/// host), and one whose iterations accumulate in order.
#ifdef __CUDA_ARCH__
#define FP_TEAM_SIMD
#else
#define FP_TEAM_SIMD _Pragma("omp simd")
#endif
#define FP_TEAM_FOR(i, n)                                                      \
  FP_TEAM_SIMD for (int64_t i = team.rank(); i < (n); i += team.size())
#define FP_TEAM_ACCUMULATE(i, n)                                               \
  for (int64_t i = team.rank(); i < (n); i += team.size())

/// out[i] = op(x[i]).
template <typename Team, typename Op, typename Real>
FP_HOST_DEVICE inline void unary(Team &team, Op op, int64_t n, In<Real> x,
                                 Real *out) {
  FP_TEAM_FOR(i, n) out[i] = op(x[i]);
}

/// out[i] = op(x[i], y[i]).
template <typename Team, typename Op, typename Real>
FP_HOST_DEVICE inline void binary(Team &team, Op op, int64_t n, In<Real> x,
                                  In<Real> y, Real *out) {
  FP_TEAM_FOR(i, n) out[i] = op(x[i], y[i]);
}

template <typename Team, typename Real>
FP_HOST_DEVICE inline void copy(Team &team, int64_t n, In<Real> x, Real *out) {
  FP_TEAM_FOR(i, n) out[i] = x[i];
}

/// out[i] = value.
template <typename Team, typename Real>
FP_HOST_DEVICE inline void fill(Team &team, int64_t n, Real value, Real *out) {
  FP_TEAM_FOR(i, n) out[i] = value;
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

/// out[r, j] = in[r, start + j] for `rows` rows of `width`.
template <typename Team, typename Real>
FP_HOST_DEVICE inline void slice(Team &team, In<Real> in, int64_t rows,
                                 int64_t inWidth, int64_t start, int64_t width,
                                 Real *out) {
  FP_TEAM_FOR(i, rows * width) {
    int64_t r = i / width, j = i % width;
    out[i] = in[r * inWidth + start + j];
  }
}

/// out[r, start + j] = in[r, j] for `rows` rows of `width`.
template <typename Team, typename Real>
FP_HOST_DEVICE inline void insert(Team &team, In<Real> in, int64_t rows,
                                  int64_t width, int64_t start,
                                  int64_t outWidth, Real *out) {
  FP_TEAM_FOR(i, rows * width) {
    int64_t r = i / width, j = i % width;
    out[r * outWidth + start + j] = in[i];
  }
}

/// Replicates `in` to the token shape `outExtents` (rank `outRank`): input
/// dimension d is output dimension dims[d]; the others are broadcast.
template <typename Team, typename Real>
FP_HOST_DEVICE inline void broadcast(Team &team, In<Real> in, int outRank,
                                     const int64_t *outExtents, const int *dims,
                                     int inRank, Real *out) {
  int64_t n = 1;
  for (int d = 0; d < outRank; ++d)
    n *= outExtents[d];
  if (inRank == 0) {
    const Real value = in[0];
    FP_TEAM_FOR(i, n) out[i] = value;
    return;
  }
  int64_t inStride[fp::host::kMaxRank] = {};
  int64_t stride = 1;
  for (int d = inRank - 1; d >= 0; --d) {
    inStride[dims[d]] = stride;
    stride *= outExtents[dims[d]];
  }
  bool trailing = true;
  for (int d = 0; d < inRank; ++d)
    trailing &= dims[d] == outRank - inRank + d;
  if (trailing) {
    // The whole input repeated over the leading output dimensions.
    FP_TEAM_FOR(i, n) out[i] = in[i % stride];
    return;
  }
  FP_TEAM_FOR(i, n) {
    int64_t rest = i, offset = 0;
    for (int d = outRank - 1; d >= 0; --d) {
      offset += (rest % outExtents[d]) * inStride[d];
      rest /= outExtents[d];
    }
    out[i] = in[offset];
  }
}

/// Unpacks the m(m+1)/2 entries of each of `rows` rows into an upper
/// triangular m×m matrix, row-major over the triangle.
template <typename Team, typename Real>
FP_HOST_DEVICE inline void triu(Team &team, In<Real> in, int64_t rows,
                                int64_t m, Real *out) {
  const int64_t packed = m * (m + 1) / 2;
  FP_TEAM_FOR(e, rows * m * m) {
    int64_t r = e / (m * m), i = (e / m) % m, j = e % m;
    out[e] =
        j >= i ? in[r * packed + i * m - i * (i - 1) / 2 + (j - i)] : Real(0);
  }
}

//===----------------------------------------------------------------------===//
// Reductions and normalisations over the last dimension
//===----------------------------------------------------------------------===//

/// out[r] = Σ_j in[r, j].
template <typename Team, typename Real>
FP_HOST_DEVICE inline void sumRows(Team &team, In<Real> in, int64_t rows,
                                   int64_t width, Real *out) {
  for (int64_t r = 0; r < rows; ++r) {
    Wide<Real> sum = 0;
    FP_TEAM_ACCUMULATE(j, width) sum += in[r * width + j];
    sum = team.sum(sum);
    if (team.rank() == 0)
      out[r] = Real(sum);
  }
}

/// Reduces the token's `in` of shape `extents` (rank `rank`) over the
/// dimensions flagged in `reduced`, on the team's first thread, in Host.h's
/// order.
template <typename Team, typename Real>
FP_HOST_DEVICE inline void reduce(Team &team, In<Real> in, int rank,
                                  const int64_t *extents, const bool *reduced,
                                  bool isSum, Real *out) {
  if (team.rank() != 0)
    return;
  int64_t outStride[fp::host::kMaxRank] = {};
  int64_t stride = 1, n = 1;
  for (int d = rank - 1; d >= 0; --d) {
    n *= extents[d];
    if (reduced[d])
      continue;
    outStride[d] = stride;
    stride *= extents[d];
  }
  const Real init = isSum ? Real(0) : -INFINITY;
  for (int64_t i = 0; i < stride; ++i)
    out[i] = init;
  for (int64_t index = 0; index < n; ++index) {
    int64_t rest = index, offset = 0;
    for (int d = rank - 1; d >= 0; --d) {
      offset += (rest % extents[d]) * outStride[d];
      rest /= extents[d];
    }
    out[offset] = isSum ? out[offset] + in[index]
                        : (out[offset] < in[index] ? in[index] : out[offset]);
  }
}

/// in / max(‖in‖₂, eps) per row.
template <typename Team, typename Real>
FP_HOST_DEVICE inline void l2norm(Team &team, In<Real> in, int64_t rows,
                                  int64_t width, Real eps, Real *out) {
  for (int64_t r = 0; r < rows; ++r) {
    In<Real> x = in + r * width;
    Wide<Real> sum = 0;
    FP_TEAM_ACCUMULATE(j, width) sum += Wide<Real>(x[j]) * x[j];
    sum = team.sum(sum);
    Real norm = Real(std::sqrt(sum));
    norm = norm < eps ? eps : norm;
    FP_TEAM_FOR(j, width) out[r * width + j] = x[j] / norm;
  }
}

/// (in − mean) / sqrt(var + eps) · weight + bias per row.
template <typename Team, typename Real>
FP_HOST_DEVICE inline void layerNorm(Team &team, In<Real> in, In<Real> weight,
                                     In<Real> bias, int64_t rows, int64_t width,
                                     Real eps, Real *out) {
  for (int64_t r = 0; r < rows; ++r) {
    In<Real> x = in + r * width;
    Real mean = 0;
    FP_TEAM_ACCUMULATE(j, width) mean += x[j];
    mean = team.sum(mean) / Real(width);
    Real var = 0;
    FP_TEAM_ACCUMULATE(j, width) var += (x[j] - mean) * (x[j] - mean);
    var = team.sum(var) / Real(width);
    const Real inv = Real(1) / std::sqrt(var + eps);
    FP_TEAM_FOR(j, width)
    out[r * width + j] = (x[j] - mean) * inv * weight[j] + bias[j];
  }
}

/// in / sqrt(mean(in²) + eps) · weight per row.
template <typename Team, typename Real>
FP_HOST_DEVICE inline void rmsNorm(Team &team, In<Real> in, In<Real> weight,
                                   int64_t rows, int64_t width, Real eps,
                                   Real *out) {
  for (int64_t r = 0; r < rows; ++r) {
    In<Real> x = in + r * width;
    Wide<Real> sum = 0;
    FP_TEAM_ACCUMULATE(j, width) sum += Wide<Real>(x[j]) * x[j];
    sum = team.sum(sum);
    const Real inv = Real(1 / std::sqrt(sum / width + eps));
    FP_TEAM_FOR(j, width) out[r * width + j] = x[j] * inv * weight[j];
  }
}

//===----------------------------------------------------------------------===//
// Small matrix products
//===----------------------------------------------------------------------===//

/// out[b] = op(lhs[b]) · op(rhs[b]) for the token's `batch` matrix pairs,
/// op(L) m×k and op(R) k×n; every output sums over p in order, in the
/// element type, as Host.h's matmul does. The device team splits the
/// outputs; the host runs Host.h's loops (i, p, j), whose innermost loop
/// over a row of the output vectorises.
template <typename Team, typename Real>
FP_HOST_DEVICE inline void
matmul(Team &team, In<Real> lhs, In<Real> rhs, int64_t batch, int64_t m,
       int64_t n, int64_t k, bool transposeLhs, bool transposeRhs, Real *out) {
#ifdef __CUDA_ARCH__
  FP_TEAM_FOR(e, batch * m * n) {
    int64_t b = e / (m * n), i = (e / n) % m, j = e % n;
    In<Real> l = lhs + b * m * k;
    In<Real> r = rhs + b * k * n;
    Real sum = 0;
    for (int64_t p = 0; p < k; ++p)
      sum += (transposeLhs ? l[p * m + i] : l[i * k + p]) *
             (transposeRhs ? r[j * k + p] : r[p * n + j]);
    out[e] = sum;
  }
#else
  (void)team;
  // A transposed rhs small enough for the stack is copied to k×n first, as
  // Host.h does, so that the innermost loop reads it contiguously.
  constexpr int64_t kStackElements = 64 * 64;
  Real copied[kStackElements];
  const bool copy = transposeRhs && k * n <= kStackElements;
  for (int64_t b = 0; b < batch; ++b) {
    In<Real> l = lhs + b * m * k;
    In<Real> r = rhs + b * k * n;
    if (copy) {
      for (int64_t j = 0; j < n; ++j)
        for (int64_t p = 0; p < k; ++p)
          copied[p * n + j] = r[j * k + p];
      r = copied;
    }
    for (int64_t i = 0; i < m; ++i) {
      Real *oi = out + (b * m + i) * n;
      for (int64_t j = 0; j < n; ++j)
        oi[j] = Real(0);
      for (int64_t p = 0; p < k; ++p) {
        const Real lip = transposeLhs ? l[p * m + i] : l[i * k + p];
        if (transposeRhs && !copy) {
#pragma omp simd
          for (int64_t j = 0; j < n; ++j)
            oi[j] += lip * r[j * k + p];
        } else {
#pragma omp simd
          for (int64_t j = 0; j < n; ++j)
            oi[j] += lip * r[p * n + j];
        }
      }
    }
  }
#endif
}

//===----------------------------------------------------------------------===//
// Scans: one time step of a recurrence whose state lives in `state`
//===----------------------------------------------------------------------===//

/// h = coeff ⊙ h + x, out = h (fp.scan; the state starts at zero).
template <typename Team, typename Real>
FP_HOST_DEVICE inline void scanStep(Team &team, Real *state, In<Real> coeff,
                                    In<Real> x, int64_t n, Real *out) {
  FP_TEAM_FOR(i, n) {
    const Real h = coeff[i] * state[i] + x[i];
    state[i] = h;
    out[i] = h;
  }
}

/// One step of fp.selective_scan for the token: S[n, c] = exp(Δ_c A[c, n])
/// S[n, c] + Δ_c u_c B_n, out_c = Σ_n S[n, c] C_n + D_c u_c. `state` holds
/// 2·N·channels elements: S, and Aᵀ, which the first step of a sample
/// (`first`) copies from A, both laid out [N, channels] so that threads
/// (and SIMD lanes) run along channels.
template <typename Team, typename Real>
FP_HOST_DEVICE inline void
selectiveScanStep(Team &team, bool first, Real *state, In<Real> u,
                  In<Real> delta, In<Real> a, In<Real> bm, In<Real> cm,
                  In<Real> skip, int64_t channels, int64_t stateSize,
                  Real *out) {
  using fp::host::exp;
  Real *at = state + stateSize * channels;
  if (first) {
    FP_TEAM_FOR(e, stateSize * channels) {
      int64_t n = e / channels, c = e % channels;
      at[e] = a[c * stateSize + n];
    }
    team.sync();
  }
  FP_TEAM_FOR(c, channels) out[c] = Real(0);
  for (int64_t n = 0; n < stateSize; ++n) {
    const Real bn = bm[n], cn = cm[n];
    Real *sn = state + n * channels;
    In<Real> an = at + n * channels;
    FP_TEAM_FOR(c, channels) {
      const Real du = delta[c] * u[c];
      sn[c] = exp(delta[c] * an[c]) * sn[c] + du * bn;
      out[c] += sn[c] * cn;
    }
  }
  if (skip) {
    FP_TEAM_FOR(c, channels) out[c] = out[c] + skip[c] * u[c];
  }
}

#undef FP_TEAM_FOR
#undef FP_TEAM_ACCUMULATE
#undef FP_TEAM_SIMD

} // namespace fp::fused

#endif // FP_RUNTIME_KERNELS_FUSED_H
