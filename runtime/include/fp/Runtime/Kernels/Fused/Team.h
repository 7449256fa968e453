//===- Fused/Team.h - Teams and element loops of fused kernels --*- C++ -*-===//
//
// The first part of Fused.h: the headers the parts share, the team of one host
// thread (SerialTeam) and what every team offers (Wide, forEachRow), the
// element-loop macros FP_TEAM_FOR and its kin, and input(), a kernel's read of
// its inputs.
//
// Fused.h #undefs the macros after its last part, so that they do not reach the
// code that includes it; include Fused.h rather than a part.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_FUSED_TEAM_H
#define FP_RUNTIME_KERNELS_FUSED_TEAM_H

#include "fp/Runtime/Kernels/Common.h"

#include <cstdint>
#include <type_traits>

#ifdef __CUDACC__
#include <cuda_pipeline.h>
#endif

namespace fp::fused {

/// The type a team's row sums and norms accumulate in: on the host Accum
/// (double for float and bf16); on the device the arithmetic type.
#ifdef __CUDA_ARCH__
template <typename Real> using Wide = fp::Compute<Real>;
#else
template <typename Real> using Wide = fp::Accum<Real>;
#endif

/// The team of one host thread.
///
/// Besides rank, size, sync, sum and max, a team splits into `groups()`
/// equal groups (the warps of a CUDA block), each a team of its own:
/// `group()` is the calling member's, `groupIndex()` its number. Work whose
/// parts are independent (the rows of a row-wise reduction) can run a part
/// per group, whose reductions then need no barrier of the whole team.
struct SerialTeam {
  static constexpr int kUnrollPasses = 1;
  static constexpr int rank() { return 0; }
  static constexpr int size() { return 1; }
  void sync() const {}
  template <typename Real> Real sum(Real partial) const { return partial; }
  template <typename Real> Real max(Real partial) const { return partial; }
  static constexpr int groups() { return 1; }
  static constexpr int groupIndex() { return 0; }
  SerialTeam group() const { return *this; }
};

/// A row whose elements a team's group covers in this many passes or fewer
/// is short: forEachRow gives it to one group rather than the whole team.
inline constexpr int64_t kShortRowPasses = 4;

/// Calls `row(rowTeam, r)` for each of `rows` rows of `width` elements,
/// where `rowTeam` is the team that computes row r: the whole team row by
/// row, or, where the rows are at least as many as the team's groups or
/// short, the calling member's group, each group taking every groups()-th
/// row. A team of one group (SerialTeam) runs the rows in order either way.
/// The caller synchronises the team afterwards, as after any operation.
template <typename Team, typename Row>
FP_HOST_DEVICE inline void forEachRow(Team &team, int64_t rows, int64_t width,
                                      const Row &row) {
  const int groups = team.groups();
  auto rowTeam = team.group();
  if (groups > 1 &&
      (rows >= groups || width <= kShortRowPasses * rowTeam.size())) {
    for (int64_t r = team.groupIndex(); r < rows; r += groups)
      row(rowTeam, r);
    return;
  }
  for (int64_t r = 0; r < rows; ++r)
    row(team, r);
}

/// A loop over the team's share of n independent elements (SIMD on the
/// host), and one whose iterations accumulate in order.
#ifdef __CUDA_ARCH__
#define FP_TEAM_SIMD
#else
#define FP_TEAM_SIMD _Pragma("omp simd")
#endif
/// Full unrolling of a loop with a constant trip count (CUDA; the host
/// compiler decides itself).
#ifdef __CUDA_ARCH__
#define FP_UNROLL _Pragma("unroll")
#else
#define FP_UNROLL
#endif
/// On CUDA the loop counts the member's passes, i = pass · size + rank,
/// and unrolls as many of them as the team's kUnrollPasses says
/// (fp::cuda::kUnrolledPasses); each member still visits its elements in
/// increasing order, so sums accumulate as in the rolled loop. A loop
/// whose body loops itself (a product's sum over k, a scan's states) stays
/// rolled (the _ROLLED forms): unrolled, a kernel with a few hundred small
/// matrix products (fp_rnn) took minutes to compile.
#ifdef __CUDA_ARCH__
#define FP_TEAM_PASSES(i, n)                                                   \
  for (int64_t i##Pass = 0; i##Pass < ((n) + team.size() - 1) / team.size();   \
       ++i##Pass)                                                              \
    if (const int64_t i = i##Pass * team.size() + team.rank(); i < (n))
#define FP_TEAM_FOR(i, n)                                                      \
  _Pragma("unroll (fp::fused::unrollPasses<decltype(team)>())")                \
      FP_TEAM_PASSES(i, n)
#define FP_TEAM_ACCUMULATE(i, n) FP_TEAM_FOR(i, n)
#define FP_TEAM_FOR_ROLLED(i, n) _Pragma("unroll 1") FP_TEAM_PASSES(i, n)
#define FP_TEAM_ACCUMULATE_ROLLED(i, n) FP_TEAM_FOR_ROLLED(i, n)
#else
#define FP_TEAM_FOR(i, n)                                                      \
  FP_TEAM_SIMD for (int64_t i = team.rank(); i < (n); i += team.size())
#define FP_TEAM_ACCUMULATE(i, n)                                               \
  for (int64_t i = team.rank(); i < (n); i += team.size())
#define FP_TEAM_FOR_ROLLED(i, n) FP_TEAM_FOR(i, n)
#define FP_TEAM_ACCUMULATE_ROLLED(i, n) FP_TEAM_ACCUMULATE(i, n)
#endif

/// The passes over its elements a team's element loops unroll.
template <typename Team> constexpr int unrollPasses() {
  return std::remove_reference_t<Team>::kUnrollPasses;
}

/// Element i of a kernel's input, which no launch writes while it runs
/// (fp-plan-buffers gives a kernel's results buffers of their own): on CUDA
/// a read-only load (ld.global.nc), which the compiler may issue ahead of
/// the stores before it, so that an unrolled element loop that also stores
/// to global memory (a result) still issues its reads of an input together.
template <typename Real>
FP_HOST_DEVICE inline Real input(const Real *x, int64_t i) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<std::remove_cv_t<Real>, bf16>)
    return bf16::fromBits(
        __ldg(reinterpret_cast<const unsigned short *>(x + i)));
  else
    return __ldg(x + i);
#else
  return x[i];
#endif
}

} // namespace fp::fused

#endif // FP_RUNTIME_KERNELS_FUSED_TEAM_H
