//===- Host.h - Host kernels of compiled model libraries -------*- C++ -*-===//
//
// The fixed helper code that fpc's host C++ emitter calls: one function per
// fp op that is not a plain elementwise expression, the fixed-point solver of
// docs/spec.md §3, and the workspace layout. Generated files include this
// header; nothing here is generated.
//
// Every kernel works on dense row-major buffers of one element type `Real`
// (float, double or bf16) and computes in Compute<Real> (BFloat16.h): it
// loads into C = Compute<Real>, keeps intermediate values and recurrence
// states in C, and rounds once when it stores a result. For float and double
// C is Real. Shapes are passed as extents; a "row" is the trailing feature
// dimension and `rows` the product of everything before it. Work is spread
// over threads with OpenMP when the library is compiled with -fopenmp; GEMMs
// go to CBLAS (OpenBLAS on Debian), bf16 ones widened to float.
//
// The header depends only on the C++17 standard library, <cblas.h> and the
// model ABI header, never on LibTorch or LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_HOST_H
#define FP_RUNTIME_KERNELS_HOST_H

#include "fp/Runtime/Kernels/Common.h"
#include "fp/Runtime/Kernels/Fused.h"
#ifdef FP_HOST_TEAM_SIZE
#include "fp/Runtime/Kernels/ThreadTeam.h"
#ifndef FP_HOST_TEAM_GROUP
#define FP_HOST_TEAM_GROUP FP_HOST_TEAM_SIZE
#endif
#endif

#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace fp::host {

/// The execution context of a forward. Host kernels need none; the CUDA
/// kernels' Scope makes the call's stream current.
class Scope {
public:
  explicit Scope(void *stream) { (void)stream; }
};

/// Kernels are not inlined into the generated forward: a layer calls
/// hundreds of them, and each body is compiled once per scalar type.
#define FP_KERNEL __attribute__((noinline)) inline

/// Work below this many scalar operations stays on the calling thread.
inline constexpr int64_t kParallelGrain = 1 << 15;

/// The threads a parallel region runs on.
inline int64_t maxThreads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

//===----------------------------------------------------------------------===//
// Loops
//===----------------------------------------------------------------------===//

/// Calls body(i) for 0 ≤ i < n, in parallel when n · cost is large.
template <typename Body>
inline void parallelFor(int64_t n, int64_t cost, const Body &body) {
#pragma omp parallel for schedule(static) if (n * cost >= kParallelGrain &&    \
                                              n > 1)
  for (int64_t i = 0; i < n; ++i)
    body(i);
}

/// Elementwise loop: body(i) for every element index. The calls must be
/// independent of each other (they run in any order, and in SIMD lanes).
template <typename Body> inline void forEach(int64_t n, const Body &body) {
  constexpr int64_t kChunk = 4096;
  int64_t chunks = (n + kChunk - 1) / kChunk;
  parallelFor(chunks, kChunk, [&](int64_t c) {
    int64_t end = std::min(n, (c + 1) * kChunk);
#pragma omp simd
    for (int64_t i = c * kChunk; i < end; ++i)
      body(i);
  });
}

/// out[i] = op(x[i]) for i < n.
template <typename Op, typename Real>
FP_KERNEL void unary(Op op, int64_t n, In<Real> x, Real *out) {
  using C = Compute<Real>;
  forEach(n, [&](int64_t i) { out[i] = Real(op(C(x[i]))); });
}

/// out[i] = op(x[i], y[i]) for i < n.
template <typename Op, typename Real>
FP_KERNEL void binary(Op op, int64_t n, In<Real> x, In<Real> y, Real *out) {
  using C = Compute<Real>;
  forEach(n, [&](int64_t i) { out[i] = Real(op(C(x[i]), C(y[i]))); });
}

template <typename Real>
FP_KERNEL void fill(Real *out, int64_t n, Compute<Real> value) {
  const Real stored(value);
  forEach(n, [&](int64_t i) { out[i] = stored; });
}

/// out[i] = scalar[0]: a broadcast scalar that lives in a buffer.
template <typename Real>
FP_KERNEL void fillFrom(Real *out, int64_t n, In<Real> scalar) {
  fill(out, n, Compute<Real>(scalar[0]));
}

/// Copies constants of the generated code, given in the arithmetic type,
/// into a buffer (on the CUDA target, from host to device memory).
template <typename Real>
FP_KERNEL void upload(const Compute<Real> *values, int64_t n, Real *out) {
  if constexpr (std::is_same_v<Compute<Real>, Real>) {
    std::memcpy(out, values, sizeof(Real) * n);
  } else {
    for (int64_t i = 0; i < n; ++i)
      out[i] = Real(values[i]);
  }
}

template <typename Real>
FP_KERNEL void copy(In<Real> in, int64_t n, Real *out) {
  if (in != out)
    std::memcpy(out, in, sizeof(Real) * n);
}

//===----------------------------------------------------------------------===//
// Fused kernels (fp.kernel; see Fused.h)
//===----------------------------------------------------------------------===//

/// Runs work(team, i, buffer) for each item i in [0, n), where `buffer`
/// holds `size` elements of C that the team's members share (a CUDA
/// block's scratch): on OpenMP threads when `parallel`, each with a
/// SerialTeam and a buffer of its own. In a library compiled with
/// FP_HOST_TEAM_SIZE defined (the fused kernels' barrier check,
/// docs/testing.md) the items run in order on one ThreadTeam of that many
/// host threads in groups of FP_HOST_TEAM_GROUP, as a CUDA block runs its
/// rows. The team synchronises after each item, whose successor reuses the
/// buffer.
template <typename C, typename Work>
inline void forEachTeamItem(int64_t n, bool parallel, int64_t size,
                            const Work &work) {
#ifdef FP_HOST_TEAM_SIZE
  (void)parallel;
  std::vector<C> buffer(std::max<int64_t>(size, 1));
  fused::onThreadTeam(FP_HOST_TEAM_SIZE, FP_HOST_TEAM_GROUP,
                      [&](fused::ThreadTeam &team) {
                        for (int64_t i = 0; i < n; ++i) {
                          work(team, i, buffer.data());
                          team.sync();
                        }
                      });
#else
#pragma omp parallel if (parallel)
  {
    std::vector<C> buffer(std::max<int64_t>(size, 1));
    fused::SerialTeam team;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; ++i)
      work(team, i, buffer.data());
  }
#endif
}

/// Runs `kernel(team, row, t, scratch, nullptr, registers)` for every token
/// (row = b · length + t) of `batch` samples of `length` tokens, in any
/// order, in parallel when the tokens' cost is large, with `scratch`
/// elements of Compute<Real> per team. (`registers` is the kernel's
/// Registers, which only CUDA fills.)
template <typename Real, typename Kernel>
FP_KERNEL void forEachToken(int64_t batch, int64_t length, int64_t scratch,
                            int64_t cost, const Kernel &kernel) {
  using C = Compute<Real>;
  const int64_t rows = batch * length;
  forEachTeamItem<C>(rows, rows * cost >= kParallelGrain && rows > 1, scratch,
                     [&](auto &team, int64_t r, C *buffer) {
                       typename Kernel::Registers registers;
                       kernel(team, r, r % length, buffer,
                              static_cast<C *>(nullptr), registers);
                     });
}

/// Runs a kernel whose body holds scans: `kernel(team, row, t, scratch,
/// state, registers)` for every sample's tokens in time order t, with
/// `state` elements of scan state per sample, zero at t = 0 (all of it: on
/// the host no scan keeps its state in `registers`). Scratch and state are
/// Compute<Real>. When there are fewer samples than threads and the kernel
/// is Kernel::kChunkable, each sample's tokens run in chunks on threads of
/// their own (timeChunks; Fused.h, "Chunked execution"). The steps of each
/// sample or chunk are those of Device.cuh's sampleKernel and
/// chunkCarryKernel.
template <typename Real, typename Kernel>
FP_KERNEL void forEachSample(int64_t batch, int64_t length, int64_t scratch,
                             int64_t state, int64_t cost,
                             const Kernel &kernel) {
  using C = Compute<Real>;
  const bool parallel = batch * length * cost >= kParallelGrain;
  int64_t chunks = 1;
  if constexpr (Kernel::kChunkable)
    chunks = timeChunks(batch, length, parallel ? maxThreads() : 1);
  // The sample's (or chunk's) state after its scratch, zeroed.
  auto zeroState = [&](auto &team, C *buffer) {
    C *own = buffer + scratch;
    fused::fill(team, state, C(0), own);
    team.sync();
    return own;
  };
  if (chunks == 1) {
    forEachTeamItem<C>(batch, parallel && batch > 1, scratch + state,
                       [&](auto &team, int64_t b, C *buffer) {
                         C *own = zeroState(team, buffer);
                         typename Kernel::Registers registers;
                         fused::runTokens(team, kernel, b * length, 0, length,
                                          buffer, own, registers);
                       });
    return;
  }
  if constexpr (Kernel::kChunkable) {
    const int64_t span = (length + chunks - 1) / chunks;
    chunks = (length + span - 1) / span;
    // Pass 1: the carry of every chunk but each sample's last.
    std::vector<C> carries(size_t(batch * chunks * Kernel::kCarry));
    forEachTeamItem<C>(
        batch * (chunks - 1), parallel, scratch + state,
        [&](auto &team, int64_t i, C *buffer) {
          const int64_t b = i / (chunks - 1), k = i % (chunks - 1);
          C *own = zeroState(team, buffer);
          typename Kernel::Registers registers;
          for (int64_t t = k * span; t < (k + 1) * span; ++t)
            kernel.summarize(team, b * length + t, t, t == k * span, buffer,
                             own, registers); // ends with a team sync
          kernel.saveCarry(team, own, registers,
                           carries.data() + (b * chunks + k) * Kernel::kCarry);
        });
    // Pass 2: every chunk, its scans started from the carries before it.
    forEachTeamItem<C>(batch * chunks, parallel, scratch + state,
                       [&](auto &team, int64_t i, C *buffer) {
                         const int64_t b = i / chunks, k = i % chunks;
                         C *own = zeroState(team, buffer);
                         typename Kernel::Registers registers;
                         if (k > 0) {
                           kernel.loadCarry(
                               team, own, registers,
                               carries.data() + b * chunks * Kernel::kCarry, k);
                           team.sync();
                         }
                         fused::runTokens(team, kernel, b * length, k * span,
                                          std::min(length, (k + 1) * span),
                                          buffer, own, registers);
                       });
  }
}

//===----------------------------------------------------------------------===//
// Linear maps
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Layout: slices, concatenation, broadcasts, reductions
//===----------------------------------------------------------------------===//

/// out[r, j] = in[r, start + j] for j < width; `in` has `inWidth` columns.
template <typename Real>
FP_KERNEL void sliceColumns(In<Real> in, int64_t rows, int64_t inWidth,
                            int64_t start, int64_t width, Real *out) {
  parallelFor(rows, width, [&](int64_t r) {
    std::memcpy(out + r * width, in + r * inWidth + start,
                sizeof(Real) * width);
  });
}

/// Writes `in` (rows × width) into the columns [start, start + width) of
/// `out`, which has `outWidth` columns.
template <typename Real>
FP_KERNEL void insertColumns(In<Real> in, int64_t rows, int64_t width,
                             int64_t start, int64_t outWidth, Real *out) {
  parallelFor(rows, width, [&](int64_t r) {
    std::memcpy(out + r * outWidth + start, in + r * width,
                sizeof(Real) * width);
  });
}

/// Replicates `in` to `outShape`: input dimension i is output dimension
/// dims[i]; every other output dimension is broadcast.
template <typename Real>
FP_KERNEL void broadcast(In<Real> in, const Shape &outShape, const int *dims,
                         int inRank, Real *out) {
  int64_t inStride[kMaxRank] = {};
  int64_t stride = 1;
  for (int i = inRank - 1; i >= 0; --i) {
    inStride[dims[i]] = stride;
    stride *= outShape.extent[dims[i]];
  }
  int64_t n = outShape.numElements();
  bool leading = true, trailing = true;
  for (int i = 0; i < inRank; ++i) {
    leading &= dims[i] == i;
    trailing &= dims[i] == outShape.rank - inRank + i;
  }
  if (leading) {
    // Every input element repeated over the trailing output dimensions.
    int64_t repeat = n / std::max<int64_t>(stride, 1);
    parallelFor(stride, repeat, [&](int64_t e) {
      std::fill(out + e * repeat, out + (e + 1) * repeat, in[e]);
    });
    return;
  }
  if (trailing) {
    // The whole input repeated over the leading output dimensions.
    parallelFor(n / std::max<int64_t>(stride, 1), stride, [&](int64_t r) {
      std::memcpy(out + r * stride, in, sizeof(Real) * stride);
    });
    return;
  }
  forEach(n, [&](int64_t index) {
    int64_t rest = index, offset = 0;
    for (int d = outShape.rank - 1; d >= 0; --d) {
      offset += (rest % outShape.extent[d]) * inStride[d];
      rest /= outShape.extent[d];
    }
    out[index] = in[offset];
  });
}

/// Reduces `in` of `inShape` over the dimensions flagged in `reduced`.
template <typename Real>
FP_KERNEL void reduce(In<Real> in, const Shape &inShape, const bool *reduced,
                      Reduction kind, Real *out) {
  Shape outShape;
  int64_t outStride[kMaxRank] = {};
  for (int d = 0; d < inShape.rank; ++d)
    if (!reduced[d])
      outShape.extent[outShape.rank++] = inShape.extent[d];
  int64_t stride = 1;
  for (int d = inShape.rank - 1; d >= 0; --d) {
    if (reduced[d])
      continue;
    outStride[d] = stride;
    stride *= inShape.extent[d];
  }
  // Sequential over the input in row-major order, so every output element
  // accumulates its terms in index order.
  int64_t outN = outShape.numElements();
  std::vector<Accum<Real>> acc(
      outN, kind == Reduction::Sum
                ? Accum<Real>(0)
                : -std::numeric_limits<Accum<Real>>::infinity());
  int64_t n = inShape.numElements();
  for (int64_t index = 0; index < n; ++index) {
    int64_t rest = index, offset = 0;
    for (int d = inShape.rank - 1; d >= 0; --d) {
      offset += (rest % inShape.extent[d]) * outStride[d];
      rest /= inShape.extent[d];
    }
    if (kind == Reduction::Sum)
      acc[offset] += Accum<Real>(in[index]);
    else
      acc[offset] = std::max(acc[offset], Accum<Real>(in[index]));
  }
  for (int64_t i = 0; i < outN; ++i)
    out[i] = Real(acc[i]);
}

/// Sums each row of `in` (rows × width), in Accum<Real>: the common
/// per-token reduction.
template <typename Real>
FP_KERNEL void sumRows(In<Real> in, int64_t rows, int64_t width, Real *out) {
  parallelFor(rows, width, [&](int64_t r) {
    In<Real> row = in + r * width;
    Accum<Real> sum = 0;
    for (int64_t j = 0; j < width; ++j)
      sum += Accum<Real>(row[j]);
    out[r] = Real(sum);
  });
}

/// Unpacks the m(m+1)/2 trailing entries of each row into an upper
/// triangular m×m matrix, row-major over the triangle.
template <typename Real>
FP_KERNEL void triu(In<Real> in, int64_t rows, int64_t m, Real *out) {
  int64_t packed = m * (m + 1) / 2;
  parallelFor(rows, m * m, [&](int64_t r) {
    In<Real> src = in + r * packed;
    Real *dst = out + r * m * m;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j)
        dst[i * m + j] = j >= i ? *src++ : Real(0);
  });
}

//===----------------------------------------------------------------------===//
// Time-coupling ops on [B, T, F] buffers
//===----------------------------------------------------------------------===//

/// out[b, t] = in[b, t − offset] inside [0, T), zero elsewhere.
template <typename Real>
FP_KERNEL void shift(In<Real> in, int64_t batch, int64_t length,
                     int64_t features, int64_t offset, Real *out) {
  parallelFor(batch * length, features, [&](int64_t bt) {
    int64_t t = bt % length, source = t - offset;
    Real *dst = out + bt * features;
    if (source < 0 || source >= length)
      std::fill(dst, dst + features, Real(0));
    else
      std::memcpy(dst, in + (bt - offset) * features, sizeof(Real) * features);
  });
}

/// h_t = coeff_t ⊙ h_{t∓1} + input_t along time, from zero; the state h
/// is carried in Compute<Real>.
template <typename Real>
FP_KERNEL void scan(In<Real> coeff, In<Real> input, int64_t batch,
                    int64_t length, int64_t features, bool reverse, Real *out) {
  using C = Compute<Real>;
  parallelFor(batch, length * features, [&](int64_t b) {
    int64_t base = b * length * features;
    std::vector<C> h(features, C(0));
    for (int64_t s = 0; s < length; ++s) {
      int64_t t = reverse ? length - 1 - s : s;
      In<Real> c = coeff + base + t * features;
      In<Real> x = input + base + t * features;
      Real *dst = out + base + t * features;
      for (int64_t f = 0; f < features; ++f) {
        h[f] = s == 0 ? C(x[f]) : C(c[f]) * h[f] + C(x[f]);
        dst[f] = Real(h[f]);
      }
    }
  });
}

/// Mamba-1's selective scan (fp.selective_scan): state S [d, N] per sample,
/// S_t = exp(Δ_t A) ⊙ S_{t−1} + (Δ_t u_t) B_t, y_t = S_t C_t + D u_t.
template <typename Real>
FP_KERNEL void selectiveScan(In<Real> u, In<Real> delta, In<Real> a,
                             In<Real> bm, In<Real> cm, In<Real> skip,
                             int64_t batch, int64_t length, int64_t channels,
                             int64_t state, Real *out) {
  // A task is one sample and a block of channels; the loops over channels
  // are innermost so that they vectorise, with the state of the block laid
  // out [state, block].
  // The state and the token's Δ, Δ·u and outputs are Compute<Real>.
  using C = Compute<Real>;
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (channels + kBlock - 1) / kBlock;
  parallelFor(batch * blocks, length * state * kBlock, [&](int64_t task) {
    const int64_t b = task / blocks, c0 = (task % blocks) * kBlock;
    const int64_t width = std::min(kBlock, channels - c0);
    std::vector<C> scratch(2 * state * width, C(0));
    C *st = scratch.data(), *at = st + state * width;
    for (int64_t n = 0; n < state; ++n)
      for (int64_t j = 0; j < width; ++j)
        at[n * width + j] = C(a[(c0 + j) * state + n]);
    C dt[kBlock], ut[kBlock], du[kBlock], y[kBlock];
    for (int64_t t = 0; t < length; ++t) {
      const int64_t bt = b * length + t;
      for (int64_t j = 0; j < width; ++j) {
        dt[j] = C(delta[bt * channels + c0 + j]);
        ut[j] = C(u[bt * channels + c0 + j]);
        du[j] = dt[j] * ut[j];
        y[j] = 0;
      }
      for (int64_t n = 0; n < state; ++n) {
        const C bn = C(bm[bt * state + n]), cn = C(cm[bt * state + n]);
        C *sn = st + n * width;
        const C *an = at + n * width;
#pragma omp simd
        for (int64_t j = 0; j < width; ++j) {
          sn[j] = exp(dt[j] * an[j]) * sn[j] + du[j] * bn;
          y[j] += sn[j] * cn;
        }
      }
      Real *dst = out + bt * channels + c0;
      for (int64_t j = 0; j < width; ++j)
        dst[j] = Real(skip ? y[j] + C(skip[c0 + j]) * ut[j] : y[j]);
    }
  });
}

/// Depthwise causal convolution: out[b, t, c] = bias[c] +
/// Σ_k weight[c, k] · in[b, t − K + 1 + k, c], zero left padding, with the
/// rows of `in` (one per token) starting `inStride` elements apart: a
/// column range of a wider matrix (fp.slice read in place).
template <typename Real>
FP_KERNEL void causalConvStrided(In<Real> in, int64_t inStride, In<Real> weight,
                                 In<Real> bias, int64_t batch, int64_t length,
                                 int64_t channels, int64_t width, Real *out) {
  using C = Compute<Real>;
  parallelFor(batch * length, channels * width, [&](int64_t bt) {
    int64_t t = bt % length;
    Real *dst = out + bt * channels;
    for (int64_t c = 0; c < channels; ++c) {
      C sum = bias ? C(bias[c]) : C(0);
      for (int64_t k = 0; k < width; ++k) {
        int64_t source = t - width + 1 + k;
        if (source >= 0)
          sum += C(weight[c * width + k]) *
                 C(in[(bt - t + source) * inStride + c]);
      }
      dst[c] = Real(sum);
    }
  });
}

/// causalConvStrided of packed rows.
template <typename Real>
FP_KERNEL void causalConv(In<Real> in, In<Real> weight, In<Real> bias,
                          int64_t batch, int64_t length, int64_t channels,
                          int64_t width, Real *out) {
  causalConvStrided(in, channels, weight, bias, batch, length, channels, width,
                    out);
}

//===----------------------------------------------------------------------===//
// Normalisations over the last dimension
//===----------------------------------------------------------------------===//

/// in / max(‖in‖₂, eps) per row (PyTorch's F.normalize).
template <typename Real>
FP_KERNEL void l2norm(In<Real> in, int64_t rows, int64_t width,
                      Compute<Real> eps, Real *out) {
  using C = Compute<Real>;
  parallelFor(rows, width, [&](int64_t r) {
    In<Real> x = in + r * width;
    C sum = 0;
    for (int64_t j = 0; j < width; ++j)
      sum += C(x[j]) * C(x[j]);
    C norm = std::max(std::sqrt(sum), eps);
    for (int64_t j = 0; j < width; ++j)
      out[r * width + j] = Real(C(x[j]) / norm);
  });
}

/// (in − mean) / sqrt(var + eps) · weight + bias per row, biased variance.
template <typename Real>
FP_KERNEL void layerNorm(In<Real> in, In<Real> weight, In<Real> bias,
                         int64_t rows, int64_t width, Compute<Real> eps,
                         Real *out) {
  using C = Compute<Real>;
  parallelFor(rows, width, [&](int64_t r) {
    In<Real> x = in + r * width;
    C mean = 0;
    for (int64_t j = 0; j < width; ++j)
      mean += C(x[j]);
    mean /= C(width);
    C var = 0;
    for (int64_t j = 0; j < width; ++j)
      var += (C(x[j]) - mean) * (C(x[j]) - mean);
    var /= C(width);
    C inv = C(1) / std::sqrt(var + eps);
    for (int64_t j = 0; j < width; ++j)
      out[r * width + j] =
          Real((C(x[j]) - mean) * inv * C(weight[j]) + C(bias[j]));
  });
}

/// in / sqrt(mean(in²) + eps) · weight per row.
template <typename Real>
FP_KERNEL void rmsNorm(In<Real> in, In<Real> weight, int64_t rows,
                       int64_t width, Compute<Real> eps, Real *out) {
  using C = Compute<Real>;
  parallelFor(rows, width, [&](int64_t r) {
    In<Real> x = in + r * width;
    C sum = 0;
    for (int64_t j = 0; j < width; ++j)
      sum += C(x[j]) * C(x[j]);
    C inv = C(1) / std::sqrt(sum / C(width) + eps);
    for (int64_t j = 0; j < width; ++j)
      out[r * width + j] = Real(C(x[j]) * inv * C(weight[j]));
  });
}

//===----------------------------------------------------------------------===//
// The fixed-point solver (docs/spec.md §3)
//===----------------------------------------------------------------------===//

/// Per-sample state of one solve, on the host: best residual ρ*, step size
/// η and patience π, with the continue rule of docs/spec.md §3.3 evaluated
/// where the data is. Arithmetic is in Compute<Real>: the activation dtype, as
/// the reference computes it, and float for bf16 iterates (the reference's
/// bf16 autocast keeps its residuals in float, docs/spec.md §1.9).
template <typename Real> class Solver {
  using C = Compute<Real>;

public:
  Solver(int64_t batch, const SolverSettings &settings, bool training,
         const fp_solver_overrides *overrides)
      : batch(batch), settings(settings),
        best(batch, std::numeric_limits<C>::infinity()),
        eta(batch, C(settings.relaxStart)),
        patience(batch, settings.relaxPatience), rho(batch, C(0)),
        sorted(batch) {
    tolerance = settings.tolerance;
    quantile = training ? settings.trainQuantile : 1.0;
    cap = training ? settings.maxIterTrain : settings.maxIterEval;
    if (overrides) {
      if (overrides->max_iter >= 0)
        cap = overrides->max_iter;
      if (overrides->fixed_iters > 0)
        fixedIters = overrides->fixed_iters;
      if (!std::isnan(overrides->tolerance))
        tolerance = overrides->tolerance;
      if (!std::isnan(overrides->quantile))
        quantile = overrides->quantile;
    }
  }

  /// Runs `step` (the loop body, ending with relax() and update()) while
  /// shouldContinue().
  template <typename Step> void loop(Step &&step) {
    while (shouldContinue())
      step();
  }

  /// Checked before every step: the first step always runs; then some
  /// quantile of ρ* is at least the tolerance, some η ≥ 1e-3, and the cap
  /// is not reached.
  bool shouldContinue() {
    if (fixedIters > 0)
      return steps < fixedIters;
    if (steps == 0)
      return true;
    bool moving = *std::max_element(eta.begin(), eta.end()) >= C(1e-3);
    return double(quantileOfBest()) >= tolerance && moving && steps < cap;
  }

  /// Residual and relaxation of one iterate after the body computed
  /// fy = f(y): ρ_b ← max(ρ_b, max over tokens of ‖y − fy‖∞ / (‖fy‖∞ +
  /// 1e-8)), then y ← η fy + (1 − η) y in place. `y` and `fy` are [B, T, F]
  /// with `tokenSize` = F elements per token.
  void relax(Real *y, In<Real> fy, int64_t length, int64_t tokenSize) {
    int64_t perSample = length * tokenSize;
    parallelFor(batch, 3 * perSample, [&](int64_t b) {
      C worst = rho[b];
      for (int64_t t = 0; t < length; ++t) {
        In<Real> yt = y + b * perSample + t * tokenSize;
        In<Real> ft = fy + b * perSample + t * tokenSize;
        C diff = 0, scale = 0;
        for (int64_t f = 0; f < tokenSize; ++f) {
          diff = std::max(diff, std::abs(C(yt[f]) - C(ft[f])));
          scale = std::max(scale, std::abs(C(ft[f])));
        }
        worst = std::max(worst, diff / (scale + C(1e-8)));
      }
      rho[b] = worst;
      C e = eta[b], keep = C(1) - e;
      Real *ys = y + b * perSample;
      In<Real> fs = fy + b * perSample;
      for (int64_t i = 0; i < perSample; ++i)
        ys[i] = Real(e * C(fs[i]) + keep * C(ys[i]));
    });
  }

  /// Ends a step: best-so-far, patience and step-size decay per sample from
  /// this step's residuals, which it clears.
  void update() {
    for (int64_t b = 0; b < batch; ++b) {
      bool improved = rho[b] < best[b];
      best[b] = std::min(best[b], rho[b]);
      rho[b] = 0;
      patience[b] = improved ? settings.relaxPatience : patience[b] - 1;
      if (patience[b] == 0) {
        patience[b] = settings.relaxPatience;
        eta[b] = eta[b] * C(settings.relaxDecay);
      }
    }
    ++steps;
  }

  /// relax() of a step's last iterate, then update(): the CUDA solver's
  /// one launch for both.
  void relaxAndUpdate(Real *y, In<Real> fy, int64_t length, int64_t tokenSize) {
    relax(y, fy, length, tokenSize);
    update();
  }

  /// Writes the statistics of the finished solve: per sample steps + 1
  /// (the differentiable step counts, docs/spec.md §3.6) and ρ*. `device` is
  /// the CUDA solver's; a host call never has one (the entry refuses it).
  void report(fp_solver_stats *stats,
              const fp_device_stats *device = nullptr) const {
    (void)device;
    if (!stats)
      return;
    stats->steps = steps;
    for (int64_t b = 0; b < batch; ++b) {
      if (stats->iterations)
        stats->iterations[b] = steps + 1;
      if (stats->residuals)
        stats->residuals[b] = float(best[b]);
    }
  }

  int32_t numSteps() const { return steps; }

private:
  /// The q-quantile of ρ* with linear interpolation (torch.quantile).
  C quantileOfBest() {
    sorted = best;
    std::sort(sorted.begin(), sorted.end());
    C rank = C(quantile) * C(batch - 1);
    C below = std::floor(rank), above = std::ceil(rank);
    C weight = rank - below;
    C lo = sorted[int64_t(below)], hi = sorted[int64_t(above)];
    // torch.lerp's two-sided formula.
    return weight < C(0.5) ? lo + weight * (hi - lo)
                           : hi - (hi - lo) * (C(1) - weight);
  }

  int64_t batch;
  SolverSettings settings;
  std::vector<C> best, eta;
  std::vector<int32_t> patience;
  std::vector<C> rho, sorted;
  double tolerance = 0, quantile = 1;
  int32_t cap = 1, fixedIters = 0, steps = 0;
};

} // namespace fp::host

#endif // FP_RUNTIME_KERNELS_HOST_H
