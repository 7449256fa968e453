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

torch::Tensor ForwardStats::finiteSamples() const {
  torch::Tensor finite;
  for (const torch::Tensor &layer : residuals) {
    if (!layer.defined())
      continue;
    torch::Tensor here = torch::isfinite(layer).cpu();
    finite = finite.defined() ? finite.logical_and(here) : here;
  }
  if (!finite.defined() && !iterations.empty())
    finite = torch::ones({iterations.front().size(0)}, torch::kBool);
  return finite;
}

int64_t ForwardStats::nonFiniteSamples() const {
  torch::Tensor finite = finiteSamples();
  return finite.defined() ? finite.numel() - finite.sum().item<int64_t>() : 0;
}

double ForwardStats::meanIterations() const {
  torch::Tensor finite = finiteSamples();
  double total = 0;
  int64_t count = 0;
  for (const torch::Tensor &layer : iterations) {
    torch::Tensor kept = layer.cpu().masked_select(finite);
    total += kept.sum().item<double>();
    count += kept.numel();
  }
  return count ? total / count : 0;
}

int64_t ForwardStats::maxIterations() const {
  torch::Tensor finite = finiteSamples();
  int64_t result = 0;
  for (const torch::Tensor &layer : iterations) {
    torch::Tensor kept = layer.cpu().masked_select(finite);
    if (kept.numel())
      result = std::max(result, kept.max().item<int64_t>());
  }
  return result;
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
