//===- Host/Elementwise.h - Elementwise kernels and copies ------*- C++ -*-===//
//
// unary, binary, fill, fillFrom, upload and copy: the kernels of the
// elementwise ops that fpc does not fuse, and of copies.
//
// Counterpart: Device/Elementwise.cuh.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_HOST_ELEMENTWISE_H
#define FP_RUNTIME_KERNELS_HOST_ELEMENTWISE_H

#include "fp/Runtime/Kernels/Host/Context.h"
#include "fp/Runtime/Kernels/Host/Launch.h"

namespace fp::host {

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

} // namespace fp::host

#endif // FP_RUNTIME_KERNELS_HOST_ELEMENTWISE_H
