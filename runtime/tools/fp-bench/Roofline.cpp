//===- Roofline.cpp - A solver step against the machine's ceilings -------===//
//
// Measures the ceilings and prints a step's cost (Roofline.h).
//
//===----------------------------------------------------------------------===//

#include "Roofline.h"

#include <fmt/format.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>

using namespace fp::bench;

namespace {

/// The fastest of `runs` calls of `work`, in seconds, after one untimed
/// call; the device is synchronised around each.
double fastest(const torch::Device &device, int runs,
               const std::function<void()> &work) {
  auto synchronize = [&] {
    if (device.is_cuda())
      torch::cuda::synchronize(device.index());
  };
  work();
  synchronize();
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    work();
    synchronize();
    auto stop = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double>(stop - start).count());
  }
  return best;
}

} // namespace

Ceilings fp::bench::measureCeilings(const torch::Device &device,
                                    torch::Dtype dtype) {
  torch::NoGradGuard noGrad;
  const auto options = torch::TensorOptions().dtype(dtype).device(device);
  const int64_t elementBytes = int64_t(torch::elementSize(dtype));
  Ceilings ceilings;
  // A GPU's last-level cache holds tens of MiB, a CPU's a few.
  ceilings.copyBytes = device.is_cuda() ? int64_t(1) << 30 : int64_t(1) << 28;
  {
    torch::Tensor source =
        torch::ones({ceilings.copyBytes / elementBytes}, options);
    torch::Tensor target = torch::empty_like(source);
    double seconds = fastest(
        device, 5, [&] { target.copy_(source, /*non_blocking=*/true); });
    ceilings.bytesPerSecond = 2.0 * double(ceilings.copyBytes) / seconds;
  }
  ceilings.gemmSize = device.is_cuda() ? 8192 : 1024;
  {
    const int64_t n = ceilings.gemmSize;
    torch::Tensor a = torch::randn({n, n}, options);
    torch::Tensor b = torch::randn({n, n}, options);
    torch::Tensor c = torch::empty({n, n}, options);
    double seconds = fastest(device, 3, [&] { torch::mm_out(c, a, b); });
    ceilings.flopsPerSecond = 2.0 * double(n) * double(n) * double(n) / seconds;
  }
  return ceilings;
}

StepCost fp::bench::printStepCost(const std::vector<rt::LaunchCost> &launches,
                                  int64_t batch, int64_t seqLen,
                                  int64_t elementBytes,
                                  const Ceilings *ceilings) {
  fmt::print("  {:<18} {:>12} {:>12} {:>10} {:>12}\n", "launch", "MFLOP", "MB",
             "FLOP/byte", "bound ms");
  StepCost total;
  auto bound = [&](double flops, double bytes) {
    if (!ceilings)
      return 0.0;
    return std::max(flops / ceilings->flopsPerSecond,
                    bytes / ceilings->bytesPerSecond);
  };
  auto line = [&](const std::string &name, double flops, double bytes,
                  double seconds) {
    std::string boundText =
        ceilings ? fmt::format("{:.4f}", seconds * 1e3) : std::string("-");
    std::string intensity =
        bytes > 0 ? fmt::format("{:.2f}", flops / bytes) : std::string("-");
    fmt::print("  {:<18} {:>12.3f} {:>12.3f} {:>10} {:>12}\n", name,
               flops / 1e6, bytes / 1e6, intensity, boundText);
  };
  for (const rt::LaunchCost &launch : launches) {
    double flops = launch.flops.at(batch, seqLen);
    double bytes = launch.elements.at(batch, seqLen) * double(elementBytes);
    double seconds = bound(flops, bytes);
    line(launch.op, flops, bytes, seconds);
    total.flops += flops;
    total.bytes += bytes;
    total.boundSeconds += seconds;
  }
  line(fmt::format("step ({} launches)", launches.size()), total.flops,
       total.bytes, total.boundSeconds);
  return total;
}
