//===- Mamba.cpp - The reference Mamba-1 layer ------------------*- C++ -*-===//
//
// Mamba-1 as mamba_ssm computes it (docs/spec.md §5.4): in_proj to [x; z],
// short causal convolution with SiLU, x_proj to [δ; B; C],
// Δ = softplus(W_dt δ + b_dt), the selective scan with skip D, the SiLU(z) gate
// and out_proj.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Reference/Layers.h"

using namespace fp::rt;
using namespace fp::rt::ref;

MambaLayer::MambaLayer(const ModelConfig &config)
    : d(config.expand * config.dModel), dtRank(config.resolvedDtRank()),
      dState(config.dState) {
  torch::Dtype dtype = config.dtype;
  auto options = torch::TensorOptions().dtype(dtype);
  inProj = register_module(
      "in_proj", std::make_shared<Linear>(config.dModel, 2 * d, dtype));
  std::tie(convWeight, convBias) =
      registerCausalConv(*this, "conv1d", d, config.dConv, dtype);
  xProj = register_module(
      "x_proj", std::make_shared<Linear>(d, dtRank + 2 * dState, dtype));
  dtProj = registerDtProjection(*this, dtRank, d, dtype);
  aLog = register_parameter("A_log", initALog(d, dState, dtype));
  dSkip = register_parameter("D", torch::ones({d}, options));
  outProj = register_module("out_proj",
                            std::make_shared<Linear>(d, config.dModel, dtype));
}

torch::Tensor MambaLayer::forwardChunk(const torch::Tensor &u,
                                       ChunkState &state) {
  torch::NoGradGuard noGrad;
  return run(u, &state);
}

torch::Tensor MambaLayer::forward(const torch::Tensor &u) {
  return run(u, nullptr);
}

torch::Tensor MambaLayer::run(const torch::Tensor &u, ChunkState *carry) {
  torch::Tensor xz = inProj->forward(u);
  torch::Tensor xRaw = xz.narrow(-1, 0, d);
  torch::Tensor x = torch::silu(causalConvAfter(
      xRaw, convWeight, convBias, carry ? carry->convTail : torch::Tensor()));
  torch::Tensor z = xz.narrow(-1, d, d);
  torch::Tensor xDbl = xProj->forward(x);
  torch::Tensor delta =
      mambaSoftplus(torch::nn::functional::linear(xDbl.narrow(-1, 0, dtRank),
                                                  dtProj->weight) +
                    dtProj->bias);
  torch::Tensor a = -torch::exp(aLog);
  torch::Tensor bm = xDbl.narrow(-1, dtRank, dState);
  torch::Tensor cm = xDbl.narrow(-1, dtRank + dState, dState);
  if (!carry)
    return outProj->forward(selectiveScan(x, delta, a, bm, cm, dSkip) *
                            torch::silu(z));
  torch::Tensor finalScan;
  torch::Tensor y =
      selectiveScanLoop(x, delta, a, bm, cm, dSkip, carry->scan, &finalScan);
  carry->scan = finalScan;
  carry->convTail = lastRows(carry->convTail, xRaw, convWeight.size(1) - 1);
  return outProj->forward(y * torch::silu(z));
}
