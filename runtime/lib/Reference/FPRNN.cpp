//===- FPRNN.cpp - The reference vector-state FP-RNN layer ------*- C++ -*-===//
//
// docs/spec.md §5.2: a diagonal linear recurrence with explicit (1 − λ) input
// normalisation whose input is mixed by Q(p), iterated to its fixed point
// with the FP-RNN solver constants, and a gated RMSNorm readout.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Reference/Layers.h"

using namespace fp::rt;
using namespace fp::rt::ref;

SolverConfig fp::rt::ref::referenceSolverConfig(const std::string &kind) {
  SolverConfig config;
  if (kind == "fp_rnn") {
    config.relaxStart = 1.0;
    config.relaxDecay = 1.0;
    config.trainQuantile = 0.9;
  } else if (kind == "fp_mamba2") {
    config.trainQuantile = 0.9;
  }
  return config;
}

FPRNNLayer::FPRNNLayer(const ModelConfig &config)
    : config(config), d(config.expand * config.dModel) {
  torch::Dtype dtype = config.dtype;
  auto options = torch::TensorOptions().dtype(dtype);
  ioProj = register_module(
      "io_proj", std::make_shared<Linear>(config.dModel, 2 * d, dtype));
  if (config.useShortConv) {
    // Four depthwise convolutions of the raw x (mix, b, λ, x) and one over
    // the readout's 2d channels.
    auto convs =
        register_module("conv1d", std::make_shared<torch::nn::Module>());
    torch::Tensor weight = torch::empty({4, d, config.dConv}, options);
    torch::Tensor bias = torch::empty({4, d}, options);
    initFanInUniform(weight, config.dConv);
    initFanInUniform(bias, config.dConv);
    convWeight = convs->register_parameter("weight", weight);
    convBias = convs->register_parameter("bias", bias);
    std::tie(readoutConvWeight, readoutConvBias) =
        registerCausalConv(*this, "readout_conv", 2 * d, config.dConv, dtype);
  }
  bProj = register_module("b_proj", std::make_shared<Linear>(d, d, dtype));
  lambdaProj = register_module(
      "lambda_proj", std::make_shared<Linear>(d, d, dtype, /*withBias=*/true));
  int64_t mixerInput = config.mixerHDep ? 2 * d : d;
  KroneckerNorm norm = config.kroneckerNorm == "row" ? KroneckerNorm::Row
                                                     : KroneckerNorm::Spectral;
  if (!config.kroneckerNorm.empty() && config.kroneckerNorm != "row" &&
      config.kroneckerNorm != "spectral")
    throw std::invalid_argument("unknown Kronecker normalisation '" +
                                config.kroneckerNorm +
                                "'; expected row or spectral");
  mixer = register_module(
      "mixer", makeMixer(config.mixer, mixerInput, d, config.mixerRank, norm,
                         MixerActivation::Silu, config.normEps, dtype,
                         config.mixerBlocks));
  cProj = register_module("c_proj", std::make_shared<Linear>(2 * d, d, dtype));
  outNorm = register_module(
      "out_norm", std::make_shared<RMSNorm>(d, config.normEps, dtype));
  outProj = register_module("out_proj",
                            std::make_shared<Linear>(d, config.dModel, dtype));
}

FPRNNInvariants FPRNNLayer::precompute(const torch::Tensor &u,
                                       const ChunkState *carry) {
  FPRNNInvariants inv;
  torch::Tensor xz = ioProj->forward(u);
  torch::Tensor x = xz.narrow(-1, 0, d);
  inv.xRaw = x;
  inv.z = xz.narrow(-1, d, d);
  torch::Tensor xMix = x, xB = x, xLambda = x;
  if (config.useShortConv) {
    const torch::Tensor tail = carry ? carry->convTail : torch::Tensor();
    auto conv = [&](int64_t k) {
      return torch::silu(
          causalConvAfter(inv.xRaw, convWeight[k], convBias[k], tail));
    };
    xMix = conv(0);
    xB = conv(1);
    xLambda = conv(2);
    x = conv(3);
  }
  inv.x = x;
  inv.xMix = xMix;
  inv.bx = torch::silu(bProj->forward(xB)) * x;
  inv.lambda = torch::sigmoid(lambdaProj->forward(xLambda));
  return inv;
}

torch::Tensor FPRNNLayer::applyMap(const torch::Tensor &h,
                                   const FPRNNInvariants &inv,
                                   const ChunkState *carry) {
  // The recurrence's state is its output: a chunk starts from the previous
  // chunk's last output row.
  const torch::Tensor previous = carry ? carry->lastOutput : torch::Tensor();
  torch::Tensor p =
      config.mixerHDep ? torch::cat({inv.xMix, shiftTimeAfter(h, previous)}, -1)
                       : inv.xMix;
  torch::Tensor mixed = mixer->forward(p, inv.bx - h) + h;
  return linearRecurrence(inv.lambda, (1 - inv.lambda) * mixed, previous);
}

torch::Tensor FPRNNLayer::readout(const torch::Tensor &yhat,
                                  const FPRNNInvariants &inv,
                                  const ChunkState *carry) {
  torch::Tensor readoutIn =
      config.useShortConv
          ? torch::silu(causalConvAfter(
                torch::cat({inv.x, yhat}, -1), readoutConvWeight,
                readoutConvBias, carry ? carry->readoutTail : torch::Tensor()))
          : torch::cat({inv.x, shiftTimeAfter(yhat, carry ? carry->lastOutput
                                                          : torch::Tensor())},
                       -1);
  torch::Tensor gated = torch::silu(cProj->forward(readoutIn)) * yhat;
  return outProj->forward(outNorm->forward(torch::silu(inv.z) * gated));
}

torch::Tensor FPRNNLayer::forward(const torch::Tensor &u) {
  FPRNNInvariants inv = precompute(u);
  torch::Tensor yhat =
      solveThenApply([&](const torch::Tensor &h) { return applyMap(h, inv); },
                     torch::zeros_like(inv.x), config);
  return readout(yhat, inv);
}

torch::Tensor FPRNNLayer::applyMapOnce(const torch::Tensor &u,
                                       const torch::Tensor &y) {
  torch::NoGradGuard noGrad;
  return applyMap(y, precompute(u));
}

torch::Tensor FPRNNLayer::forwardChunk(const torch::Tensor &u,
                                       ChunkState &state) {
  torch::NoGradGuard noGrad;
  FPRNNInvariants inv = precompute(u, &state);
  torch::Tensor yhat = solveThenApply(
      [&](const torch::Tensor &h) { return applyMap(h, inv, &state); },
      torch::zeros_like(inv.x), config);
  torch::Tensor out = readout(yhat, inv, &state);
  lastSolution = yhat;
  if (config.useShortConv) {
    state.convTail = lastRows(state.convTail, inv.xRaw, config.dConv - 1);
    state.readoutTail = lastRows(
        state.readoutTail, torch::cat({inv.x, yhat}, -1), config.dConv - 1);
  }
  state.lastOutput = yhat.select(1, yhat.size(1) - 1).clone();
  return out;
}
