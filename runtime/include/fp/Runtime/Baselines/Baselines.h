//===- Baselines.h - LSTM and Transformer baselines -------------*- C++ -*-===//
//
// The models a user compares the fixed-point RNNs against (docs/spec.md §5.4):
// an LSTM (embedding, torch::nn::LSTM, linear head with bias) and a small
// causal pre-norm Transformer with sinusoidal positions, so that it runs at any
// sequence length for length-generalisation evaluation. Both are
// SequenceModels built from a ModelConfig, run in fp32 or fp64 and have no
// fixed point (their ForwardStats are empty).
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_BASELINES_BASELINES_H
#define FP_RUNTIME_BASELINES_BASELINES_H

#include "fp/Runtime/Reference/SequenceModel.h"

#include <torch/torch.h>

#include <memory>
#include <vector>

namespace fp::rt {

/// Embedding (V_pad × D) → nLayers-layer LSTM with hidden size D
/// (batch-first, no dropout) → linear head with bias to V_pad
/// (docs/spec.md §5.4).
///
/// Parameter names: `embedding.weight`, `lstm.{weight,bias}_{ih,hh}_l<k>`,
/// `head.{weight,bias}`.
class LSTMModel : public SequenceModel {
public:
  /// Throws std::invalid_argument for an impossible configuration.
  explicit LSTMModel(const ModelConfig &config);

  torch::Tensor forward(const torch::Tensor &tokens) override;

private:
  torch::nn::Embedding embedding{nullptr};
  torch::nn::LSTM lstm{nullptr};
  torch::nn::Linear head{nullptr};
};

/// One pre-norm Transformer block: x + Attn(LN(x)), then x + MLP(LN(x)),
/// with causal multi-head self-attention and a GELU MLP of width 4D.
///
/// Parameter names: `norm_attn.*`, `qkv.*`, `proj.*`, `norm_mlp.*`,
/// `fc_in.*`, `fc_out.*` (norms carry "norm" so that the weight-decay rules
/// of docs/spec.md §7 recognise them).
class TransformerBlock : public torch::nn::Module {
public:
  TransformerBlock(int64_t dModel, int64_t nHeads, double normEps);

  /// x: [B, T, D] → [B, T, D]; position t attends to positions ≤ t only.
  torch::Tensor forward(const torch::Tensor &x);

private:
  int64_t nHeads;
  torch::nn::LayerNorm normAttn{nullptr};
  torch::nn::Linear qkv{nullptr};
  torch::nn::Linear proj{nullptr};
  torch::nn::LayerNorm normMlp{nullptr};
  torch::nn::Linear fcIn{nullptr};
  torch::nn::Linear fcOut{nullptr};
};

/// A small causal pre-norm Transformer: token embedding plus fixed
/// sinusoidal positional encoding (no maximum length), nLayers blocks with
/// nHeads heads, final LayerNorm, linear head with bias to V_pad.
///
/// Parameter names: `embedding.weight`, `blocks.<k>.*`, `norm_f.*`,
/// `head.*`.
class TransformerModel : public SequenceModel {
public:
  /// Throws std::invalid_argument for an impossible configuration, e.g. a
  /// d_model that is not a multiple of the number of heads.
  explicit TransformerModel(const ModelConfig &config);

  torch::Tensor forward(const torch::Tensor &tokens) override;

private:
  int64_t dModel;
  torch::nn::Embedding embedding{nullptr};
  std::vector<std::shared_ptr<TransformerBlock>> blocks;
  torch::nn::LayerNorm normF{nullptr};
  torch::nn::Linear head{nullptr};
};

/// The sinusoidal positional encoding [T, D] of Vaswani et al.: even
/// channels sin(t / 10000^(2i/D)), odd channels the matching cos.
torch::Tensor sinusoidalPositions(int64_t length, int64_t dModel,
                                  const torch::TensorOptions &options);

/// Builds the baseline `config.kind` names ("lstm" or "transformer") in
/// config.dtype; nullptr for any other kind. Throws std::invalid_argument for
/// an impossible configuration of a kind it knows.
std::shared_ptr<SequenceModel> makeBaselineModel(const ModelConfig &config);

} // namespace fp::rt

#endif // FP_RUNTIME_BASELINES_BASELINES_H
