//===- Roofline.h - A solver step against the machine's ceilings -*- C++
//-*-===//
//
// Places one step of a compiled layer's solver loop on the roofline of the
// machine fp-bench runs on. The step's work and traffic come from the
// library's manifest (`iteration_cost`: per launch, the FLOPs and the
// elements read and written, as the compiler counted them); the machine's
// ceilings are measured here with LibTorch: the bandwidth of a copy of a
// buffer far larger than the caches and the throughput of a large square
// matrix product, both in the benchmark's dtype. A launch cannot beat the
// slower of its two limits, so the bound of a step is the sum over its
// launches of max(FLOPs / throughput, bytes / bandwidth).
//
//===----------------------------------------------------------------------===//

#ifndef FP_BENCH_ROOFLINE_H
#define FP_BENCH_ROOFLINE_H

#include "fp/Runtime/Manifest.h"

#include <torch/torch.h>

#include <vector>

namespace fp::bench {

/// What the machine sustains, measured.
struct Ceilings {
  double bytesPerSecond = 0; ///< read + written by a device-to-device copy
  double flopsPerSecond = 0; ///< of an n × n × n matrix product
  int64_t copyBytes = 0;     ///< the size of the copied buffer
  int64_t gemmSize = 0;      ///< n
};

/// Measures the ceilings of `device` for `dtype` (best of a few runs).
Ceilings measureCeilings(const torch::Device &device, torch::Dtype dtype);

/// The FLOPs and bytes of one step of `launches` for a call of `batch` ×
/// `seqLen` with `elementBytes`-byte elements.
struct StepCost {
  double flops = 0;
  double bytes = 0;
  /// Σ max(FLOPs / throughput, bytes / bandwidth) in seconds, with
  /// `ceilings`; 0 without.
  double boundSeconds = 0;
};

/// Prints one line per launch and a total; returns the total.
StepCost printStepCost(const std::vector<rt::LaunchCost> &launches,
                       int64_t batch, int64_t seqLen, int64_t elementBytes,
                       const Ceilings *ceilings);

} // namespace fp::bench

#endif // FP_BENCH_ROOFLINE_H
