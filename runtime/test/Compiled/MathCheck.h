//===- MathCheck.h - e^x as CUDA kernels compute it ------------*- C++ -*-===//
//
// The interface between DeviceMathTest.cpp (host compiler) and
// DeviceMathCheck.cu (nvcc, compiled twice: as model libraries' CUDA units
// are by default, and with FP_DEVICE_HOST_EXP as `fpc --no-cuda-expf`
// compiles them).
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TEST_COMPILED_MATHCHECK_H
#define FP_RUNTIME_TEST_COMPILED_MATHCHECK_H

#include <vector>

namespace fp::rt::test {

/// fp::host::exp of every value of `x`, computed by a CUDA kernel as model
/// libraries compile it by default (CUDA's expf). Throws
/// fp::cuda::DeviceError where a CUDA call fails.
std::vector<float> deviceExp(const std::vector<float> &x);

/// The same, compiled with FP_DEVICE_HOST_EXP (the host's polynomial).
std::vector<float> deviceHostExp(const std::vector<float> &x);

} // namespace fp::rt::test

#endif // FP_RUNTIME_TEST_COMPILED_MATHCHECK_H
