//===- HostKernelsTest.cpp - Kernels of generated host code -----*- C++ -*-===//
//
// The kernels in fp/Runtime/Kernels/Host.h that are not a transcription of
// one PyTorch call: the single-precision exponential, the channel-blocked
// selective scan (and the steps of the CUDA kernels that split a channel's
// states over lanes, run on the host), the batched small matmul, the matrix
// exponential, the linear map
// of column ranges read in place and the broadcast fast paths. Each is compared
// with a direct evaluation in double precision on random inputs (the seed
// is TestSeed.h's, printed).
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Kernels/Host.h"

#include "KernelTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>
#include <limits>
#include <random>
#include <tuple>
#include <type_traits>
#include <vector>

namespace {

using fp::test::randomValues;
using fp::test::relativeDifference;
using fp::test::testSeed;
using fp::test::ulpsFrom;

TEST(HostKernels, ExpIsWithinOneUlpOnAllFloatsSampled) {
  // Every 257th bit pattern: about 16.7 million floats of every exponent.
  const uint32_t stride = 257;
  std::mt19937_64 rng(testSeed());
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

/// Steps kHalf, …, 1 of the CUDA kernels' laneTransposeSum over the
/// arrays of kLanes lanes: each lane's kept element plus its partner's
/// sent one, fp::fused::keptHalf and sentHalf as the shuffles exchange them.
template <int kHalf, int kLanes, typename C>
void halveOverLanes(C (&v)[kLanes][kLanes]) {
  if constexpr (kHalf >= 1) {
    C kept[kLanes][kHalf], sent[kLanes][kHalf];
    for (int l = 0; l < kLanes; ++l)
      for (int j = 0; j < kHalf; ++j) {
        kept[l][j] = fp::fused::keptHalf<kHalf>(v[l], l, j);
        sent[l][j] = fp::fused::sentHalf<kHalf>(v[l], l, j);
      }
    for (int l = 0; l < kLanes; ++l)
      for (int j = 0; j < kHalf; ++j)
        v[l][j] = kept[l][j] + sent[l ^ kHalf][j];
    halveOverLanes<kHalf / 2>(v);
  }
}

/// The CUDA lanes kernel (selectiveScanLanesKernel) on the host: each
/// channel's kLanes lanes (fp::fused::ScanLane) in lockstep, a group of
/// tokens at a time, their parts summed across the lanes as the shuffles
/// do and stored by the lane each token's sum lands on.
template <int kLanes, typename Real>
void lanesScan(const Real *u, const Real *delta, const Real *a, const Real *bm,
               const Real *cm, const Real *skip, int64_t batch, int64_t length,
               int64_t channels, int64_t state, Real *out) {
  using C = fp::Compute<Real>;
  using Lane = fp::fused::ScanLane<Real, 16, kLanes>;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t c = 0; c < channels; ++c) {
      std::vector<Lane> lanes;
      lanes.reserve(kLanes);
      for (int l = 0; l < kLanes; ++l)
        lanes.emplace_back(a, skip, b, c, channels, state, l, true);
      for (int64_t t0 = 0; t0 < length; t0 += kLanes) {
        C parts[kLanes][kLanes];
        for (int l = 0; l < kLanes; ++l)
          lanes[l].group(u, delta, bm, cm, skip, t0, length, parts[l]);
        halveOverLanes<kLanes / 2>(parts);
        for (int l = 0; l < kLanes; ++l)
          lanes[l].store(parts[l][0], t0, length, out);
      }
    }
}

TEST(HostKernels, LaneTransposeSumLeavesEachLaneItsSum) {
  // Small integers: every order of the additions gives the exact sum.
  std::mt19937_64 rng(testSeed());
  std::uniform_int_distribution<int> value(-1000, 1000);
  auto check = [&](auto lanesTag) {
    constexpr int kLanes = decltype(lanesTag)::value;
    double v[kLanes][kLanes], sums[kLanes] = {};
    for (int l = 0; l < kLanes; ++l)
      for (int j = 0; j < kLanes; ++j) {
        v[l][j] = value(rng);
        sums[j] += v[l][j];
      }
    halveOverLanes<kLanes / 2>(v);
    for (int l = 0; l < kLanes; ++l)
      EXPECT_EQ(v[l][0], sums[l]) << kLanes << " lanes, lane " << l;
  };
  check(std::integral_constant<int, 1>());
  check(std::integral_constant<int, 2>());
  check(std::integral_constant<int, 4>());
  check(std::integral_constant<int, 16>());
  check(std::integral_constant<int, 32>());
}

TEST(HostKernels, SelectiveScanMatchesTheDirectRecurrence) {
  std::mt19937_64 rng(testSeed());
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> positive(0.01, 1.0);
  // Channel counts below, at and across the kernel's block of 64.
  // Lengths below, at and across the channel function's groups of 4
  // tokens loaded ahead, and the lanes' groups of 4 and 16 tokens.
  for (int64_t channels : {5, 64, 70, 130})
    for (int64_t state : {1, 6, 16, 17})
      for (bool withSkip : {false, true})
        for (int64_t length : {1, 3, 6, 9, 16, 21}) {
          const int64_t batch = 2;
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
                       std::to_string(state) + (withSkip ? ", skip" : "") +
                       ", length " + std::to_string(length));

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

          // The CUDA kernel's channel function (states in registers, the
          // operands of the next kAhead tokens loaded ahead), one channel at
          // a time: the same arithmetic in the same order as the host kernel,
          // however far ahead it loads.
          if (state > 16)
            continue;
          auto byChannel = [&](auto ahead) {
            constexpr int kAhead = decltype(ahead)::value;
            SCOPED_TRACE("loading " + std::to_string(kAhead) + " ahead");
            std::vector<double> channel64(expected.size(), std::nan(""));
            std::vector<float> channel32(expected.size(), std::nanf(""));
            for (int64_t b = 0; b < batch; ++b)
              for (int64_t c = 0; c < channels; ++c) {
                fp::fused::selectiveScanChannel<16, kAhead>(
                    u.data(), delta.data(), a.data(), bm.data(), cm.data(),
                    skipPtr, b, c, length, channels, state, channel64.data());
                fp::fused::selectiveScanChannel<16, kAhead>(
                    u32.data(), delta32.data(), a32.data(), bm32.data(),
                    cm32.data(), withSkip ? skip32.data() : nullptr, b, c,
                    length, channels, state, channel32.data());
              }
            EXPECT_EQ(channel64, out64) << "f64, one channel at a time";
            EXPECT_EQ(channel32, out32) << "f32, one channel at a time";
          };
          byChannel(std::integral_constant<int, 1>());
          byChannel(std::integral_constant<int, 3>());
          byChannel(std::integral_constant<int, 4>());

          // The CUDA kernels that split a channel's states over lanes: the
          // same arithmetic per state, y summed over the lanes in another
          // order (so near, not equal to, the host kernel).
          auto byLanes = [&](auto lanesTag) {
            constexpr int kLanes = decltype(lanesTag)::value;
            SCOPED_TRACE(std::to_string(kLanes) + " lanes per channel");
            std::vector<double> lanes64(expected.size(), std::nan(""));
            std::vector<float> lanes32(expected.size(), std::nanf(""));
            lanesScan<kLanes>(u.data(), delta.data(), a.data(), bm.data(),
                              cm.data(), skipPtr, batch, length, channels,
                              state, lanes64.data());
            lanesScan<kLanes>(u32.data(), delta32.data(), a32.data(),
                              bm32.data(), cm32.data(),
                              withSkip ? skip32.data() : nullptr, batch, length,
                              channels, state, lanes32.data());
            for (size_t k = 0; k < expected.size(); ++k) {
              ASSERT_NEAR(lanes64[k], expected[k],
                          1e-12 * (1 + std::fabs(expected[k])))
                  << "f64, element " << k;
              ASSERT_NEAR(lanes32[k], expected[k],
                          1e-5 * (1 + std::fabs(expected[k])))
                  << "f32, element " << k;
            }
          };
          byLanes(std::integral_constant<int, 4>());
          byLanes(std::integral_constant<int, 16>());
        }
}

TEST(HostKernels, MatmulMatchesTheDirectSum) {
  std::mt19937_64 rng(testSeed());
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

/// e^A for A = R · blockdiag(θ_i [[0, −1], [1, 0]]) · Rᵀ, R = I − 2vvᵀ:
/// R · blockdiag(rotations by θ_i) · Rᵀ exactly, with |θ_i| up to 50, so
/// that matrixExp halves A six times before its series; and for a strictly
/// upper triangular N (N⁴ = 0), the finite sum I + N + N²/2 + N³/6.
TEST(HostKernels, MatrixExpOfRotationsAndNilpotents) {
  std::mt19937_64 rng(testSeed());
  std::uniform_real_distribution<double> angle(-50, 50);
  std::normal_distribution<double> normal;
  constexpr int64_t n = 8;
  auto product = [](const std::vector<double> &a, const std::vector<double> &b,
                    bool transposeB) {
    std::vector<double> c(n * n, 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t k = 0; k < n; ++k)
          c[i * n + j] +=
              a[i * n + k] * (transposeB ? b[j * n + k] : b[k * n + j]);
    return c;
  };
  std::vector<double> v(n);
  double norm = 0;
  for (double &e : v) {
    e = normal(rng);
    norm += e * e;
  }
  std::vector<double> reflection(n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      reflection[i * n + j] = (i == j ? 1.0 : 0.0) - 2 * v[i] * v[j] / norm;
  std::vector<double> generator(n * n, 0.0), rotation(n * n, 0.0);
  for (int64_t b = 0; b < n / 2; ++b) {
    const double theta = angle(rng);
    const int64_t i = 2 * b, j = i + 1;
    generator[i * n + j] = -theta;
    generator[j * n + i] = theta;
    rotation[i * n + i] = rotation[j * n + j] = std::cos(theta);
    rotation[i * n + j] = -std::sin(theta);
    rotation[j * n + i] = std::sin(theta);
  }
  const std::vector<double> a =
      product(product(reflection, generator, false), reflection, true);
  const std::vector<double> expected =
      product(product(reflection, rotation, false), reflection, true);

  std::vector<double> nilpotent(n * n, 0.0);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = i + 1; j < 4; ++j)
      nilpotent[i * n + j] = normal(rng);
  std::vector<double> series(n * n, 0.0), power = nilpotent;
  for (int64_t i = 0; i < n; ++i)
    series[i * n + i] = 1;
  for (int k = 1; k <= 3; ++k) {
    double factorial = k == 3 ? 6 : k;
    for (int64_t i = 0; i < n * n; ++i)
      series[i] += power[i] / factorial;
    power = product(power, nilpotent, false);
  }

  // f64 within 1e-12 (six squarings of a series summed to 2⁻⁵³, each
  // doubling its relative error: ~1e-14 per entry); f32 within 5e-5 (the
  // input's rounding moves θ by up to 50 · 2⁻²⁴ ≈ 3e-6, the series' 2⁻²⁴
  // doubled six times ≈ 4e-6, over sums of 8 terms); bf16 (computed in f32)
  // within 2 % of the largest entry, the input's and output's rounding
  // (2⁻⁸) through the three terms of the series.
  auto check = [&](auto zero, const std::vector<double> &input,
                   const std::vector<double> &want, double tolerance,
                   const char *what) {
    using Real = decltype(zero);
    SCOPED_TRACE(what);
    std::vector<Real> in(n * n), out(n * n);
    for (int64_t i = 0; i < n * n; ++i)
      in[i] = Real(input[i]);
    fp::host::matrixExp(in.data(), n, out.data());
    for (int64_t i = 0; i < n * n; ++i)
      ASSERT_NEAR(double(out[i]), want[i], tolerance) << "entry " << i;
  };
  check(0.0, a, expected, 1e-12, "rotations, f64");
  check(0.0f, a, expected, 5e-5, "rotations, f32");
  check(0.0, nilpotent, series, 1e-14, "nilpotent, f64");
  check(0.0f, nilpotent, series, 1e-5, "nilpotent, f32");
  check(fp::bf16(0.0f), nilpotent, series,
        0.02 * std::max(1.0, *std::max_element(series.begin(), series.end())),
        "nilpotent, bf16");
}

TEST(HostKernels, LinearReadsColumnRangesWhereTheyLie) {
  // in: columns [3, 3 + k) of a rows × 11 matrix; the weight: columns
  // [2, 2 + k) of an n × 9 matrix, or (transposed) columns [1, 1 + n) of a
  // k × 8 matrix, as fp.slice ops read in place give them.
  std::mt19937_64 rng(testSeed());
  std::normal_distribution<double> normal;
  const int64_t rows = 6, k = 5, n = 4;
  const int64_t inStride = 11, inStart = 3;
  std::vector<double> in(rows * inStride), bias(n), weights(n * 9 + k * 8);
  for (std::vector<double> *values : {&in, &bias, &weights})
    for (double &v : *values)
      v = normal(rng);
  for (bool transposed : {false, true}) {
    SCOPED_TRACE(transposed ? "weight given transposed" : "weight out × in");
    const int64_t weightStride = transposed ? 8 : 9;
    const int64_t weightStart = transposed ? 1 : 2;
    const double *weight = weights.data() + weightStart;
    std::vector<double> out(rows * n);
    fp::host::linearStrided(in.data() + inStart, inStride, rows, k, weight,
                            weightStride, transposed, n, bias.data(),
                            out.data());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < n; ++o) {
        double sum = bias[o];
        for (int64_t i = 0; i < k; ++i)
          sum +=
              in[r * inStride + inStart + i] *
              weight[transposed ? i * weightStride + o : o * weightStride + i];
        ASSERT_NEAR(out[r * n + o], sum, 1e-13) << "[" << r << ", " << o << "]";
      }
  }
}

TEST(HostKernels, CausalConvReadsColumnRangesWhereTheyLie) {
  // in: columns [2, 2 + channels) of a tokens × 9 matrix, as an fp.slice
  // read in place gives it; against the direct sum per sample.
  std::mt19937_64 rng(testSeed());
  std::normal_distribution<double> normal;
  const int64_t batch = 3, length = 7, channels = 4, width = 3;
  const int64_t inStride = 9, inStart = 2;
  std::vector<double> in(batch * length * inStride), weight(channels * width),
      bias(channels);
  for (std::vector<double> *values : {&in, &weight, &bias})
    for (double &v : *values)
      v = normal(rng);
  std::vector<double> out(batch * length * channels);
  fp::host::causalConvStrided(in.data() + inStart, inStride, weight.data(),
                              bias.data(), batch, length, channels, width,
                              out.data());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < length; ++t)
      for (int64_t c = 0; c < channels; ++c) {
        double sum = bias[c];
        for (int64_t k = 0; k < width; ++k)
          if (const int64_t s = t - width + 1 + k; s >= 0)
            sum += weight[c * width + k] *
                   in[(b * length + s) * inStride + inStart + c];
        ASSERT_NEAR(out[(b * length + t) * channels + c], sum, 1e-13)
            << "[" << b << ", " << t << ", " << c << "]";
      }
}

/// Tokens [t0, t0 + count) of every sample of a [B, T, F] buffer.
std::vector<double> tokens(const std::vector<double> &x, int64_t batch,
                           int64_t length, int64_t features, int64_t t0,
                           int64_t count) {
  std::vector<double> out(batch * count * features);
  for (int64_t b = 0; b < batch; ++b)
    std::copy_n(x.begin() + (b * length + t0) * features, count * features,
                out.begin() + b * count * features);
  return out;
}

TEST(HostKernels, ChunkedKernelsContinueTheWholeSequence) {
  // Each time-coupling kernel run on chunks of 3, 1 and 3 tokens, every
  // chunk from the state the one before left (zeros first), gives the whole
  // sequence's output bit for bit, and its last state is the whole
  // sequence's (for the scans, their last row or state).
  std::mt19937_64 rng(testSeed());
  const int64_t batch = 2, length = 7, channels = 4, state = 3, width = 3;
  const std::vector<int64_t> chunks = {3, 1, 3};
  const int64_t features = channels;
  std::vector<double> x = randomValues(rng, batch * length * features),
                      c = randomValues(rng, batch * length * features),
                      delta = randomValues(rng, batch * length * features),
                      bm = randomValues(rng, batch * length * state),
                      cm = randomValues(rng, batch * length * state),
                      a = randomValues(rng, channels * state),
                      skip = randomValues(rng, channels),
                      weight = randomValues(rng, channels * width),
                      bias = randomValues(rng, channels);
  for (double &d : delta)
    d = std::abs(d) * 0.5;
  for (double &v : a)
    v = -std::abs(v);

  // Runs `step(t0, count, in, stateIn, out, stateOut)` over the chunks.
  auto inChunks = [&](int64_t features, int64_t stateSize, auto step,
                      std::vector<double> &carried) {
    std::vector<double> out(batch * length * features);
    carried.assign(batch * stateSize, 0.0);
    int64_t t0 = 0;
    for (int64_t count : chunks) {
      std::vector<double> piece(batch * count * features), next(carried);
      step(t0, count, carried.data(), piece.data(), next.data());
      for (int64_t b = 0; b < batch; ++b)
        std::copy_n(piece.begin() + b * count * features, count * features,
                    out.begin() + (b * length + t0) * features);
      carried = next;
      t0 += count;
    }
    return out;
  };

  {
    const int64_t offset = 2;
    std::vector<double> whole(x.size()), carried;
    fp::host::shift(x.data(), batch, length, features, offset, whole.data());
    std::vector<double> chunked = inChunks(
        features, offset * features,
        [&](int64_t t0, int64_t n, const double *in, double *out, double *nx) {
          std::vector<double> part = tokens(x, batch, length, features, t0, n);
          fp::host::shiftFrom(part.data(), in, batch, n, features, offset, out,
                              nx);
        },
        carried);
    EXPECT_EQ(chunked, whole) << "shiftFrom";
    EXPECT_EQ(carried,
              tokens(x, batch, length, features, length - offset, offset))
        << "shiftFrom's state";
  }
  {
    std::vector<double> whole(x.size()), carried;
    fp::host::scan(c.data(), x.data(), batch, length, features, false,
                   whole.data());
    std::vector<double> chunked = inChunks(
        features, features,
        [&](int64_t t0, int64_t n, const double *in, double *out, double *nx) {
          std::vector<double> cp = tokens(c, batch, length, features, t0, n),
                              xp = tokens(x, batch, length, features, t0, n);
          fp::host::scanFrom(cp.data(), xp.data(), in, batch, n, features, out,
                             nx);
        },
        carried);
    EXPECT_EQ(chunked, whole) << "scanFrom";
    EXPECT_EQ(carried, tokens(whole, batch, length, features, length - 1, 1))
        << "scanFrom's state";
  }
  {
    std::vector<double> whole(x.size()), last(batch * channels * state),
        carried;
    fp::host::selectiveScanFrom(x.data(), delta.data(), a.data(), bm.data(),
                                cm.data(), skip.data(), nullptr, batch, length,
                                channels, state, whole.data(), last.data());
    std::vector<double> chunked = inChunks(
        features, channels * state,
        [&](int64_t t0, int64_t n, const double *in, double *out, double *nx) {
          std::vector<double> up = tokens(x, batch, length, features, t0, n),
                              dp =
                                  tokens(delta, batch, length, features, t0, n),
                              bp = tokens(bm, batch, length, state, t0, n),
                              cp = tokens(cm, batch, length, state, t0, n);
          fp::host::selectiveScanFrom(up.data(), dp.data(), a.data(), bp.data(),
                                      cp.data(), skip.data(), in, batch, n,
                                      channels, state, out, nx);
        },
        carried);
    EXPECT_EQ(chunked, whole) << "selectiveScanFrom";
    EXPECT_EQ(carried, last) << "selectiveScanFrom's state";
  }
  {
    // The input a column range of a wider matrix, read in place.
    const int64_t inStride = 6, inStart = 1;
    std::vector<double> wide = randomValues(rng, batch * length * inStride);
    std::vector<double> whole(batch * length * channels), carried;
    fp::host::causalConvStrided(wide.data() + inStart, inStride, weight.data(),
                                bias.data(), batch, length, channels, width,
                                whole.data());
    std::vector<double> chunked = inChunks(
        features, (width - 1) * features,
        [&](int64_t t0, int64_t n, const double *in, double *out, double *nx) {
          std::vector<double> part =
              tokens(wide, batch, length, inStride, t0, n);
          fp::host::causalConvFrom(part.data() + inStart, inStride, in,
                                   weight.data(), bias.data(), batch, n,
                                   channels, width, out, nx);
        },
        carried);
    EXPECT_EQ(chunked, whole) << "causalConvFrom";
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t r = 0; r < width - 1; ++r)
        for (int64_t ch = 0; ch < channels; ++ch)
          EXPECT_EQ(carried[(b * (width - 1) + r) * channels + ch],
                    wide[(b * length + length - width + 1 + r) * inStride +
                         inStart + ch])
              << "causalConvFrom's state [" << b << ", " << r << ", " << ch
              << "]";
  }
}

TEST(HostKernels, BroadcastPlacesEveryElement) {
  std::mt19937_64 rng(testSeed());
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

//===----------------------------------------------------------------------===//
// Fused building blocks (Fused.h) against the unfused kernels
//===----------------------------------------------------------------------===//

/// The `cols` × `rows` transpose of a row-major `rows` × `cols` matrix.
template <typename Real>
std::vector<Real> transposed(const std::vector<Real> &m, int64_t rows,
                             int64_t cols) {
  std::vector<Real> t(m.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      t[j * rows + i] = m[i * cols + j];
  return t;
}

// With the host's one-thread team every fused function computes each
// element in the unfused kernel's order, so the results are identical: a
// kernel fused by fp-fuse-mix-scan computes what the ops did one by one.
TEST(HostKernels, FusedRowFunctionsEqualTheUnfusedKernels) {
  std::mt19937_64 rng(testSeed());
  const int64_t rows = 6, width = 24;
  std::vector<double> x = randomValues(rng, rows * width);
  std::vector<double> w = randomValues(rng, width),
                      b = randomValues(rng, width);
  std::vector<double> whole(rows * width), fused(rows * width);
  fp::fused::SerialTeam team;
  auto perRow = [&](auto fn) {
    for (int64_t r = 0; r < rows; ++r)
      fn(r);
  };

  fp::host::l2norm(x.data(), rows, width, 1e-12, whole.data());
  perRow([&](int64_t r) {
    fp::fused::l2norm(team, x.data() + r * width, 1, width, 1e-12,
                      fused.data() + r * width);
  });
  EXPECT_EQ(whole, fused) << "l2norm";

  fp::host::layerNorm(x.data(), w.data(), b.data(), rows, width, 1e-5,
                      whole.data());
  // Two rows per token.
  for (int64_t r = 0; r < rows; r += 2)
    fp::fused::layerNorm(team, x.data() + r * width, w.data(), b.data(), 2,
                         width, 1e-5, fused.data() + r * width);
  EXPECT_EQ(whole, fused) << "layerNorm";

  fp::host::rmsNorm(x.data(), w.data(), rows, width, 1e-5, whole.data());
  perRow([&](int64_t r) {
    fp::fused::rmsNorm(team, x.data() + r * width, w.data(), 1, width, 1e-5,
                       fused.data() + r * width);
  });
  EXPECT_EQ(whole, fused) << "rmsNorm";

  std::vector<double> sums(rows), fusedSums(rows);
  fp::host::sumRows(x.data(), rows, width, sums.data());
  perRow([&](int64_t r) {
    fp::fused::sumRows(team, x.data() + r * width, 1, width,
                       fusedSums.data() + r);
  });
  EXPECT_EQ(sums, fusedSums) << "sumRows";

  // Per token two 3x4 by 4x3 products (width 24 = 2 · 12).
  std::vector<double> products(rows * 18), fusedProducts(rows * 18);
  fp::host::matmul(x.data(), x.data(), rows * 2, 3, 3, 4, false, true,
                   products.data());
  perRow([&](int64_t r) {
    fp::fused::matmul(team, x.data() + r * width, x.data() + r * width, 2, 3, 3,
                      4, false, true, fusedProducts.data() + r * 18);
  });
  EXPECT_EQ(products, fusedProducts) << "matmul";

  // 21 packed entries per token: a 6x6 upper triangle (first 21 columns).
  std::vector<double> packed(rows * 21), triangles(rows * 36),
      fusedTriangles(rows * 36);
  fp::host::sliceColumns(x.data(), rows, width, 0, 21, packed.data());
  fp::host::triu(packed.data(), rows, 6, triangles.data());
  perRow([&](int64_t r) {
    std::vector<double> token(21);
    fp::fused::slice(team, x.data() + r * width, 1, width, 0, 21, token.data());
    fp::fused::triu(team, token.data(), 1, 6, fusedTriangles.data() + r * 36);
  });
  EXPECT_EQ(triangles, fusedTriangles) << "slice + triu";

  // A parameter of 4 broadcast to 6x4 per token (trailing), and 6 per-token
  // values to 6x4 (leading).
  fp::host::Shape out{3, {rows, 6, 4}};
  const int trailing[] = {2}, leading[] = {0, 1};
  std::vector<double> spread(rows * 24), fusedSpread(rows * 24);
  for (const auto &[dims, inRank, tokenInput] :
       {std::tuple{trailing, 1, false}, std::tuple{leading, 2, true}}) {
    fp::host::broadcast(x.data(), out, dims, inRank, spread.data());
    const bool perToken = tokenInput;
    const int64_t tokenExtents[] = {6, 4};
    perRow([&](int64_t r) {
      const int tokenDims[] = {perToken ? 0 : 1};
      fp::fused::broadcast(team, x.data() + (perToken ? r * 6 : 0), 2,
                           tokenExtents, tokenDims, 1,
                           fusedSpread.data() + r * 24);
    });
    EXPECT_EQ(spread, fusedSpread) << "broadcast, per token " << perToken;
  }

  // A shifted read: the 6 rows are 2 samples of 3 tokens, read 1 and 2
  // tokens back and 1 ahead, with zeros outside each sample.
  for (int64_t offset : {1, 2, -1}) {
    std::fill(whole.begin(), whole.end(), 7.0);
    std::fill(fused.begin(), fused.end(), 7.0);
    fp::host::shift(x.data(), 2, 3, width, offset, whole.data());
    perRow([&](int64_t r) {
      fp::fused::shifted(team, x.data(), r, r % 3, 3, offset, width,
                         fused.data() + r * width);
    });
    EXPECT_EQ(whole, fused) << "shifted by " << offset;
  }
}

// The per-token matrix products in f32 too, in every transpose: they sum in
// the element type in the unfused kernel's order, so a fused Kronecker or
// Monarch mixer computes what the unfused one does.
TEST(HostKernels, FusedMatmulEqualsTheUnfusedKernelInF32) {
  std::mt19937_64 rng(testSeed());
  const int64_t tokens = 5, pairs = 3, m = 4, n = 16, k = 16;
  std::vector<double> values = randomValues(rng, tokens * pairs * 2 * 16 * 16);
  std::vector<float> lhs(values.begin(),
                         values.begin() + tokens * pairs * m * k);
  std::vector<float> rhs(values.begin() + tokens * pairs * m * k,
                         values.begin() + tokens * pairs * (m * k + k * n));
  fp::fused::SerialTeam team;
  for (bool transposeLhs : {false, true}) {
    for (bool transposeRhs : {false, true}) {
      std::vector<float> whole(tokens * pairs * m * n),
          fused(tokens * pairs * m * n);
      fp::host::matmul(lhs.data(), rhs.data(), tokens * pairs, m, n, k,
                       transposeLhs, transposeRhs, whole.data());
      for (int64_t t = 0; t < tokens; ++t)
        fp::fused::matmul(team, lhs.data() + t * pairs * m * k,
                          rhs.data() + t * pairs * k * n, pairs, m, n, k,
                          transposeLhs, transposeRhs,
                          fused.data() + t * pairs * m * n);
      EXPECT_EQ(whole, fused)
          << "transpose lhs " << transposeLhs << ", rhs " << transposeRhs;
    }
  }
}

TEST(HostKernels, FusedScanStepsEqualTheUnfusedScans) {
  std::mt19937_64 rng(testSeed());
  const int64_t batch = 3, length = 5, channels = 70, state = 4;
  const int64_t tokens = batch * length;
  std::vector<double> u = randomValues(rng, tokens * channels);
  std::vector<double> delta = randomValues(rng, tokens * channels);
  for (double &d : delta)
    d = std::fabs(d) / 4;
  std::vector<double> a = randomValues(rng, channels * state);
  std::vector<double> bm = randomValues(rng, tokens * state);
  std::vector<double> cm = randomValues(rng, tokens * state);
  std::vector<double> skip = randomValues(rng, channels);

  std::vector<double> whole(tokens * channels), fused(tokens * channels);
  fp::host::selectiveScan(u.data(), delta.data(), a.data(), bm.data(),
                          cm.data(), skip.data(), batch, length, channels,
                          state, whole.data());
  fp::fused::SerialTeam team;
  // A as it is, and transposed (fp-transpose-scan-a).
  const std::vector<double> at = transposed(a, channels, state);
  auto selective = [&](auto aTransposed) {
    constexpr bool kTransposed = decltype(aTransposed)::value;
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<double> st(2 * state * channels, 0.0);
      for (int64_t t = 0; t < length; ++t) {
        int64_t row = b * length + t;
        fp::fused::selectiveScanStep<kTransposed>(
            team, t == 0, st.data(), u.data() + row * channels,
            delta.data() + row * channels, kTransposed ? at.data() : a.data(),
            bm.data() + row * state, cm.data() + row * state, skip.data(),
            channels, state, fused.data() + row * channels);
      }
    }
    EXPECT_EQ(whole, fused) << "selective scan, A transposed " << kTransposed;
  };
  selective(std::false_type{});
  selective(std::true_type{});

  fp::host::scan(delta.data(), u.data(), batch, length, channels, false,
                 whole.data());
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<double> h(channels, 0.0);
    for (int64_t t = 0; t < length; ++t) {
      int64_t row = b * length + t;
      fp::fused::scanStep(team, h.data(), delta.data() + row * channels,
                          u.data() + row * channels, channels,
                          fused.data() + row * channels);
    }
  }
  EXPECT_EQ(whole, fused) << "scan";
}

/// One member of a team of `Threads` threads: the rank a device thread
/// would have, so that a test runs a team's members one after the other.
template <int Threads> struct MemberOfTeam {
  int member;
  int rank() const { return member; }
  static constexpr int size() { return Threads; }
  void sync() const {}
};

/// The state of a selective scan that CUDA threads keep in registers
/// (ScanRegisters): every member of a team, with channels left over for
/// the last ones, with and without D, computes the unfused scan exactly,
/// in f32 and f64. The registers start as NaN: the first step must reset
/// them.
template <typename Real> void checkScanInRegisters(uint64_t seed) {
  std::mt19937_64 rng(seed);
  constexpr int64_t channels = 70, state = 4;
  constexpr int threads = 32;
  const int64_t batch = 3, length = 5, tokens = batch * length;
  auto draw = [&](int64_t n) {
    std::vector<double> drawn = randomValues(rng, n);
    return std::vector<Real>(drawn.begin(), drawn.end());
  };
  std::vector<Real> u = draw(tokens * channels),
                    delta = draw(tokens * channels);
  for (Real &d : delta)
    d = std::fabs(d) / 4;
  std::vector<Real> a = draw(channels * state), bm = draw(tokens * state),
                    cm = draw(tokens * state), skip = draw(channels);
  using Registers = fp::fused::ScanRegisters<Real, channels, state, threads>;
  static_assert(Registers::kPerThread == 3);
  const Real *const skips[] = {skip.data(), nullptr};
  const std::vector<Real> at = transposed(a, channels, state);
  // A as it is, and transposed (fp-transpose-scan-a).
  auto withA = [&](auto aTransposed) {
    constexpr bool kTransposed = decltype(aTransposed)::value;
    for (const Real *d : skips) {
      std::vector<Real> whole(tokens * channels),
          fused(tokens * channels, std::numeric_limits<Real>::quiet_NaN());
      fp::host::selectiveScan(u.data(), delta.data(), a.data(), bm.data(),
                              cm.data(), d, batch, length, channels, state,
                              whole.data());
      for (int member = 0; member < threads; ++member) {
        MemberOfTeam<threads> team{member};
        Registers registers;
        for (auto &channel : registers.s)
          std::fill(std::begin(channel), std::end(channel),
                    std::numeric_limits<Real>::quiet_NaN());
        for (int64_t b = 0; b < batch; ++b) {
          for (int64_t t = 0; t < length; ++t) {
            int64_t row = b * length + t;
            fp::fused::selectiveScanStep<kTransposed>(
                team, t == 0, registers, u.data() + row * channels,
                delta.data() + row * channels,
                kTransposed ? at.data() : a.data(), bm.data() + row * state,
                cm.data() + row * state, d, fused.data() + row * channels);
          }
        }
      }
      EXPECT_EQ(whole, fused)
          << (d ? "with D" : "without D") << ", A transposed " << kTransposed;
    }
  };
  withA(std::false_type{});
  withA(std::true_type{});
}

TEST(HostKernels, ScanStateInRegistersEqualsTheUnfusedScan) {
  checkScanInRegisters<double>(testSeed());
  checkScanInRegisters<float>(testSeed());
}

/// Chunked execution (Fused.h): for every sample, the carries of all its
/// chunks but the last from summary steps, then every chunk with its scans
/// started from the carries before it, as the launchers do. `summary(row,
/// first, state)`, `save(state, carry)`, `load(state, carries, count)` and
/// `step(row, t, state)` are one scan's; `stateSize` and `carrySize` its
/// sizes.
template <typename Summary, typename Save, typename Load, typename Step>
void runInChunks(int64_t batch, int64_t length, int64_t chunks,
                 int64_t stateSize, int64_t carrySize, const Summary &summary,
                 const Save &save, const Load &load, const Step &step) {
  const int64_t span = (length + chunks - 1) / chunks;
  chunks = (length + span - 1) / span;
  std::vector<double> carries(chunks * carrySize), state(stateSize);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t k = 0; k + 1 < chunks; ++k) {
      std::fill(state.begin(), state.end(), 0.0);
      for (int64_t t = k * span; t < (k + 1) * span; ++t)
        summary(b * length + t, t == k * span, state.data());
      save(state.data(), carries.data() + k * carrySize);
    }
    for (int64_t k = 0; k < chunks; ++k) {
      std::fill(state.begin(), state.end(), 0.0);
      if (k > 0)
        load(state.data(), carries.data(), k);
      for (int64_t t = k * span; t < std::min(length, (k + 1) * span); ++t)
        step(b * length + t, t, state.data());
    }
  }
}

TEST(HostKernels, ScansInChunksEqualTheSequentialScans) {
  // Each sample's tokens split into 2, 3 and (one per token) 11 chunks:
  // fp.scan, and the selective scan with its state in memory and in the
  // registers of every member of a 32-thread team (3 channels per member,
  // the last ones short), match the sequential host scans to rounding (f64).
  std::mt19937_64 rng(testSeed());
  constexpr int64_t channels = 70, stateSize = 4;
  constexpr int threads = 32;
  const int64_t batch = 2, length = 11, tokens = batch * length;
  std::vector<double> u = randomValues(rng, tokens * channels),
                      delta = randomValues(rng, tokens * channels),
                      a = randomValues(rng, channels * stateSize),
                      bm = randomValues(rng, tokens * stateSize),
                      cm = randomValues(rng, tokens * stateSize),
                      skip = randomValues(rng, channels);
  for (double &d : delta)
    d = std::fabs(d) / 4;
  for (double &x : a)
    x = -std::fabs(x);
  std::vector<double> coeff = randomValues(rng, tokens * channels);
  for (double &c : coeff)
    c /= 2;

  std::vector<double> selective(tokens * channels), plain(tokens * channels);
  fp::host::selectiveScan(u.data(), delta.data(), a.data(), bm.data(),
                          cm.data(), skip.data(), batch, length, channels,
                          stateSize, selective.data());
  fp::host::scan(coeff.data(), u.data(), batch, length, channels, false,
                 plain.data());

  fp::fused::SerialTeam serial;
  for (int64_t chunks : {2, 3, 11}) {
    SCOPED_TRACE("chunks " + std::to_string(chunks));
    std::vector<double> out(tokens * channels, 0.0);
    runInChunks(
        batch, length, chunks, 2 * channels, 2 * channels,
        [&](int64_t row, bool first, double *state) {
          fp::fused::scanSummaryStep(serial, first, state,
                                     coeff.data() + row * channels,
                                     u.data() + row * channels, channels);
        },
        [&](const double *state, double *carry) {
          fp::fused::saveScanCarry(serial, state, channels, carry);
        },
        [&](double *state, const double *carries, int64_t count) {
          fp::fused::loadScanCarry(serial, state, channels, carries,
                                   2 * channels, count);
        },
        [&](int64_t row, int64_t, double *state) {
          fp::fused::scanStep(serial, state, coeff.data() + row * channels,
                              u.data() + row * channels, channels,
                              out.data() + row * channels);
        });
    EXPECT_LE(relativeDifference(out, plain), 1e-13) << "fp.scan";

    const int64_t states = stateSize * channels, carrySize = states + channels;
    const std::vector<double> at = transposed(a, channels, stateSize);
    // A as it is, and transposed (fp-transpose-scan-a).
    auto selectiveInChunks = [&](auto aTransposed) {
      constexpr bool kTransposed = decltype(aTransposed)::value;
      const double *matrix = kTransposed ? at.data() : a.data();
      std::fill(out.begin(), out.end(), 0.0);
      runInChunks(
          batch, length, chunks, 2 * states + channels, carrySize,
          [&](int64_t row, bool first, double *state) {
            fp::fused::selectiveScanSummaryStep<kTransposed>(
                serial, first, state, u.data() + row * channels,
                delta.data() + row * channels, matrix,
                bm.data() + row * stateSize, channels, stateSize);
          },
          [&](const double *state, double *carry) {
            fp::fused::saveSelectiveScanCarry(serial, state, channels,
                                              stateSize, carry);
          },
          [&](double *state, const double *carries, int64_t count) {
            fp::fused::loadSelectiveScanCarry<kTransposed>(
                serial, state, matrix, channels, stateSize, carries, carrySize,
                count);
          },
          [&](int64_t row, int64_t t, double *state) {
            fp::fused::selectiveScanStep<kTransposed>(
                serial, t == 0, state, u.data() + row * channels,
                delta.data() + row * channels, matrix,
                bm.data() + row * stateSize, cm.data() + row * stateSize,
                skip.data(), channels, stateSize, out.data() + row * channels);
          });
      EXPECT_LE(relativeDifference(out, selective), 1e-13)
          << "selective scan, state in memory, A transposed " << kTransposed;

      using Registers =
          fp::fused::ScanRegisters<double, channels, stateSize, threads>;
      std::vector<double> fromRegisters(tokens * channels, 0.0),
          memory(states, std::numeric_limits<double>::quiet_NaN());
      for (int member = 0; member < threads; ++member) {
        MemberOfTeam<threads> team{member};
        Registers registers;
        for (auto &channel : registers.s)
          std::fill(std::begin(channel), std::end(channel),
                    std::numeric_limits<double>::quiet_NaN());
        std::fill(std::begin(registers.sumDelta), std::end(registers.sumDelta),
                  std::numeric_limits<double>::quiet_NaN());
        runInChunks(
            batch, length, chunks, 0, carrySize,
            [&](int64_t row, bool first, double *) {
              fp::fused::selectiveScanSummaryStep<kTransposed>(
                  team, first, registers, u.data() + row * channels,
                  delta.data() + row * channels, matrix,
                  bm.data() + row * stateSize);
            },
            [&](const double *, double *carry) {
              fp::fused::saveSelectiveScanCarry(team, registers, carry);
            },
            [&](double *, const double *carries, int64_t count) {
              fp::fused::loadSelectiveScanCarry<kTransposed>(
                  team, registers, memory.data(), matrix, carries, carrySize,
                  count);
            },
            [&](int64_t row, int64_t t, double *) {
              fp::fused::selectiveScanStep<kTransposed>(
                  team, t == 0, registers, u.data() + row * channels,
                  delta.data() + row * channels, matrix,
                  bm.data() + row * stateSize, cm.data() + row * stateSize,
                  skip.data(), fromRegisters.data() + row * channels);
            });
      }
      EXPECT_LE(relativeDifference(fromRegisters, selective), 1e-13)
          << "selective scan, state in registers, A transposed " << kTransposed;
    };
    selectiveInChunks(std::false_type{});
    selectiveInChunks(std::true_type{});
  }
}

TEST(HostKernels, TimeChunksFillOneRoundOfTeams) {
  using fp::host::kMinChunkTokens;
  using fp::host::timeChunks;
  if (std::getenv("FP_TIME_CHUNKS"))
    GTEST_SKIP() << "FP_TIME_CHUNKS is set and overrides the choice";
  // Config LM (B = 16, T = 2048) on 132 SMs at two blocks and at one block
  // per SM: one round of teams each. 17 and 9 chunks would start a second.
  EXPECT_EQ(timeChunks(16, 2048, 264), 16);
  EXPECT_EQ(timeChunks(16, 2048, 132), 8);
  // Chunks of at least kMinChunkTokens tokens.
  EXPECT_EQ(timeChunks(1, 2048, 264), 2048 / kMinChunkTokens);
  EXPECT_EQ(timeChunks(1, 2 * kMinChunkTokens - 1, 264), 1);
  for (int64_t parallel : {1, 2, 8, 132, 264, 528}) {
    for (int64_t batch = 1; batch <= 600; ++batch) {
      for (int64_t length : {1, 17, 127, 128, 2048, 100000}) {
        const int64_t chunks = timeChunks(batch, length, parallel);
        SCOPED_TRACE(::testing::Message()
                     << "batch " << batch << ", length " << length << ", "
                     << parallel << " teams: " << chunks << " chunks");
        ASSERT_GE(chunks, 1);
        if (chunks > 1) {
          EXPECT_LE(batch * chunks, parallel);
          EXPECT_GE(length / chunks, kMinChunkTokens);
        }
        // The most chunks that keep to one round and to the chunk length.
        EXPECT_TRUE(batch * (chunks + 1) > parallel ||
                    length / (chunks + 1) < kMinChunkTokens);
      }
    }
  }
}

/// The residual of `y` against `fy` for sample `b` of [B, T, F] data: the
/// largest relative inf-norm distance over its tokens (docs/spec.md §3.2).
double residualOf(const std::vector<double> &y, const std::vector<double> &fy,
                  int64_t b, int64_t length, int64_t features) {
  double worst = 0;
  for (int64_t t = 0; t < length; ++t) {
    double diff = 0, scale = 0;
    for (int64_t f = 0; f < features; ++f) {
      const int64_t i = (b * length + t) * features + f;
      diff = std::max(diff, std::fabs(y[i] - fy[i]));
      scale = std::max(scale, std::fabs(fy[i]));
    }
    worst = std::max(worst, diff / (scale + 1e-8));
  }
  return worst;
}

TEST(HostKernels, SolverRelaxesEveryIterateWithOneStepSize) {
  // Two iterates of different token sizes, one step: both are relaxed with
  // η = relax_start, and the step's residual (reported as the best so far)
  // is the larger of their residuals, per sample.
  std::mt19937_64 rng(testSeed());
  std::normal_distribution<double> normal;
  const int64_t batch = 3, length = 4, wide = 5, narrow = 2;
  auto randomVector = [&](int64_t n) {
    std::vector<double> v(n);
    for (double &x : v)
      x = normal(rng);
    return v;
  };
  std::vector<double> a = randomVector(batch * length * wide);
  std::vector<double> fa = randomVector(batch * length * wide);
  std::vector<double> c = randomVector(batch * length * narrow);
  std::vector<double> fc = randomVector(batch * length * narrow);
  const std::vector<double> a0 = a, c0 = c;

  const fp::host::SolverSettings settings = {0.1, 0.75, 10, 10, 0.7, 0.9, 2};
  fp::host::Solver<double> solver(batch, settings, /*training=*/true,
                                  /*overrides=*/nullptr);
  ASSERT_TRUE(solver.shouldContinue());
  solver.relax(a.data(), fa.data(), length, wide);
  solver.relax(c.data(), fc.data(), length, narrow);
  solver.update();

  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_DOUBLE_EQ(a[i], 0.7 * fa[i] + (1 - 0.7) * a0[i]) << "a[" << i << "]";
  for (size_t i = 0; i < c.size(); ++i)
    ASSERT_DOUBLE_EQ(c[i], 0.7 * fc[i] + (1 - 0.7) * c0[i]) << "c[" << i << "]";

  std::vector<int32_t> iterations(batch);
  std::vector<float> residuals(batch);
  fp_solver_stats stats = {iterations.data(), residuals.data(), 0, 0, 0};
  solver.report(&stats);
  EXPECT_EQ(stats.steps, 1);
  for (int64_t b = 0; b < batch; ++b) {
    const double expected = std::max(residualOf(a0, fa, b, length, wide),
                                     residualOf(c0, fc, b, length, narrow));
    EXPECT_FLOAT_EQ(residuals[b], static_cast<float>(expected))
        << "sample " << b;
    EXPECT_EQ(iterations[b], 2) << "sample " << b;
  }
}

/// Solves y = 0.5 y + 1 + poison[b] per sample from y = 0 with the host
/// solver in evaluation mode; returns the statistics.
struct PoisonedSolve {
  std::vector<int32_t> iterations;
  std::vector<float> residuals;
  int32_t steps = 0;
  std::vector<double> y;
};
PoisonedSolve solvePoisoned(const std::vector<double> &poison) {
  const int64_t batch = int64_t(poison.size()), length = 3, features = 2;
  const int64_t perSample = length * features;
  PoisonedSolve result;
  result.y.assign(size_t(batch * perSample), 0.0);
  std::vector<double> fy(result.y.size());
  const fp::host::SolverSettings settings = {0.1,  0.75, 100, 1000,
                                             0.99, 0.9,  15};
  fp::host::Solver<double> solver(batch, settings, /*training=*/false,
                                  /*overrides=*/nullptr);
  solver.loop([&] {
    for (size_t i = 0; i < fy.size(); ++i)
      fy[i] = 0.5 * result.y[i] + 1.0 + poison[i / size_t(perSample)];
    solver.relaxAndUpdate(result.y.data(), fy.data(), length, features);
  });
  result.iterations.resize(size_t(batch));
  result.residuals.resize(size_t(batch));
  fp_solver_stats stats = {result.iterations.data(), result.residuals.data(), 0,
                           0, 0};
  solver.report(&stats);
  result.steps = stats.steps;
  return result;
}

TEST(HostKernels, SolverCountsNonFiniteSamplesAsDiverged) {
  // Samples 1 and 3 meet NaN and infinity: their ρ* is NaN; the evaluation
  // rule (q = 1) reads the finite samples only, which are solved exactly as
  // they are without the others, rather than the solve stopping after one
  // step on a residual that std::max passed over.
  const double inf = std::numeric_limits<double>::infinity();
  PoisonedSolve some = solvePoisoned({0.0, std::nan(""), 0.0, inf});
  PoisonedSolve clean = solvePoisoned({0.0, 0.0});
  EXPECT_GT(some.steps, 2);
  EXPECT_EQ(some.steps, clean.steps);
  for (int64_t b : {0, 2}) {
    EXPECT_EQ(some.residuals[size_t(b)], clean.residuals[size_t(b / 2)])
        << "sample " << b;
    EXPECT_LT(some.residuals[size_t(b)], 0.1) << "sample " << b;
    for (size_t i = 0; i < 6; ++i)
      EXPECT_EQ(some.y[size_t(b) * 6 + i], clean.y[size_t(b / 2) * 6 + i])
          << "sample " << b;
  }
  EXPECT_TRUE(std::isnan(some.residuals[1]));
  EXPECT_TRUE(std::isnan(some.residuals[3]));

  // With every sample diverged the solve stops after its first step.
  PoisonedSolve all = solvePoisoned({std::nan(""), inf});
  EXPECT_EQ(all.steps, 1);
  EXPECT_TRUE(std::isnan(all.residuals[0]));
  EXPECT_TRUE(std::isnan(all.residuals[1]));
}

TEST(HostKernels, SolverClearsTheResidualBetweenSteps) {
  // A second step whose residual is smaller than the first's improves the
  // best residual to exactly it: the first step's residual does not carry
  // over into the second's maximum.
  std::mt19937_64 rng(testSeed());
  std::normal_distribution<double> normal;
  const int64_t batch = 2, length = 3, features = 4;
  std::vector<double> y(batch * length * features), fy(y.size());
  for (double &v : y)
    v = normal(rng);
  for (size_t i = 0; i < fy.size(); ++i)
    fy[i] = 10 * y[i] + normal(rng); // far from y: a large first residual
  const fp::host::SolverSettings settings = {1e-9, 1.0, 10, 10, 1.0, 0.9, 3};
  fp::host::Solver<double> solver(batch, settings, true, nullptr);
  solver.relax(y.data(), fy.data(), length, features);
  solver.update();
  // With η = 1, y is now fy; a nearby second target gives a small residual.
  std::vector<double> second = y;
  for (double &v : second)
    v += 1e-3 * normal(rng);
  const std::vector<double> before = y;
  solver.relax(y.data(), second.data(), length, features);
  solver.update();
  std::vector<float> residuals(batch);
  fp_solver_stats stats = {nullptr, residuals.data(), 0, 0, 0};
  solver.report(&stats);
  EXPECT_EQ(stats.steps, 2);
  for (int64_t b = 0; b < batch; ++b)
    EXPECT_FLOAT_EQ(residuals[b], static_cast<float>(residualOf(
                                      before, second, b, length, features)))
        << "sample " << b;
}

} // namespace
