//===- DeviceLaunchCheck.cu - Fused-kernel launches at every scratch size -===//
//
// The CUDA half of DeviceLaunchTest (LaunchCheck.h): a fused kernel with a
// scratch of any size, run by fp::cuda::forEachToken and forEachSample,
// which place the scratch in shared memory where the device allows it
// (opting the kernel in above the default 48 KiB) and in global memory
// beyond.
//
//===----------------------------------------------------------------------===//

#include "DeviceArray.cuh"
#include "LaunchCheck.h"

#include "fp/Runtime/Kernels/Device.cuh"

#include <string>

namespace fp::rt::test {

namespace {

void check(cudaError_t status, const char *what) {
  checkCuda(status, "DeviceLaunchCheck", what);
}

/// The kernel LaunchCheck.h describes, in the shape fpc emits (Fused.h).
template <typename Real> struct ScratchKernel {
  using Scalar = fp::Compute<Real>;
  struct Registers {};
  static constexpr int64_t kRegisterState = 0;
  static constexpr bool kChunkable = false;
  static constexpr int64_t kCarry = 0;
  static constexpr int64_t kStage = 0;

  const Real *in;
  Real *out;
  int *inShared;
  int64_t width, size;

  template <typename Team>
  __device__ void operator()(Team &team, int64_t row, int64_t step,
                             Scalar *scratch, Scalar *state,
                             Registers &registers) const {
    (void)step;
    (void)registers;
    const Real *x = in + row * width;
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x)
      scratch[i] = Scalar(x[i % width]) * Scalar(i % 7 + 1);
    team.sync();
    Scalar partial = 0;
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x)
      partial += scratch[size - 1 - i];
    const Scalar total = team.sum(partial);
    if (threadIdx.x == 0) {
      const Scalar value = state ? state[0] + total : total;
      if (state)
        state[0] = value;
      out[row] = Real(value);
      inShared[row] = __isShared(scratch) ? 1 : 0;
    }
  }
};

template <typename Real>
LaunchOutcome run(bool perSample, int64_t batch, int64_t length, int64_t width,
                  int64_t scratch, const std::vector<double> &in) {
  const size_t rows = size_t(batch * length);
  DeviceArray<Real> input(in.size()), output(rows);
  DeviceArray<int> shared(rows);
  input.write(std::vector<Real>(in.begin(), in.end()));
  const ScratchKernel<Real> kernel{input.get(), output.get(), shared.get(),
                                   width, scratch};
  {
    fp::cuda::Scope scope(nullptr);
    if (perSample)
      fp::cuda::forEachSample<Real>(batch, length, scratch, /*state=*/1,
                                    /*cost=*/scratch, kernel);
    else
      fp::cuda::forEachToken<Real>(batch, length, scratch, /*cost=*/scratch,
                                   kernel);
  }
  check(cudaDeviceSynchronize(), "the launch");
  LaunchOutcome outcome;
  for (Real value : output.read())
    outcome.values.push_back(double(value));
  for (int flag : shared.read())
    outcome.inShared.push_back(flag != 0);
  return outcome;
}

} // namespace

std::vector<bool> scopeTF32Modes() {
  auto tf32 = [] {
    cublasMath_t mode = CUBLAS_DEFAULT_MATH;
    if (cublasGetMathMode(fp::cuda::detail::blas(), &mode) !=
        CUBLAS_STATUS_SUCCESS)
      throw fp::cuda::DeviceError("cublasGetMathMode failed");
    return mode == CUBLAS_TF32_TENSOR_OP_MATH;
  };
  std::vector<bool> modes;
  fp::cuda::Scope outer(nullptr, /*allowTF32=*/true);
  modes.push_back(tf32());
  {
    fp::cuda::Scope inherits(nullptr);
    modes.push_back(tf32());
  }
  modes.push_back(tf32());
  {
    fp::cuda::Scope exact(nullptr, /*allowTF32=*/false);
    modes.push_back(tf32());
  }
  modes.push_back(tf32());
  return modes;
}

LaunchOutcome runScratchKernel(bool f64, bool perSample, int64_t batch,
                               int64_t length, int64_t width, int64_t scratch,
                               const std::vector<double> &in) {
  return f64 ? run<double>(perSample, batch, length, width, scratch, in)
             : run<float>(perSample, batch, length, width, scratch, in);
}

} // namespace fp::rt::test
