//===- DeviceMathCheck.cu - Scalar functions on the device ----------------===//
//
// The CUDA half of DeviceMathTest (MathCheck.h): fp::host::exp evaluated by
// a kernel. Compiled twice, once with FP_DEVICE_HOST_EXP, which defines
// deviceHostExp instead of deviceExp.
//
//===----------------------------------------------------------------------===//

#include "DeviceArray.cuh"
#include "MathCheck.h"

#include "fp/Runtime/Kernels/Device.cuh"

#include <string>

#ifdef FP_DEVICE_HOST_EXP
#define FP_EXP_CHECK deviceHostExp
#else
#define FP_EXP_CHECK deviceExp
#endif

namespace fp::rt::test {

namespace {

void check(cudaError_t status, const char *what) {
  checkCuda(status, "DeviceMathCheck", what);
}

__global__ void expKernel(const float *x, int64_t n, float *out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = fp::host::exp(x[i]);
}

} // namespace

std::vector<float> FP_EXP_CHECK(const std::vector<float> &x) {
  if (x.empty())
    return {};
  DeviceArray<float> in(x), out(x.size());
  expKernel<<<1024, 256>>>(in.get(), int64_t(x.size()), out.get());
  check(cudaGetLastError(), "exp kernel");
  return out.read();
}

} // namespace fp::rt::test
