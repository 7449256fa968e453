//===- FPMamba2.cpp - The reference FP-Mamba2 and Mamba-2 layers ----------===//
//
// docs/spec.md §5.1: FP-Mamba2, Mamba-2's multi-head SSD scan in the
// fixed-point map, written to the intended design (the released code cannot
// run it; docs/reference.md records each decision), and the Mamba-2 baseline
// of §5.4 as mamba_ssm's Mamba2 block computes it. Both project the input
// with one in_proj to [z; x; B; C; dt] and scan with ssdScan.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Reference/Layers.h"

#include <cmath>

using namespace fp::rt;
using namespace fp::rt::ref;

namespace {

/// Mamba-2's A_log [heads]: log U(1, 16).
torch::Tensor initHeadALog(int64_t heads, torch::Dtype dtype) {
  auto options = torch::TensorOptions().dtype(dtype);
  return torch::log(torch::empty({heads}, options).uniform_(1.0, 16.0));
}

/// x [B, T, d] as heads [B, T, H, P].
torch::Tensor asHeads(const torch::Tensor &x, int64_t heads) {
  return x.reshape({x.size(0), x.size(1), heads, x.size(2) / heads});
}

/// B or C [B, T, G·N] as groups [B, T, G, N].
torch::Tensor asGroups(const torch::Tensor &x, int64_t groups) {
  return x.reshape({x.size(0), x.size(1), groups, x.size(2) / groups});
}

} // namespace

//===----------------------------------------------------------------------===//
// The input side both blocks share
//===----------------------------------------------------------------------===//

SsdBlock::SsdBlock(const ModelConfig &config, bool shortConv)
    : d(config.expand * config.dModel), heads(d / config.headDim),
      groups(config.nGroups), dState(config.dState), shortConv(shortConv) {
  torch::Dtype dtype = config.dtype;
  const int64_t groupStates = groups * dState;
  inProj = register_module(
      "in_proj", std::make_shared<Linear>(
                     config.dModel, 2 * d + 2 * groupStates + heads, dtype));
  if (shortConv)
    std::tie(convWeight, convBias) = registerCausalConv(
        *this, "conv1d", d + 2 * groupStates, config.dConv, dtype);
  dtBias =
      register_parameter("dt_bias", initDtBias(heads, 1e-3, 1e-1, 1e-4, dtype));
  aLog = register_parameter("A_log", initHeadALog(heads, dtype));
  dSkip = register_parameter(
      "D", torch::ones({heads}, torch::TensorOptions().dtype(dtype)));
}

SsdBlock::Inputs SsdBlock::project(const torch::Tensor &u,
                                   const torch::Tensor &convTail) {
  const int64_t groupStates = groups * dState;
  Inputs in;
  torch::Tensor projected = inProj->forward(u);
  in.z = projected.narrow(-1, 0, d);
  in.xbcRaw = projected.narrow(-1, d, d + 2 * groupStates);
  // The short convolution runs over [x; B; C] with SiLU; without it there
  // is no activation (docs/spec.md §5.1).
  torch::Tensor xbc = shortConv
                          ? torch::silu(causalConvAfter(in.xbcRaw, convWeight,
                                                        convBias, convTail))
                          : in.xbcRaw;
  in.x = xbc.narrow(-1, 0, d);
  in.b = asGroups(xbc.narrow(-1, d, groupStates), groups);
  in.c = asGroups(xbc.narrow(-1, d + groupStates, groupStates), groups);
  in.dt = mambaSoftplus(projected.narrow(-1, 2 * d + 2 * groupStates, heads) +
                        dtBias);
  return in;
}

//===----------------------------------------------------------------------===//
// FP-Mamba2
//===----------------------------------------------------------------------===//

FPMamba2Layer::FPMamba2Layer(const ModelConfig &config)
    : SsdBlock(config, config.useShortConv), config(config) {
  torch::Dtype dtype = config.dtype;
  bcYProj = register_module(
      "bc_y_proj",
      std::make_shared<WNLinear>(d, 2 * groups * dState, false, dtype));
  if (!config.gluInLoop)
    zYProj = register_module("z_y_proj",
                             std::make_shared<WNLinear>(d, d, false, dtype));
  int64_t mixerInput = config.mixerHDep && !config.symmMixer ? 2 * d : d;
  mixer = register_module(
      "mixer", makeMixer(config.mixer, mixerInput, d, config.mixerRank,
                         resolveKroneckerNorm(config, KroneckerNorm::Row),
                         MixerActivation::Silu, config.normEps, dtype,
                         config.mixerBlocks));
  norm = register_module("norm",
                         std::make_shared<RMSNorm>(d, config.normEps, dtype));
  outProj = register_module("out_proj",
                            std::make_shared<Linear>(d, config.dModel, dtype));
}

FPMamba2Invariants FPMamba2Layer::precompute(const torch::Tensor &u,
                                             const ChunkState *carry) {
  Inputs in = project(u, carry ? carry->convTail : torch::Tensor());
  FPMamba2Invariants inv;
  inv.x = in.x;
  inv.z = in.z;
  inv.dt = in.dt;
  inv.bx = in.b;
  inv.cx = in.c;
  inv.xbcRaw = in.xbcRaw;
  inv.A = -torch::exp(aLog);
  return inv;
}

torch::Tensor FPMamba2Layer::applyMap(const torch::Tensor &y,
                                      const FPMamba2Invariants &inv,
                                      const ChunkState *carry,
                                      torch::Tensor *finalScan) {
  torch::Tensor yBar =
      carry ? shiftTimeAfter(y, carry->lastOutput) : shiftTime(y, 1);
  torch::Tensor mixed =
      mixer->forward(mixerParameterInput(inv.x, yBar, config), inv.x - y) + y;

  // B and C are always normalised, per group (bc_norm does not apply).
  const int64_t groupStates = groups * dState;
  torch::Tensor bcY = bcYProj->forward(yBar);
  torch::Tensor b =
      l2Normalize(inv.bx + asGroups(bcY.narrow(-1, 0, groupStates), groups),
                  config.normEps);
  torch::Tensor c = l2Normalize(
      inv.cx + asGroups(bcY.narrow(-1, groupStates, groupStates), groups),
      config.normEps);
  torch::Tensor s = ssdScan(asHeads(mixed, heads), inv.dt, inv.A, b, c, dSkip,
                            carry ? carry->scan : torch::Tensor(), finalScan);
  // The gated RMSNorm, norm after gate.
  return norm->forward(s.reshape_as(mixed) * torch::silu(inv.z));
}

torch::Tensor FPMamba2Layer::head(const torch::Tensor &yhat,
                                  const FPMamba2Invariants &inv,
                                  const ChunkState *carry) {
  return gatedOutputHead(yhat, inv.z, zYProj.get(), *outProj, carry);
}

torch::Tensor FPMamba2Layer::forward(const torch::Tensor &u) {
  FPMamba2Invariants inv = precompute(u);
  torch::Tensor yhat =
      solveThenApply([&](const torch::Tensor &y) { return applyMap(y, inv); },
                     torch::zeros_like(inv.x), config);
  return head(yhat, inv);
}

torch::Tensor FPMamba2Layer::applyMapOnce(const torch::Tensor &u,
                                          const torch::Tensor &y) {
  torch::NoGradGuard noGrad;
  return applyMap(y, precompute(u));
}

torch::Tensor FPMamba2Layer::forwardChunk(const torch::Tensor &u,
                                          ChunkState &state) {
  torch::NoGradGuard noGrad;
  FPMamba2Invariants inv = precompute(u, &state);
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
    state.convTail = lastRows(state.convTail, inv.xbcRaw, config.dConv - 1);
  return out;
}

//===----------------------------------------------------------------------===//
// Mamba-2
//===----------------------------------------------------------------------===//

Mamba2Layer::Mamba2Layer(const ModelConfig &config)
    : SsdBlock(config, /*shortConv=*/true), eps(config.normEps) {
  torch::Dtype dtype = config.dtype;
  // mamba_ssm's RMSNormGated: one gain per channel, each group of d / G
  // channels normalised by its own root mean square.
  norm = register_module("norm", std::make_shared<RMSNorm>(d, eps, dtype));
  outProj = register_module("out_proj",
                            std::make_shared<Linear>(d, config.dModel, dtype));
}

torch::Tensor Mamba2Layer::forward(const torch::Tensor &u) {
  return run(u, nullptr);
}

torch::Tensor Mamba2Layer::forwardChunk(const torch::Tensor &u,
                                        ChunkState &state) {
  torch::NoGradGuard noGrad;
  return run(u, &state);
}

torch::Tensor Mamba2Layer::run(const torch::Tensor &u, ChunkState *carry) {
  Inputs in = project(u, carry ? carry->convTail : torch::Tensor());
  torch::Tensor finalScan;
  torch::Tensor y =
      ssdScan(asHeads(in.x, heads), in.dt, -torch::exp(aLog), in.b, in.c, dSkip,
              carry ? carry->scan : torch::Tensor(),
              carry ? &finalScan : nullptr)
          .reshape_as(in.x);
  if (carry) {
    carry->scan = finalScan;
    carry->convTail =
        lastRows(carry->convTail, in.xbcRaw, convWeight.size(1) - 1);
  }
  // Gate, then RMSNorm per group.
  torch::Tensor gated =
      (y * torch::silu(in.z))
          .reshape({y.size(0), y.size(1), groups, d / groups});
  torch::Tensor normed =
      (gated * torch::rsqrt(gated.pow(2).mean(-1, true) + eps)).reshape_as(y);
  return outProj->forward(normed * norm->weight);
}
