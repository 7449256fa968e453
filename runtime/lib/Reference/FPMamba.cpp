//===- FPMamba.cpp - The reference FP-Mamba layer ---------------*- C++ -*-===//
//
// docs/spec.md §1: the iteration-invariant precomputation (§1.3), the
// fixed-point map f (§1.4), the solve without gradient (§3), one differentiable
// application at the fixed point and the output head (§1.5, §4).
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Reference/Layers.h"

using namespace fp::rt;
using namespace fp::rt::ref;

KroneckerNorm fp::rt::ref::resolveKroneckerNorm(const ModelConfig &config,
                                                KroneckerNorm kindDefault) {
  if (config.kroneckerNorm.empty())
    return kindDefault;
  if (config.kroneckerNorm == "row")
    return KroneckerNorm::Row;
  if (config.kroneckerNorm == "spectral")
    return KroneckerNorm::Spectral;
  throw std::invalid_argument("unknown Kronecker normalisation '" +
                              config.kroneckerNorm +
                              "'; expected row or spectral");
}

FPMambaLayer::FPMambaLayer(const ModelConfig &config)
    : config(config), d(config.expand * config.dModel),
      dtRank(config.resolvedDtRank()) {
  torch::Dtype dtype = config.dtype;
  int64_t states = config.dState;
  inProj = register_module(
      "in_proj", std::make_shared<Linear>(config.dModel, 2 * d, dtype));
  if (config.useShortConv)
    std::tie(convWeight, convBias) =
        registerCausalConv(*this, "conv1d", d, config.dConv, dtype);
  xProj = register_module(
      "x_proj", std::make_shared<Linear>(d, dtRank + 2 * states, dtype));
  dtProj = registerDtProjection(*this, dtRank, d, dtype);
  aLog = register_parameter("A_log", initALog(d, states, dtype));
  dSkip = register_parameter(
      "D", torch::ones({d}, torch::TensorOptions().dtype(dtype)));
  bcYProj = register_module(
      "bc_y_proj", std::make_shared<WNLinear>(d, 2 * states, false, dtype));
  if (!config.gluInLoop)
    zYProj = register_module("z_y_proj",
                             std::make_shared<WNLinear>(d, d, false, dtype));
  int64_t mixerInput = config.mixerHDep && !config.symmMixer ? 2 * d : d;
  mixer = register_module(
      "mixer", makeMixer(config.mixer, mixerInput, d, config.mixerRank,
                         resolveKroneckerNorm(config, KroneckerNorm::Row),
                         MixerActivation::Silu, config.normEps, dtype,
                         config.mixerBlocks));
  outNorm = register_module(
      "out_norm", std::make_shared<LayerNorm>(d, config.normEps, dtype));
  outProj = register_module("out_proj",
                            std::make_shared<Linear>(d, config.dModel, dtype));
}

FPMambaInvariants FPMambaLayer::precompute(const torch::Tensor &u,
                                           const ChunkState *carry) {
  FPMambaInvariants inv;
  torch::Tensor xz = inProj->forward(u);
  inv.xRaw = xz.narrow(-1, 0, d);
  inv.z = xz.narrow(-1, d, d);
  // Without the short convolution, x is the raw projection: no activation
  // (docs/spec.md §10.4).
  const torch::Tensor tail = carry ? carry->convTail : torch::Tensor();
  inv.x =
      config.useShortConv
          ? torch::silu(causalConvAfter(inv.xRaw, convWeight, convBias, tail))
          : inv.xRaw;
  int64_t states = config.dState;
  torch::Tensor xDbl = xProj->forward(inv.x);
  torch::Tensor dtLow = xDbl.narrow(-1, 0, dtRank);
  inv.bx = xDbl.narrow(-1, dtRank, states);
  inv.cx = xDbl.narrow(-1, dtRank + states, states);
  inv.delta = mambaSoftplus(
      torch::nn::functional::linear(dtLow, dtProj->weight) + dtProj->bias);
  inv.A = -torch::exp(aLog);
  return inv;
}

torch::Tensor FPMambaLayer::applyMap(const torch::Tensor &y,
                                     const FPMambaInvariants &inv,
                                     const ChunkState *carry,
                                     torch::Tensor *finalScan) {
  torch::Tensor yBar =
      carry ? shiftTimeAfter(y, carry->lastOutput) : shiftTime(y, 1);
  // The mixer acts on x − y (unshifted) and y is added back
  // (docs/spec.md §1.4).
  torch::Tensor mixed =
      mixer->forward(mixerParameterInput(inv.x, yBar, config), inv.x - y) + y;

  int64_t states = config.dState;
  torch::Tensor bcY = bcYProj->forward(yBar);
  torch::Tensor b = inv.bx + bcY.narrow(-1, 0, states);
  torch::Tensor c = inv.cx + bcY.narrow(-1, states, states);
  if (config.bcNorm) {
    b = l2Normalize(b, config.normEps);
    c = l2Normalize(c, config.normEps);
  }
  torch::Tensor s = carry ? selectiveScanLoop(mixed, inv.delta, inv.A, b, c,
                                              dSkip, carry->scan, finalScan)
                          : selectiveScan(mixed, inv.delta, inv.A, b, c, dSkip);
  if (config.gluInLoop)
    s = s * torch::silu(inv.z);
  return outNorm->forward(s);
}

torch::Tensor fp::rt::ref::mixerParameterInput(const torch::Tensor &x,
                                               const torch::Tensor &yBar,
                                               const ModelConfig &config) {
  if (!config.mixerHDep)
    return x;
  if (config.symmMixer)
    return x + yBar;
  return torch::cat({x, yBar}, -1);
}

torch::Tensor fp::rt::ref::gatedOutputHead(const torch::Tensor &yhat,
                                           const torch::Tensor &z,
                                           WNLinear *zYProj, Linear &outProj,
                                           const ChunkState *carry) {
  if (!zYProj)
    return outProj.forward(yhat);
  torch::Tensor zY = zYProj->forward(yhat);
  torch::Tensor gate =
      z + (carry && carry->lastOutput.defined()
               ? shiftTimeAfter(zY, zYProj->forward(carry->lastOutput))
               : shiftTime(zY, 1));
  return outProj.forward(torch::silu(gate) * yhat);
}

torch::Tensor FPMambaLayer::head(const torch::Tensor &yhat,
                                 const FPMambaInvariants &inv,
                                 const ChunkState *carry) {
  return gatedOutputHead(yhat, inv.z, zYProj.get(), *outProj, carry);
}

torch::Tensor FPMambaLayer::forward(const torch::Tensor &u) {
  FPMambaInvariants inv = precompute(u);
  torch::Tensor yhat =
      solveThenApply([&](const torch::Tensor &y) { return applyMap(y, inv); },
                     torch::zeros_like(inv.x), config);
  return head(yhat, inv);
}

torch::Tensor FPMambaLayer::applyMapOnce(const torch::Tensor &u,
                                         const torch::Tensor &y) {
  torch::NoGradGuard noGrad;
  return applyMap(y, precompute(u));
}

torch::Tensor FPMambaLayer::forwardChunk(const torch::Tensor &u,
                                         ChunkState &state) {
  torch::NoGradGuard noGrad;
  FPMambaInvariants inv = precompute(u, &state);
  // The last application of the map (the one whose output is ŷ) leaves the
  // scan state the next chunk starts from.
  torch::Tensor finalScan;
  torch::Tensor yhat = solveThenApply(
      [&](const torch::Tensor &y) {
        return applyMap(y, inv, &state, &finalScan);
      },
      torch::zeros_like(inv.x), config);
  torch::Tensor out = head(yhat, inv, &state);
  lastSolution = yhat;
  state.scan = finalScan;
  state.lastOutput = yhat.select(1, yhat.size(1) - 1).clone();
  if (config.useShortConv)
    state.convTail = lastRows(state.convTail, inv.xRaw, config.dConv - 1);
  return out;
}
