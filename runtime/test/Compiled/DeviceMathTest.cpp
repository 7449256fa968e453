//===- DeviceMathTest.cpp - Scalar functions as CUDA kernels compute them -===//
//
// e^x in single precision is CUDA's expf in the CUDA units of model
// libraries (Common.h) and the host's polynomial elsewhere; `fpc
// --no-cuda-expf` puts the polynomial on the device too. This test checks,
// as HostKernelsTest checks the host's, that the device's e^x is within
// 2 ulp of the exact value on every 257th float (about 16.7 million, of
// every exponent, from a fresh offset) and at the special values, and that
// the polynomial compiled for the device gives the host's results bit for
// bit.
//
// Runs where a CUDA device is present; built where LibTorch has CUDA.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"
#include "MathCheck.h"
#include "SolverCheck.h"

#include "fp/Runtime/Kernels/Common.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <vector>

namespace fp::rt::test {
namespace {

using fp::test::testSeed;
using fp::test::ulpsFrom;

class DeviceMath : public ::testing::Test {
protected:
  void SetUp() override {
    if (!haveCudaDevice())
      GTEST_SKIP() << "no CUDA device";
  }
};

/// Every 257th finite float from a fresh offset below 257.
std::vector<float> sampledFloats() {
  constexpr uint32_t kStride = 257;
  std::mt19937_64 rng(testSeed());
  std::vector<float> values;
  values.reserve(uint64_t(1) << 24);
  for (uint64_t bits = rng() % kStride; bits <= 0xffffffffu; bits += kStride) {
    const auto pattern = static_cast<uint32_t>(bits);
    float x;
    std::memcpy(&x, &pattern, sizeof x);
    if (std::isfinite(x))
      values.push_back(x);
  }
  return values;
}

TEST_F(DeviceMath, ExpIsWithinTwoUlpOnAllFloatsSampled) {
  const std::vector<float> x = sampledFloats();
  const std::vector<float> got = deviceExp(x);
  ASSERT_EQ(got.size(), x.size());
  double worst = 0;
  float worstInput = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double exact = std::exp(static_cast<double>(x[i]));
    if (exact > std::numeric_limits<float>::max()) {
      ASSERT_EQ(got[i], std::numeric_limits<float>::infinity())
          << "x = " << x[i];
      continue;
    }
    const double error = ulpsFrom(got[i], exact);
    if (!(error <= worst)) {
      worst = error;
      worstInput = x[i];
    }
  }
  std::cout << "[ accuracy ] " << x.size() << " floats on the device, worst "
            << worst << " ulp at x = " << worstInput << std::endl;
  EXPECT_LE(worst, 2.0) << "at x = " << worstInput;
  EXPECT_GT(x.size(), 16000000u);
}

TEST_F(DeviceMath, ExpHandlesSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {0.0f,    -0.0f,  inf,     -inf,         89.0f,
                                -104.0f, 88.72f, -100.0f, std::nanf("")};
  const std::vector<float> got = deviceExp(x);
  ASSERT_EQ(got.size(), x.size());
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], 1.0f);
  EXPECT_EQ(got[2], inf);
  EXPECT_EQ(got[3], 0.0f);
  EXPECT_EQ(got[4], inf);
  EXPECT_EQ(got[5], 0.0f);
  // The largest finite result and a subnormal one.
  EXPECT_LE(ulpsFrom(got[6], std::exp(double(88.72f))), 2.0);
  EXPECT_GT(got[7], 0.0f);
  EXPECT_LE(ulpsFrom(got[7], std::exp(double(-100.0f))), 2.0);
  EXPECT_TRUE(std::isnan(got[8]));
}

TEST_F(DeviceMath, TheHostsExpOnTheDeviceIsTheHostsBitForBit) {
  std::vector<float> x = sampledFloats();
  const float inf = std::numeric_limits<float>::infinity();
  x.insert(x.end(), {inf, -inf, 89.0f, -104.0f, -100.0f});
  const std::vector<float> got = deviceHostExp(x);
  ASSERT_EQ(got.size(), x.size());
  int64_t differing = 0;
  float firstInput = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float expected = fp::host::exp(x[i]);
    if (std::memcmp(&got[i], &expected, sizeof expected) != 0 &&
        differing++ == 0)
      firstInput = x[i];
  }
  EXPECT_EQ(differing, 0) << "of " << x.size()
                          << " floats, first at x = " << firstInput;
}

} // namespace
} // namespace fp::rt::test
