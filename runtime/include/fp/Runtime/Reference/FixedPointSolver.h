//===- FixedPointSolver.h - The reference fixed-point solver ----*- C++ -*-===//
//
// The solver of docs/spec.md §3, exactly: relaxed iteration
// y ← η f(y) + (1 − η) y with per-sample step sizes decayed after a patience
// of non-improving steps, and the best-so-far quantile continue rule.
// SolverState holds the per-sample bookkeeping so each rule can be tested on
// its own.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_REFERENCE_FIXEDPOINTSOLVER_H
#define FP_RUNTIME_REFERENCE_FIXEDPOINTSOLVER_H

#include "fp/Runtime/Reference/SequenceModel.h"

#include <functional>

namespace fp::rt::ref {

/// Per-sample relative fixed-point residual (docs/spec.md §3.2): for y, fy
/// of shape [B, T, ...], max over t of ‖y_t − fy_t‖∞ / (‖fy_t‖∞ + 1e-8),
/// shape [B].
torch::Tensor relativeResidual(const torch::Tensor &y, const torch::Tensor &fy);

/// The per-sample state of one solve.
class SolverState {
public:
  SolverState(int64_t batch, const SolverConfig &config,
              const torch::TensorOptions &options);

  /// Records the residuals ρ [B] of one step: best-so-far, patience and
  /// step-size decay (docs/spec.md §3.2), and counts the step.
  void record(const torch::Tensor &rho);

  /// The continue rule (docs/spec.md §3.3), checked before each step: true
  /// before the first step; then Quantile_q(ρ*) ≥ τ, max η ≥ 1e-3 and
  /// steps < cap. A config with fixedIters > 0 runs exactly that many steps
  /// instead.
  bool shouldContinue(bool training, int64_t trainCap) const;

  /// y ← η y_new + (1 − η) y, with η broadcast per sample.
  torch::Tensor relax(const torch::Tensor &y, const torch::Tensor &yNew) const;

  const SolverConfig &config;
  torch::Tensor bestResidual; ///< ρ*, [B], +∞ initially
  torch::Tensor stepSize;     ///< η, [B]
  torch::Tensor patience;     ///< π, [B] int64
  int64_t steps = 0;
};

struct SolveResult {
  torch::Tensor y;            ///< the relaxed iterate at exit
  torch::Tensor iterations;   ///< [B] int64: steps + 1 (docs/spec.md §3.6)
  torch::Tensor bestResidual; ///< [B], NaN where the sample diverged
  int64_t steps = 0;
};

/// Solves y = f(y) from y0 without gradient. `trainCap` < 0 uses
/// config.maxIterTrain; evaluation always uses config.maxIterEval and q = 1.
SolveResult
solveFixedPoint(const std::function<torch::Tensor(const torch::Tensor &)> &f,
                const torch::Tensor &y0, const SolverConfig &config,
                bool training, int64_t trainCap = -1);

} // namespace fp::rt::ref

#endif // FP_RUNTIME_REFERENCE_FIXEDPOINTSOLVER_H
