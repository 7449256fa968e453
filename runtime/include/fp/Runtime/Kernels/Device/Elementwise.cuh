//===- Device/Elementwise.cuh - Elementwise kernels, copies -----*- C++ -*-===//
//
// unary, binary, fill, fillFrom, upload and copy: the kernels of the
// elementwise ops that fpc does not fuse, and of copies.
//
// Counterpart: Host/Elementwise.h.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_DEVICE_ELEMENTWISE_CUH
#define FP_RUNTIME_KERNELS_DEVICE_ELEMENTWISE_CUH

#include "fp/Runtime/Kernels/Device/Context.cuh"
#include "fp/Runtime/Kernels/Device/Launch.cuh"

namespace fp::cuda {

namespace detail {

template <typename Op, typename Real>
__global__ void unaryKernel(Op op, int64_t n, const Real *x, Real *out) {
  using C = Compute<Real>;
  for (int64_t i = firstThread(); i < n; i += allThreads())
    out[i] = Real(op(C(x[i])));
}

template <typename Op, typename Real>
__global__ void binaryKernel(Op op, int64_t n, const Real *x, const Real *y,
                             Real *out) {
  using C = Compute<Real>;
  for (int64_t i = firstThread(); i < n; i += allThreads())
    out[i] = Real(op(C(x[i]), C(y[i])));
}

template <typename Real>
__global__ void fillKernel(Real *out, int64_t n, Real value) {
  for (int64_t i = firstThread(); i < n; i += allThreads())
    out[i] = value;
}

template <typename Real>
__global__ void fillFromKernel(Real *out, int64_t n, const Real *scalar) {
  const Real value = scalar[0];
  for (int64_t i = firstThread(); i < n; i += allThreads())
    out[i] = value;
}

} // namespace detail

/// out[i] = op(x[i]) for i < n; one thread per element.
template <typename Op, typename Real>
inline void unary(Op op, int64_t n, In<Real> x, Real *out) {
  detail::launch("unary", detail::unaryKernel<Op, Real>, detail::blocksFor(n),
                 detail::kThreads, 0, detail::stream(), op, n, x, out);
}

/// out[i] = op(x[i], y[i]) for i < n; one thread per element.
template <typename Op, typename Real>
inline void binary(Op op, int64_t n, In<Real> x, In<Real> y, Real *out) {
  detail::launch("binary", detail::binaryKernel<Op, Real>, detail::blocksFor(n),
                 detail::kThreads, 0, detail::stream(), op, n, x, y, out);
}

/// out[i] = value; one thread per element.
template <typename Real>
inline void fill(Real *out, int64_t n, Compute<Real> value) {
  detail::launch("fill", detail::fillKernel<Real>, detail::blocksFor(n),
                 detail::kThreads, 0, detail::stream(), out, n, Real(value));
}

/// out[i] = scalar[0], read on the device: a broadcast scalar that lives in
/// a buffer. One thread per element.
template <typename Real>
inline void fillFrom(Real *out, int64_t n, In<Real> scalar) {
  detail::launch("fillFrom", detail::fillFromKernel<Real>, detail::blocksFor(n),
                 detail::kThreads, 0, detail::stream(), out, n, scalar);
}

/// Copies constants of the generated code (host memory, in the arithmetic
/// type) into a device buffer, ordered on the current stream. bf16 values
/// are rounded into a host buffer first; a copy from pageable memory has
/// read its source when it returns.
template <typename Real>
inline void upload(const Compute<Real> *values, int64_t n, Real *out) {
  if (n <= 0)
    return;
  std::vector<Real> rounded;
  const void *source = values;
  if constexpr (!std::is_same_v<Compute<Real>, Real>) {
    rounded.assign(size_t(n), Real(0));
    for (int64_t i = 0; i < n; ++i)
      rounded[size_t(i)] = Real(values[i]);
    source = rounded.data();
  }
  detail::check(cudaMemcpyAsync(out, source, sizeof(Real) * size_t(n),
                                cudaMemcpyHostToDevice, detail::stream()),
                "upload");
}

/// Device-to-device copy on the current stream (nothing when in == out).
template <typename Real> inline void copy(In<Real> in, int64_t n, Real *out) {
  if (n <= 0 || in == out)
    return;
  detail::check(cudaMemcpyAsync(out, in, sizeof(Real) * size_t(n),
                                cudaMemcpyDeviceToDevice, detail::stream()),
                "copy");
}

} // namespace fp::cuda

#endif // FP_RUNTIME_KERNELS_DEVICE_ELEMENTWISE_CUH
