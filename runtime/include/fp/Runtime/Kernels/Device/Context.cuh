//===- Device/Context.cuh - What every CUDA kernel builds on ----*- C++ -*-===//
//
// The first part of Device.cuh: the headers the CUDA kernels share, the names
// fp::cuda takes from fp::host (what generated code names through `kernels::`
// besides the kernels), and the execution context: the calling thread's current
// stream, device and cuBLAS handle, which Scope sets, and the checks that turn
// a failed CUDA or cuBLAS call into DeviceError.
//
// Counterpart: Host/Context.h.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_DEVICE_CONTEXT_CUH
#define FP_RUNTIME_KERNELS_DEVICE_CONTEXT_CUH

#include "fp/Runtime/Kernels/Common.h"
#include "fp/Runtime/Kernels/Fused.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace fp::cuda {

// What generated code names through `kernels::` besides the kernels.
using fp::host::BufferSpec;
using fp::host::DeviceError;
using fp::host::GradientSum;
using fp::host::In;
using fp::host::kBufferAlignment;
using fp::host::kMaxRank;
using fp::host::layoutBuffers;
using fp::host::Reduction;
using fp::host::Shape;
using fp::host::SolverSettings;
using fp::host::timeChunks;

using fp::host::exp;
using fp::host::sigmoid;
using fp::host::silu;
using fp::host::softplus;

using fp::host::Abs;
using fp::host::Add;
using fp::host::Div;
using fp::host::Exp;
using fp::host::Log;
using fp::host::Max;
using fp::host::Min;
using fp::host::Mul;
using fp::host::Neg;
using fp::host::Sigmoid;
using fp::host::Silu;
using fp::host::Softplus;
using fp::host::Sqrt;
using fp::host::Sub;
using fp::host::Tanh;

namespace detail {

/// Throws DeviceError for a failed CUDA call; `what` names the kernel or
/// operation.
inline void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw DeviceError(std::string("fp::cuda::") + what + ": " +
                      cudaGetErrorString(status));
}

inline void checkBlas(cublasStatus_t status, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw DeviceError(std::string("fp::cuda::") + what + ": " +
                      cublasGetStatusString(status));
}

/// The stream of the innermost live Scope of this thread, its device,
/// whether its f32 GEMMs may use TF32 tensor cores, and the cuBLAS handle
/// bound to the stream and that math mode (null until a kernel needs it).
struct Context {
  cudaStream_t stream = nullptr;
  int device = 0;
  bool tf32 = false;
  cublasHandle_t blas = nullptr;
};

/// cuBLAS's math mode for single-precision routines: TF32 tensor cores
/// (inputs rounded to 10-bit mantissas, sums in f32), or exact f32. Double
/// routines and cublasGemmEx with an explicit compute type ignore it.
inline cublasMath_t mathMode(bool tf32) {
  return tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
}

inline thread_local Context current;

/// The cuBLAS handles of this thread, one per device, created on first use
/// and destroyed when the thread ends.
class BlasHandles {
public:
  BlasHandles() = default;
  BlasHandles(const BlasHandles &) = delete;
  BlasHandles &operator=(const BlasHandles &) = delete;
  ~BlasHandles() {
    for (auto &entry : handles)
      (void)cublasDestroy(entry.second);
  }

  cublasHandle_t get(int device) {
    for (auto &entry : handles)
      if (entry.first == device)
        return entry.second;
    cublasHandle_t handle = nullptr;
    checkBlas(cublasCreate(&handle), "cublasCreate");
    handles.emplace_back(device, handle);
    return handle;
  }

private:
  std::vector<std::pair<int, cublasHandle_t>> handles;
};

inline thread_local BlasHandles blasHandles;

inline cudaStream_t stream() { return current.stream; }

/// The cuBLAS handle of the current device, bound to the current stream and
/// math mode.
inline cublasHandle_t blas() {
  if (!current.blas) {
    cublasHandle_t handle = blasHandles.get(current.device);
    checkBlas(cublasSetStream(handle, current.stream), "cublasSetStream");
    checkBlas(cublasSetMathMode(handle, mathMode(current.tf32)),
              "cublasSetMathMode");
    current.blas = handle;
  }
  return current.blas;
}

} // namespace detail

/// Makes `stream` (a cudaStream_t; null is the legacy default stream) and
/// the current device the context of every kernel this thread launches
/// until the Scope ends, with f32 GEMMs on TF32 tensor cores where
/// `allowTF32` (a model call's `allow_tf32`). Scopes nest; one without
/// `allowTF32` keeps the enclosing one's choice (none: exact f32). The
/// outer context, including the stream and math mode its cuBLAS handle was
/// bound to, comes back when an inner one ends.
class Scope {
public:
  explicit Scope(void *stream) : Scope(stream, detail::current.tf32) {}
  Scope(void *stream, bool allowTF32) : saved(detail::current) {
    int device = 0;
    detail::check(cudaGetDevice(&device), "Scope");
    detail::current.stream = static_cast<cudaStream_t>(stream);
    detail::current.device = device;
    detail::current.tf32 = allowTF32;
    detail::current.blas = nullptr;
  }
  Scope(const Scope &) = delete;
  Scope &operator=(const Scope &) = delete;
  ~Scope() {
    if (saved.blas &&
        (cublasSetStream(saved.blas, saved.stream) != CUBLAS_STATUS_SUCCESS ||
         cublasSetMathMode(saved.blas, detail::mathMode(saved.tf32)) !=
             CUBLAS_STATUS_SUCCESS))
      saved.blas = nullptr; // bind again on next use
    detail::current = saved;
  }

private:
  detail::Context saved;
};

} // namespace fp::cuda

#endif // FP_RUNTIME_KERNELS_DEVICE_CONTEXT_CUH
