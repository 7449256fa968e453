//===- Baselines.cpp - LSTM and Transformer baselines -----------*- C++ -*-===//
//
// The LSTM of the reference's word-problem and copy experiments
// (docs/spec.md §5.4, dropout 0) and a small causal pre-norm Transformer. The
// Transformer uses a fixed sinusoidal positional encoding computed for the
// length of each call, so it has no maximum length; attention is written out
// (scores, causal mask, softmax) so it builds with every supported LibTorch.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Baselines/Baselines.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace fp::rt {

namespace {

/// Checks what every baseline needs from a configuration.
void checkCommonConfig(const ModelConfig &config) {
  auto fail = [&](const std::string &what) {
    throw std::invalid_argument(fmt::format("{}: {}", config.kind, what));
  };
  if (config.vocabSize <= 0)
    fail(fmt::format("vocabulary size must be positive, got {}",
                     config.vocabSize));
  if (config.padVocabMultiple <= 0)
    fail(fmt::format("vocabulary padding multiple must be positive, got {}",
                     config.padVocabMultiple));
  if (config.dModel <= 0)
    fail(fmt::format("d_model must be positive, got {}", config.dModel));
  if (config.nLayers <= 0)
    fail(fmt::format("layers must be positive, got {}", config.nLayers));
  if (config.dtype != torch::kFloat32 && config.dtype != torch::kFloat64)
    fail("dtype must be float32 or float64");
}

/// Checks that `tokens` is a [B, T] integer tensor with T > 0.
void checkTokens(const torch::Tensor &tokens) {
  TORCH_CHECK(tokens.dim() == 2, "expected token ids of shape [B, T], got ",
              tokens.sizes());
  TORCH_CHECK(tokens.size(1) > 0, "expected at least one token per sequence");
  TORCH_CHECK(tokens.scalar_type() == torch::kLong,
              "expected int64 token ids, got ", tokens.scalar_type());
}

} // namespace

//===----------------------------------------------------------------------===//
// LSTMModel
//===----------------------------------------------------------------------===//

LSTMModel::LSTMModel(const ModelConfig &config) {
  checkCommonConfig(config);
  int64_t vocab = config.paddedVocab();
  embedding =
      register_module("embedding", torch::nn::Embedding(vocab, config.dModel));
  lstm = register_module(
      "lstm",
      torch::nn::LSTM(torch::nn::LSTMOptions(config.dModel, config.dModel)
                          .num_layers(config.nLayers)
                          .batch_first(true)));
  head = register_module("head", torch::nn::Linear(torch::nn::LinearOptions(
                                     config.dModel, vocab)));
  to(config.dtype);
}

torch::Tensor LSTMModel::forward(const torch::Tensor &tokens) {
  checkTokens(tokens);
  stats = ForwardStats{};
  torch::Tensor hidden = std::get<0>(lstm->forward(embedding->forward(tokens)));
  return head->forward(hidden);
}

//===----------------------------------------------------------------------===//
// TransformerBlock
//===----------------------------------------------------------------------===//

TransformerBlock::TransformerBlock(int64_t dModel, int64_t nHeads,
                                   double normEps)
    : nHeads(nHeads) {
  auto layerNorm = [&] {
    return torch::nn::LayerNorm(
        torch::nn::LayerNormOptions({dModel}).eps(normEps));
  };
  normAttn = register_module("norm_attn", layerNorm());
  qkv = register_module("qkv", torch::nn::Linear(dModel, 3 * dModel));
  proj = register_module("proj", torch::nn::Linear(dModel, dModel));
  normMlp = register_module("norm_mlp", layerNorm());
  fcIn = register_module("fc_in", torch::nn::Linear(dModel, 4 * dModel));
  fcOut = register_module("fc_out", torch::nn::Linear(4 * dModel, dModel));
}

torch::Tensor TransformerBlock::forward(const torch::Tensor &x) {
  int64_t batch = x.size(0), length = x.size(1), dModel = x.size(2);
  int64_t headDim = dModel / nHeads;

  // [B, T, 3D] → three [B, H, T, Dh].
  torch::Tensor packed = qkv->forward(normAttn->forward(x))
                             .view({batch, length, 3, nHeads, headDim})
                             .permute({2, 0, 3, 1, 4});
  torch::Tensor query = packed[0], key = packed[1], value = packed[2];

  torch::Tensor scores = torch::matmul(query, key.transpose(-2, -1)) /
                         std::sqrt(static_cast<double>(headDim));
  torch::Tensor future = torch::ones(
      {length, length},
      torch::TensorOptions().dtype(torch::kBool).device(x.device()));
  future = torch::triu(future, /*diagonal=*/1);
  scores = scores.masked_fill(future, -std::numeric_limits<double>::infinity());
  torch::Tensor attended = torch::matmul(torch::softmax(scores, -1), value)
                               .transpose(1, 2)
                               .reshape({batch, length, dModel});

  torch::Tensor h = x + proj->forward(attended);
  return h + fcOut->forward(torch::gelu(fcIn->forward(normMlp->forward(h))));
}

//===----------------------------------------------------------------------===//
// TransformerModel
//===----------------------------------------------------------------------===//

torch::Tensor sinusoidalPositions(int64_t length, int64_t dModel,
                                  const torch::TensorOptions &options) {
  auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  torch::Tensor position = torch::arange(length, f64).unsqueeze(1);
  torch::Tensor pairIndex = torch::arange((dModel + 1) / 2, f64);
  torch::Tensor frequency = torch::exp(
      pairIndex * (-2.0 * std::log(10000.0) / static_cast<double>(dModel)));
  torch::Tensor angle = position * frequency.unsqueeze(0); // [T, ceil(D/2)]
  // Interleave: channel 2i is sin, channel 2i+1 is cos.
  torch::Tensor table =
      torch::stack({torch::sin(angle), torch::cos(angle)}, /*dim=*/2)
          .reshape({length, 2 * ((dModel + 1) / 2)})
          .narrow(1, 0, dModel);
  return table.to(options);
}

TransformerModel::TransformerModel(const ModelConfig &config)
    : dModel(config.dModel) {
  checkCommonConfig(config);
  if (config.nHeads <= 0)
    throw std::invalid_argument(fmt::format(
        "transformer: heads must be positive, got {}", config.nHeads));
  if (config.dModel % config.nHeads != 0)
    throw std::invalid_argument(
        fmt::format("transformer: d_model {} is not a multiple of {} heads",
                    config.dModel, config.nHeads));
  if (!(config.normEps > 0))
    throw std::invalid_argument(fmt::format(
        "transformer: norm eps must be positive, got {}", config.normEps));

  int64_t vocab = config.paddedVocab();
  embedding =
      register_module("embedding", torch::nn::Embedding(vocab, config.dModel));
  auto blockList = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.nLayers; ++i) {
    blocks.push_back(std::make_shared<TransformerBlock>(
        config.dModel, config.nHeads, config.normEps));
    blockList->push_back(blocks.back());
  }
  normF = register_module(
      "norm_f",
      torch::nn::LayerNorm(
          torch::nn::LayerNormOptions({config.dModel}).eps(config.normEps)));
  head = register_module("head", torch::nn::Linear(config.dModel, vocab));
  to(config.dtype);
}

torch::Tensor TransformerModel::forward(const torch::Tensor &tokens) {
  checkTokens(tokens);
  stats = ForwardStats{};
  torch::Tensor x = embedding->forward(tokens);
  x = x + sinusoidalPositions(tokens.size(1), dModel, x.options()).unsqueeze(0);
  for (auto &block : blocks)
    x = block->forward(x);
  return head->forward(normF->forward(x));
}

//===----------------------------------------------------------------------===//
// Factory
//===----------------------------------------------------------------------===//

std::shared_ptr<SequenceModel> makeBaselineModel(const ModelConfig &config) {
  if (config.kind == "lstm")
    return std::make_shared<LSTMModel>(config);
  if (config.kind == "transformer")
    return std::make_shared<TransformerModel>(config);
  return nullptr;
}

} // namespace fp::rt
