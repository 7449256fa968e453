//===- Roofline.cpp - A solver step against the machine's ceilings -------===//
//
// Measures the ceilings and prints a step's cost, and totals a call's
// (Roofline.h).
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

StepCost &StepCost::add(const StepCost &other, double times) {
  flops += times * other.flops;
  bytes += times * other.bytes;
  boundSeconds += times * other.boundSeconds;
  gemmBoundSeconds += times * other.gemmBoundSeconds;
  return *this;
}

namespace {

/// The cost of one launch.
StepCost launchCostOf(const fp::rt::LaunchCost &launch, int64_t batch,
                      int64_t seqLen, int64_t elementBytes,
                      const Ceilings *ceilings) {
  StepCost cost;
  cost.flops = launch.flops.at(batch, seqLen);
  cost.bytes = launch.elements.at(batch, seqLen) * double(elementBytes);
  if (ceilings)
    cost.boundSeconds = std::max(cost.flops / ceilings->flopsPerSecond,
                                 cost.bytes / ceilings->bytesPerSecond);
  if (launch.op == "fp.linear" || launch.op == "fp.weight_grad" ||
      launch.op == "fp.matmul")
    cost.gemmBoundSeconds = cost.boundSeconds;
  return cost;
}

} // namespace

StepCost fp::bench::costOf(const std::vector<rt::LaunchCost> &launches,
                           int64_t batch, int64_t seqLen, int64_t elementBytes,
                           const Ceilings *ceilings) {
  StepCost total;
  for (const rt::LaunchCost &launch : launches)
    total.add(launchCostOf(launch, batch, seqLen, elementBytes, ceilings));
  return total;
}

StepCost fp::bench::callCostOf(const rt::CallCost &cost, const StepCost &step,
                               double steps, bool training,
                               double backwardSteps, int64_t batch,
                               int64_t seqLen, int64_t elementBytes,
                               const Ceilings *ceilings) {
  StepCost total = costOf(cost.forward, batch, seqLen, elementBytes, ceilings);
  total.add(step, steps);
  if (training) {
    total.add(costOf(cost.backward, batch, seqLen, elementBytes, ceilings));
    total.add(costOf(cost.backwardStep, batch, seqLen, elementBytes, ceilings),
              backwardSteps);
  }
  return total;
}

StepCost fp::bench::printStepCost(const std::vector<rt::LaunchCost> &launches,
                                  int64_t batch, int64_t seqLen,
                                  int64_t elementBytes,
                                  const Ceilings *ceilings) {
  fmt::print("  {:<18} {:>12} {:>12} {:>10} {:>12}\n", "launch", "MFLOP", "MB",
             "FLOP/byte", "bound ms");
  StepCost total;
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
    StepCost cost = launchCostOf(launch, batch, seqLen, elementBytes, ceilings);
    line(launch.op, cost.flops, cost.bytes, cost.boundSeconds);
    total.add(cost);
  }
  line(fmt::format("step ({} launches)", launches.size()), total.flops,
       total.bytes, total.boundSeconds);
  return total;
}
