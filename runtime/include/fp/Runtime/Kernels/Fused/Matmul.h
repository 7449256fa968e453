//===- Fused/Matmul.h - Small matrix products of fused kernels --*- C++ -*-===//
//
// matmul, a token's small matrix products, with the staging of a transposed
// right operand in scratch (stagedRowStride, stagingSize).
//
// Include Fused.h rather than this file: Fused.h #undefs the element-loop
// macros of Fused/Team.h after its last part, which a part included alone
// leaves defined.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_FUSED_MATMUL_H
#define FP_RUNTIME_KERNELS_FUSED_MATMUL_H

#include "fp/Runtime/Kernels/Fused/Team.h"

namespace fp::fused {

/// The row stride of a transposed right operand staged by matmul: n
/// rounded up to an odd number, so that both the staging copy (threads
/// along p) and the product (threads along j) touch 32 distinct shared
/// memory banks per warp.
FP_HOST_DEVICE constexpr int64_t stagedRowStride(int64_t n) { return n | 1; }

/// The scratch elements matmul can use to stage a transposed right
/// operand of k × n per matrix: room for as many of the `batch` matrices as
/// fit in `limit` elements, or 0 if not even one does.
FP_HOST_DEVICE constexpr int64_t stagingSize(int64_t batch, int64_t n,
                                             int64_t k, int64_t limit) {
  const int64_t one = k * stagedRowStride(n);
  const int64_t fit = one > 0 ? limit / one : 0;
  return (fit < batch ? fit : batch) * one;
}

namespace detail {

/// out[b] = op(lhs[b]) · R_b for `batch` matrices, R_b's element (p, j) at
/// rhs[b · rhsBatch + p · rhsRow + j · rhsColumn]; see matmul.
template <typename Team, typename L, typename R, typename Out>
FP_HOST_DEVICE inline void
products(Team &team, const L *lhs, const R *rhs, int64_t batch, int64_t m,
         int64_t n, int64_t k, bool transposeLhs, int64_t rhsBatch,
         int64_t rhsRow, int64_t rhsColumn, Out *out) {
  using C = fp::Compute<Out>;
#ifndef __CUDA_ARCH__
  if constexpr (std::is_same_v<Out, C>) {
    // A member computes whole rows of the outputs.
    for (int64_t row = team.rank(); row < batch * m; row += team.size()) {
      const int64_t b = row / m, i = row % m;
      const L *l = lhs + b * m * k;
      const R *r = rhs + b * rhsBatch;
      Out *oi = out + row * n;
      for (int64_t j = 0; j < n; ++j)
        oi[j] = C(0);
      for (int64_t p = 0; p < k; ++p) {
        const C lip = C(transposeLhs ? l[p * m + i] : l[i * k + p]);
        const R *rp = r + p * rhsRow;
        if (rhsColumn == 1) {
#pragma omp simd
          for (int64_t j = 0; j < n; ++j)
            oi[j] += lip * C(rp[j]);
        } else {
#pragma omp simd
          for (int64_t j = 0; j < n; ++j)
            oi[j] += lip * C(rp[j * rhsColumn]);
        }
      }
    }
    return;
  }
#endif
  FP_TEAM_FOR_ROLLED(e, batch * m * n) {
    int64_t b = e / (m * n), i = (e / n) % m, j = e % n;
    const L *l = lhs + b * m * k;
    const R *r = rhs + b * rhsBatch + j * rhsColumn;
    C sum = 0;
    for (int64_t p = 0; p < k; ++p)
      sum += C(transposeLhs ? l[p * m + i] : l[i * k + p]) * C(r[p * rhsRow]);
    out[e] = Out(sum);
  }
}

} // namespace detail

/// out[b] = op(lhs[b]) · op(rhs[b]) for the token's `batch` matrix pairs,
/// op(L) m×k and op(R) k×n; every output sums over p in order in the
/// arithmetic type, as Host.h's matmul does. The device team splits the
/// outputs, consecutive threads taking consecutive columns j; the host runs
/// Host.h's loops (i, p, j), a member a row of an output at a time, whose
/// innermost loop over the row vectorises, or, for a bf16 output, sums each
/// output in a register as Host.h's bf16 matmul does.
///
/// A transposed rhs is read at rhs[j · k + p]: on the device one shared
/// memory bank for a whole warp when k is a multiple of 32, on the host a
/// strided inner loop. With `staging` (scratch of `stagingElements`, from
/// stagingSize) the team first copies it, as many matrices at a time as
/// fit, to k × stagedRowStride(n) there, and reads that instead.
template <typename Team, typename L, typename R, typename Out>
FP_HOST_DEVICE inline void
matmul(Team &team, const L *lhs, const R *rhs, int64_t batch, int64_t m,
       int64_t n, int64_t k, bool transposeLhs, bool transposeRhs, Out *out,
       fp::Compute<Out> *staging = nullptr, int64_t stagingElements = 0) {
  using C = fp::Compute<Out>;
  if (!transposeRhs) {
    detail::products(team, lhs, rhs, batch, m, n, k, transposeLhs, k * n, n, 1,
                     out);
    return;
  }
  const int64_t ld = stagedRowStride(n);
  const int64_t perStage = staging ? stagingElements / (k * ld) : 0;
  if (perStage == 0) {
    detail::products(team, lhs, rhs, batch, m, n, k, transposeLhs, k * n, 1, k,
                     out);
    return;
  }
  for (int64_t first = 0; first < batch; first += perStage) {
    const int64_t count = batch - first < perStage ? batch - first : perStage;
    const R *r = rhs + first * k * n;
    // Threads along p: rhs is read in order, staging written at stride ld.
    FP_TEAM_FOR(e, count * n * k) {
      int64_t b = e / (n * k), j = (e / k) % n, p = e % k;
      staging[(b * k + p) * ld + j] = C(r[e]);
    }
    team.sync();
    detail::products(team, lhs + first * m * k, staging, count, m, n, k,
                     transposeLhs, k * ld, ld, 1, out + first * m * n);
    if (first + perStage < batch)
      team.sync(); // the next stage overwrites the staging
  }
}

} // namespace fp::fused

#endif // FP_RUNTIME_KERNELS_FUSED_MATMUL_H
