//===- Host/Layout.h - Layout kernels of the host ---------------*- C++ -*-===//
//
// Slices, concatenation, broadcasts and reductions: sliceColumns,
// insertColumns, broadcast, reduce, sumRows and triu.
//
// Counterpart: Device/Layout.cuh.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_HOST_LAYOUT_H
#define FP_RUNTIME_KERNELS_HOST_LAYOUT_H

#include "fp/Runtime/Kernels/Host/Context.h"
#include "fp/Runtime/Kernels/Host/Launch.h"

namespace fp::host {

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

} // namespace fp::host

#endif // FP_RUNTIME_KERNELS_HOST_LAYOUT_H
