//===- SolverCheck.h - One solve on either target's Solver ------*- C++ -*-===//
//
// A fixed-point solve whose map is elementwise, run the way generated code
// runs a layer's loop: per step, each iterate's f(y) into a scratch buffer,
// then its residual and relaxation, the step ended by the bookkeeping. The
// same template drives fp::host::Solver (DeviceSolverTest.cpp) and
// fp::cuda::Solver (DeviceSolverCheck.cu), so that the two targets' solvers
// are compared on identical work.
//
// Iterate k maps y to a_k ⊙ y + c_k: samples whose a is below 1 converge
// (at rates set by a and the step size), those above diverge and run the
// step-size decay and the caps.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TEST_COMPILED_SOLVERCHECK_H // NOLINT(llvm-header-guard)
#define FP_RUNTIME_TEST_COMPILED_SOLVERCHECK_H

#include "fp/Runtime/Kernels/Common.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace fp::rt::test {

/// How one solve is driven.
struct SolveSchedule {
  bool training = true;
  fp_solver_overrides overrides = {-1, 0, std::nan(""), std::nan("")};
  /// The last iterate's relaxation and the bookkeeping in one call
  /// (relaxAndUpdate(), what fpc emits), else relax() then update().
  bool combined = true;
  /// Solver::loop (on CUDA: the steps as one graph), else a host loop over
  /// shouldContinue() (on CUDA: steps queued from the host).
  bool viaLoop = true;
};

/// The iterates of one solve, each [batch, length, tokenSize].
template <typename Real> struct SolveProblem {
  int64_t batch = 0, length = 0, tokenSize = 0;
  std::vector<std::vector<Real>> y0, a, c;

  int64_t elements() const { return batch * length * tokenSize; }
};

/// What a solve leaves: the final iterates and the solver's statistics.
template <typename Real> struct SolveOutcome {
  std::vector<std::vector<Real>> y;
  std::vector<int32_t> iterations;
  std::vector<float> residuals;
  int32_t steps = 0;
  int32_t hostWaits = 0;
  bool ranAsGraph = false;
  /// The same statistics as the CUDA solver reports them into device
  /// memory (fp_device_stats); empty for the host solver.
  std::vector<int64_t> deviceIterations;
  std::vector<float> deviceResiduals;
  int64_t deviceSteps = -1;
};

/// Runs one solve with `solver` over the iterates `y` (target buffers),
/// `fy` a scratch buffer of one iterate. `map(k, y, fy)` writes iterate k's
/// f(y) into fy.
template <typename Solver, typename Real, typename Map>
void runSolve(Solver &solver, const std::vector<Real *> &y, Real *fy,
              int64_t length, int64_t tokenSize, const SolveSchedule &schedule,
              Map map) {
  auto step = [&] {
    for (size_t k = 0; k < y.size(); ++k) {
      map(k, y[k], fy);
      if (schedule.combined && k + 1 == y.size())
        solver.relaxAndUpdate(y[k], fy, length, tokenSize);
      else
        solver.relax(y[k], fy, length, tokenSize);
    }
    if (!schedule.combined)
      solver.update();
  };
  if (schedule.viaLoop) {
    solver.loop(step);
  } else {
    while (solver.shouldContinue())
      step();
  }
}

/// FP-Mamba's solver constants (docs/spec.md §3.4): η₀ = 0.99, decay 0.9 after
/// 15 steps without improvement, τ = 0.1, training quantile 0.75, caps 100
/// (training) and 1000 (evaluation).
inline fp::host::SolverSettings fpMambaSolverSettings() {
  fp::host::SolverSettings settings;
  settings.tolerance = 0.1;
  settings.trainQuantile = 0.75;
  settings.maxIterTrain = 100;
  settings.maxIterEval = 1000;
  settings.relaxStart = 0.99;
  settings.relaxDecay = 0.9;
  settings.relaxPatience = 15;
  return settings;
}

/// Whether the CUDA runtime sees a device (DeviceSolverCheck.cu).
bool haveCudaDevice();

/// Runs `problem` with fp::cuda::Solver on the current CUDA device, on a
/// stream of its own. Throws DeviceError on a CUDA failure.
template <typename Real>
SolveOutcome<Real> solveOnDevice(const SolveProblem<Real> &problem,
                                 const fp::host::SolverSettings &settings,
                                 const SolveSchedule &schedule);

} // namespace fp::rt::test

#endif // FP_RUNTIME_TEST_COMPILED_SOLVERCHECK_H
