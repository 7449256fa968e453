//===- Device/Layout.cuh - Layout kernels of CUDA ---------------*- C++ -*-===//
//
// Slices, concatenation, broadcasts and reductions: sliceColumns,
// insertColumns, broadcast, reduce, sumRows and triu.
//
// Counterpart: Host/Layout.h.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_DEVICE_LAYOUT_CUH
#define FP_RUNTIME_KERNELS_DEVICE_LAYOUT_CUH

#include "fp/Runtime/Kernels/Device/Context.cuh"
#include "fp/Runtime/Kernels/Device/Launch.cuh"

namespace fp::cuda {

namespace detail {

template <typename Real>
__global__ void sliceColumnsKernel(const Real *in, int64_t rows,
                                   int64_t inWidth, int64_t start,
                                   int64_t width, Real *out) {
  for (int64_t i = firstThread(); i < rows * width; i += allThreads())
    out[i] = in[i / width * inWidth + start + i % width];
}

template <typename Real>
__global__ void insertColumnsKernel(const Real *in, int64_t rows, int64_t width,
                                    int64_t start, int64_t outWidth,
                                    Real *out) {
  for (int64_t i = firstThread(); i < rows * width; i += allThreads())
    out[i / width * outWidth + start + i % width] = in[i];
}

/// How output elements of a broadcast find their input element.
struct BroadcastMap {
  enum Mode { General, Leading, Trailing };
  int mode;
  int rank;
  int64_t extent[kMaxRank];
  int64_t inStride[kMaxRank]; // 0 for broadcast dimensions
  int64_t inner; // Leading: repeats of each input element; Trailing: size
};

template <typename Real>
__global__ void broadcastKernel(const Real *in, BroadcastMap map, int64_t n,
                                Real *out) {
  for (int64_t index = firstThread(); index < n; index += allThreads()) {
    if (map.mode == BroadcastMap::Leading) {
      out[index] = in[index / map.inner];
    } else if (map.mode == BroadcastMap::Trailing) {
      out[index] = in[index % map.inner];
    } else {
      int64_t rest = index, offset = 0;
      for (int d = map.rank - 1; d >= 0; --d) {
        offset += rest % map.extent[d] * map.inStride[d];
        rest /= map.extent[d];
      }
      out[index] = in[offset];
    }
  }
}

/// The dimensions of a reduction's input, and which are reduced.
struct ReduceMap {
  int rank;
  int64_t extent[kMaxRank];
  int64_t inStride[kMaxRank]; // row-major strides of the input
  bool reduced[kMaxRank];
  int64_t outCount;     // product of the kept extents
  int64_t reducedCount; // product of the reduced extents
};

/// The ReduceMap of `inShape` reduced over the dimensions flagged in
/// `reduced` (a host array).
inline ReduceMap reduceMapFor(const Shape &inShape, const bool *reduced) {
  ReduceMap map = {};
  map.rank = inShape.rank;
  map.outCount = 1;
  map.reducedCount = 1;
  int64_t stride = 1;
  for (int d = inShape.rank - 1; d >= 0; --d) {
    map.extent[d] = inShape.extent[d];
    map.inStride[d] = stride;
    map.reduced[d] = reduced[d];
    stride *= inShape.extent[d];
    (reduced[d] ? map.reducedCount : map.outCount) *= inShape.extent[d];
  }
  return map;
}

/// Input offset of `index` counted row-major over the dimensions whose
/// `reduced` flag is `which`.
__device__ inline int64_t reduceOffset(const ReduceMap &map, int64_t index,
                                       bool which) {
  int64_t offset = 0;
  for (int d = map.rank - 1; d >= 0; --d)
    if (map.reduced[d] == which) {
      offset += index % map.extent[d] * map.inStride[d];
      index /= map.extent[d];
    }
  return offset;
}

/// One thread per output element, accumulating in input index order.
template <typename Real, typename Combine>
__global__ void reduceKernel(const Real *in, ReduceMap map, Compute<Real> init,
                             Combine combine, Real *out) {
  using C = Compute<Real>;
  for (int64_t o = firstThread(); o < map.outCount; o += allThreads()) {
    const int64_t base = reduceOffset(map, o, false);
    C acc = init;
    for (int64_t k = 0; k < map.reducedCount; ++k)
      acc = combine(acc, C(in[base + reduceOffset(map, k, true)]));
    out[o] = Real(acc);
  }
}

/// One block per output element, for long reductions.
template <typename Real, typename Combine>
__global__ void reduceBlockKernel(const Real *in, ReduceMap map,
                                  Compute<Real> init, Combine combine,
                                  Real *out) {
  using C = Compute<Real>;
  for (int64_t o = blockIdx.x; o < map.outCount; o += gridDim.x) {
    const int64_t base = reduceOffset(map, o, false);
    C acc = init;
    for (int64_t k = threadIdx.x; k < map.reducedCount; k += blockDim.x)
      acc = combine(acc, C(in[base + reduceOffset(map, k, true)]));
    acc = blockReduce(acc, combine);
    if (threadIdx.x == 0)
      out[o] = Real(acc);
  }
}

/// Reductions over at least this many elements per output use a block.
inline constexpr int64_t kBlockReduction = 256;

template <typename Real, typename Combine>
inline void launchReduce(const Real *in, const ReduceMap &map,
                         Compute<Real> init, Combine combine, Real *out) {
  if (map.reducedCount >= kBlockReduction)
    launch("reduce", reduceBlockKernel<Real, Combine>, map.outCount, kThreads,
           0, stream(), in, map, init, combine, out);
  else
    launch("reduce", reduceKernel<Real, Combine>, blocksFor(map.outCount),
           kThreads, 0, stream(), in, map, init, combine, out);
}

template <typename Real>
__global__ void sumRowsKernel(const Real *in, int64_t rows, int64_t width,
                              Real *out) {
  using C = Compute<Real>;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const Real *row = in + r * width;
    C sum = 0;
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
      sum += C(row[j]);
    sum = blockReduce(sum, SumOp());
    if (threadIdx.x == 0)
      out[r] = Real(sum);
  }
}

template <typename Real>
__global__ void triuKernel(const Real *in, int64_t rows, int64_t m, Real *out) {
  const int64_t packed = m * (m + 1) / 2;
  for (int64_t index = firstThread(); index < rows * m * m;
       index += allThreads()) {
    const int64_t r = index / (m * m), i = index / m % m, j = index % m;
    // Row i of the triangle starts after Σ_{i' < i} (m − i') entries.
    out[index] =
        j >= i ? in[r * packed + i * m - i * (i - 1) / 2 + (j - i)] : Real(0);
  }
}

} // namespace detail

/// out[r, j] = in[r, start + j] for j < width; `in` has `inWidth` columns.
/// One thread per output element.
template <typename Real>
inline void sliceColumns(In<Real> in, int64_t rows, int64_t inWidth,
                         int64_t start, int64_t width, Real *out) {
  detail::launch("sliceColumns", detail::sliceColumnsKernel<Real>,
                 detail::blocksFor(rows * width), detail::kThreads, 0,
                 detail::stream(), in, rows, inWidth, start, width, out);
}

/// Writes `in` (rows × width) into the columns [start, start + width) of
/// `out`, which has `outWidth` columns. One thread per input element.
template <typename Real>
inline void insertColumns(In<Real> in, int64_t rows, int64_t width,
                          int64_t start, int64_t outWidth, Real *out) {
  detail::launch("insertColumns", detail::insertColumnsKernel<Real>,
                 detail::blocksFor(rows * width), detail::kThreads, 0,
                 detail::stream(), in, rows, width, start, outWidth, out);
}

/// Replicates `in` to `outShape`: input dimension i is output dimension
/// dims[i] (a host array); every other output dimension is broadcast. One
/// thread per output element.
template <typename Real>
inline void broadcast(In<Real> in, const Shape &outShape, const int *dims,
                      int inRank, Real *out) {
  detail::BroadcastMap map = {};
  map.rank = outShape.rank;
  for (int d = 0; d < outShape.rank; ++d)
    map.extent[d] = outShape.extent[d];
  int64_t stride = 1;
  for (int i = inRank - 1; i >= 0; --i) {
    map.inStride[dims[i]] = stride;
    stride *= outShape.extent[dims[i]];
  }
  const int64_t n = outShape.numElements();
  bool leading = true, trailing = true;
  for (int i = 0; i < inRank; ++i) {
    leading &= dims[i] == i;
    trailing &= dims[i] == outShape.rank - inRank + i;
  }
  map.mode = detail::BroadcastMap::General;
  if (leading) {
    map.mode = detail::BroadcastMap::Leading;
    map.inner = std::max<int64_t>(n / std::max<int64_t>(stride, 1), 1);
  } else if (trailing) {
    map.mode = detail::BroadcastMap::Trailing;
    map.inner = std::max<int64_t>(stride, 1);
  }
  detail::launch("broadcast", detail::broadcastKernel<Real>,
                 detail::blocksFor(n), detail::kThreads, 0, detail::stream(),
                 in, map, n, out);
}

/// Reduces `in` of `inShape` over the dimensions flagged in `reduced` (a
/// host array). One thread per output element accumulating in input index
/// order (as Host.h), or one block per output element when each reduces at
/// least kBlockReduction inputs.
template <typename Real>
inline void reduce(In<Real> in, const Shape &inShape, const bool *reduced,
                   Reduction kind, Real *out) {
  using C = Compute<Real>;
  const detail::ReduceMap map = detail::reduceMapFor(inShape, reduced);
  if (kind == Reduction::Sum)
    detail::launchReduce<Real>(in, map, C(0), detail::SumOp(), out);
  else
    detail::launchReduce<Real>(in, map, -std::numeric_limits<C>::infinity(),
                               detail::MaxOp(), out);
}

/// Sums each row of `in` (rows × width): one block per row.
template <typename Real>
inline void sumRows(In<Real> in, int64_t rows, int64_t width, Real *out) {
  detail::launch("sumRows", detail::sumRowsKernel<Real>, rows,
                 detail::rowThreads(width), 0, detail::stream(), in, rows,
                 width, out);
}

/// Unpacks the m(m+1)/2 trailing entries of each row into an upper
/// triangular m×m matrix, row-major over the triangle. One thread per
/// output element.
template <typename Real>
inline void triu(In<Real> in, int64_t rows, int64_t m, Real *out) {
  detail::launch("triu", detail::triuKernel<Real>,
                 detail::blocksFor(rows * m * m), detail::kThreads, 0,
                 detail::stream(), in, rows, m, out);
}

} // namespace fp::cuda

#endif // FP_RUNTIME_KERNELS_DEVICE_LAYOUT_CUH
