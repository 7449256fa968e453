//===- FixedPointSolverTest.cpp - The solver's rules, one by one ----------===//
//
// Each rule of docs/spec.md §3 on hand-built inputs (quantile interpolation,
// best-so-far residuals, patience and decay, caps, the evaluation quantile),
// then whole solves compared with an independent scalar transcription of the
// spec's pseudo-code.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Reference/FixedPointSolver.h"
#include "TestSeed.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>
#include <random>

using namespace fp::rt;
using namespace fp::rt::ref;

namespace {

torch::TensorOptions f64() {
  return torch::TensorOptions().dtype(torch::kFloat64);
}

TEST(FixedPointSolver, RelativeResidualIsPerTokenInfNormMaxOverTime) {
  // One sample, two tokens, two channels.
  torch::Tensor y = torch::tensor({{{1.0, 2.0}, {0.0, 0.0}}}, f64());
  torch::Tensor fy = torch::tensor({{{1.5, 2.0}, {4.0, -8.0}}}, f64());
  // Token 0: 0.5 / 2 = 0.25; token 1: 8 / 8 = 1.
  torch::Tensor rho = relativeResidual(y, fy);
  ASSERT_EQ(rho.sizes(), torch::IntArrayRef({1}));
  EXPECT_NEAR(rho.item<double>(), 1.0 / (1.0 + 1e-8 / 8), 1e-15);
  torch::Tensor rho0 = relativeResidual(y.narrow(1, 0, 1), fy.narrow(1, 0, 1));
  EXPECT_NEAR(rho0.item<double>(), 0.5 / (2.0 + 1e-8), 1e-15);
}

TEST(FixedPointSolver, ContinuesBeforeTheFirstStep) {
  SolverConfig config;
  config.maxIterTrain = 1;
  SolverState state(3, config, f64());
  EXPECT_TRUE(state.shouldContinue(/*training=*/true, -1));
  state.record(torch::zeros({3}, f64()));
  EXPECT_FALSE(state.shouldContinue(true, -1));
}

TEST(FixedPointSolver, QuantileInterpolatesLinearly) {
  SolverConfig config;
  config.trainQuantile = 0.75;
  SolverState state(4, config, f64());
  state.record(torch::tensor({0.3, 0.05, 0.2, 0.08}, f64()));
  // Sorted 0.05 0.08 0.2 0.3: the 0.75 quantile sits at 2.25 -> 0.225.
  config.tolerance = 0.2249;
  EXPECT_TRUE(state.shouldContinue(true, -1));
  config.tolerance = 0.2251;
  EXPECT_FALSE(state.shouldContinue(true, -1));
  // Evaluation uses q = 1: the worst sample (0.3) must converge.
  config.tolerance = 0.29;
  EXPECT_TRUE(state.shouldContinue(/*training=*/false, -1));
  EXPECT_FALSE(state.shouldContinue(/*training=*/true, -1));
}

TEST(FixedPointSolver, UsesBestSoFarResiduals) {
  SolverConfig config;
  config.trainQuantile = 1.0;
  config.tolerance = 0.1;
  SolverState state(1, config, f64());
  state.record(torch::tensor({0.05}, f64()));
  state.record(torch::tensor({0.9}, f64())); // worse: the best stays 0.05
  EXPECT_DOUBLE_EQ(state.bestResidual.item<double>(), 0.05);
  EXPECT_FALSE(state.shouldContinue(true, -1));
}

TEST(FixedPointSolver, DecaysStepSizeAfterPatienceRunsOut) {
  SolverConfig config;
  config.relaxStart = 0.8;
  config.relaxDecay = 0.5;
  config.relaxPatience = 3;
  SolverState state(2, config, f64());
  // Sample 0 improves every step; sample 1 only on the first.
  std::vector<std::pair<double, double>> residuals = {
      {1.0, 1.0}, {0.9, 2.0}, {0.8, 2.0}, {0.7, 2.0},
      {0.6, 2.0}, {0.5, 2.0}, {0.4, 2.0}};
  std::vector<double> expectedEta1 = {0.8, 0.8, 0.8, 0.4, 0.4, 0.4, 0.2};
  std::vector<int64_t> expectedPatience1 = {3, 2, 1, 3, 2, 1, 3};
  for (size_t i = 0; i < residuals.size(); ++i) {
    state.record(
        torch::tensor({residuals[i].first, residuals[i].second}, f64()));
    EXPECT_DOUBLE_EQ(state.stepSize[0].item<double>(), 0.8) << "step " << i;
    EXPECT_DOUBLE_EQ(state.stepSize[1].item<double>(), expectedEta1[i])
        << "step " << i;
    EXPECT_EQ(state.patience[1].item<int64_t>(), expectedPatience1[i])
        << "step " << i;
  }
}

TEST(FixedPointSolver, StopsWhenEveryStepSizeIsTiny) {
  SolverConfig config;
  config.relaxStart = 2e-3;
  config.relaxDecay = 0.4;
  config.relaxPatience = 1;
  SolverState state(1, config, f64());
  state.record(torch::tensor({1.0}, f64())); // improves: η stays 2e-3
  EXPECT_TRUE(state.shouldContinue(true, -1));
  state.record(torch::tensor({1.0}, f64())); // patience 0: η = 8e-4
  EXPECT_FALSE(state.shouldContinue(true, -1));
}

TEST(FixedPointSolver, CapsDependOnMode) {
  SolverConfig config;
  config.maxIterTrain = 2;
  config.maxIterEval = 3;
  SolverState state(1, config, f64());
  for (int i = 0; i < 2; ++i)
    state.record(torch::tensor({1.0}, f64()));
  EXPECT_FALSE(state.shouldContinue(/*training=*/true, -1));
  EXPECT_TRUE(state.shouldContinue(/*training=*/true, /*trainCap=*/5));
  EXPECT_TRUE(state.shouldContinue(/*training=*/false, -1));
  state.record(torch::tensor({1.0}, f64()));
  EXPECT_FALSE(state.shouldContinue(/*training=*/false, -1));
}

/// The spec's algorithm for y_b ← a_b y_b + c_b on scalars, written without
/// tensors: the independent oracle for solveFixedPoint.
struct ScalarSolve {
  std::vector<double> y;
  int64_t steps = 0;
};

ScalarSolve scalarSolve(const std::vector<double> &a,
                        const std::vector<double> &c,
                        const SolverConfig &config, bool training) {
  size_t batch = a.size();
  std::vector<double> y(batch, 0.0),
      best(batch, std::numeric_limits<double>::infinity()),
      eta(batch, config.relaxStart);
  std::vector<int64_t> patience(batch, config.relaxPatience);
  int64_t steps = 0;
  auto quantile = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    double pos = q * (v.size() - 1);
    size_t lo = static_cast<size_t>(std::floor(pos));
    size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (pos - lo) * (v[hi] - v[lo]);
  };
  while (true) {
    if (steps > 0) {
      double q = training ? config.trainQuantile : 1.0;
      int64_t cap = training ? config.maxIterTrain : config.maxIterEval;
      double maxEta = *std::max_element(eta.begin(), eta.end());
      if (!(quantile(best, q) >= config.tolerance && maxEta >= 1e-3 &&
            steps < cap))
        break;
    }
    for (size_t b = 0; b < batch; ++b) {
      double fy = a[b] * y[b] + c[b];
      double rho = std::abs(y[b] - fy) / (std::abs(fy) + 1e-8);
      y[b] = eta[b] * fy + (1 - eta[b]) * y[b];
      bool improved = rho < best[b];
      best[b] = std::min(best[b], rho);
      patience[b] = improved ? config.relaxPatience : patience[b] - 1;
      if (patience[b] == 0) {
        patience[b] = config.relaxPatience;
        eta[b] *= config.relaxDecay;
      }
    }
    ++steps;
  }
  return {y, steps};
}

TEST(FixedPointSolver, MatchesScalarTranscriptionOnRandomLinearMaps) {
  std::mt19937_64 rng(fp::test::testSeed());
  std::uniform_real_distribution<double> slope(-1.3, 0.999), offset(-2, 2);
  for (int trial = 0; trial < 20; ++trial) {
    int64_t batch = 1 + trial % 7;
    std::vector<double> a(batch), c(batch);
    for (int64_t b = 0; b < batch; ++b) {
      a[b] = slope(rng);
      c[b] = offset(rng);
    }
    SolverConfig config;
    config.tolerance = 1e-3;
    config.relaxPatience = 4;
    config.maxIterTrain = 60;
    config.maxIterEval = 200;
    bool training = trial % 2 == 0;
    ScalarSolve expected = scalarSolve(a, c, config, training);

    torch::Tensor slopes = torch::tensor(a, f64()).view({batch, 1, 1});
    torch::Tensor offsets = torch::tensor(c, f64()).view({batch, 1, 1});
    SolveResult result = solveFixedPoint(
        [&](const torch::Tensor &y) { return slopes * y + offsets; },
        torch::zeros({batch, 1, 1}, f64()), config, training);
    ASSERT_EQ(result.steps, expected.steps) << "trial " << trial;
    for (int64_t b = 0; b < batch; ++b)
      EXPECT_NEAR(result.y[b].item<double>(), expected.y[b], 1e-12)
          << "trial " << trial << " sample " << b;
    EXPECT_TRUE((result.iterations == expected.steps + 1).all().item<bool>());
  }
}

TEST(FixedPointSolver, TakesAtLeastTwoStepsFromZero) {
  SolverConfig config;
  SolveResult result = solveFixedPoint(
      [](const torch::Tensor &y) { return 0.0 * y + 1.0; },
      torch::zeros({2, 3, 4}, f64()), config, /*training=*/true);
  // Step 1: ρ ≈ 1 (y⁰ = 0 against f = 1). Step 2: ρ = 0.01 < τ.
  EXPECT_EQ(result.steps, 2);
  EXPECT_TRUE((result.iterations == 3).all().item<bool>());
  // The relaxed iterate, not f(y): 0.99 + 0.01 · 0.99.
  EXPECT_NEAR(result.y[0][0][0].item<double>(), 0.99 + 0.01 * 0.99, 1e-15);
}

TEST(FixedPointSolver, FixedIterationsOverrideTheRule) {
  SolverConfig config;
  config.fixedIters = 7;
  SolveResult result = solveFixedPoint(
      [](const torch::Tensor &y) { return 0.0 * y + 1.0; },
      torch::zeros({1, 1, 1}, f64()), config, /*training=*/false);
  EXPECT_EQ(result.steps, 7);
}

TEST(FixedPointSolver, NonFiniteSamplesDivergeAndTheOthersGoOn) {
  // f(y) = 0.5 y + 1 converges to 2; sample 1's map yields NaN from the
  // first step on. Its ρ* is NaN (diverged); the quantile is of the finite
  // ρ* only, so sample 0 is solved exactly as it is alone, rather than the
  // solve stopping after one step on a NaN quantile.
  SolverConfig config;
  torch::Tensor poison =
      torch::tensor({0.0, std::nan("")}, f64()).view({2, 1, 1});
  SolveResult both = solveFixedPoint(
      [&](const torch::Tensor &y) { return 0.5 * y + 1.0 + poison; },
      torch::zeros({2, 1, 1}, f64()), config, /*training=*/false);
  SolveResult alone = solveFixedPoint(
      [](const torch::Tensor &y) { return 0.5 * y + 1.0; },
      torch::zeros({1, 1, 1}, f64()), config, /*training=*/false);
  EXPECT_GT(both.steps, 2);
  EXPECT_EQ(both.steps, alone.steps);
  EXPECT_EQ(both.y[0][0][0].item<double>(), alone.y[0][0][0].item<double>());
  EXPECT_EQ(both.bestResidual[0].item<double>(),
            alone.bestResidual[0].item<double>());
  EXPECT_LT(both.bestResidual[0].item<double>(), config.tolerance);
  EXPECT_TRUE(std::isnan(both.bestResidual[1].item<double>()));
}

TEST(FixedPointSolver, StopsOnceEverySampleDiverged) {
  SolverConfig config;
  SolveResult result = solveFixedPoint(
      [](const torch::Tensor &y) {
        return y * std::numeric_limits<double>::infinity();
      },
      torch::ones({3, 2, 2}, f64()), config, /*training=*/false);
  EXPECT_EQ(result.steps, 1);
  EXPECT_TRUE(torch::isnan(result.bestResidual).all().item<bool>());
}

TEST(FixedPointSolver, ALaterNonFiniteStepStaysDiverged) {
  // Finite for two steps, then infinite: ρ* must not keep the finite best.
  SolverConfig config;
  config.tolerance = 0; // never converges
  config.maxIterEval = 6;
  int calls = 0;
  SolveResult result = solveFixedPoint(
      [&](const torch::Tensor &y) {
        return ++calls <= 2 ? 0.5 * y + 1.0
                            : y * std::numeric_limits<double>::infinity();
      },
      torch::ones({1, 1, 1}, f64()), config, /*training=*/false);
  EXPECT_EQ(result.steps, 3);
  EXPECT_TRUE(std::isnan(result.bestResidual[0].item<double>()));
}

} // namespace
