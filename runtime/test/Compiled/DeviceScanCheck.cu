//===- DeviceScanCheck.cu - The selective scan's CUDA kernels -------------===//
//
// The CUDA half of DeviceScanTest (ScanCheck.h).
//
//===----------------------------------------------------------------------===//

#include "DeviceArray.cuh"
#include "ScanCheck.h"

#include "fp/Runtime/Kernels/DeviceGradients.cuh"

#include <stdexcept>

namespace fp::rt::test {

namespace {

void check(cudaError_t status, const char *what) {
  checkCuda(status, "DeviceScanCheck", what);
}

const char *nameOf(fp::cuda::ScanKernel kind) {
  switch (kind) {
  case fp::cuda::ScanKernel::Channel:
    return "channel";
  case fp::cuda::ScanKernel::Ahead:
    return "ahead";
  case fp::cuda::ScanKernel::Lanes4:
    return "lanes4";
  case fp::cuda::ScanKernel::Lanes16:
    return "lanes16";
  }
  return "?";
}

} // namespace

template <typename Real>
std::vector<Real> deviceSelectiveScan(const std::string &kernel,
                                      const ScanOperands<Real> &x) {
  DeviceArray<Real> u(x.u), delta(x.delta), a(x.a), bm(x.bm), cm(x.cm),
      skip(x.skip), out(size_t(x.batch * x.length * x.channels));
  const Real *skipOrNull = x.skip.empty() ? nullptr : skip.get();
  if (kernel == "auto") {
    fp::cuda::selectiveScan<Real>(u.get(), delta.get(), a.get(), bm.get(),
                                  cm.get(), skipOrNull, x.batch, x.length,
                                  x.channels, x.state, out.get());
  } else {
    fp::cuda::ScanKernel kind{};
    for (fp::cuda::ScanKernel k :
         {fp::cuda::ScanKernel::Channel, fp::cuda::ScanKernel::Ahead,
          fp::cuda::ScanKernel::Lanes4, fp::cuda::ScanKernel::Lanes16})
      if (kernel == nameOf(k))
        kind = k;
    if (kernel != nameOf(kind))
      throw std::invalid_argument("deviceSelectiveScan: no kernel " + kernel);
    fp::cuda::selectiveScanWith<Real>(kind, u.get(), delta.get(), a.get(),
                                      bm.get(), cm.get(), skipOrNull, x.batch,
                                      x.length, x.channels, x.state, out.get());
  }
  check(cudaDeviceSynchronize(), "selective scan");
  return out.read();
}

template <typename Real>
ScanCotangents<Real> deviceSelectiveScanGrad(const ScanOperands<Real> &x,
                                             const std::vector<Real> &grad) {
  const size_t tokens = size_t(x.batch * x.length);
  DeviceArray<Real> u(x.u), delta(x.delta), a(x.a), bm(x.bm), cm(x.cm), g(grad),
      du(tokens * x.channels), dDelta(tokens * x.channels),
      dA(size_t(x.channels * x.state)), dB(tokens * x.state),
      dC(tokens * x.state);
  fp::cuda::selectiveScanGrad<Real>(u.get(), delta.get(), a.get(), bm.get(),
                                    cm.get(), g.get(), x.batch, x.length,
                                    x.channels, x.state, du.get(), dDelta.get(),
                                    dA.get(), dB.get(), dC.get());
  check(cudaDeviceSynchronize(), "selective scan's cotangents");
  return {du.read(), dDelta.read(), dA.read(), dB.read(), dC.read()};
}

std::string deviceScanChoice(int64_t pairs) {
  return nameOf(fp::cuda::detail::chooseScanKernel<float>(pairs));
}

template std::vector<float> deviceSelectiveScan(const std::string &,
                                                const ScanOperands<float> &);
template std::vector<double> deviceSelectiveScan(const std::string &,
                                                 const ScanOperands<double> &);
template std::vector<fp::bf16>
deviceSelectiveScan(const std::string &, const ScanOperands<fp::bf16> &);

template ScanCotangents<float>
deviceSelectiveScanGrad(const ScanOperands<float> &,
                        const std::vector<float> &);
template ScanCotangents<double>
deviceSelectiveScanGrad(const ScanOperands<double> &,
                        const std::vector<double> &);
template ScanCotangents<fp::bf16>
deviceSelectiveScanGrad(const ScanOperands<fp::bf16> &,
                        const std::vector<fp::bf16> &);

} // namespace fp::rt::test
