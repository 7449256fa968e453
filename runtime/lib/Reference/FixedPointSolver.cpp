//===- FixedPointSolver.cpp - The reference fixed-point solver --*- C++ -*-===//
//
// docs/spec.md §3 step by step. The continue rule reads the best-so-far
// residuals; the returned value is the relaxed iterate, not f of it.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Reference/FixedPointSolver.h"
#include "fp/Runtime/Reference/Layers.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

using namespace fp::rt;
using namespace fp::rt::ref;

torch::Tensor fp::rt::ref::relativeResidual(const torch::Tensor &y,
                                            const torch::Tensor &fy) {
  // Flatten features so every token is one row: [B, T, F].
  torch::Tensor diff = (y - fy).flatten(2).abs().amax(-1);
  torch::Tensor scale = fy.flatten(2).abs().amax(-1) + 1e-8;
  return (diff / scale).amax(1);
}

SolverState::SolverState(int64_t batch, const SolverConfig &config,
                         const torch::TensorOptions &options)
    : config(config) {
  bestResidual =
      torch::full({batch}, std::numeric_limits<double>::infinity(), options);
  stepSize = torch::full({batch}, config.relaxStart, options);
  patience =
      torch::full({batch}, config.relaxPatience, options.dtype(torch::kLong));
}

void SolverState::record(const torch::Tensor &rho) {
  torch::Tensor improved = rho < bestResidual;
  // A non-finite residual (amax passes NaN on) marks the sample diverged:
  // ρ* NaN from then on, which torch::minimum keeps.
  bestResidual =
      torch::where(torch::isfinite(rho), torch::minimum(bestResidual, rho),
                   torch::full_like(rho, std::nan("")));
  patience = torch::where(
      improved, torch::full_like(patience, config.relaxPatience), patience - 1);
  torch::Tensor exhausted = patience == 0;
  patience = torch::where(
      exhausted, torch::full_like(patience, config.relaxPatience), patience);
  stepSize = torch::where(exhausted, stepSize * config.relaxDecay, stepSize);
  ++steps;
}

bool SolverState::shouldContinue(bool training, int64_t trainCap) const {
  if (config.fixedIters > 0)
    return steps < config.fixedIters;
  if (steps == 0)
    return true;
  double q = training ? config.trainQuantile : 1.0;
  int64_t cap = training ? (trainCap >= 0 ? trainCap : config.maxIterTrain)
                         : config.maxIterEval;
  // A diverged sample cannot converge: the quantile is of the finite ρ*,
  // and the solve stops once none is left.
  torch::Tensor finite =
      bestResidual.masked_select(torch::isfinite(bestResidual));
  if (finite.numel() == 0)
    return false;
  bool unconverged =
      torch::quantile(finite, std::min(std::max(q, 0.0), 1.0)).item<double>() >=
      config.tolerance;
  bool moving = stepSize.max().item<double>() >= 1e-3;
  return unconverged && moving && steps < cap;
}

torch::Tensor SolverState::relax(const torch::Tensor &y,
                                 const torch::Tensor &yNew) const {
  auto shape = std::vector<int64_t>(y.dim(), 1);
  shape[0] = y.size(0);
  torch::Tensor eta = stepSize.view(shape).to(y.scalar_type());
  return eta * yNew + (1 - eta) * y;
}

SolveResult fp::rt::ref::solveFixedPoint(
    const std::function<torch::Tensor(const torch::Tensor &)> &f,
    const torch::Tensor &y0, const SolverConfig &config, bool training,
    int64_t trainCap) {
  torch::NoGradGuard noGrad;
  SolverState state(
      y0.size(0), config,
      torch::TensorOptions().dtype(y0.scalar_type()).device(y0.device()));
  torch::Tensor y = y0;
  while (state.shouldContinue(training, trainCap)) {
    torch::Tensor fy = f(y);
    torch::Tensor rho = relativeResidual(y, fy);
    y = state.relax(y, fy);
    state.record(rho);
  }
  SolveResult result;
  result.y = y;
  result.steps = state.steps;
  result.bestResidual = state.bestResidual;
  result.iterations = torch::full({y0.size(0)}, state.steps + 1,
                                  torch::TensorOptions().dtype(torch::kLong));
  return result;
}

torch::Tensor BlockMixer::solveThenApply(
    const std::function<torch::Tensor(const torch::Tensor &)> &f,
    const torch::Tensor &y0, const ModelConfig &config) {
  SolveResult solved =
      solveFixedPoint(f, y0, config.solver, is_training(), trainCap);
  lastIterations = solved.iterations;
  lastResiduals = solved.bestResidual;
  torch::Tensor y = solved.y.detach();
  for (int64_t i = 0; i < config.nBackwards; ++i)
    y = f(y);
  return y;
}

torch::Tensor BlockMixer::forwardChunk(const torch::Tensor & /*u*/,
                                       ChunkState & /*state*/) {
  throw std::logic_error("this layer has no chunked form");
}

torch::Tensor BlockMixer::applyMapOnce(const torch::Tensor & /*u*/,
                                       const torch::Tensor & /*y*/) {
  throw std::logic_error("this layer has no fixed point");
}
