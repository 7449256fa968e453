//===- DeviceScanTest.cpp - The selective scan's CUDA kernels -------------===//
//
// fp::cuda::selectiveScan runs one of four kernels for N ≤ 16 states (one
// thread per channel, loading one or four tokens ahead; four or sixteen
// lanes per channel, HostKernelsTest runs their steps on the host), chosen
// by how many threads the (sample, channel) pairs make. The compiled
// layer's split schedule and the eager reference both call it. This test
// runs every kernel, and the automatic choice, against fp::host's scan in
// f64 on the same inputs (rounded to the call's type first), on fresh
// random problems (the seed is printed): short and long sequences, lengths
// across the lanes' groups of tokens, states that leave lanes empty, a
// grid of more blocks than a launch has (the kernels' grid-stride loops),
// config LM's 16 × 1536 pairs, with and without the skip term; f32, f64
// and bf16. The scan's cotangents (fp::cuda::selectiveScanGrad, both
// sides' backward) run against fp::host's in f64 the same way.
//
// Runs where a CUDA device is present; built where LibTorch has CUDA.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"
#include "ScanCheck.h"
#include "SolverCheck.h"

#include "fp/Runtime/Kernels/BFloat16.h"
#include "fp/Runtime/Kernels/Host.h"
#include "fp/Runtime/Kernels/HostGradients.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace fp::rt::test {
namespace {

using fp::test::testSeed;

class DeviceScan : public ::testing::Test {
protected:
  void SetUp() override {
    if (!haveCudaDevice())
      GTEST_SKIP() << "no CUDA device";
  }
};

struct Shape {
  int64_t batch, length, channels, state;
  bool skip;
};

/// Operands as Mamba's: u, B, C and D normal, Δ in [0.01, 1), A in
/// (−4, −0.04].
ScanOperands<double> drawOperands(const Shape &shape, std::mt19937_64 &rng) {
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> positive(0.01, 1.0);
  ScanOperands<double> x;
  x.batch = shape.batch;
  x.length = shape.length;
  x.channels = shape.channels;
  x.state = shape.state;
  const int64_t tokens = shape.batch * shape.length;
  auto draw = [&](std::vector<double> &v, int64_t n, auto &dist, double k) {
    v.resize(n);
    for (double &value : v)
      value = k * dist(rng);
  };
  draw(x.u, tokens * shape.channels, normal, 1.0);
  draw(x.delta, tokens * shape.channels, positive, 1.0);
  draw(x.a, shape.channels * shape.state, positive, -4.0);
  draw(x.bm, tokens * shape.state, normal, 1.0);
  draw(x.cm, tokens * shape.state, normal, 1.0);
  if (shape.skip)
    draw(x.skip, shape.channels, normal, 1.0);
  return x;
}

template <typename Real>
std::vector<Real> convert(const std::vector<double> &v) {
  std::vector<Real> out;
  out.reserve(v.size());
  for (double value : v)
    out.push_back(Real(value));
  return out;
}

template <typename Real> std::vector<double> widen(const std::vector<Real> &v) {
  std::vector<double> out;
  out.reserve(v.size());
  for (const Real &value : v)
    out.push_back(double(float(value)));
  return out;
}
template <> std::vector<double> widen(const std::vector<double> &v) {
  return v;
}

template <typename Real> ScanOperands<Real> as(const ScanOperands<double> &x) {
  ScanOperands<Real> y;
  y.batch = x.batch;
  y.length = x.length;
  y.channels = x.channels;
  y.state = x.state;
  y.u = convert<Real>(x.u);
  y.delta = convert<Real>(x.delta);
  y.a = convert<Real>(x.a);
  y.bm = convert<Real>(x.bm);
  y.cm = convert<Real>(x.cm);
  y.skip = convert<Real>(x.skip);
  return y;
}

/// fp::host's scan in f64 of the operands as `Real` holds them.
template <typename Real>
std::vector<double> exactScan(const ScanOperands<Real> &x) {
  auto u = widen(x.u), delta = widen(x.delta), a = widen(x.a), bm = widen(x.bm),
       cm = widen(x.cm), skip = widen(x.skip);
  std::vector<double> out(x.batch * x.length * x.channels);
  fp::host::selectiveScan<double>(u.data(), delta.data(), a.data(), bm.data(),
                                  cm.data(),
                                  skip.empty() ? nullptr : skip.data(), x.batch,
                                  x.length, x.channels, x.state, out.data());
  return out;
}

/// The largest |y − exact| / (1 + |exact|).
double worstError(const std::vector<double> &y,
                  const std::vector<double> &exact) {
  double worst = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    const double error = std::fabs(y[i] - exact[i]) / (1 + std::fabs(exact[i]));
    worst = std::isnan(error) ? INFINITY : std::max(worst, error);
  }
  return worst;
}

/// Every kernel `kernels` names on `shape` in Real, against the exact scan
/// of the same operands, within `tolerance`.
template <typename Real>
void checkKernels(const std::vector<std::string> &kernels,
                  const std::vector<Shape> &shapes, double tolerance) {
  std::mt19937_64 rng(testSeed());
  for (const Shape &shape : shapes) {
    const ScanOperands<Real> x = as<Real>(drawOperands(shape, rng));
    const std::vector<double> exact = exactScan(x);
    for (const std::string &kernel : kernels) {
      SCOPED_TRACE(kernel + " at B " + std::to_string(shape.batch) + ", T " +
                   std::to_string(shape.length) + ", d " +
                   std::to_string(shape.channels) + ", N " +
                   std::to_string(shape.state) +
                   (shape.skip ? ", with D" : ""));
      const std::vector<double> y = widen(deviceSelectiveScan(kernel, x));
      EXPECT_LE(worstError(y, exact), tolerance);
    }
  }
}

/// Lengths across the lanes' groups of 4 and 16 tokens, a state count that
/// leaves lanes without states, one past 16 (the shared-memory kernel,
/// whatever is asked), and a long sequence.
const std::vector<Shape> kSmallShapes = {
    {2, 1, 5, 16, true},     {3, 7, 70, 16, false},  {2, 16, 33, 16, true},
    {2, 37, 64, 6, true},    {1, 21, 130, 1, false}, {2, 9, 40, 17, true},
    {2, 2048, 96, 16, true},
};

/// f32 against the exact scan: over 2048 tokens the host's f32 scan (e^x
/// within 1 ulp) reached 5.1e-6 on five draws of kSmallShapes' longest
/// shape; CUDA's expf is within 2 ulp and lanes sum y in another order.
constexpr double kF32Tolerance = 3e-5;

TEST_F(DeviceScan, EveryKernelMatchesTheHostInF32) {
  checkKernels<float>({"channel", "ahead", "lanes4", "lanes16", "auto"},
                      kSmallShapes, kF32Tolerance);
}

TEST_F(DeviceScan, EveryKernelMatchesTheHostInF64) {
  checkKernels<double>({"channel", "lanes4", "lanes16", "auto"}, kSmallShapes,
                       1e-12);
}

TEST_F(DeviceScan, EveryKernelMatchesTheHostInBf16) {
  // The output rounded to bf16 (a relative 2⁻⁸ at most; 3.7e-3 of
  // 1 + |y| on those draws) over f32 arithmetic on the same bf16 operands.
  checkKernels<fp::bf16>({"channel", "ahead", "lanes4", "lanes16", "auto"},
                         kSmallShapes, 5e-3);
}

TEST_F(DeviceScan, KernelsCoverLargeGrids) {
  // Config LM's pairs (16 samples × 1536 channels, at 256 of its 2048
  // tokens), and 640 000 pairs: 10.2 million threads of sixteen lanes,
  // more blocks than one launch has.
  std::cout << "[  choice  ] config LM's 24576 pairs: "
            << deviceScanChoice(16 * 1536)
            << "; 640000 pairs: " << deviceScanChoice(640000) << std::endl;
  checkKernels<float>({"channel", "lanes4", "lanes16", "auto"},
                      {{16, 256, 1536, 16, true}, {640, 2, 1000, 16, false}},
                      kF32Tolerance);
  // More pairs than one launch of one thread per pair covers (65 536
  // blocks of 64: 4 194 304): 4200 × 1024, its grid-stride loop.
  checkKernels<float>({"channel", "ahead"}, {{4200, 2, 1024, 16, false}},
                      kF32Tolerance);
}

/// fp::host's cotangents in f64 of the operands and `grad` as `Real`
/// holds them.
template <typename Real>
ScanCotangents<double> exactScanGrad(const ScanOperands<Real> &x,
                                     const std::vector<Real> &grad) {
  auto u = widen(x.u), delta = widen(x.delta), a = widen(x.a), bm = widen(x.bm),
       cm = widen(x.cm), g = widen(grad);
  const size_t tokens = size_t(x.batch * x.length);
  ScanCotangents<double> d{std::vector<double>(tokens * x.channels),
                           std::vector<double>(tokens * x.channels),
                           std::vector<double>(size_t(x.channels * x.state)),
                           std::vector<double>(tokens * x.state),
                           std::vector<double>(tokens * x.state)};
  fp::host::selectiveScanGrad<double>(
      u.data(), delta.data(), a.data(), bm.data(), cm.data(), g.data(), x.batch,
      x.length, x.channels, x.state, d.du.data(), d.delta.data(), d.a.data(),
      d.bm.data(), d.cm.data());
  return d;
}

/// selectiveScanGrad on CUDA in Real on each shape (its skip term unused)
/// with a normal cotangent of the output, every cotangent against the
/// exact ones of the same operands within `tolerance` (of 1 + |exact|).
template <typename Real>
void checkCotangents(const std::vector<Shape> &shapes, double tolerance) {
  std::mt19937_64 rng(testSeed());
  std::normal_distribution<double> normal;
  for (const Shape &shape : shapes) {
    const ScanOperands<Real> x = as<Real>(drawOperands(shape, rng));
    std::vector<double> drawn(
        size_t(shape.batch * shape.length * shape.channels));
    for (double &value : drawn)
      value = normal(rng);
    const std::vector<Real> grad = convert<Real>(drawn);
    const ScanCotangents<double> exact = exactScanGrad(x, grad);
    const ScanCotangents<Real> d = deviceSelectiveScanGrad(x, grad);
    SCOPED_TRACE("B " + std::to_string(shape.batch) + ", T " +
                 std::to_string(shape.length) + ", d " +
                 std::to_string(shape.channels) + ", N " +
                 std::to_string(shape.state));
    EXPECT_LE(worstError(widen(d.du), exact.du), tolerance) << "du";
    EXPECT_LE(worstError(widen(d.delta), exact.delta), tolerance) << "dΔ";
    EXPECT_LE(worstError(widen(d.a), exact.a), tolerance) << "dA";
    EXPECT_LE(worstError(widen(d.bm), exact.bm), tolerance) << "dB";
    EXPECT_LE(worstError(widen(d.cm), exact.cm), tolerance) << "dC";
  }
}

/// kSmallShapes' (N = 16 and fewer in registers, 17 in shared memory;
/// channels past the last warp's), and several warps and samples whose
/// partial sums of dB and dC are added after.
const std::vector<Shape> kGradShapes = {
    {2, 1, 5, 16, false},     {3, 7, 70, 16, false},     {2, 16, 33, 16, false},
    {2, 37, 64, 6, false},    {1, 21, 130, 1, false},    {2, 9, 40, 17, false},
    {2, 2048, 96, 16, false}, {16, 64, 1536, 16, false},
};

/// f32 against the exact cotangents: the host's f32 selectiveScanGrad
/// reached 1.1e-4 on three draws of kGradShapes (dA over 2048 tokens: sums
/// of 4096 terms, up to 3000 in size), 5e-5 on the others; CUDA's expf is
/// within 2 ulp where the host's is within 1.
constexpr double kF32GradTolerance = 1e-3;

/// bf16: each cotangent rounded once (2⁻⁸ of its value at most; the host
/// reached 3.8e-3 of 1 + |exact| on the same draws) over f32 arithmetic.
constexpr double kBf16GradTolerance = 5e-3;

TEST_F(DeviceScan, CotangentsMatchTheHostInF32) {
  checkCotangents<float>(kGradShapes, kF32GradTolerance);
}

TEST_F(DeviceScan, CotangentsMatchTheHostInF64) {
  checkCotangents<double>(kGradShapes, 1e-10);
}

TEST_F(DeviceScan, CotangentsMatchTheHostInBf16) {
  checkCotangents<fp::bf16>(kGradShapes, kBf16GradTolerance);
}

/// More warps of channels than one launch has (kMaxBlocks blocks of two
/// warps: 131 072): 4200 samples of 1024 channels are 134 400, so the
/// warps of the grid's first blocks take a second sample.
TEST_F(DeviceScan, CotangentsCoverMoreWarpsThanTheGridHas) {
  checkCotangents<float>({{4200, 2, 1024, 16, false}}, kF32GradTolerance);
}

TEST_F(DeviceScan, RejectsUnknownKernels) {
  std::mt19937_64 rng(testSeed());
  const ScanOperands<double> x = drawOperands({1, 3, 4, 16, false}, rng);
  EXPECT_THROW(deviceSelectiveScan("lanes8", x), std::invalid_argument);
  // f64 has no four-token kernel (its registers would spill).
  EXPECT_THROW(deviceSelectiveScan("ahead", x), std::runtime_error);
  // FP_SCAN_KERNEL forces the choice; a value it does not know is an error.
  ::setenv("FP_SCAN_KERNEL", "lanes8", 1);
  EXPECT_THROW(deviceSelectiveScan("auto", x), std::invalid_argument);
  ::setenv("FP_SCAN_KERNEL", "lanes16", 1);
  EXPECT_EQ(deviceScanChoice(1), "lanes16");
  ::unsetenv("FP_SCAN_KERNEL");
}

} // namespace
} // namespace fp::rt::test
