//===- DeviceSolverTest.cpp - The CUDA solver against the host's ----------===//
//
// fp::cuda::Solver keeps the solve's state on the device: the relaxation's
// blocks reduce each sample's residual by atomic maxima, the block that
// finishes last does the step's bookkeeping and the continue rule
// (relaxAndUpdate), and Solver::loop runs the steps as one CUDA graph whose
// while node that rule stops. The compiled model tests exercise it at B = 3;
// this test runs it at the grids of the benchmark configurations (config S:
// 512 samples of 17 tokens of 512 features, config LM: 16 of 2048 of 768),
// at a batch whose sort does not fit in shared memory, with two iterates per
// step, with the solver overrides, through step-size decays, and in every
// schedule (graph or host loop, combined or separate bookkeeping), against
// fp::host::Solver on the same problem (SolverCheck.h): the same steps and,
// per sample, the same best residuals and final iterates. Solver::loop must
// have run as a graph (unless FP_CUDA_GRAPHS=0), without host waits.
//
// The problems are drawn from TestSeed.h's seed (printed; FP_TEST_SEED=S
// reproduces a run). Both sides compute the map and the relaxation in the
// same order with one rounding per operation (the device code is compiled
// with -fmad=false), so they are expected to agree to the last bit; the
// tolerances leave room only for a host compiler that contracts a*b + c.
//
// Runs where a CUDA device is present; built where LibTorch has CUDA.
//
//===----------------------------------------------------------------------===//

#include "SolverCheck.h"
#include "TestSeed.h"

#include "fp/Runtime/Kernels/Host.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <string>

namespace fp::rt::test {
namespace {

using fp::test::testSeed;

/// One problem: its grid, iterates, element type and solver settings.
struct Case {
  std::string name;
  int64_t batch, length, tokenSize;
  int iterates;
  bool training;
  bool f64;
  int32_t maxIter = -1;           // override of the cap, < 0: none
  int32_t fixedIters = 0;         // override, > 0: exactly this many steps
  bool lastSchedulesOnly = false; // only the schedules fpc emits
  double quantile = std::nan(""); // override of the quantile, NaN: none
  /// Every this many samples one diverges (a NaN in its map, from the first
  /// step); 0: none.
  int64_t divergeEvery = 0;
};

std::ostream &operator<<(std::ostream &os, const Case &c) {
  return os << c.name;
}

/// Iterate k of every sample b maps y to a ⊙ y + c, with a around a rate
/// drawn per sample and c uniform in [-1, 1]. Of the rates, 80% lie in
/// [0.3, 0.95] (converging), 10% in [1.0, 1.1] (diverging slowly; their
/// residual still improves every step) and 10% in [-1.6, -1.2]: those
/// oscillate with a residual that stops improving, until enough decays of
/// the step size make them converge. The first iterate starts at 0, as a
/// layer's does, the others at random points.
template <typename Real>
SolveProblem<Real> drawProblem(const Case &c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0), unit(-1.0, 1.0);
  auto drawRate = [&] {
    const double kind = uniform(rng), at = uniform(rng);
    if (kind < 0.8)
      return 0.3 + 0.65 * at;
    return kind < 0.9 ? 1.0 + 0.1 * at : -1.6 + 0.4 * at;
  };
  SolveProblem<Real> problem;
  problem.batch = c.batch;
  problem.length = c.length;
  problem.tokenSize = c.tokenSize;
  const int64_t perSample = c.length * c.tokenSize;
  for (int k = 0; k < c.iterates; ++k) {
    std::vector<Real> y0(size_t(problem.elements()), Real(0));
    std::vector<Real> a(y0.size()), shift(y0.size());
    for (int64_t b = 0; b < c.batch; ++b) {
      const double sampleRate = drawRate();
      for (int64_t i = b * perSample; i < (b + 1) * perSample; ++i) {
        a[size_t(i)] = Real(sampleRate * (1.0 + 0.05 * unit(rng)));
        shift[size_t(i)] = Real(unit(rng));
        if (k > 0)
          y0[size_t(i)] = Real(unit(rng));
      }
    }
    if (c.divergeEvery > 0)
      for (int64_t b = 0; b < c.batch; b += c.divergeEvery)
        shift[size_t(b * perSample + perSample / 2)] = Real(std::nan(""));
    problem.y0.push_back(std::move(y0));
    problem.a.push_back(std::move(a));
    problem.c.push_back(std::move(shift));
  }
  return problem;
}

SolveSchedule scheduleOf(const Case &c, bool viaLoop, bool combined) {
  SolveSchedule schedule;
  schedule.training = c.training;
  schedule.overrides.max_iter = c.maxIter;
  schedule.overrides.fixed_iters = c.fixedIters;
  schedule.overrides.quantile = c.quantile;
  schedule.viaLoop = viaLoop;
  schedule.combined = combined;
  return schedule;
}

template <typename Real>
SolveOutcome<Real> solveOnHost(const SolveProblem<Real> &problem,
                               const fp::host::SolverSettings &settings,
                               const SolveSchedule &schedule) {
  SolveOutcome<Real> outcome;
  outcome.y = problem.y0;
  std::vector<Real *> iterates;
  for (std::vector<Real> &iterate : outcome.y)
    iterates.push_back(iterate.data());
  const int64_t n = problem.elements();
  const size_t count = size_t(n);
  std::vector<Real> fy(count), product(count);
  fp::host::Solver<Real> solver(problem.batch, settings, schedule.training,
                                &schedule.overrides);
  runSolve(solver, iterates, fy.data(), problem.length, problem.tokenSize,
           schedule, [&](size_t k, const Real *in, Real *out) {
             fp::host::binary(fp::host::Mul(), n, problem.a[k].data(), in,
                              product.data());
             fp::host::binary(fp::host::Add(), n, product.data(),
                              problem.c[k].data(), out);
           });
  outcome.iterations.assign(size_t(problem.batch), -1);
  outcome.residuals.assign(size_t(problem.batch), -1.0f);
  fp_solver_stats stats = {};
  stats.iterations = outcome.iterations.data();
  stats.residuals = outcome.residuals.data();
  solver.report(&stats);
  outcome.steps = stats.steps;
  return outcome;
}

/// Equal element by element, NaN equal to NaN.
bool sameValues(const std::vector<float> &x, const std::vector<float> &y) {
  return std::equal(x.begin(), x.end(), y.begin(), y.end(),
                    [](float a, float b) {
                      return a == b || (std::isnan(a) && std::isnan(b));
                    });
}

/// The largest |x − reference| / max(|reference|, 1), over finite pairs;
/// infinity where one side is finite and the other is not.
template <typename T>
double largestDifference(const std::vector<T> &x,
                         const std::vector<T> &reference) {
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = double(x[i]), r = double(reference[i]);
    if (std::isfinite(d) != std::isfinite(r))
      return HUGE_VAL;
    if (std::isfinite(r))
      worst = std::max(worst, std::abs(d - r) / std::max(std::abs(r), 1.0));
  }
  return worst;
}

class DeviceSolver : public ::testing::TestWithParam<Case> {
protected:
  void SetUp() override {
    if (!haveCudaDevice())
      GTEST_SKIP() << "no CUDA device";
  }

  template <typename Real> void compareSchedules() {
    const Case &c = GetParam();
    const uint64_t seed = testSeed();
    std::cout << c.name << ": seed " << seed << " (FP_TEST_SEED=" << seed
              << " reproduces)" << std::endl;
    const SolveProblem<Real> problem = drawProblem<Real>(c, seed);
    const fp::host::SolverSettings settings = fpMambaSolverSettings();
    // The host's result does not depend on the schedule.
    const SolveOutcome<Real> expected =
        solveOnHost(problem, settings, scheduleOf(c, true, true));
    ASSERT_GE(expected.steps, 1);
    if (c.fixedIters > 0) {
      EXPECT_EQ(expected.steps, c.fixedIters);
    }
    const double tolerance = c.f64 ? 1e-13 : 1e-6;
    const bool graphsEnabled = [] {
      const char *value = std::getenv("FP_CUDA_GRAPHS");
      return !value || std::string(value) != "0";
    }();

    for (bool viaLoop : {true, false})
      for (bool combined : {true, false}) {
        if (c.lastSchedulesOnly && !combined)
          continue;
        SCOPED_TRACE(std::string(viaLoop ? "Solver::loop" : "host loop") +
                     (combined ? ", relaxAndUpdate" : ", relax + update"));
        const SolveOutcome<Real> got =
            solveOnDevice(problem, settings, scheduleOf(c, viaLoop, combined));
        EXPECT_EQ(got.ranAsGraph, viaLoop && graphsEnabled)
            << "Solver::loop ran from the host: stderr says why";
        if (got.ranAsGraph) {
          EXPECT_EQ(got.hostWaits, 0);
        }
        EXPECT_EQ(got.steps, expected.steps);
        EXPECT_EQ(got.iterations, expected.iterations);
        // The statistics reported into device memory, without a wait, are
        // the ones the host read back.
        EXPECT_EQ(got.deviceSteps, got.steps);
        EXPECT_EQ(
            got.deviceIterations,
            std::vector<int64_t>(got.iterations.begin(), got.iterations.end()));
        EXPECT_TRUE(sameValues(got.deviceResiduals, got.residuals));
        const double residuals =
            largestDifference(got.residuals, expected.residuals);
        EXPECT_LE(residuals, tolerance) << "best residuals";
        for (size_t k = 0; k < expected.y.size(); ++k)
          EXPECT_LE(largestDifference(got.y[k], expected.y[k]), tolerance)
              << "iterate " << k;
        std::cout << "  " << (viaLoop ? "loop" : "host loop")
                  << (combined ? ", combined" : ", separate") << ": "
                  << got.steps << " steps (host " << expected.steps
                  << "), graph " << got.ranAsGraph << ", host waits "
                  << got.hostWaits << ", residual difference " << residuals
                  << std::endl;
      }
  }
};

TEST_P(DeviceSolver, MatchesTheHostSolver) {
  if (GetParam().f64)
    compareSchedules<double>();
  else
    compareSchedules<float>();
}

// Relax grids (Device.cuh's RelaxGrid, 8192 elements per block): config S
// takes 2 chunks per sample (1024 blocks), config LM 205 (3280 blocks).
// Rows of whole 16-byte vectors relax a vector per access, others (one
// element, 131) an element per access.
INSTANTIATE_TEST_SUITE_P(
    Grids, DeviceSolver,
    ::testing::Values(
        Case{"one_element", 1, 1, 1, 1, true, false},
        Case{"config_s", 512, 17, 512, 1, true, false},
        Case{"config_s_f64", 512, 17, 512, 1, true, true},
        // Every sample must converge: the oscillating ones decay their step
        // size, the diverging ones run the solve to the cap.
        Case{"config_s_every_sample", 512, 17, 512, 1, true, false, -1, 0,
             false, 1.0},
        Case{"config_lm", 16, 2048, 768, 1, true, false, -1, 0, true},
        Case{"two_iterates_eval", 64, 17, 128, 2, false, true, 150},
        Case{"odd_token_size", 64, 17, 131, 1, true, false},
        Case{"sort_in_global_memory", 16384, 2, 16, 1, true, false},
        Case{"cap", 512, 17, 64, 1, true, false, 5},
        Case{"fixed_iters", 512, 17, 64, 1, false, false, -1, 7},
        // Diverged samples: left out of the quantile, NaN in the statistics;
        // once all have diverged the solve stops.
        Case{"some_diverge", 512, 17, 512, 1, false, false, -1, 0, false,
             std::nan(""), 7},
        Case{"all_diverge", 64, 17, 128, 2, true, false, -1, 0, false,
             std::nan(""), 1}),
    [](const ::testing::TestParamInfo<Case> &info) { return info.param.name; });

} // namespace
} // namespace fp::rt::test
