//===- ScanCheck.h - The selective scan's CUDA kernels ----------*- C++ -*-===//
//
// The interface between DeviceScanTest.cpp (host compiler) and
// DeviceScanCheck.cu (nvcc): fp::cuda::selectiveScan on host vectors, in
// the kernel its choice or the caller names, and fp::cuda::selectiveScanGrad.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TEST_COMPILED_SCANCHECK_H
#define FP_RUNTIME_TEST_COMPILED_SCANCHECK_H

#include <cstdint>
#include <string>
#include <vector>

namespace fp::rt::test {

/// The operands of one selective scan: u and Δ [B, T, d], A [d, N], B and C
/// [B, T, N], the skip term D [d] (empty: none).
template <typename Real> struct ScanOperands {
  int64_t batch = 0, length = 0, channels = 0, state = 0;
  std::vector<Real> u, delta, a, bm, cm, skip;
};

/// fp::cuda::ScanKernel by name ("channel", "ahead", "lanes4", "lanes16"),
/// or "auto": fp::cuda::selectiveScan, which chooses.
///
/// Runs the scan on the current CUDA device and returns y [B, T, d].
/// Throws fp::cuda::DeviceError where a CUDA call fails, and
/// std::invalid_argument for a kernel it does not know.
template <typename Real>
std::vector<Real> deviceSelectiveScan(const std::string &kernel,
                                      const ScanOperands<Real> &x);

/// The cotangents of a selective scan's recurrence (no skip term):
/// du and dΔ [B, T, d], dA [d, N], dB and dC [B, T, N].
template <typename Real> struct ScanCotangents {
  std::vector<Real> du, delta, a, bm, cm;
};

/// Runs fp::cuda::selectiveScanGrad on the current CUDA device for the
/// operands (their skip term unused) and the output's cotangent `grad`
/// [B, T, d]. Throws fp::cuda::DeviceError where a CUDA call fails.
template <typename Real>
ScanCotangents<Real> deviceSelectiveScanGrad(const ScanOperands<Real> &x,
                                             const std::vector<Real> &grad);

/// The kernel fp::cuda::selectiveScan chooses for `pairs` (sample,
/// channel) pairs of N ≤ 16 states in f32 on the current device.
std::string deviceScanChoice(int64_t pairs);

} // namespace fp::rt::test

#endif // FP_RUNTIME_TEST_COMPILED_SCANCHECK_H
