//===- Device/Norms.cuh - Normalisations of the CUDA kernels ----*- C++ -*-===//
//
// Normalisations over the last dimension: l2norm, layerNorm and rmsNorm.
//
// Counterpart: Host/Norms.h.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_DEVICE_NORMS_CUH
#define FP_RUNTIME_KERNELS_DEVICE_NORMS_CUH

#include "fp/Runtime/Kernels/Device/Context.cuh"
#include "fp/Runtime/Kernels/Device/Launch.cuh"

namespace fp::cuda {

namespace detail {

template <typename Real>
__global__ void l2normKernel(const Real *in, int64_t rows, int64_t width,
                             Compute<Real> eps, Real *out) {
  using C = Compute<Real>;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const Real *x = in + r * width;
    C sum = 0;
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
      sum += C(x[j]) * C(x[j]);
    const C norm = MaxOp()(std::sqrt(blockReduce(sum, SumOp())), eps);
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
      out[r * width + j] = Real(C(x[j]) / norm);
  }
}

template <typename Real>
__global__ void layerNormKernel(const Real *in, const Real *weight,
                                const Real *bias, int64_t rows, int64_t width,
                                Compute<Real> eps, Real *out) {
  using C = Compute<Real>;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const Real *x = in + r * width;
    C sum = 0;
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
      sum += C(x[j]);
    const C mean = blockReduce(sum, SumOp()) / C(width);
    C squares = 0;
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
      squares += (C(x[j]) - mean) * (C(x[j]) - mean);
    const C var = blockReduce(squares, SumOp()) / C(width);
    const C inv = C(1) / std::sqrt(var + eps);
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
      out[r * width + j] =
          Real((C(x[j]) - mean) * inv * C(weight[j]) + C(bias[j]));
  }
}

template <typename Real>
__global__ void rmsNormKernel(const Real *in, const Real *weight, int64_t rows,
                              int64_t width, Compute<Real> eps, Real *out) {
  using C = Compute<Real>;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const Real *x = in + r * width;
    C sum = 0;
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
      sum += C(x[j]) * C(x[j]);
    sum = blockReduce(sum, SumOp());
    const C inv = C(1) / std::sqrt(sum / C(width) + eps);
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
      out[r * width + j] = Real(C(x[j]) * inv * C(weight[j]));
  }
}

} // namespace detail

/// in / max(‖in‖₂, eps) per row (PyTorch's F.normalize). One block per row.
template <typename Real>
inline void l2norm(In<Real> in, int64_t rows, int64_t width, Compute<Real> eps,
                   Real *out) {
  detail::launch("l2norm", detail::l2normKernel<Real>, rows,
                 detail::rowThreads(width), 0, detail::stream(), in, rows,
                 width, eps, out);
}

/// (in − mean) / sqrt(var + eps) · weight + bias per row, biased variance;
/// weight and bias are required, as in Host.h. One block per row.
template <typename Real>
inline void layerNorm(In<Real> in, In<Real> weight, In<Real> bias, int64_t rows,
                      int64_t width, Compute<Real> eps, Real *out) {
  detail::launch("layerNorm", detail::layerNormKernel<Real>, rows,
                 detail::rowThreads(width), 0, detail::stream(), in, weight,
                 bias, rows, width, eps, out);
}

/// in / sqrt(mean(in²) + eps) · weight per row. One block per row.
template <typename Real>
inline void rmsNorm(In<Real> in, In<Real> weight, int64_t rows, int64_t width,
                    Compute<Real> eps, Real *out) {
  detail::launch("rmsNorm", detail::rmsNormKernel<Real>, rows,
                 detail::rowThreads(width), 0, detail::stream(), in, weight,
                 rows, width, eps, out);
}

} // namespace fp::cuda

#endif // FP_RUNTIME_KERNELS_DEVICE_NORMS_CUH
