//===- HostKernelsTest.cpp - Kernels of generated host code -----*- C++ -*-===//
//
// The kernels in fp/Runtime/Kernels/Host.h that are not a transcription of
// one PyTorch call: the single-precision exponential, the channel-blocked
// selective scan, the batched small matmul and the broadcast fast paths. Each
// is compared with a direct evaluation in double precision on fresh random
// inputs (the seed is printed).
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Kernels/Host.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <random>

namespace {

uint64_t freshSeed() {
  uint64_t seed = std::random_device{}();
  std::cout << "[   seed   ] " << seed << std::endl;
  return seed;
}

/// The distance from `value` to `exact`, in units of the float spacing at
/// `exact` rounded to float.
double ulpsFrom(float value, double exact) {
  float rounded = static_cast<float>(exact);
  double spacing = std::nextafter(std::fabs(rounded),
                                  std::numeric_limits<float>::infinity()) -
                   std::fabs(rounded);
  return std::fabs(static_cast<double>(value) - exact) / spacing;
}

TEST(HostKernels, ExpIsWithinOneUlpOnAllFloatsSampled) {
  // Every 257th bit pattern: about 16.7 million floats of every exponent.
  const uint32_t stride = 257;
  std::mt19937_64 rng(freshSeed());
  const uint32_t start = static_cast<uint32_t>(rng() % stride);
  double worst = 0;
  float worstInput = 0;
  int64_t checked = 0;
  for (uint64_t bits = start; bits <= 0xffffffffu; bits += stride) {
    uint32_t pattern = static_cast<uint32_t>(bits);
    float x;
    std::memcpy(&x, &pattern, sizeof x);
    if (!std::isfinite(x))
      continue;
    double exact = std::exp(static_cast<double>(x));
    float value = fp::host::exp(x);
    ++checked;
    if (exact > std::numeric_limits<float>::max()) {
      ASSERT_EQ(value, std::numeric_limits<float>::infinity()) << "x = " << x;
      continue;
    }
    double error = ulpsFrom(value, exact);
    if (error > worst) {
      worst = error;
      worstInput = x;
    }
  }
  std::cout << "[ accuracy ] " << checked << " floats, worst " << worst
            << " ulp at x = " << worstInput << std::endl;
  EXPECT_LE(worst, 1.0) << "at x = " << worstInput;
  EXPECT_GT(checked, 16000000);
}

TEST(HostKernels, ExpHandlesSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fp::host::exp(0.0f), 1.0f);
  EXPECT_EQ(fp::host::exp(-0.0f), 1.0f);
  EXPECT_EQ(fp::host::exp(inf), inf);
  EXPECT_EQ(fp::host::exp(-inf), 0.0f);
  EXPECT_EQ(fp::host::exp(89.0f), inf);
  EXPECT_EQ(fp::host::exp(-104.0f), 0.0f);
  EXPECT_TRUE(std::isnan(fp::host::exp(std::nanf(""))));
  // The largest finite result and a subnormal one.
  EXPECT_LE(ulpsFrom(fp::host::exp(88.72f), std::exp(double(88.72f))), 1.0);
  EXPECT_GT(fp::host::exp(-100.0f), 0.0f);
  EXPECT_LE(ulpsFrom(fp::host::exp(-100.0f), std::exp(double(-100.0f))), 1.0);
}

/// S_t = exp(Δ_t A) ⊙ S_{t−1} + (Δ_t u_t) B_t, y_t = S_t C_t + D u_t,
/// evaluated one channel at a time.
std::vector<double>
directScan(const std::vector<double> &u, const std::vector<double> &delta,
           const std::vector<double> &a, const std::vector<double> &bm,
           const std::vector<double> &cm, const double *skip, int64_t batch,
           int64_t length, int64_t channels, int64_t state) {
  std::vector<double> out(batch * length * channels);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < channels; ++i) {
      std::vector<double> s(state, 0.0);
      for (int64_t t = 0; t < length; ++t) {
        int64_t bt = b * length + t, at = bt * channels + i;
        double y = 0;
        for (int64_t n = 0; n < state; ++n) {
          s[n] = std::exp(delta[at] * a[i * state + n]) * s[n] +
                 delta[at] * u[at] * bm[bt * state + n];
          y += s[n] * cm[bt * state + n];
        }
        out[at] = y + (skip ? skip[i] * u[at] : 0.0);
      }
    }
  return out;
}

TEST(HostKernels, SelectiveScanMatchesTheDirectRecurrence) {
  std::mt19937_64 rng(freshSeed());
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> positive(0.01, 1.0);
  // Channel counts below, at and across the kernel's block of 64.
  for (int64_t channels : {5, 64, 70, 130})
    for (int64_t state : {1, 16, 17})
      for (bool withSkip : {false, true}) {
        const int64_t batch = 2, length = 6;
        const int64_t tokens = batch * length;
        std::vector<double> u(tokens * channels), delta(tokens * channels),
            a(channels * state), bm(tokens * state), cm(tokens * state),
            skip(channels);
        for (double &v : u)
          v = normal(rng);
        for (double &v : delta)
          v = positive(rng);
        for (double &v : a)
          v = -positive(rng) * 4;
        for (double &v : bm)
          v = normal(rng);
        for (double &v : cm)
          v = normal(rng);
        for (double &v : skip)
          v = normal(rng);
        const double *skipPtr = withSkip ? skip.data() : nullptr;
        std::vector<double> expected = directScan(
            u, delta, a, bm, cm, skipPtr, batch, length, channels, state);
        SCOPED_TRACE("channels " + std::to_string(channels) + ", state " +
                     std::to_string(state) + (withSkip ? ", skip" : ""));

        std::vector<double> out64(expected.size());
        fp::host::selectiveScan(u.data(), delta.data(), a.data(), bm.data(),
                                cm.data(), skipPtr, batch, length, channels,
                                state, out64.data());
        for (size_t k = 0; k < expected.size(); ++k)
          ASSERT_NEAR(out64[k], expected[k],
                      1e-12 * (1 + std::fabs(expected[k])))
              << "f64, element " << k;

        auto toFloat = [](const std::vector<double> &v) {
          return std::vector<float>(v.begin(), v.end());
        };
        std::vector<float> u32 = toFloat(u), delta32 = toFloat(delta),
                           a32 = toFloat(a), bm32 = toFloat(bm),
                           cm32 = toFloat(cm), skip32 = toFloat(skip);
        std::vector<float> out32(expected.size());
        fp::host::selectiveScan(u32.data(), delta32.data(), a32.data(),
                                bm32.data(), cm32.data(),
                                withSkip ? skip32.data() : nullptr, batch,
                                length, channels, state, out32.data());
        for (size_t k = 0; k < expected.size(); ++k)
          ASSERT_NEAR(out32[k], expected[k],
                      1e-5 * (1 + std::fabs(expected[k])))
              << "f32, element " << k;
      }
}

TEST(HostKernels, MatmulMatchesTheDirectSum) {
  std::mt19937_64 rng(freshSeed());
  std::normal_distribution<double> normal;
  const int64_t batch = 3, m = 5, n = 7, k = 4;
  std::vector<double> lhs(batch * m * k), rhs(batch * k * n);
  for (double &v : lhs)
    v = normal(rng);
  for (double &v : rhs)
    v = normal(rng);
  for (bool transposeLhs : {false, true})
    for (bool transposeRhs : {false, true}) {
      SCOPED_TRACE(std::string("lhs") + (transposeLhs ? "ᵀ" : "") + " · rhs" +
                   (transposeRhs ? "ᵀ" : ""));
      std::vector<double> out(batch * m * n);
      fp::host::matmul(lhs.data(), rhs.data(), batch, m, n, k, transposeLhs,
                       transposeRhs, out.data());
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double sum = 0;
            for (int64_t p = 0; p < k; ++p)
              sum += lhs[b * m * k + (transposeLhs ? p * m + i : i * k + p)] *
                     rhs[b * k * n + (transposeRhs ? j * k + p : p * n + j)];
            ASSERT_NEAR(out[(b * m + i) * n + j], sum, 1e-13)
                << "batch " << b << ", [" << i << ", " << j << "]";
          }
    }
}

TEST(HostKernels, BroadcastPlacesEveryElement) {
  std::mt19937_64 rng(freshSeed());
  std::normal_distribution<double> normal;
  const fp::host::Shape shape{3, {2, 3, 4}};
  // Leading, trailing and interior placements of the input's dimensions.
  struct Case {
    std::vector<int> dims;
  };
  for (const Case &c : {Case{{0, 1}}, Case{{1, 2}}, Case{{0, 2}}, Case{{1}},
                        Case{{}}, Case{{0, 1, 2}}}) {
    int64_t inSize = 1;
    for (int d : c.dims)
      inSize *= shape.extent[d];
    std::vector<double> in(inSize), out(shape.numElements(), 0.0);
    for (double &v : in)
      v = normal(rng);
    fp::host::broadcast(in.data(), shape, c.dims.data(),
                        static_cast<int>(c.dims.size()), out.data());
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t l = 0; l < 4; ++l) {
          const int64_t index[3] = {i, j, l};
          int64_t source = 0;
          for (int d : c.dims)
            source = source * shape.extent[d] + index[d];
          ASSERT_EQ(out[(i * 3 + j) * 4 + l], in[source])
              << "dims of size " << c.dims.size() << ", at [" << i << ", " << j
              << ", " << l << "]";
        }
  }
}

} // namespace
