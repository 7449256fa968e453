//===- DeviceMemory.cpp - Peak device memory of a region --------*- C++ -*-===//
//
// Part of fpc. See DeviceMemory.h.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/DeviceMemory.h"

#if FP_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda.h> // cuuint64_t, the type of a pool's memory attributes
#include <cuda_runtime.h>
#include <torch/cuda.h>
#endif

namespace fp::rt {

DevicePeakMemory::DevicePeakMemory(const torch::Device &device)
    : device(device) {}

bool DevicePeakMemory::available() const {
#if FP_TORCH_CUDA
  return device.is_cuda();
#else
  return false;
#endif
}

void DevicePeakMemory::begin() {
#if FP_TORCH_CUDA
  if (!available())
    return;
  const int index = device.has_index() ? device.index() : 0;
  c10::cuda::CUDACachingAllocator::resetPeakStats(index);
  start = c10::cuda::CUDACachingAllocator::getDeviceStats(index)
              .allocated_bytes[0]
              .current;
  cudaMemPool_t handle = nullptr;
  if (cudaDeviceGetDefaultMemPool(&handle, index) == cudaSuccess) {
    cuuint64_t zero = 0;
    (void)cudaMemPoolSetAttribute(handle, cudaMemPoolAttrUsedMemHigh, &zero);
    pool = handle;
  } else {
    (void)cudaGetLastError();
    pool = nullptr;
  }
#endif
}

double DevicePeakMemory::peakBytes() {
#if FP_TORCH_CUDA
  if (!available())
    return 0;
  const int index = device.has_index() ? device.index() : 0;
  torch::cuda::synchronize(index);
  double peak = double(c10::cuda::CUDACachingAllocator::getDeviceStats(index)
                           .allocated_bytes[0]
                           .peak);
  cuuint64_t high = 0;
  if (pool &&
      cudaMemPoolGetAttribute(static_cast<cudaMemPool_t>(pool),
                              cudaMemPoolAttrUsedMemHigh, &high) == cudaSuccess)
    peak += double(high);
  return peak;
#else
  return 0;
#endif
}

} // namespace fp::rt
