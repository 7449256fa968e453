//===- DeviceMathCheck.cu - Scalar functions on the device ----------------===//
//
// The CUDA half of DeviceMathTest (MathCheck.h): fp::host::exp evaluated by
// a kernel. Compiled twice, once with FP_DEVICE_HOST_EXP, which defines
// deviceHostExp instead of deviceExp.
//
//===----------------------------------------------------------------------===//

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
  if (status != cudaSuccess)
    throw fp::cuda::DeviceError(std::string("DeviceMathCheck: ") + what + ": " +
                                cudaGetErrorString(status));
}

__global__ void expKernel(const float *x, int64_t n, float *out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = fp::host::exp(x[i]);
}

} // namespace

std::vector<float> FP_EXP_CHECK(const std::vector<float> &x) {
  const size_t bytes = x.size() * sizeof(float);
  std::vector<float> out(x.size());
  if (x.empty())
    return out;
  float *in = nullptr, *result = nullptr;
  check(cudaMalloc(&in, bytes), "cudaMalloc");
  cudaError_t status = cudaMalloc(&result, bytes);
  if (status == cudaSuccess)
    status = cudaMemcpy(in, x.data(), bytes, cudaMemcpyHostToDevice);
  if (status == cudaSuccess) {
    expKernel<<<1024, 256>>>(in, int64_t(x.size()), result);
    status = cudaGetLastError();
  }
  if (status == cudaSuccess)
    status = cudaMemcpy(out.data(), result, bytes, cudaMemcpyDeviceToHost);
  (void)cudaFree(in);
  (void)cudaFree(result);
  check(status, "exp kernel");
  return out;
}

} // namespace fp::rt::test
