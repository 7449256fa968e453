//===- Host/Solver.h - The fixed-point solver (host) ------------*- C++ -*-===//
//
// Solver: the fixed-point solver of docs/spec.md §3, its per-sample state,
// continue rule and relaxation on the host. The CUDA solver gives its results
// with the same API.
//
// Counterpart: Device/Solver.cuh.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_HOST_SOLVER_H
#define FP_RUNTIME_KERNELS_HOST_SOLVER_H

#include "fp/Runtime/Kernels/Host/Context.h"
#include "fp/Runtime/Kernels/Host/Launch.h"

namespace fp::host {

/// Per-sample state of one solve, on the host: best residual ρ*, step size
/// η and patience π, with the continue rule of docs/spec.md §3.3 evaluated
/// where the data is. Arithmetic is in Compute<Real>: the activation dtype, as
/// the reference computes it, and float for bf16 iterates (the reference's
/// bf16 autocast keeps its residuals in float, docs/spec.md §1.9).
template <typename Real> class Solver {
  using C = Compute<Real>;

public:
  Solver(int64_t batch, const SolverSettings &settings, bool training,
         const fp_solver_overrides *overrides)
      : batch(batch), settings(settings),
        best(batch, std::numeric_limits<C>::infinity()),
        eta(batch, C(settings.relaxStart)),
        patience(batch, settings.relaxPatience), rho(batch, C(0)) {
    sorted.reserve(size_t(batch));
    tolerance = settings.tolerance;
    quantile = training ? settings.trainQuantile : 1.0;
    cap = training ? settings.maxIterTrain : settings.maxIterEval;
    if (overrides) {
      if (overrides->max_iter >= 0)
        cap = overrides->max_iter;
      if (overrides->fixed_iters > 0)
        fixedIters = overrides->fixed_iters;
      if (!std::isnan(overrides->tolerance))
        tolerance = overrides->tolerance;
      if (!std::isnan(overrides->quantile))
        quantile = overrides->quantile;
    }
    // torch.quantile refuses q outside [0, 1]; kept inside, the rank stays
    // within the sorted residuals.
    quantile = std::min(std::max(quantile, 0.0), 1.0);
  }

  /// Runs `step` (the loop body, ending with relax() and update()) while
  /// shouldContinue().
  template <typename Step> void loop(Step &&step) {
    while (shouldContinue())
      step();
  }

  /// Checked before every step: the first step always runs; then some
  /// quantile of the finite ρ* is at least the tolerance, some η ≥ 1e-3, and
  /// the cap is not reached. A sample whose ρ* is not finite has diverged:
  /// it cannot converge, so the quantile leaves it out, and once every
  /// sample has diverged the solve stops (docs/spec.md §3.3).
  bool shouldContinue() {
    if (fixedIters > 0)
      return steps < fixedIters;
    if (steps == 0)
      return true;
    bool moving = *std::max_element(eta.begin(), eta.end()) >= C(1e-3);
    C quantileValue = 0;
    if (!quantileOfFiniteBest(quantileValue))
      return false;
    return double(quantileValue) >= tolerance && moving && steps < cap;
  }

  /// Residual and relaxation of one iterate after the body computed
  /// fy = f(y): ρ_b ← max(ρ_b, max over tokens of ‖y − fy‖∞ / (‖fy‖∞ +
  /// 1e-8)), then y ← η fy + (1 − η) y in place. `y` and `fy` are [B, T, F]
  /// with `tokenSize` = F elements per token. A non-finite element of y or
  /// fy makes ρ_b NaN (std::max alone would pass over it).
  void relax(Real *y, In<Real> fy, int64_t length, int64_t tokenSize) {
    int64_t perSample = length * tokenSize;
    parallelFor(batch, 3 * perSample, [&](int64_t b) {
      C worst = rho[b];
      bool finite = !std::isnan(worst);
      for (int64_t t = 0; t < length; ++t) {
        In<Real> yt = y + b * perSample + t * tokenSize;
        In<Real> ft = fy + b * perSample + t * tokenSize;
        C diff = 0, scale = 0;
        for (int64_t f = 0; f < tokenSize; ++f) {
          C delta = C(yt[f]) - C(ft[f]);
          finite &= std::isfinite(delta);
          diff = std::max(diff, std::abs(delta));
          scale = std::max(scale, std::abs(C(ft[f])));
        }
        worst = std::max(worst, diff / (scale + C(1e-8)));
      }
      rho[b] = finite && std::isfinite(worst)
                   ? worst
                   : std::numeric_limits<C>::quiet_NaN();
      C e = eta[b], keep = C(1) - e;
      Real *ys = y + b * perSample;
      In<Real> fs = fy + b * perSample;
      for (int64_t i = 0; i < perSample; ++i)
        ys[i] = Real(e * C(fs[i]) + keep * C(ys[i]));
    });
  }

  /// Ends a step: best-so-far, patience and step-size decay per sample from
  /// this step's residuals, which it clears. A non-finite residual makes
  /// ρ* NaN for the rest of the solve: the sample has diverged.
  void update() {
    for (int64_t b = 0; b < batch; ++b) {
      bool improved = rho[b] < best[b];
      best[b] = std::isfinite(rho[b]) && !std::isnan(best[b])
                    ? std::min(best[b], rho[b])
                    : std::numeric_limits<C>::quiet_NaN();
      rho[b] = 0;
      patience[b] = improved ? settings.relaxPatience : patience[b] - 1;
      if (patience[b] == 0) {
        patience[b] = settings.relaxPatience;
        eta[b] = eta[b] * C(settings.relaxDecay);
      }
    }
    ++steps;
  }

  /// relax() of a step's last iterate, then update(): the CUDA solver's
  /// one launch for both.
  void relaxAndUpdate(Real *y, In<Real> fy, int64_t length, int64_t tokenSize) {
    relax(y, fy, length, tokenSize);
    update();
  }

  /// Writes the statistics of the finished solve: per sample steps + 1
  /// (the differentiable step counts, docs/spec.md §3.6) and ρ*, NaN for a
  /// sample that diverged. `device` is
  /// the CUDA solver's; a host call never has one (the entry refuses it).
  void report(fp_solver_stats *stats,
              const fp_device_stats *device = nullptr) const {
    (void)device;
    if (!stats)
      return;
    stats->steps = steps;
    for (int64_t b = 0; b < batch; ++b) {
      if (stats->iterations)
        stats->iterations[b] = steps + 1;
      if (stats->residuals)
        stats->residuals[b] = float(best[b]);
    }
  }

  int32_t numSteps() const { return steps; }

private:
  /// The q-quantile of the finite ρ* with linear interpolation
  /// (torch.quantile) into `value`; false when no sample's ρ* is finite.
  bool quantileOfFiniteBest(C &value) {
    sorted.clear();
    for (C residual : best)
      if (std::isfinite(residual))
        sorted.push_back(residual);
    if (sorted.empty())
      return false;
    std::sort(sorted.begin(), sorted.end());
    C rank = C(quantile) * C(int64_t(sorted.size()) - 1);
    C below = std::floor(rank), above = std::ceil(rank);
    C weight = rank - below;
    C lo = sorted[int64_t(below)], hi = sorted[int64_t(above)];
    // torch.lerp's two-sided formula.
    value = weight < C(0.5) ? lo + weight * (hi - lo)
                            : hi - (hi - lo) * (C(1) - weight);
    return true;
  }

  int64_t batch;
  SolverSettings settings;
  std::vector<C> best, eta;
  std::vector<int32_t> patience;
  std::vector<C> rho, sorted;
  double tolerance = 0, quantile = 1;
  int32_t cap = 1, fixedIters = 0, steps = 0;
};

} // namespace fp::host

#endif // FP_RUNTIME_KERNELS_HOST_SOLVER_H
