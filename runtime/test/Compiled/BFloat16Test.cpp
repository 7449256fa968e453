//===- BFloat16Test.cpp - bf16 storage in the host kernels ------*- C++ -*-===//
//
// fp::bf16 (fp/Runtime/Kernels/BFloat16.h) and what the kernels do with it.
// The conversions are checked against an independent rounding rule: float
// and double round to the nearest bf16, ties to even, by comparing the
// distances to the two neighbouring bf16 values in exact double arithmetic.
//
// The kernels' contract on bf16 buffers is that they compute in float and
// round once when they store: every kernel of Host.h, HostGradients.h and
// Fused.h, run on bf16 inputs, must return bit for bit the f32 kernel's
// result on the same inputs widened to float, rounded to bf16. A sum or a
// recurrence state kept in bf16, or an intermediate value rounded on the
// way, breaks the equality. Inputs are random values (TestSeed.h's
// seed, printed).
//
//===----------------------------------------------------------------------===//

#include "TestSeed.h"
#include "fp/Runtime/Kernels/HostGradients.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using fp::bf16;

using fp::test::testSeed;

float fromBits32(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// The magnitude of the bf16 with magnitude bits `bits` (0 to 0x7f80), as a
/// double; 0x7f80 stands for 2^128, the rounding boundary beyond the largest
/// finite bf16.
double magnitudeOf(uint32_t bits) {
  if (bits >= 0x7f80u)
    return std::ldexp(1.0, 128);
  return static_cast<double>(fromBits32(bits << 16));
}

/// The bits of `value` (finite) rounded to the nearest bf16, ties to even:
/// of the two bf16 magnitudes around |value|, the nearer one, measured in
/// exact double arithmetic (the differences of values within a factor of
/// two of each other are exact).
uint16_t nearestBf16(double value) {
  const uint32_t sign = std::signbit(value) ? 0x8000u : 0u;
  const double magnitude = std::fabs(value);
  // The largest bf16 magnitude not above |value|: its float truncated.
  float truncated = static_cast<float>(magnitude);
  if (static_cast<double>(truncated) > magnitude)
    truncated = std::nextafter(truncated, 0.0f);
  uint32_t below;
  std::memcpy(&below, &truncated, sizeof below);
  below >>= 16;
  if (below >= 0x7f80u) // beyond every finite float: infinity
    return static_cast<uint16_t>(sign | 0x7f80u);
  const double down = magnitude - magnitudeOf(below);
  const double up = magnitudeOf(below + 1) - magnitude;
  const uint32_t chosen =
      down < up || (down == up && (below & 1u) == 0) ? below : below + 1;
  return static_cast<uint16_t>(sign | chosen);
}

TEST(BFloat16, FloatRoundsToNearestEven) {
  // Every 61st bit pattern, from a random start: 70 million floats of every
  // exponent, sign and rounding case.
  std::mt19937_64 rng(testSeed());
  const uint32_t stride = 61;
  int64_t checked = 0;
  for (uint64_t bits = rng() % stride; bits <= 0xffffffffu; bits += stride) {
    const float x = fromBits32(static_cast<uint32_t>(bits));
    const uint16_t got = bf16(x).bits;
    if (std::isnan(x)) {
      ASSERT_TRUE(std::isnan(float(bf16::fromBits(got)))) << "bits " << bits;
      ASSERT_EQ(got & 0x8000u, (bits >> 16) & 0x8000u) << "bits " << bits;
      continue;
    }
    ASSERT_EQ(got, nearestBf16(x)) << "x = " << x << " (bits " << bits << ")";
    ++checked;
  }
  EXPECT_GT(checked, 70000000);
}

TEST(BFloat16, RoundingCornerCases) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(bf16(0.0f).bits, 0x0000);
  EXPECT_EQ(bf16(-0.0f).bits, 0x8000);
  EXPECT_EQ(bf16(inf).bits, 0x7f80);
  EXPECT_EQ(bf16(-inf).bits, 0xff80);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to the even 1;
  // 1 + 3·2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: to 1 + 2^-6.
  EXPECT_EQ(bf16(1.0f + 0x1p-8f).bits, 0x3f80);
  EXPECT_EQ(bf16(1.0f + 3 * 0x1p-8f).bits, 0x3f82);
  // The largest float rounds to infinity; the largest finite bf16 stays.
  EXPECT_EQ(bf16(std::numeric_limits<float>::max()).bits, 0x7f80);
  EXPECT_EQ(bf16(float(bf16::fromBits(0x7f7f))).bits, 0x7f7f);
  // A float subnormal below half the smallest bf16 subnormal goes to zero.
  EXPECT_EQ(bf16(0x1p-135f).bits, 0x0000);
  EXPECT_EQ(bf16(0x1p-133f).bits, 0x0001);
}

TEST(BFloat16, WidensExactlyAndRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xffffu; ++bits) {
    const bf16 value = bf16::fromBits(static_cast<uint16_t>(bits));
    const float wide = value;
    uint32_t wideBits;
    std::memcpy(&wideBits, &wide, sizeof wideBits);
    ASSERT_EQ(wideBits, bits << 16);
    if (!std::isnan(wide)) {
      ASSERT_EQ(bf16(wide).bits, bits);
      ASSERT_EQ(bf16(static_cast<double>(wide)).bits, bits);
    }
  }
}

TEST(BFloat16, DoubleRoundsOnceToNearestEven) {
  std::mt19937_64 rng(testSeed());
  std::uniform_int_distribution<int> exponent(-140, 127);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  for (int i = 0; i < 2000000; ++i) {
    double x = std::ldexp(mantissa(rng), exponent(rng));
    if (rng() & 1)
      x = -x;
    ASSERT_EQ(bf16(x).bits, nearestBf16(x)) << "x = " << x;
  }
  // Just above and below a halfway point between bf16 neighbours: the
  // float nearest to either is the halfway point itself, whose tie would
  // round both the same way. Rounded once, they part.
  std::uniform_int_distribution<uint32_t> pattern(0x0080u, 0x7f7eu);
  for (int i = 0; i < 100000; ++i) {
    const uint32_t below = pattern(rng);
    const double low = magnitudeOf(below), high = magnitudeOf(below + 1);
    const double half = (low + high) / 2;
    const double nudge = (high - low) * 0x1p-30;
    ASSERT_EQ(bf16(half + nudge).bits, below + 1) << "x = " << half + nudge;
    ASSERT_EQ(bf16(half - nudge).bits, below) << "x = " << half - nudge;
  }
}

TEST(BFloat16, IntegersConvertExactlyOrRounded) {
  EXPECT_EQ(bf16(0).bits, bf16(0.0f).bits);
  EXPECT_EQ(bf16(3).bits, bf16(3.0f).bits);
  EXPECT_EQ(bf16(int64_t(1) << 40).bits, bf16(0x1p40f).bits);
  // 257 lies halfway between 256 and 258: ties to even, 256.
  EXPECT_EQ(float(bf16(257)), 256.0f);
  EXPECT_EQ(float(bf16(259)), 260.0f);
  EXPECT_EQ(float(bf16(int64_t(-259))), -260.0f);
}

//===----------------------------------------------------------------------===//
// Kernels: bf16 is the f32 computation rounded once
//===----------------------------------------------------------------------===//

/// Random values exactly representable in bf16, held both ways.
struct Operand {
  std::vector<bf16> narrow;
  std::vector<float> wide;
};

class BFloat16Kernels : public ::testing::Test {
protected:
  void SetUp() override { rng.seed(testSeed()); }

  /// n values of N(mean, scale²) rounded to bf16; positive ones are
  /// |N(mean, scale²)| + floor.
  Operand random(int64_t n, double scale = 1.0, double mean = 0.0,
                 double floor = -1.0) {
    std::normal_distribution<double> normal(mean, scale);
    Operand operand;
    for (int64_t i = 0; i < n; ++i) {
      double value = normal(rng);
      if (floor >= 0)
        value = std::fabs(value) + floor;
      operand.narrow.emplace_back(value);
      operand.wide.push_back(operand.narrow.back());
    }
    return operand;
  }

  /// Runs `kernel(out, pick)` once on bf16 buffers and once on float ones
  /// (pick(operand) selects an operand's buffer of that type) and expects
  /// every bf16 output to be the float one rounded to nearest.
  template <typename Kernel>
  void expectRoundedOnce(const char *what, int64_t outputs,
                         const Kernel &kernel) {
    std::vector<bf16> narrow(outputs, bf16::fromBits(0x7fc0));
    std::vector<float> wide(outputs, std::nanf(""));
    kernel(narrow.data(),
           [](const Operand &operand) { return operand.narrow.data(); });
    kernel(wide.data(),
           [](const Operand &operand) { return operand.wide.data(); });
    expectEqualRounded(what, narrow, wide);
  }

  static void expectEqualRounded(const char *what,
                                 const std::vector<bf16> &narrow,
                                 const std::vector<float> &wide) {
    ASSERT_EQ(narrow.size(), wide.size()) << what;
    int mismatches = 0;
    for (size_t i = 0; i < narrow.size(); ++i) {
      const uint16_t expected = bf16(wide[i]).bits;
      if (narrow[i].bits != expected && ++mismatches <= 5)
        ADD_FAILURE() << what << "[" << i << "]: bf16 " << float(narrow[i])
                      << ", f32 " << wide[i] << " rounds to "
                      << float(bf16::fromBits(expected));
    }
    EXPECT_EQ(mismatches, 0) << what << ": " << mismatches << " of "
                             << narrow.size() << " outputs differ";
  }

  std::mt19937_64 rng;
};

TEST_F(BFloat16Kernels, ElementwiseKernels) {
  const int64_t n = 1000;
  Operand x = random(n, 2.0), y = random(n, 1.0, 0.0, 0.5);
  auto unaryCase = [&](const char *what, auto op) {
    expectRoundedOnce(what, n, [&](auto *out, auto pick) {
      fp::host::unary(op, n, pick(x), out);
    });
  };
  unaryCase("exp", fp::host::Exp());
  unaryCase("silu", fp::host::Silu());
  unaryCase("sigmoid", fp::host::Sigmoid());
  unaryCase("softplus", fp::host::Softplus());
  unaryCase("tanh", fp::host::Tanh());
  expectRoundedOnce("log", n, [&](auto *out, auto pick) {
    fp::host::unary(fp::host::Log(), n, pick(y), out);
  });
  expectRoundedOnce("div", n, [&](auto *out, auto pick) {
    fp::host::binary(fp::host::Div(), n, pick(x), pick(y), out);
  });
  expectRoundedOnce("mul", n, [&](auto *out, auto pick) {
    fp::host::binary(fp::host::Mul(), n, pick(x), pick(y), out);
  });
}

TEST_F(BFloat16Kernels, LinearMapsAndProducts) {
  const int64_t rows = 37, in = 96, out = 24;
  Operand x = random(rows * in), w = random(out * in, 0.1), bias = random(out),
          gain = random(out, 1.0, 0.0, 0.1);
  expectRoundedOnce("linear", rows * out, [&](auto *result, auto pick) {
    fp::host::linear(pick(x), rows, in, pick(w), out, pick(bias), result);
  });
  expectRoundedOnce(
      "linear without bias", rows * out, [&](auto *result, auto pick) {
        using Real = std::remove_pointer_t<decltype(result)>;
        fp::host::linear(pick(x), rows, in, pick(w), out,
                         static_cast<const Real *>(nullptr), result);
      });
  // Column ranges read in place: inputs [8, 48) of x, and of w as out × in
  // (columns [16, 56)) or, transposed, as 40 rows of 24 (columns [4, 20)).
  expectRoundedOnce("linearStrided", rows * out, [&](auto *result, auto pick) {
    fp::host::linearStrided(pick(x) + 8, in, rows, 40, pick(w) + 16, in, false,
                            out, pick(bias), result);
  });
  expectRoundedOnce("linearStrided, weight transposed", rows * 16,
                    [&](auto *result, auto pick) {
                      fp::host::linearStrided(pick(x) + 8, in, rows, 40,
                                              pick(w) + 4, out, true, 16,
                                              pick(bias), result);
                    });
  expectRoundedOnce("weightNorm", out * in, [&](auto *result, auto pick) {
    fp::host::weightNorm(pick(w), pick(gain), out, in, result);
  });
  for (bool tl : {false, true})
    for (bool tr : {false, true})
      expectRoundedOnce("matmul", 6 * 16 * 16, [&](auto *result, auto pick) {
        fp::host::matmul(pick(x), pick(w), 6, 16, 16, 16, tl, tr, result);
      });
}

TEST_F(BFloat16Kernels, ReductionsAndNormalisations) {
  const int64_t rows = 19, width = 300;
  Operand x = random(rows * width, 3.0, 0.5), weight = random(width),
          bias = random(width);
  expectRoundedOnce("sumRows", rows, [&](auto *out, auto pick) {
    fp::host::sumRows(pick(x), rows, width, out);
  });
  const bool reduced[] = {true, false, true};
  const fp::host::Shape shape{3, {rows, 20, 15}};
  expectRoundedOnce("reduce sum", 20, [&](auto *out, auto pick) {
    fp::host::reduce(pick(x), shape, reduced, fp::host::Reduction::Sum, out);
  });
  expectRoundedOnce("reduce max", 20, [&](auto *out, auto pick) {
    fp::host::reduce(pick(x), shape, reduced, fp::host::Reduction::Max, out);
  });
  expectRoundedOnce("l2norm", rows * width, [&](auto *out, auto pick) {
    fp::host::l2norm(pick(x), rows, width, 1e-5f, out);
  });
  expectRoundedOnce("layerNorm", rows * width, [&](auto *out, auto pick) {
    fp::host::layerNorm(pick(x), pick(weight), pick(bias), rows, width, 1e-5f,
                        out);
  });
  expectRoundedOnce("rmsNorm", rows * width, [&](auto *out, auto pick) {
    fp::host::rmsNorm(pick(x), pick(weight), rows, width, 1e-5f, out);
  });
}

TEST_F(BFloat16Kernels, RecurrencesKeepTheirStateInFloat) {
  const int64_t batch = 3, length = 40, channels = 70, state = 16;
  const int64_t tokens = batch * length;
  Operand u = random(tokens * channels),
          delta = random(tokens * channels, 0.05, 0.0, 0.01),
          a = random(channels * state, 1.0, 0.0, 0.05),
          bm = random(tokens * state), cm = random(tokens * state),
          skip = random(channels),
          coeff = random(tokens * channels, 0.05, 0.0, 0.9);
  // a holds −A: the scan uses exp(Δ·A) with A < 0.
  for (size_t i = 0; i < a.narrow.size(); ++i) {
    a.narrow[i] = bf16(-float(a.narrow[i]));
    a.wide[i] = a.narrow[i];
  }
  expectRoundedOnce("scan", tokens * channels, [&](auto *out, auto pick) {
    fp::host::scan(pick(coeff), pick(u), batch, length, channels, false, out);
  });
  expectRoundedOnce(
      "selectiveScan", tokens * channels, [&](auto *out, auto pick) {
        fp::host::selectiveScan(pick(u), pick(delta), pick(a), pick(bm),
                                pick(cm), pick(skip), batch, length, channels,
                                state, out);
      });
  Operand weight = random(channels * 4), bias = random(channels);
  expectRoundedOnce("causalConv", tokens * channels, [&](auto *out, auto pick) {
    fp::host::causalConv(pick(u), pick(weight), pick(bias), batch, length,
                         channels, 4, out);
  });
}

TEST_F(BFloat16Kernels, GradientKernels) {
  const int64_t batch = 2, length = 9, channels = 20, state = 4;
  const int64_t tokens = batch * length;
  Operand grad = random(tokens * channels), x = random(tokens * channels);
  expectRoundedOnce("weightGrad", channels * channels,
                    [&](auto *out, auto pick) {
                      fp::host::weightGrad(pick(grad), pick(x), tokens,
                                           channels, channels, out);
                    });
  // Columns [3, 15) of grad and [5, 20) of x, read where they lie.
  expectRoundedOnce("weightGradStrided", 12 * 15, [&](auto *out, auto pick) {
    fp::host::weightGradStrided(pick(grad) + 3, channels, pick(x) + 5, channels,
                                tokens, 12, 15, out);
  });
  expectRoundedOnce("sumColumns", channels, [&](auto *out, auto pick) {
    fp::host::sumColumns(pick(x), tokens, channels, out);
  });
  expectRoundedOnce("l2normGrad", tokens * channels, [&](auto *out, auto pick) {
    fp::host::l2normGrad(pick(x), pick(grad), tokens, channels, 1e-5f, out);
  });
  // accumulate: out += in, on an output that starts at `x`.
  expectRoundedOnce("accumulate", tokens * channels, [&](auto *out, auto pick) {
    std::copy(pick(x), pick(x) + tokens * channels, out);
    fp::host::accumulate(pick(grad), tokens * channels, out);
  });
  Operand weight = random(channels * 3);
  expectRoundedOnce("causalConvGrad", tokens * channels + channels * 3,
                    [&](auto *out, auto pick) {
                      fp::host::causalConvGrad(
                          pick(x), pick(weight), pick(grad), batch, length,
                          channels, 3, out, out + tokens * channels);
                    });
  Operand delta = random(tokens * channels, 0.05, 0.0, 0.01),
          a = random(channels * state, 1.0, 0.0, 0.05),
          bm = random(tokens * state), cm = random(tokens * state);
  for (size_t i = 0; i < a.narrow.size(); ++i) {
    a.narrow[i] = bf16(-float(a.narrow[i]));
    a.wide[i] = a.narrow[i];
  }
  const int64_t sizes[] = {tokens * channels, tokens * channels,
                           channels * state, tokens * state, tokens * state};
  int64_t total = 0;
  for (int64_t size : sizes)
    total += size;
  expectRoundedOnce("selectiveScanGrad", total, [&](auto *out, auto pick) {
    auto *du = out, *dDelta = du + sizes[0], *dA = dDelta + sizes[1],
         *dB = dA + sizes[2], *dC = dB + sizes[3];
    fp::host::selectiveScanGrad(pick(x), pick(delta), pick(a), pick(bm),
                                pick(cm), pick(grad), batch, length, channels,
                                state, du, dDelta, dA, dB, dC);
  });
}

// Fused building blocks read bf16 inputs and float scratch, and write
// either: from bf16 into float they compute what the f32 block computes on
// the widened inputs, exactly; from float into bf16 they round that once.
TEST_F(BFloat16Kernels, FusedBlocksMixStorageAndScratch) {
  fp::fused::SerialTeam team;
  const int64_t rows = 4, width = 64, n = rows * width;
  Operand x = random(n, 2.0), weight = random(width), bias = random(width);
  auto check = [&](const char *what, auto block) {
    // bf16 in, float out: equal to the f32 block.
    std::vector<float> fromNarrow(n), fromWide(n);
    block(x.narrow.data(), fromNarrow.data());
    block(x.wide.data(), fromWide.data());
    EXPECT_EQ(fromNarrow, fromWide) << what << ", from bf16 into scratch";
    // float in, bf16 out: the f32 block rounded once.
    std::vector<bf16> narrow(n);
    block(x.wide.data(), narrow.data());
    expectEqualRounded(what, narrow, fromWide);
  };
  check("unary", [&](const auto *in, auto *out) {
    fp::fused::unary(team, fp::host::Silu(), n, in, out);
  });
  check("sumRows", [&](const auto *in, auto *out) {
    fp::fused::sumRows(team, in, rows, width, out);
  });
  check("l2norm", [&](const auto *in, auto *out) {
    fp::fused::l2norm(team, in, rows, width, 1e-5f, out);
  });
  check("layerNorm", [&](const auto *in, auto *out) {
    fp::fused::layerNorm(team, in, weight.narrow.data(), bias.narrow.data(),
                         rows, width, 1e-5f, out);
  });
  check("rmsNorm", [&](const auto *in, auto *out) {
    fp::fused::rmsNorm(team, in, weight.narrow.data(), rows, width, 1e-5f, out);
  });
  const int64_t extents[] = {rows, 8, 8};
  const bool reduced[] = {true, false, true};
  check("reduce", [&](const auto *in, auto *out) {
    fp::fused::reduce(team, in, 3, extents, reduced, true, out);
  });
  for (bool tr : {false, true})
    check("matmul", [&](const auto *in, auto *out) {
      fp::fused::matmul(team, in, in + 64, 2, 8, 8, 8, false, tr, out);
    });
  // One token of a selective scan: state and A in float, D may be absent.
  const int64_t channels = 64, stateSize = 4;
  Operand delta = random(channels, 0.05, 0.0, 0.01),
          a = random(channels * stateSize, 1.0, 0.0, 0.05);
  for (bool withSkip : {false, true})
    check("selectiveScanStep", [&](const auto *in, auto *out) {
      std::vector<float> state(2 * stateSize * channels, 0.0f);
      for (int step = 0; step < 3; ++step) {
        if (withSkip)
          fp::fused::selectiveScanStep(team, step == 0, state.data(), in,
                                       delta.narrow.data(), a.narrow.data(),
                                       in + 64, in + 128, weight.narrow.data(),
                                       channels, stateSize, out);
        else
          fp::fused::selectiveScanStep(team, step == 0, state.data(), in,
                                       delta.narrow.data(), a.narrow.data(),
                                       in + 64, in + 128, nullptr, channels,
                                       stateSize, out);
      }
    });
}

TEST_F(BFloat16Kernels, SolverRelaxesInFloatAndRoundsTheIterate) {
  const int64_t batch = 5, length = 7, token = 12;
  const int64_t n = batch * length * token;
  Operand y = random(n), fy = random(n);
  const fp::host::SolverSettings settings = {0.1,  0.75, 100, 1000,
                                             0.99, 0.9,  15};
  std::vector<bf16> narrow = y.narrow;
  std::vector<float> wide = y.wide;
  fp::host::Solver<bf16> narrowSolver(batch, settings, true, nullptr);
  fp::host::Solver<float> wideSolver(batch, settings, true, nullptr);
  for (int step = 0; step < 3; ++step) {
    narrowSolver.relax(narrow.data(), fy.narrow.data(), length, token);
    narrowSolver.update();
    wideSolver.relax(wide.data(), fy.wide.data(), length, token);
    wideSolver.update();
    expectEqualRounded("relaxed iterate", narrow, wide);
    // The next step starts from the stored (rounded) iterate on both sides,
    // so the residuals, in float, stay equal.
    for (int64_t i = 0; i < n; ++i)
      wide[i] = narrow[i];
  }
  std::vector<float> narrowResiduals(batch), wideResiduals(batch);
  std::vector<int32_t> narrowIterations(batch), wideIterations(batch);
  fp_solver_stats narrowStats = {narrowIterations.data(),
                                 narrowResiduals.data(), 0, 0, 0};
  fp_solver_stats wideStats = {wideIterations.data(), wideResiduals.data(), 0,
                               0, 0};
  narrowSolver.report(&narrowStats);
  wideSolver.report(&wideStats);
  EXPECT_EQ(narrowResiduals, wideResiduals);
  EXPECT_EQ(narrowIterations, wideIterations);
  EXPECT_EQ(narrowStats.steps, 3);
}

} // namespace
