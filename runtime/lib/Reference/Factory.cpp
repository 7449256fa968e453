//===- Factory.cpp - Build a reference model from its config ----*- C++ -*-===//
//
// makeReferenceModel checks a ModelConfig and builds the model it names: the
// residual LM wrapper around FP-Mamba, Mamba or FP-RNN layers, or a baseline.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Baselines/Baselines.h"
#include "fp/Runtime/Reference/LanguageModel.h"

#include <algorithm>
#include <stdexcept>

using namespace fp::rt;

void ForwardStats::add(const torch::Tensor &layerIterations,
                       const torch::Tensor &layerResiduals) {
  iterations.push_back(layerIterations);
  residuals.push_back(layerResiduals);
}

FixedPointSummary ForwardStats::summarize() const {
  if (iterations.empty())
    return {};
  // [layers, B]; a sample counts where its solve stayed finite in every
  // layer that reports residuals.
  torch::Tensor counts = torch::stack(iterations).to(torch::kFloat64);
  torch::Tensor finite =
      torch::ones({counts.size(1)}, counts.options().dtype(torch::kBool));
  for (const torch::Tensor &layer : residuals)
    if (layer.defined())
      finite = finite.logical_and(torch::isfinite(layer));
  torch::Tensor kept = counts.masked_fill(finite.logical_not(), 0);
  torch::Tensor finiteCount = finite.sum().to(torch::kFloat64);
  // Iterations are at least 1, so the filled zeros never win the maximum.
  torch::Tensor figures =
      torch::stack({finite.numel() - finiteCount, kept.sum(),
                    finiteCount * counts.size(0), kept.max()})
          .cpu();
  auto *value = figures.data_ptr<double>();
  FixedPointSummary summary;
  summary.nonFiniteSamples = static_cast<int64_t>(value[0]);
  summary.meanIterations = value[2] > 0 ? value[1] / value[2] : 0;
  summary.maxIterations = static_cast<int64_t>(value[3]);
  return summary;
}

static void require(bool condition, const std::string &message) {
  if (!condition)
    throw std::invalid_argument(message);
}

std::shared_ptr<SequenceModel>
fp::rt::makeReferenceModel(const ModelConfig &config) {
  require(config.vocabSize > 0, "the vocabulary size must be positive");
  require(config.padVocabMultiple > 0,
          "the vocabulary padding multiple must be positive");
  require(config.dModel > 0,
          "the model width (d_model) must be positive, got " +
              std::to_string(config.dModel));
  require(config.nLayers > 0, "the number of layers must be positive, got " +
                                  std::to_string(config.nLayers));
  require(config.dtype == torch::kFloat32 || config.dtype == torch::kFloat64,
          "the reference models run in f32 or f64");
  const std::string &kind = config.kind;
  if (kind == "fp_mamba" || kind == "mamba" || kind == "fp_mamba2" ||
      kind == "mamba2" || kind == "fp_rnn") {
    require(config.expand > 0 && config.dState > 0 && config.dConv > 0,
            "expand, d_state and d_conv must be positive");
    if (kind == "fp_mamba2" || kind == "mamba2") {
      const int64_t d = config.expand * config.dModel;
      require(config.headDim > 0 && d % config.headDim == 0,
              "the head dimension (" + std::to_string(config.headDim) +
                  ") must divide expand * d_model (" + std::to_string(d) + ")");
      const int64_t heads = d / config.headDim;
      require(config.nGroups > 0 && heads % config.nGroups == 0,
              "the groups (" + std::to_string(config.nGroups) +
                  ") must divide the " + std::to_string(heads) + " heads");
    }
    require(config.nBackwards >= 1, "n_backwards must be at least 1");
    return std::make_shared<ref::LanguageModel>(config);
  }
  if (auto baseline = makeBaselineModel(config))
    return baseline;
  throw std::invalid_argument("unknown model kind '" + kind +
                              "'; expected fp_mamba, mamba, fp_mamba2, "
                              "mamba2, fp_rnn, lstm or transformer");
}
