//===- Fused.h - Per-token building blocks of fused kernels -----*- C++ -*-===//
//
// The operations of an fp.kernel body, at the level of one token. fpc emits
// each fp.kernel as a function object whose call computes one token: it
// calls these functions on that token's rows, in the body's order, with
// intermediate values in a scratch buffer that never leaves the kernel. The
// launchers (forEachToken and forEachSample in Host.h and Device.cuh) run
// it over all tokens, sample by sample in time order when the body holds a
// scan, whose state lives between tokens in a per-sample state buffer (or,
// for a selective scan on CUDA, in the registers of the threads that own
// its channels: ScanRegisters), or with a sample's tokens in chunks that
// run in parallel ("Chunked execution" below).
//
// A token is computed by a team of threads: one on the host
// (SerialTeam), the threads of a block on CUDA. Every function splits its
// elements over the team, `for (i = rank; i < n; i += size)`; reductions
// combine per-thread partial results with team.sum / team.max, which every
// member calls and whose result every member gets; row-wise operations
// may give rows to the team's groups instead (forEachRow). The caller
// synchronises the team between operations. With the serial team every element
// and every reduction is computed in exactly the order of the unfused kernels
// of Host.h, so fusion does not change the host's results.
//
// Shapes are per token: `rows` × `width` is the token's part of a
// (B, T, rows..., width) tensor. Uniform operands (parameters, constants)
// are the same for every token.
//
// Operands are the kernel's inputs and outputs, in the call's element type
// `Real`, and intermediate values in the scratch buffer, which (like the scan
// state) holds Compute<Real>: every function takes each operand in its own
// type, computes in the arithmetic type of its output and rounds once when it
// stores. For float and double, every operand is of one type.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_FUSED_H
#define FP_RUNTIME_KERNELS_FUSED_H

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

/// body(i) for each of n elements, by the member that owns element i in
/// every loop of this file over n elements (`i = rank; i < n; i += size`):
/// a run of elementwise ops of one length, emitted as one such loop, needs
/// no barrier between its ops.
template <typename Team, typename Body>
FP_HOST_DEVICE inline void forEachElement(Team &team, int64_t n,
                                          const Body &body) {
  FP_TEAM_FOR(i, n) body(i);
}

/// forEachElement whose calls run in order of i on each member (no SIMD on
/// the host): for a body that also accumulates into a variable of the
/// member, as a chain ending in a row sum does (fp::fused::rowSum's order).
template <typename Team, typename Body>
FP_HOST_DEVICE inline void forEachElementInOrder(Team &team, int64_t n,
                                                 const Body &body) {
  FP_TEAM_ACCUMULATE(i, n) body(i);
}

/// out[i] = op(x[i]).
template <typename Team, typename Op, typename X, typename Out>
FP_HOST_DEVICE inline void unary(Team &team, Op op, int64_t n, const X *x,
                                 Out *out) {
  using C = fp::Compute<Out>;
  FP_TEAM_FOR(i, n) out[i] = Out(op(C(x[i])));
}

/// out[i] = op(x[i], y[i]).
template <typename Team, typename Op, typename X, typename Y, typename Out>
FP_HOST_DEVICE inline void binary(Team &team, Op op, int64_t n, const X *x,
                                  const Y *y, Out *out) {
  using C = fp::Compute<Out>;
  FP_TEAM_FOR(i, n) out[i] = Out(op(C(x[i]), C(y[i])));
}

template <typename Team, typename X, typename Out>
FP_HOST_DEVICE inline void copy(Team &team, int64_t n, const X *x, Out *out) {
  using C = fp::Compute<Out>;
  FP_TEAM_FOR(i, n) out[i] = Out(C(x[i]));
}

/// out[i] = value.
template <typename Team, typename Out>
FP_HOST_DEVICE inline void fill(Team &team, int64_t n, fp::Compute<Out> value,
                                Out *out) {
  const Out stored(value);
  FP_TEAM_FOR(i, n) out[i] = stored;
}

/// out = the token `offset` steps earlier in its sample of a per-token input
/// with `n` elements per token (an fp.shift read inside a kernel): `in` is
/// the input's start, `row` the token's row and `t` its time index in a
/// sample of `length` tokens; zeros where t − offset is outside the sample.
template <typename Team, typename X, typename Out>
FP_HOST_DEVICE inline void shifted(Team &team, const X *in, int64_t row,
                                   int64_t t, int64_t length, int64_t offset,
                                   int64_t n, Out *out) {
  if (t - offset >= 0 && t - offset < length)
    copy(team, n, in + (row - offset) * n, out);
  else
    fill(team, n, fp::Compute<Out>(0), out);
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Reductions and normalisations over the last dimension
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Small matrix products
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Scans: one time step of a recurrence whose state lives in `state`
//===----------------------------------------------------------------------===//

/// h = coeff ⊙ h + x, out = h (fp.scan; the state starts at zero).
template <typename Team, typename S, typename K, typename X, typename Out>
FP_HOST_DEVICE inline void scanStep(Team &team, S *state, const K *coeff,
                                    const X *x, int64_t n, Out *out) {
  FP_TEAM_FOR(i, n) {
    const S h = S(coeff[i]) * state[i] + S(x[i]);
    state[i] = h;
    out[i] = Out(h);
  }
}

/// A[c, n] of a selective scan's state matrix, given as A (channels × N)
/// or, with ATransposed, as Aᵀ (N × channels: fp-transpose-scan-a), which
/// threads running along channels read contiguously. Every selective-scan
/// function below takes its `a` in the layout its ATransposed says.
template <bool ATransposed, typename A>
FP_HOST_DEVICE inline const A &scanMatrixEntry(const A *a, int64_t c, int64_t n,
                                               int64_t channels,
                                               int64_t stateSize) {
  return ATransposed ? a[n * channels + c] : a[c * stateSize + n];
}

/// One step of fp.selective_scan for the token: S[n, c] = exp(Δ_c A[c, n])
/// S[n, c] + Δ_c u_c B_n, out_c = Σ_n S[n, c] C_n + D_c u_c (`skip` = D
/// may be nullptr). `state` holds 2·N·channels elements of the arithmetic
/// type: S, and Aᵀ, which the first step of a sample (`first`) copies from
/// A, both laid out [N, channels] so that threads (and SIMD lanes) run along
/// channels. Each output sums over n in order: on the device in a register
/// of its thread; on the host in the output row, with the loop over
/// channels innermost so that it vectorises (a bf16 output sums in a
/// register there too).
template <bool ATransposed = false, typename Team, typename S, typename U,
          typename D, typename A, typename Bm, typename Cm, typename Skip,
          typename Out>
FP_HOST_DEVICE inline void
selectiveScanStep(Team &team, bool first, S *state, const U *u, const D *delta,
                  const A *a, const Bm *bm, const Cm *cm, Skip skip,
                  int64_t channels, int64_t stateSize, Out *out) {
  using fp::host::exp;
  constexpr bool hasSkip = !std::is_null_pointer_v<Skip>;
  S *at = state + stateSize * channels;
  if (first) {
    FP_TEAM_FOR(e, stateSize * channels) {
      int64_t n = e / channels, c = e % channels;
      at[e] = S(scanMatrixEntry<ATransposed>(a, c, n, channels, stateSize));
    }
    team.sync();
  }
#ifndef __CUDA_ARCH__
  if constexpr (std::is_same_v<Out, S>) {
    FP_TEAM_FOR(c, channels) out[c] = S(0);
    for (int64_t n = 0; n < stateSize; ++n) {
      const S bn = S(bm[n]), cn = S(cm[n]);
      S *sn = state + n * channels;
      const S *an = at + n * channels;
      FP_TEAM_FOR(c, channels) {
        const S du = S(delta[c]) * S(u[c]);
        sn[c] = exp(S(delta[c]) * an[c]) * sn[c] + du * bn;
        out[c] += sn[c] * cn;
      }
    }
    if constexpr (hasSkip) {
      if (skip) {
        FP_TEAM_FOR(c, channels) out[c] = out[c] + S(skip[c]) * S(u[c]);
      }
    }
    return;
  }
#endif
  FP_TEAM_FOR_ROLLED(c, channels) {
    const S dc = S(delta[c]), uc = S(u[c]), du = dc * uc;
    S y = 0;
    for (int64_t n = 0; n < stateSize; ++n) {
      S &sn = state[n * channels + c];
      sn = exp(dc * at[n * channels + c]) * sn + du * S(bm[n]);
      y += sn * S(cm[n]);
    }
    if constexpr (hasSkip)
      out[c] = Out(skip ? y + S(skip[c]) * uc : y);
    else
      out[c] = Out(y);
  }
}

/// The selective-scan state that one thread of a team of `Threads` keeps in
/// registers across a sample's tokens on the device: S[n, c] of the
/// channels c = rank + k · Threads, k < kPerThread. Every index into it is
/// a compile-time constant once selectiveScanStep below is unrolled, so that
/// it stays in registers.
template <typename S, int64_t Channels, int64_t N, int Threads>
struct ScanRegisters {
  static constexpr int64_t kPerThread = (Channels + Threads - 1) / Threads;
  S s[kPerThread][N];
  /// Σ Δ_c over the tokens of a chunk (chunked execution, below).
  S sumDelta[kPerThread];
};

/// Values of scan state a thread may keep in registers while its scan's
/// decays e^(Δ A) are CUDA's expf (Common.h); above, they are the host's
/// polynomial on the device too. expf is 12 instructions where the
/// polynomial is one dependent chain of 40, and ptxas overlaps more of the
/// short ones: at config LM's 96 values (6 channels of 16 states) the
/// kernel of the step after the solve spilled 96 bytes a thread with expf
/// (16 with exp2f), none with the polynomial, under its 128-register bound.
inline constexpr int64_t kMaxExpfScanRegisters = 64;

/// e^x in a scan step whose state is `Values` registers per thread.
template <int64_t Values, typename S>
FP_HOST_DEVICE inline S registerScanExp(S x) {
  if constexpr (Values > kMaxExpfScanRegisters && std::is_same_v<S, float>)
    return fp::host::polynomialExp(x);
  else
    return fp::host::exp(x);
}

/// selectiveScanStep with the state in `registers` (team.size() must be
/// Threads): the first step of a sample (`first`) starts it at zero; A is
/// read from `a` at every step. Each output sums over n in order in a
/// register, with the same arithmetic as the device path above, so the two
/// give equal results.
template <bool ATransposed = false, typename Team, typename S, int64_t Channels,
          int64_t N, int Threads, typename U, typename D, typename A,
          typename Bm, typename Cm, typename Skip, typename Out>
FP_HOST_DEVICE inline void
selectiveScanStep(Team &team, bool first,
                  ScanRegisters<S, Channels, N, Threads> &registers, const U *u,
                  const D *delta, const A *a, const Bm *bm, const Cm *cm,
                  Skip skip, Out *out) {
  constexpr bool hasSkip = !std::is_null_pointer_v<Skip>;
  constexpr int64_t perThread =
      ScanRegisters<S, Channels, N, Threads>::kPerThread;
  const auto exp = [](S x) { return registerScanExp<perThread * N>(x); };
  FP_UNROLL
  for (int64_t k = 0; k < perThread; ++k) {
    const int64_t c = team.rank() + k * Threads;
    if (c >= Channels)
      continue;
    S *sc = registers.s[k];
    if (first) {
      FP_UNROLL
      for (int64_t n = 0; n < N; ++n)
        sc[n] = S(0);
    }
    const S dc = S(delta[c]), uc = S(u[c]), du = dc * uc;
    S y = 0;
    FP_UNROLL
    for (int64_t n = 0; n < N; ++n) {
      sc[n] = exp(dc * S(scanMatrixEntry<ATransposed>(a, c, n, Channels, N))) *
                  sc[n] +
              du * S(bm[n]);
      y += sc[n] * S(cm[n]);
    }
    if constexpr (hasSkip)
      out[c] = Out(skip ? y + S(skip[c]) * uc : y);
    else
      out[c] = Out(y);
  }
}

//===----------------------------------------------------------------------===//
// Staged inputs: a token's input rows copied to scratch ahead of the token
//===----------------------------------------------------------------------===//
//
// A kernel that runs a sample's tokens in time order reads each token's rows
// of its per-token inputs in several of its operations, and on CUDA each
// such operation waits for memory. A kernel with kStage > 0 copies them
// instead, all at once, into one of two buffers in its scratch
// (Kernel::stage into Kernel::stageBuffer(scratch, t), alternating with the
// token's parity), and its body reads them there. runTokens copies the
// rows of token t + 1 while token t is computed: on CUDA asynchronously
// (cp.async, sm_80 on), so that the copy's latency hides behind a token's
// work; on the host as plain copies, which keeps one code path for both.

/// Copies n elements of `from` to `to`, the team's share each: on CUDA
/// asynchronously where `to` is in shared memory and the elements are 4 or 8
/// bytes (or 2-byte pairs, both rows 4-byte aligned and n even); completed
/// by stageWait.
template <typename Team, typename Real>
FP_HOST_DEVICE inline void stageRow(Team &team, const Real *from, int64_t n,
                                    Real *to) {
#ifdef __CUDA_ARCH__
  if (__isShared(to)) {
    // 16 bytes a copy where both rows allow it.
    constexpr int64_t kPerCopy = 16 / int64_t(sizeof(Real));
    if (n % kPerCopy == 0 && reinterpret_cast<uintptr_t>(from) % 16 == 0 &&
        reinterpret_cast<uintptr_t>(to) % 16 == 0) {
      FP_TEAM_ACCUMULATE(i, n / kPerCopy)
      __pipeline_memcpy_async(to + kPerCopy * i, from + kPerCopy * i, 16);
      __pipeline_commit();
      return;
    }
    if constexpr (sizeof(Real) == 4 || sizeof(Real) == 8) {
      FP_TEAM_ACCUMULATE(i, n)
      __pipeline_memcpy_async(to + i, from + i, sizeof(Real));
      __pipeline_commit();
      return;
    } else if constexpr (sizeof(Real) == 2) {
      if (n % 2 == 0 && reinterpret_cast<uintptr_t>(from) % 4 == 0 &&
          reinterpret_cast<uintptr_t>(to) % 4 == 0) {
        FP_TEAM_ACCUMULATE(i, n / 2)
        __pipeline_memcpy_async(to + 2 * i, from + 2 * i, 4);
        __pipeline_commit();
        return;
      }
    }
  }
#endif
  FP_TEAM_FOR(i, n) to[i] = from[i];
}

/// Stages what shifted() reads for the token at `row`, time index t of a
/// sample of `length` tokens: row t − offset of `in` (rows of n elements),
/// or zeros where that is outside the sample. The zeros are plain stores,
/// seen by every member after the team's next synchronisation.
template <typename Team, typename Real>
FP_HOST_DEVICE inline void stageShifted(Team &team, const Real *in, int64_t row,
                                        int64_t t, int64_t length,
                                        int64_t offset, int64_t n, Real *to) {
  if (t - offset >= 0 && t - offset < length)
    stageRow(team, in + (row - offset) * n, n, to);
  else
    fill(team, n, fp::Compute<Real>(0), to);
}

/// Waits until the calling member's staged copies have landed; the team
/// synchronises after, so that every member sees all of them.
FP_HOST_DEVICE inline void stageWait() {
#ifdef __CUDA_ARCH__
  __pipeline_wait_prior(0);
#endif
}

/// Runs kernel(team, firstRow + t, t, scratch, state, registers) for the
/// tokens t in [begin, end) in order, the team synchronised after each.
/// With Kernel::kStage > 0, stages each token's input rows first: token
/// `begin`'s before the loop, token t + 1's while token t is computed.
template <typename Team, typename Kernel, typename C, typename Registers>
FP_HOST_DEVICE inline void
runTokens(Team &team, const Kernel &kernel, int64_t firstRow, int64_t begin,
          int64_t end, C *scratch, C *state, Registers &registers) {
  if constexpr (Kernel::kStage > 0) {
    if (begin < end)
      kernel.stage(team, firstRow + begin, begin,
                   Kernel::stageBuffer(scratch, begin));
    for (int64_t t = begin; t < end; ++t) {
      // Token t's rows have landed, and token t − 1, which read the other
      // buffer, is done with it.
      stageWait();
      team.sync();
      if (t + 1 < end)
        kernel.stage(team, firstRow + t + 1, t + 1,
                     Kernel::stageBuffer(scratch, t + 1));
      kernel(team, firstRow + t, t, scratch, state, registers);
    }
    team.sync();
  } else {
    for (int64_t t = begin; t < end; ++t) {
      kernel(team, firstRow + t, t, scratch, state, registers);
      team.sync(); // the next token reuses the scratch
    }
  }
}

//===----------------------------------------------------------------------===//
// Chunked execution: a sample's tokens split into chunks that run in parallel
//===----------------------------------------------------------------------===//
//
// A scan is linear in its state: over a chunk of tokens, h_end = P ⊙ h_start
// + h_end⁰, where h_end⁰ is the chunk's final state started from zero and P
// the product of its decays (Π_t coeff_t for fp.scan; exp(A[c, n] · Σ_t Δ_t,c)
// for a selective scan). The launchers run a kernel whose scans allow it
// (Kernel::kChunkable) in two passes: the first runs every chunk but the last
// from zero with the summary steps below, which compute only what the scans
// need and store each chunk's *carry* (h_end⁰ and what gives P); the second
// runs every chunk in full, its state first folded from the carries of the
// chunks before it, h = P_j ⊙ h + h_end⁰_j in chunk order. Results differ from
// the sequential scan by rounding only.
//
// A selective scan's state in memory is [S | Aᵀ | Σ Δ] (2·N·channels +
// channels), its carry [S | Σ Δ] (N·channels + channels); an fp.scan's state
// and carry are [h | P] (2·n).

/// The summary step of selectiveScanStep (state in memory): S and Σ Δ, no
/// output. The launcher zeroes the state before a chunk's first token
/// (`first`), which copies Aᵀ.
template <bool ATransposed = false, typename Team, typename S, typename U,
          typename D, typename A, typename Bm>
FP_HOST_DEVICE inline void
selectiveScanSummaryStep(Team &team, bool first, S *state, const U *u,
                         const D *delta, const A *a, const Bm *bm,
                         int64_t channels, int64_t stateSize) {
  using fp::host::exp;
  S *at = state + stateSize * channels;
  S *sumDelta = at + stateSize * channels;
  if (first) {
    FP_TEAM_FOR(e, stateSize * channels) {
      int64_t n = e / channels, c = e % channels;
      at[e] = S(scanMatrixEntry<ATransposed>(a, c, n, channels, stateSize));
    }
    team.sync();
  }
  FP_TEAM_FOR_ROLLED(c, channels) {
    const S dc = S(delta[c]), du = dc * S(u[c]);
    for (int64_t n = 0; n < stateSize; ++n) {
      S &sn = state[n * channels + c];
      sn = exp(dc * at[n * channels + c]) * sn + du * S(bm[n]);
    }
    sumDelta[c] += dc;
  }
}

/// The summary step of selectiveScanStep with the state in registers.
template <bool ATransposed = false, typename Team, typename S, int64_t Channels,
          int64_t N, int Threads, typename U, typename D, typename A,
          typename Bm>
FP_HOST_DEVICE inline void
selectiveScanSummaryStep(Team &team, bool first,
                         ScanRegisters<S, Channels, N, Threads> &registers,
                         const U *u, const D *delta, const A *a, const Bm *bm) {
  constexpr int64_t perThread =
      ScanRegisters<S, Channels, N, Threads>::kPerThread;
  const auto exp = [](S x) { return registerScanExp<perThread * N>(x); };
  FP_UNROLL
  for (int64_t k = 0; k < perThread; ++k) {
    const int64_t c = team.rank() + k * Threads;
    if (c >= Channels)
      continue;
    S *sc = registers.s[k];
    if (first) {
      FP_UNROLL
      for (int64_t n = 0; n < N; ++n)
        sc[n] = S(0);
      registers.sumDelta[k] = S(0);
    }
    const S dc = S(delta[c]), du = dc * S(u[c]);
    FP_UNROLL
    for (int64_t n = 0; n < N; ++n)
      sc[n] = exp(dc * S(scanMatrixEntry<ATransposed>(a, c, n, Channels, N))) *
                  sc[n] +
              du * S(bm[n]);
    registers.sumDelta[k] += dc;
  }
}

/// Stores a selective scan's carry [S | Σ Δ] from its state in memory.
template <typename Team, typename S>
FP_HOST_DEVICE inline void saveSelectiveScanCarry(Team &team, const S *state,
                                                  int64_t channels,
                                                  int64_t stateSize, S *carry) {
  const S *sumDelta = state + 2 * stateSize * channels;
  FP_TEAM_FOR_ROLLED(c, channels) {
    for (int64_t n = 0; n < stateSize; ++n)
      carry[n * channels + c] = state[n * channels + c];
    carry[stateSize * channels + c] = sumDelta[c];
  }
}

/// Stores a selective scan's carry from its state in registers.
template <typename Team, typename S, int64_t Channels, int64_t N, int Threads>
FP_HOST_DEVICE inline void
saveSelectiveScanCarry(Team &team,
                       const ScanRegisters<S, Channels, N, Threads> &registers,
                       S *carry) {
  constexpr int64_t perThread =
      ScanRegisters<S, Channels, N, Threads>::kPerThread;
  FP_UNROLL
  for (int64_t k = 0; k < perThread; ++k) {
    const int64_t c = team.rank() + k * Threads;
    if (c >= Channels)
      continue;
    FP_UNROLL
    for (int64_t n = 0; n < N; ++n)
      carry[n * Channels + c] = registers.s[k][n];
    carry[N * Channels + c] = registers.sumDelta[k];
  }
}

/// Starts a selective scan (state in memory) at a chunk boundary: Aᵀ from
/// `a`, and S folded from the `count` carries at `carries` (one every
/// `stride` elements, in chunk order), S = exp(Σ Δ · A) ⊙ S + S⁰ per chunk.
/// The chunk's tokens then run with `first` false.
template <bool ATransposed = false, typename Team, typename S, typename A>
FP_HOST_DEVICE inline void
loadSelectiveScanCarry(Team &team, S *state, const A *a, int64_t channels,
                       int64_t stateSize, const S *carries, int64_t stride,
                       int64_t count) {
  using fp::host::exp;
  S *at = state + stateSize * channels;
  FP_TEAM_FOR_ROLLED(c, channels) {
    for (int64_t n = 0; n < stateSize; ++n) {
      const S an =
          S(scanMatrixEntry<ATransposed>(a, c, n, channels, stateSize));
      S h = 0;
      for (int64_t j = 0; j < count; ++j) {
        const S *carry = carries + j * stride;
        h = exp(carry[stateSize * channels + c] * an) * h +
            carry[n * channels + c];
      }
      state[n * channels + c] = h;
      at[n * channels + c] = an;
    }
  }
}

/// Starts a selective scan whose state is in registers at a chunk boundary:
/// the fold runs in `memory` (the scan's N · Channels state slots, which a
/// chunked launch allocates) and the registers are then loaded from it, so
/// that they are not live across the fold (which otherwise costs the
/// per-sample kernel about 40 registers per thread).
template <bool ATransposed = false, typename Team, typename S, int64_t Channels,
          int64_t N, int Threads, typename A>
FP_HOST_DEVICE inline void loadSelectiveScanCarry(
    Team &team, ScanRegisters<S, Channels, N, Threads> &registers, S *memory,
    const A *a, const S *carries, int64_t stride, int64_t count) {
  using fp::host::exp;
  FP_TEAM_ACCUMULATE_ROLLED(c, Channels) {
    for (int64_t n = 0; n < N; ++n) {
      const S an = S(scanMatrixEntry<ATransposed>(a, c, n, Channels, N));
      S h = 0;
      for (int64_t j = 0; j < count; ++j) {
        const S *carry = carries + j * stride;
        h = exp(carry[N * Channels + c] * an) * h + carry[n * Channels + c];
      }
      memory[n * Channels + c] = h;
    }
  }
  constexpr int64_t perThread =
      ScanRegisters<S, Channels, N, Threads>::kPerThread;
  FP_UNROLL
  for (int64_t k = 0; k < perThread; ++k) {
    const int64_t c = team.rank() + k * Threads; // as above: no sync needed
    if (c >= Channels)
      continue;
    FP_UNROLL
    for (int64_t n = 0; n < N; ++n)
      registers.s[k][n] = memory[n * Channels + c];
  }
}

/// The summary step of scanStep: h and P = Π coeff, no output.
template <typename Team, typename S, typename K, typename X>
FP_HOST_DEVICE inline void scanSummaryStep(Team &team, bool first, S *state,
                                           const K *coeff, const X *x,
                                           int64_t n) {
  S *product = state + n;
  FP_TEAM_FOR(i, n) {
    state[i] = S(coeff[i]) * state[i] + S(x[i]);
    product[i] = first ? S(coeff[i]) : product[i] * S(coeff[i]);
  }
}

/// Stores an fp.scan's carry [h | P].
template <typename Team, typename S>
FP_HOST_DEVICE inline void saveScanCarry(Team &team, const S *state, int64_t n,
                                         S *carry) {
  FP_TEAM_FOR(i, 2 * n) carry[i] = state[i];
}

/// Starts an fp.scan at a chunk boundary: h folded from `count` carries,
/// h = P ⊙ h + h⁰ per chunk.
template <typename Team, typename S>
FP_HOST_DEVICE inline void loadScanCarry(Team &team, S *state, int64_t n,
                                         const S *carries, int64_t stride,
                                         int64_t count) {
  FP_TEAM_FOR_ROLLED(i, n) {
    S h = 0;
    for (int64_t j = 0; j < count; ++j)
      h = carries[j * stride + n + i] * h + carries[j * stride + i];
    state[i] = h;
  }
}

//===----------------------------------------------------------------------===//
// The standalone selective scan's channel
//===----------------------------------------------------------------------===//

/// Mamba-1's selective scan of one channel `c` of sample `b` (the operands
/// and output as fp::host::selectiveScan's), its at most kMaxState states
/// and its row of A in arrays of that size, which CUDA keeps in registers
/// (the loops over them are unrolled; `state` ≤ kMaxState). The Δ, u, B and
/// C of the next kAhead tokens wait in kAhead slots that the tokens use in
/// turn (a group of kAhead tokens, unrolled, so that each slot is registers
/// too); once token t has used its slot, token t + kAhead's load into it is
/// issued, and has the arithmetic of kAhead − 1 tokens to arrive (with one
/// slot, token t copies its operands out of it first, so that token t + 1's
/// load runs during token t's arithmetic). With more slots a thread waits
/// out the memory's latency once, not every token, where one token's
/// arithmetic is shorter than that latency and few threads share an SM.
/// The arithmetic is fp::host::selectiveScan's, in its order, whatever
/// kAhead.
template <int kMaxState, int kAhead = 1, typename Real>
FP_HOST_DEVICE inline void
selectiveScanChannel(const Real *u, const Real *delta, const Real *a,
                     const Real *bm, const Real *cm, const Real *skip,
                     int64_t b, int64_t c, int64_t length, int64_t channels,
                     int64_t state, Real *out) {
  static_assert(kAhead >= 1, "a token's operands load at least one ahead");
  using C = Compute<Real>;
  using fp::host::exp;
  C st[kMaxState], at[kMaxState];
  Real dNext[kAhead], uNext[kAhead], bNext[kAhead][kMaxState],
      cNext[kAhead][kMaxState];
  FP_UNROLL
  for (int n = 0; n < kMaxState; ++n) {
    st[n] = C(0);
    at[n] = n < state ? C(a[c * state + n]) : C(0);
  }
  const int64_t first = b * length;
  // Slot j holds token t's operands for every t ≡ j (mod kAhead).
  auto load = [&](int slot, int64_t t) {
    if (t >= length)
      return;
    const int64_t bt = first + t;
    dNext[slot] = delta[bt * channels + c];
    uNext[slot] = u[bt * channels + c];
    FP_UNROLL
    for (int n = 0; n < kMaxState; ++n) {
      bNext[slot][n] = n < state ? bm[bt * state + n] : Real(0);
      cNext[slot][n] = n < state ? cm[bt * state + n] : Real(0);
    }
  };
  FP_UNROLL
  for (int j = 0; j < kAhead; ++j)
    load(j, j);
  const C skipC = skip ? C(skip[c]) : C(0);
  for (int64_t group = 0; group < length; group += kAhead) {
    FP_UNROLL
    for (int j = 0; j < kAhead; ++j) {
      const int64_t t = group + j;
      if (t >= length)
        break;
      const C dt = C(dNext[j]), ut = C(uNext[j]);
      const C du = dt * ut;
      C y = 0;
      if constexpr (kAhead == 1) {
        // One slot: its operands move to registers of their own, so that
        // token t + 1's load is issued before token t's arithmetic.
        C bn[kMaxState], cn[kMaxState];
        FP_UNROLL
        for (int n = 0; n < kMaxState; ++n) {
          bn[n] = C(bNext[0][n]);
          cn[n] = C(cNext[0][n]);
        }
        load(0, t + 1);
        FP_UNROLL
        for (int n = 0; n < kMaxState; ++n)
          if (n < state) {
            st[n] = exp(dt * at[n]) * st[n] + du * bn[n];
            y += st[n] * cn[n];
          }
      } else {
        FP_UNROLL
        for (int n = 0; n < kMaxState; ++n)
          if (n < state) {
            st[n] = exp(dt * at[n]) * st[n] + du * C(bNext[j][n]);
            y += st[n] * C(cNext[j][n]);
          }
        // The slot is free: token t + kAhead's operands, which the next
        // kAhead − 1 tokens' arithmetic covers.
        load(j, t + kAhead);
      }
      out[(first + t) * channels + c] = Real(skip ? y + skipC * ut : y);
    }
  }
}

/// The selective scan of one channel `c` of sample `b` split over kLanes
/// lanes (kLanes consecutive threads of a warp on CUDA), for more threads
/// where one thread per channel leaves the device idle. Lane `lane` keeps
/// the kStates states [lane · kStates, (lane + 1) · kStates) of the channel
/// (those below `state`) and their row of A; the lanes take the channel's
/// tokens in groups of kLanes. For a group, each lane loads the operands of
/// all its tokens at once (Δ and u are the same for every lane, B and C its
/// states' own), advances its states through them and leaves its part of
/// every token's y in p[j] (lane 0 adds the skip term D · u); the lanes'
/// parts are then summed across the lanes (laneTransposeSum), which leaves
/// token j's y with lane j, and lane j stores it. A lane that is not
/// `active` (past the last channel, there so that a warp's shuffles have
/// every lane) loads nothing and contributes zeros.
template <typename Real, int kMaxState, int kLanes> struct ScanLane {
  static_assert(kLanes >= 1 && (kLanes & (kLanes - 1)) == 0 &&
                    kMaxState % kLanes == 0,
                "a power-of-two count of lanes that divides the states");
  static constexpr int kStates = kMaxState / kLanes;
  using C = Compute<Real>;

  int lane;
  bool active;
  int64_t b, c, state, channels;
  C st[kStates], at[kStates];
  C skipC;

  FP_HOST_DEVICE ScanLane(const Real *a, const Real *skip, int64_t b, int64_t c,
                          int64_t channels, int64_t state, int lane,
                          bool active)
      : lane(lane), active(active), b(b), c(c), state(state),
        channels(channels), skipC(active && skip ? C(skip[c]) : C(0)) {
    FP_UNROLL
    for (int k = 0; k < kStates; ++k) {
      st[k] = C(0);
      at[k] = active && hasState(k) ? C(a[c * state + firstState() + k]) : C(0);
    }
  }

  FP_HOST_DEVICE int64_t firstState() const { return int64_t(lane) * kStates; }
  FP_HOST_DEVICE bool hasState(int k) const { return firstState() + k < state; }

  /// Tokens [t0, t0 + kLanes) (those below `length`): p[j] is this lane's
  /// part of token t0 + j's y, zero past the end.
  FP_HOST_DEVICE void group(const Real *u, const Real *delta, const Real *bm,
                            const Real *cm, const Real *skip, int64_t t0,
                            int64_t length, C (&p)[kLanes]) {
    using fp::host::exp;
    Real dIn[kLanes], uIn[kLanes], bIn[kLanes][kStates], cIn[kLanes][kStates];
    FP_UNROLL
    for (int j = 0; j < kLanes; ++j) {
      const int64_t t = t0 + j;
      const bool here = active && t < length;
      const int64_t bt = b * length + t;
      dIn[j] = here ? delta[bt * channels + c] : Real(0);
      uIn[j] = here ? u[bt * channels + c] : Real(0);
      FP_UNROLL
      for (int k = 0; k < kStates; ++k) {
        const bool load = here && hasState(k);
        bIn[j][k] = load ? bm[bt * state + firstState() + k] : Real(0);
        cIn[j][k] = load ? cm[bt * state + firstState() + k] : Real(0);
      }
    }
    FP_UNROLL
    for (int j = 0; j < kLanes; ++j) {
      const C dt = C(dIn[j]), ut = C(uIn[j]);
      const C du = dt * ut;
      C y = 0;
      FP_UNROLL
      for (int k = 0; k < kStates; ++k)
        if (hasState(k)) {
          st[k] = exp(dt * at[k]) * st[k] + du * C(bIn[j][k]);
          y += st[k] * C(cIn[j][k]);
        }
      p[j] = lane == 0 && skip ? y + skipC * ut : y;
    }
  }

  /// Stores token t0 + lane's y, summed over the lanes, where it exists.
  FP_HOST_DEVICE void store(C y, int64_t t0, int64_t length, Real *out) const {
    const int64_t t = t0 + lane;
    if (active && t < length)
      out[(b * length + t) * channels + c] = Real(y);
  }
};

/// One step of laneTransposeSum, at distance kHalf: of each pair
/// (v[j], v[kHalf + j]), j < kHalf, a lane keeps the element that bit kHalf
/// of its index selects and sends the other to lane ^ kHalf, which adds it
/// to its own kept element: v[j] = kept + the partner's sent.
template <int kHalf, typename C>
FP_HOST_DEVICE inline C keptHalf(const C *v, int lane, int j) {
  return (lane & kHalf) ? v[kHalf + j] : v[j];
}
template <int kHalf, typename C>
FP_HOST_DEVICE inline C sentHalf(const C *v, int lane, int j) {
  return (lane & kHalf) ? v[j] : v[kHalf + j];
}
// laneTransposeSum (Device.cuh) runs the steps at kLanes / 2, …, 2, 1 with
// shuffles; after them lane l's v[0] is Σ over the kLanes lanes of v[l], in
// an order fixed by the steps (kLanes − 1 shuffles per lane where kLanes
// separate sums take kLanes · log2(kLanes)). Tests run the same steps over
// arrays of lanes on the host.

#undef FP_TEAM_FOR
#undef FP_TEAM_ACCUMULATE
#undef FP_TEAM_FOR_ROLLED
#undef FP_TEAM_ACCUMULATE_ROLLED
#undef FP_TEAM_PASSES
#undef FP_TEAM_SIMD
#undef FP_UNROLL

} // namespace fp::fused

#endif // FP_RUNTIME_KERNELS_FUSED_H
