//===- LaunchCheck.h - Fused launches at every scratch size -----*- C++ -*-===//
//
// The interface between DeviceLaunchTest.cpp (host compiler) and
// DeviceLaunchCheck.cu (nvcc): a fused kernel whose scratch is `scratch`
// values of its arithmetic type, run by fp::cuda::forEachToken or
// forEachSample.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TEST_COMPILED_LAUNCHCHECK_H
#define FP_RUNTIME_TEST_COMPILED_LAUNCHCHECK_H

#include <cstdint>
#include <vector>

namespace fp::rt::test {

/// What a launch of the scratch kernel computed: per row (batch × length,
/// in order) its value, and whether the row's scratch was in shared memory.
struct LaunchOutcome {
  std::vector<double> values;
  std::vector<bool> inShared;
};

/// Runs the scratch kernel in Real (float or double) over `batch` samples
/// of `length` tokens of `width` inputs each (`in`, batch · length · width
/// values): token (b, t) fills all `scratch` values of its scratch from its
/// inputs, x[i mod width] · (i mod 7 + 1) at i, and sums them in reverse
/// order (each thread reads what others wrote) with a block reduction,
/// which has static shared memory. With `perSample` (forEachSample, the
/// tokens of a sample in time order) a token's value adds its sample's
/// running total, kept in the kernel's state; else (forEachToken) it is
/// the token's own sum. Throws fp::cuda::DeviceError where a launch fails.
LaunchOutcome runScratchKernel(bool f64, bool perSample, int64_t batch,
                               int64_t length, int64_t width, int64_t scratch,
                               const std::vector<double> &in);

/// Whether the cuBLAS handle of fp::cuda's current context uses TF32 tensor
/// cores, read with cublasGetMathMode in nested Scopes: an outer Scope with
/// TF32 allowed, an inner one without `allowTF32` (which keeps the outer
/// choice), an inner one that forbids it, then the outer one again after
/// each inner one has ended.
std::vector<bool> scopeTF32Modes();

} // namespace fp::rt::test

#endif // FP_RUNTIME_TEST_COMPILED_LAUNCHCHECK_H
