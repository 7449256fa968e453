//===- DeviceScanCheck.cu - The selective scan's CUDA kernels -------------===//
//
// The CUDA half of DeviceScanTest (ScanCheck.h).
//
//===----------------------------------------------------------------------===//

#include "ScanCheck.h"

#include "fp/Runtime/Kernels/Device.cuh"

#include <stdexcept>

namespace fp::rt::test {

namespace {

void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw fp::cuda::DeviceError(std::string("DeviceScanCheck: ") + what + ": " +
                                cudaGetErrorString(status));
}

/// A device copy of a host vector, freed with it.
template <typename Real> class DeviceVector {
public:
  explicit DeviceVector(const std::vector<Real> &host) : size(host.size()) {
    if (host.empty())
      return;
    check(cudaMalloc(&data, size * sizeof(Real)), "cudaMalloc");
    check(cudaMemcpy(data, host.data(), size * sizeof(Real),
                     cudaMemcpyHostToDevice),
          "copy to the device");
  }
  DeviceVector(const DeviceVector &) = delete;
  DeviceVector &operator=(const DeviceVector &) = delete;
  ~DeviceVector() { (void)cudaFree(data); }

  Real *get() const { return data; }
  std::vector<Real> toHost() const {
    std::vector<Real> host(size);
    check(cudaMemcpy(host.data(), data, size * sizeof(Real),
                     cudaMemcpyDeviceToHost),
          "copy to the host");
    return host;
  }

private:
  size_t size;
  Real *data = nullptr;
};

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
  DeviceVector<Real> u(x.u), delta(x.delta), a(x.a), bm(x.bm), cm(x.cm),
      skip(x.skip),
      out(std::vector<Real>(x.batch * x.length * x.channels, Real(0)));
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
  return out.toHost();
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

} // namespace fp::rt::test
