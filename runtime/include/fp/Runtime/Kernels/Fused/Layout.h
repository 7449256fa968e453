//===- Fused/Layout.h - Layout blocks of fused kernels ----------*- C++ -*-===//
//
// slice, insert, broadcast and triu on a token's rows.
//
// Include Fused.h rather than this file: Fused.h #undefs the element-loop
// macros of Fused/Team.h after its last part, which a part included alone
// leaves defined.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_FUSED_LAYOUT_H
#define FP_RUNTIME_KERNELS_FUSED_LAYOUT_H

#include "fp/Runtime/Kernels/Fused/Team.h"

namespace fp::fused {

/// out[r, j] = in[r, start + j] for `rows` rows of `width`.
template <typename Team, typename X, typename Out>
FP_HOST_DEVICE inline void slice(Team &team, const X *in, int64_t rows,
                                 int64_t inWidth, int64_t start, int64_t width,
                                 Out *out) {
  using C = fp::Compute<Out>;
  FP_TEAM_FOR(i, rows * width) {
    int64_t r = i / width, j = i % width;
    out[i] = Out(C(in[r * inWidth + start + j]));
  }
}

/// out[r, start + j] = in[r, j] for `rows` rows of `width`.
template <typename Team, typename X, typename Out>
FP_HOST_DEVICE inline void insert(Team &team, const X *in, int64_t rows,
                                  int64_t width, int64_t start,
                                  int64_t outWidth, Out *out) {
  using C = fp::Compute<Out>;
  FP_TEAM_FOR(i, rows * width) {
    int64_t r = i / width, j = i % width;
    out[r * outWidth + start + j] = Out(C(in[i]));
  }
}

/// Replicates `in` to the token shape `outExtents` (rank `outRank`): input
/// dimension d is output dimension dims[d]; the others are broadcast.
template <typename Team, typename X, typename Out>
FP_HOST_DEVICE inline void broadcast(Team &team, const X *in, int outRank,
                                     const int64_t *outExtents, const int *dims,
                                     int inRank, Out *out) {
  using C = fp::Compute<Out>;
  int64_t n = 1;
  for (int d = 0; d < outRank; ++d)
    n *= outExtents[d];
  if (inRank == 0) {
    const Out value = Out(C(in[0]));
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
    FP_TEAM_FOR(i, n) out[i] = Out(C(in[i % stride]));
    return;
  }
  FP_TEAM_FOR_ROLLED(i, n) {
    int64_t rest = i, offset = 0;
    for (int d = outRank - 1; d >= 0; --d) {
      offset += (rest % outExtents[d]) * inStride[d];
      rest /= outExtents[d];
    }
    out[i] = Out(C(in[offset]));
  }
}

/// Unpacks the m(m+1)/2 entries of each of `rows` rows into an upper
/// triangular m×m matrix, row-major over the triangle.
template <typename Team, typename X, typename Out>
FP_HOST_DEVICE inline void triu(Team &team, const X *in, int64_t rows,
                                int64_t m, Out *out) {
  using C = fp::Compute<Out>;
  const int64_t packed = m * (m + 1) / 2;
  FP_TEAM_FOR(e, rows * m * m) {
    int64_t r = e / (m * m), i = (e / m) % m, j = e % m;
    out[e] = Out(j >= i ? C(in[r * packed + i * m - i * (i - 1) / 2 + (j - i)])
                        : C(0));
  }
}

} // namespace fp::fused

#endif // FP_RUNTIME_KERNELS_FUSED_LAYOUT_H
