//===- LanguageModel.cpp - The residual LM wrapper --------------*- C++ -*-===//
//
// docs/spec.md §6: embedding, pre-norm residual blocks, final RMSNorm, tied
// head, and the wrapper's initialisation (Linear biases zeroed except Mamba's
// dt bias, embedding N(0, 0.02²), out_proj re-drawn and scaled by 1/√n_layer).
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Reference/LanguageModel.h"

#include <cmath>
#include <stdexcept>

using namespace fp::rt;
using namespace fp::rt::ref;

std::shared_ptr<BlockMixer>
fp::rt::ref::makeBlockMixer(const ModelConfig &config) {
  if (config.kind == "fp_mamba")
    return std::make_shared<FPMambaLayer>(config);
  if (config.kind == "mamba")
    return std::make_shared<MambaLayer>(config);
  if (config.kind == "fp_mamba2")
    return std::make_shared<FPMamba2Layer>(config);
  if (config.kind == "mamba2")
    return std::make_shared<Mamba2Layer>(config);
  if (config.kind == "fp_rnn")
    return std::make_shared<FPRNNLayer>(config);
  throw std::invalid_argument("unknown layer kind '" + config.kind +
                              "'; expected fp_mamba, mamba, fp_mamba2, "
                              "mamba2 or fp_rnn");
}

LanguageModel::LanguageModel(const ModelConfig &config) : config(config) {
  auto options = torch::TensorOptions().dtype(config.dtype);
  auto embeddingHolder =
      register_module("embedding", std::make_shared<torch::nn::Module>());
  embedding = embeddingHolder->register_parameter(
      "weight",
      torch::randn({config.paddedVocab(), config.dModel}, options) * 0.02);
  auto layerList = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.nLayers; ++i) {
    auto block = std::make_shared<torch::nn::Module>();
    layers.push_back(block->register_module("mixer", makeBlockMixer(config)));
    norms.push_back(block->register_module(
        "norm", std::make_shared<RMSNorm>(config.dModel, 1e-5, config.dtype)));
    layerList->push_back(block);
  }
  finalNorm = register_module(
      "norm_f", std::make_shared<RMSNorm>(config.dModel, 1e-5, config.dtype));

  // The wrapper's re-initialisation.
  torch::NoGradGuard noGrad;
  for (const auto &module : modules(/*include_self=*/false)) {
    if (auto *linear = dynamic_cast<Linear *>(module.get())) {
      if (linear->bias.defined() && !linear->keepBiasInit)
        linear->bias.zero_();
    } else if (auto *wn = dynamic_cast<WNLinear *>(module.get())) {
      if (wn->bias.defined())
        wn->bias.zero_();
    }
  }
  for (const auto &item : named_parameters()) {
    const std::string &name = item.key();
    if (name.size() >= 15 &&
        name.compare(name.size() - 15, 15, "out_proj.weight") == 0) {
      torch::Tensor weight = item.value();
      initFanInUniform(weight, weight.size(1));
      weight.div_(std::sqrt(static_cast<double>(config.nLayers)));
    }
  }
}

torch::Tensor LanguageModel::forward(const torch::Tensor &tokens) {
  return run(tokens, nullptr);
}

torch::Tensor LanguageModel::forwardChunk(const torch::Tensor &tokens,
                                          std::vector<ChunkState> &state) {
  torch::NoGradGuard noGrad;
  if (state.empty())
    state.resize(layers.size());
  if (state.size() != layers.size())
    throw std::invalid_argument("LanguageModel::forwardChunk: a state of " +
                                std::to_string(state.size()) +
                                " layers for a model of " +
                                std::to_string(layers.size()));
  return run(tokens, &state);
}

torch::Tensor LanguageModel::run(const torch::Tensor &tokens,
                                 std::vector<ChunkState> *state) {
  torch::Tensor residual = torch::embedding(embedding, tokens);
  stats = ForwardStats{};
  for (size_t i = 0; i < layers.size(); ++i) {
    torch::Tensor normed = norms[i]->forward(residual);
    residual = residual + (state ? layers[i]->forwardChunk(normed, (*state)[i])
                                 : layers[i]->forward(normed));
    if (layers[i]->lastIterations.defined())
      stats.add(layers[i]->lastIterations, layers[i]->lastResiduals);
  }
  return torch::matmul(finalNorm->forward(residual), embedding.t());
}

void LanguageModel::setTrainIterationCap(int64_t cap) {
  for (auto &layer : layers)
    layer->setTrainIterationCap(cap);
}
