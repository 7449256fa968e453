//===- Roofline.h - A solver step against the ceilings ----------*- C++ -*-===//
//
// Places one step of a compiled layer's solver loop, and a whole forward
// call or training step, on the roofline of the machine fp-bench runs on.
// Their work and traffic come from the library's manifest (`iteration_cost`
// and `call_cost`: per launch, the FLOPs and the elements read and written,
// as the compiler counted them); the machine's
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
  /// The part of boundSeconds of the GEMM launches (fp.linear,
  /// fp.weight_grad and fp.matmul outside fused kernels).
  double gemmBoundSeconds = 0;

  /// Adds `times` × `other`.
  StepCost &add(const StepCost &other, double times = 1);
};

/// The total of `launches`, without printing.
StepCost costOf(const std::vector<rt::LaunchCost> &launches, int64_t batch,
                int64_t seqLen, int64_t elementBytes, const Ceilings *ceilings);

/// Prints one line per launch and a total; returns the total.
StepCost printStepCost(const std::vector<rt::LaunchCost> &launches,
                       int64_t batch, int64_t seqLen, int64_t elementBytes,
                       const Ceilings *ceilings);

/// A whole call on the roofline: the launches of `cost` outside the loop,
/// `steps` times the loop's step and, for a training step, the backward's
/// launches with `backwardSteps` steps of its own solve.
StepCost callCostOf(const rt::CallCost &cost, const StepCost &step,
                    double steps, bool training, double backwardSteps,
                    int64_t batch, int64_t seqLen, int64_t elementBytes,
                    const Ceilings *ceilings);

} // namespace fp::bench

#endif // FP_BENCH_ROOFLINE_H
