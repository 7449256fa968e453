//===- SequenceModel.h - Token-to-logits models of the runtime --*- C++ -*-===//
//
// The interface every model the trainer runs implements: the eager reference
// models (FP-Mamba, Mamba, FP-RNN), the baselines (LSTM, Transformer) and,
// later, compiled model.so layers. A model maps token ids to logits and
// reports the fixed-point iterations of its last forward pass.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_REFERENCE_SEQUENCEMODEL_H
#define FP_RUNTIME_REFERENCE_SEQUENCEMODEL_H

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace fp::rt {

/// Settings of the fixed-point solver (docs/spec.md §3). The defaults are the
/// reference FP-Mamba's (docs/spec.md §3.4).
struct SolverConfig {
  double tolerance = 0.1;
  /// Training quantile q = 1 − outlier_quantile; evaluation uses q = 1.
  double trainQuantile = 0.75;
  int64_t maxIterTrain = 100;
  int64_t maxIterEval = 1000;
  double relaxStart = 0.99;
  double relaxDecay = 0.9;
  int64_t relaxPatience = 15;
  /// When > 0, every solve runs exactly this many steps (benchmarks).
  int64_t fixedIters = 0;
};

/// What a forward pass's fixed points came to, over its layers and samples.
struct FixedPointSummary {
  /// Samples whose solve diverged in some layer: their iteration counts are
  /// not a convergence result, and the figures below leave them out.
  int64_t nonFiniteSamples = 0;
  /// Mean over layers and the samples that stayed finite; 0 when the model
  /// has no fixed point or no sample stayed finite.
  double meanIterations = 0;
  /// Maximum over layers and the samples that stayed finite; 0 likewise.
  int64_t maxIterations = 0;
};

/// Fixed-point statistics of one forward pass.
struct ForwardStats {
  /// Per fixed-point layer: the iterations of each sample, steps + 1
  /// (docs/spec.md §3.6), shape [B], int64.
  std::vector<torch::Tensor> iterations;
  /// Per fixed-point layer, as `iterations`: each sample's best relative
  /// residual, NaN where its solve diverged (met a non-finite value).
  std::vector<torch::Tensor> residuals;

  /// Records a fixed-point layer's statistics of this pass.
  void add(const torch::Tensor &layerIterations,
           const torch::Tensor &layerResiduals);

  /// The pass's figures, computed where the statistics lie (a CUDA model
  /// leaves them on its device) and read back in one copy.
  FixedPointSummary summarize() const;
};

/// A model from token ids [B, T] (int64) to logits [B, T, V_pad].
class SequenceModel : public torch::nn::Module {
public:
  ~SequenceModel() override = default;

  virtual torch::Tensor forward(const torch::Tensor &tokens) = 0;

  /// Statistics of the last forward() call.
  const ForwardStats &lastStats() const { return stats; }

  /// Overrides the training-time iteration cap of every fixed-point layer
  /// (the Gamma-sampled cap of docs/spec.md §3.5); a no-op for models
  /// without one.
  virtual void setTrainIterationCap(int64_t cap) { (void)cap; }

protected:
  ForwardStats stats;
};

/// What model to build, with the reference's names and defaults.
struct ModelConfig {
  /// fp_mamba | mamba | fp_mamba2 | mamba2 | fp_rnn | lstm | transformer
  std::string kind = "fp_mamba";
  int64_t vocabSize = 0;
  /// The embedding/head is padded to a multiple of this (docs/spec.md §6).
  int64_t padVocabMultiple = 8;
  int64_t dModel = 64;
  int64_t nLayers = 1;
  int64_t dState = 16;
  int64_t expand = 2;
  /// 0: ceil(dModel / 16).
  int64_t dtRank = 0;
  int64_t dConv = 4;
  /// fp_mamba2 and mamba2 (docs/spec.md §5.1): channels per head P (the
  /// d = expand · dModel channels form d / P heads) and groups G of the
  /// heads that share B and C.
  int64_t headDim = 64;
  int64_t nGroups = 1;
  /// householder | dplr | kronecker | monarch | selective_dense | mixture |
  /// block_householder | identity
  std::string mixer = "kronecker";
  /// Reflections (householder, dplr, block_householder), block size
  /// (monarch) or number of factors (mixture).
  int64_t mixerRank = 1;
  /// block_householder: the number of channel blocks.
  int64_t mixerBlocks = 1;
  bool useShortConv = false;
  bool bcNorm = true;
  bool gluInLoop = false;
  bool symmMixer = false;
  bool mixerHDep = true;
  /// Kronecker factor normalisation: "row" or "spectral" (docs/spec.md §10.1);
  /// empty for the reference's choice per kind (row for FP-Mamba, spectral for
  /// FP-RNN).
  std::string kroneckerNorm;
  double normEps = 1e-5;
  SolverConfig solver;
  /// Differentiable applications of the map after the solve (docs/spec.md §4).
  int64_t nBackwards = 1;
  /// Transformer heads.
  int64_t nHeads = 4;
  torch::Dtype dtype = torch::kFloat32;

  /// The step-size projection's rank: dtRank, or ceil(dModel / 16).
  int64_t resolvedDtRank() const {
    return dtRank > 0 ? dtRank : (dModel + 15) / 16;
  }

  /// The padded vocabulary size.
  int64_t paddedVocab() const {
    return (vocabSize + padVocabMultiple - 1) / padVocabMultiple *
           padVocabMultiple;
  }
};

/// Builds a reference model; throws std::invalid_argument with a clear
/// message for an unknown kind or mixer, or an impossible configuration.
std::shared_ptr<SequenceModel> makeReferenceModel(const ModelConfig &config);

} // namespace fp::rt

#endif // FP_RUNTIME_REFERENCE_SEQUENCEMODEL_H
