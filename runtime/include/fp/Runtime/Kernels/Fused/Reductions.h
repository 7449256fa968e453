//===- Fused/Reductions.h - Reductions of fused kernels ---------*- C++ -*-===//
//
// Reductions and normalisations over the last dimension: sumRows, rowSum,
// reduce, l2norm, layerNorm and rmsNorm.
//
// Include Fused.h rather than this file: Fused.h #undefs the element-loop
// macros of Fused/Team.h after its last part, which a part included alone
// leaves defined.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_FUSED_REDUCTIONS_H
#define FP_RUNTIME_KERNELS_FUSED_REDUCTIONS_H

#include "fp/Runtime/Kernels/Fused/Team.h"

namespace fp::fused {

namespace detail {

/// One row of the row-wise operations below, by `team` (the whole team or
/// one of its groups; forEachRow).

template <typename Team, typename X, typename Out>
FP_HOST_DEVICE inline void sumRow(Team &team, const X *x, int64_t width,
                                  Out *out) {
  Wide<Out> sum = 0;
  FP_TEAM_ACCUMULATE(j, width) sum += Wide<Out>(x[j]);
  sum = team.sum(sum);
  if (team.rank() == 0)
    *out = Out(sum);
}

template <typename Team, typename X, typename Out>
FP_HOST_DEVICE inline void l2normRow(Team &team, const X *x, int64_t width,
                                     fp::Compute<Out> eps, Out *out) {
  using C = fp::Compute<Out>;
  Wide<Out> sum = 0;
  FP_TEAM_ACCUMULATE(j, width) sum += Wide<Out>(x[j]) * Wide<Out>(x[j]);
  sum = team.sum(sum);
  C norm = C(std::sqrt(sum));
  norm = norm < eps ? eps : norm;
  FP_TEAM_FOR(j, width) out[j] = Out(C(x[j]) / norm);
}

template <typename Team, typename X, typename Wt, typename Bs, typename Out>
FP_HOST_DEVICE inline void
layerNormRow(Team &team, const X *x, const Wt *weight, const Bs *bias,
             int64_t width, fp::Compute<Out> eps, Out *out) {
  using C = fp::Compute<Out>;
  C mean = 0;
  FP_TEAM_ACCUMULATE(j, width) mean += C(x[j]);
  mean = team.sum(mean) / C(width);
  C var = 0;
  FP_TEAM_ACCUMULATE(j, width) var += (C(x[j]) - mean) * (C(x[j]) - mean);
  var = team.sum(var) / C(width);
  const C inv = C(1) / std::sqrt(var + eps);
  FP_TEAM_FOR(j, width)
  out[j] = Out((C(x[j]) - mean) * inv * C(weight[j]) + C(bias[j]));
}

template <typename Team, typename X, typename Wt, typename Out>
FP_HOST_DEVICE inline void rmsNormRow(Team &team, const X *x, const Wt *weight,
                                      int64_t width, fp::Compute<Out> eps,
                                      Out *out) {
  using C = fp::Compute<Out>;
  Wide<Out> sum = 0;
  FP_TEAM_ACCUMULATE(j, width) sum += Wide<Out>(x[j]) * Wide<Out>(x[j]);
  sum = team.sum(sum);
  const C inv = C(1 / std::sqrt(sum / width + eps));
  FP_TEAM_FOR(j, width) out[j] = Out(C(x[j]) * inv * C(weight[j]));
}

} // namespace detail

/// out[r] = Σ_j in[r, j].
template <typename Team, typename X, typename Out>
FP_HOST_DEVICE inline void sumRows(Team &team, const X *in, int64_t rows,
                                   int64_t width, Out *out) {
  forEachRow(team, rows, width, [&](auto &rowTeam, int64_t r) {
    detail::sumRow(rowTeam, in + r * width, width, out + r);
  });
}

/// Σ_j x[j] over one row of `width`, by the whole team, returned to every
/// member (a scalar each thread then holds for itself): sumRows's row sum
/// of a row the whole team computes, in its order and type, and rounded to
/// Out as sumRows stores it. A chain that computes the row accumulates its
/// share the same way (Wide<Out>, element by element) and calls team.sum.
template <typename Out, typename Team, typename X>
FP_HOST_DEVICE inline Out rowSum(Team &team, const X *x, int64_t width) {
  Wide<Out> sum = 0;
  FP_TEAM_ACCUMULATE(j, width) sum += Wide<Out>(x[j]);
  return Out(team.sum(sum));
}

/// Reduces the token's `in` of shape `extents` (rank `rank`) over the
/// dimensions flagged in `reduced`: each output element, by one thread of
/// the team, in Wide<Out> over its inputs in index order, as Host.h's
/// reduce.
template <typename Team, typename X, typename Out>
FP_HOST_DEVICE inline void reduce(Team &team, const X *in, int rank,
                                  const int64_t *extents, const bool *reduced,
                                  bool isSum, Out *out) {
  using W = Wide<Out>;
  int64_t stride[fp::host::kMaxRank] = {};
  int64_t outCount = 1, reducedCount = 1, size = 1;
  for (int d = rank - 1; d >= 0; --d) {
    stride[d] = size;
    size *= extents[d];
    (reduced[d] ? reducedCount : outCount) *= extents[d];
  }
  // The offset of `index` counted row-major over the dimensions whose
  // `reduced` flag is `which`.
  auto offsetOf = [&](int64_t index, bool which) {
    int64_t offset = 0;
    for (int d = rank - 1; d >= 0; --d)
      if (reduced[d] == which) {
        offset += index % extents[d] * stride[d];
        index /= extents[d];
      }
    return offset;
  };
  FP_TEAM_ACCUMULATE_ROLLED(o, outCount) {
    const int64_t base = offsetOf(o, false);
    W acc = isSum ? W(0) : W(-INFINITY);
    for (int64_t k = 0; k < reducedCount; ++k) {
      const W value = W(in[base + offsetOf(k, true)]);
      acc = isSum ? acc + value : (acc < value ? value : acc);
    }
    out[o] = Out(acc);
  }
}

/// in / max(‖in‖₂, eps) per row.
template <typename Team, typename X, typename Out>
FP_HOST_DEVICE inline void l2norm(Team &team, const X *in, int64_t rows,
                                  int64_t width, fp::Compute<Out> eps,
                                  Out *out) {
  forEachRow(team, rows, width, [&](auto &rowTeam, int64_t r) {
    detail::l2normRow(rowTeam, in + r * width, width, eps, out + r * width);
  });
}

/// (in − mean) / sqrt(var + eps) · weight + bias per row.
template <typename Team, typename X, typename Wt, typename Bs, typename Out>
FP_HOST_DEVICE inline void
layerNorm(Team &team, const X *in, const Wt *weight, const Bs *bias,
          int64_t rows, int64_t width, fp::Compute<Out> eps, Out *out) {
  forEachRow(team, rows, width, [&](auto &rowTeam, int64_t r) {
    detail::layerNormRow(rowTeam, in + r * width, weight, bias, width, eps,
                         out + r * width);
  });
}

/// in / sqrt(mean(in²) + eps) · weight per row.
template <typename Team, typename X, typename Wt, typename Out>
FP_HOST_DEVICE inline void rmsNorm(Team &team, const X *in, const Wt *weight,
                                   int64_t rows, int64_t width,
                                   fp::Compute<Out> eps, Out *out) {
  forEachRow(team, rows, width, [&](auto &rowTeam, int64_t r) {
    detail::rmsNormRow(rowTeam, in + r * width, weight, width, eps,
                       out + r * width);
  });
}

} // namespace fp::fused

#endif // FP_RUNTIME_KERNELS_FUSED_REDUCTIONS_H
