//===- DeviceArray.cuh - Device memory of the CUDA test halves --*- C++ -*-===//
//
// What the CUDA halves of the device tests (Device*Check.cu) share: a CUDA
// status turned into DeviceError, and device memory that frees
// itself.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TEST_COMPILED_DEVICEARRAY_CUH
#define FP_RUNTIME_TEST_COMPILED_DEVICEARRAY_CUH

#include "fp/Runtime/Kernels/Common.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

namespace fp::rt::test {

/// Throws fp::host::DeviceError "where: what: CUDA's message" unless
/// `status` is cudaSuccess.
inline void checkCuda(cudaError_t status, const char *where, const char *what) {
  if (status != cudaSuccess)
    throw fp::host::DeviceError(std::string(where) + ": " + what + ": " +
                                cudaGetErrorString(status));
}

/// Device memory of `count` values of T, zeroed or copied from the host,
/// freed with the object.
template <typename T> class DeviceArray {
public:
  explicit DeviceArray(size_t count) : count(count) {
    if (count == 0)
      return;
    checkCuda(cudaMalloc(&data, count * sizeof(T)), "DeviceArray",
              "cudaMalloc");
    checkCuda(cudaMemset(data, 0, count * sizeof(T)), "DeviceArray",
              "cudaMemset");
  }
  explicit DeviceArray(const std::vector<T> &values)
      : DeviceArray(values.size()) {
    write(values);
  }
  DeviceArray(DeviceArray &&other) noexcept
      : data(other.data), count(other.count) {
    other.data = nullptr;
  }
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;
  DeviceArray &operator=(DeviceArray &&) = delete;
  ~DeviceArray() {
    if (data)
      (void)cudaFree(data);
  }

  T *get() const { return data; }
  size_t size() const { return count; }

  /// Copies `values` (size() of them) to the device.
  void write(const std::vector<T> &values) {
    if (count > 0)
      checkCuda(cudaMemcpy(data, values.data(), count * sizeof(T),
                           cudaMemcpyHostToDevice),
                "DeviceArray", "cudaMemcpy (upload)");
  }
  std::vector<T> read() const {
    std::vector<T> values(count);
    if (count > 0)
      checkCuda(cudaMemcpy(values.data(), data, count * sizeof(T),
                           cudaMemcpyDeviceToHost),
                "DeviceArray", "cudaMemcpy (download)");
    return values;
  }

private:
  T *data = nullptr;
  size_t count;
};

} // namespace fp::rt::test

#endif // FP_RUNTIME_TEST_COMPILED_DEVICEARRAY_CUH
