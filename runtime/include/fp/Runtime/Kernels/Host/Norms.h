//===- Host/Norms.h - Normalisations of the host kernels --------*- C++ -*-===//
//
// Normalisations over the last dimension: l2norm, layerNorm and rmsNorm.
//
// Counterpart: Device/Norms.cuh.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_HOST_NORMS_H
#define FP_RUNTIME_KERNELS_HOST_NORMS_H

#include "fp/Runtime/Kernels/Host/Context.h"
#include "fp/Runtime/Kernels/Host/Launch.h"

namespace fp::host {

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

} // namespace fp::host

#endif // FP_RUNTIME_KERNELS_HOST_NORMS_H
