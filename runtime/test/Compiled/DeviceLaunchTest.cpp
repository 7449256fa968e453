//===- DeviceLaunchTest.cpp - Fused-kernel launches at every scratch size -===//
//
// fp::cuda::forEachToken and forEachSample put a fused kernel's scratch in
// shared memory where the device allows it and in global memory beyond. A
// launch may have 48 KiB of shared memory, static and dynamic together,
// unless the kernel is opted in to more, and a kernel's block reductions
// have static shared memory: a scratch of exactly 48 KiB needs the opt-in
// too. This test runs a kernel that fills its whole scratch and sums it
// with a block reduction (LaunchCheck.h) at scratch sizes on both sides of
// each limit, in f32 and f64, one block per token and one per sample, and
// checks every token's sum and where its scratch was. The inputs are small
// integers, so every sum is exact in either type and in any order. And
// fp::cuda::Scope gives its cuBLAS handle the call's math mode (TF32 or
// exact f32), nested scopes included.
//
// Runs where a CUDA device is present; built where LibTorch has CUDA.
//
//===----------------------------------------------------------------------===//

#include "LaunchCheck.h"
#include "SolverCheck.h"
#include "TestSeed.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace fp::rt::test {
namespace {

struct ScratchCase {
  std::string name;
  bool f64;
  int64_t scratch; // values of the arithmetic type
  bool inShared;   // where the scratch must be
};

std::ostream &operator<<(std::ostream &os, const ScratchCase &c) {
  return os << c.name;
}

class ScratchLaunch : public ::testing::TestWithParam<ScratchCase> {
protected:
  void SetUp() override {
    if (!haveCudaDevice())
      GTEST_SKIP() << "no CUDA device";
  }
};

TEST_P(ScratchLaunch, EveryTokenSumsItsWholeScratch) {
  const ScratchCase &c = GetParam();
  constexpr int64_t kBatch = 3, kLength = 5, kWidth = 37;
  std::mt19937_64 random(fp::test::testSeed());
  std::uniform_int_distribution<int> draw(-3, 3);
  std::vector<double> in(size_t(kBatch * kLength * kWidth));
  for (double &x : in)
    x = draw(random);

  for (bool perSample : {false, true}) {
    SCOPED_TRACE(perSample ? "forEachSample" : "forEachToken");
    std::vector<double> expected;
    for (int64_t b = 0; b < kBatch; ++b) {
      double running = 0;
      for (int64_t t = 0; t < kLength; ++t) {
        const double *x = in.data() + (b * kLength + t) * kWidth;
        double sum = 0;
        for (int64_t i = 0; i < c.scratch; ++i)
          sum += x[i % kWidth] * double(i % 7 + 1);
        running += sum;
        expected.push_back(perSample ? running : sum);
      }
    }
    const LaunchOutcome got = runScratchKernel(c.f64, perSample, kBatch,
                                               kLength, kWidth, c.scratch, in);
    EXPECT_EQ(got.values, expected);
    EXPECT_EQ(got.inShared, std::vector<bool>(expected.size(), c.inShared))
        << "scratch of " << c.scratch << " values in "
        << (c.inShared ? "shared" : "global") << " memory expected";
  }
}

// A call's allow_tf32 reaches cuBLAS through fp::cuda::Scope, nested
// scopes keep or change it, and the outer handle's mode comes back.
TEST(ScopeMathMode, FollowsTheInnermostScope) {
  if (!haveCudaDevice())
    GTEST_SKIP() << "no CUDA device";
  EXPECT_EQ(scopeTF32Modes(),
            (std::vector<bool>{true, true, true, false, true}));
}

// Sizes in bytes: 48 KiB less the reductions' static partials (2 × 32
// values) fits without the opt-in; exactly 48 KiB needs it; 100 KiB fits
// every device from sm_80 on (opt-in limits 163–227 KiB); 240 KiB fits
// none and goes to global memory.
INSTANTIATE_TEST_SUITE_P(
    Sizes, ScratchLaunch,
    ::testing::Values(ScratchCase{"f32_64B", false, 16, true},
                      ScratchCase{"f32_below_48KiB", false, 12288 - 64, true},
                      ScratchCase{"f32_48KiB", false, 12288, true},
                      ScratchCase{"f32_100KiB", false, 25600, true},
                      ScratchCase{"f32_240KiB", false, 61440, false},
                      ScratchCase{"f64_below_48KiB", true, 6144 - 64, true},
                      ScratchCase{"f64_48KiB", true, 6144, true},
                      ScratchCase{"f64_100KiB", true, 12800, true},
                      ScratchCase{"f64_240KiB", true, 30720, false}),
    [](const ::testing::TestParamInfo<ScratchCase> &info) {
      return info.param.name;
    });

} // namespace
} // namespace fp::rt::test
