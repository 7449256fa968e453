//===- LanguageModel.h - The residual LM wrapper ----------------*- C++ -*-===//
//
// The language-model wrapper of docs/spec.md §6 around a stack of block mixers:
// embedding, pre-norm residual blocks with RMSNorm, a final RMSNorm and a
// head tied to the embedding, with the reference's initialisation.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_REFERENCE_LANGUAGEMODEL_H
#define FP_RUNTIME_REFERENCE_LANGUAGEMODEL_H

#include "fp/Runtime/Reference/Layers.h"

#include <vector>

namespace fp::rt::ref {

class LanguageModel : public SequenceModel {
public:
  /// A stack of config.nLayers layers of config.kind (fp_mamba, mamba or
  /// fp_rnn).
  explicit LanguageModel(const ModelConfig &config);

  /// r_l = r_{l−1} + Mixer_l(RMSN_l(r_{l−1})), logits = RMSN_f(r_L) Eᵀ.
  torch::Tensor forward(const torch::Tensor &tokens) override;
  void setTrainIterationCap(int64_t cap) override;

  /// Logits for the chunk `tokens` [B, T] of sequences whose earlier tokens
  /// `state` (one ChunkState per layer; empty at the start) summarises, and
  /// `state` updated past the chunk: BlockMixer::forwardChunk through the
  /// stack. Without gradient; equals forward() on the whole sequences to
  /// within the solver's tolerance.
  torch::Tensor forwardChunk(const torch::Tensor &tokens,
                             std::vector<ChunkState> &state);

  ModelConfig config;
  torch::Tensor embedding; ///< [V_pad, D], tied to the head
  std::vector<std::shared_ptr<BlockMixer>> layers;
  std::vector<std::shared_ptr<RMSNorm>> norms;
  std::shared_ptr<RMSNorm> finalNorm;

private:
  torch::Tensor run(const torch::Tensor &tokens,
                    std::vector<ChunkState> *state);
};

} // namespace fp::rt::ref

#endif // FP_RUNTIME_REFERENCE_LANGUAGEMODEL_H
