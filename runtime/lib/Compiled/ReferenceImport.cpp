//===- ReferenceImport.cpp - Compiled layers and references -----*- C++ -*-===//
//
// The table of models/*.fp, read off their sources (the layer in
// models/lib/*.fp and the configuration the model file sets), and the
// parameter-name mapping between reference and compiled layers.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/ReferenceImport.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <sstream>

using namespace fp::rt;

namespace {

/// The FP-Mamba layer of models/lib/fp_mamba.fp with its defaults: E = 2,
/// N = 16, no short convolution, B/C normalisation, the gate outside the
/// loop, concatenated mixer input, eps 1e-5, FP-Mamba solver (docs/spec.md
/// §3.4).
ModelConfig fpMamba(int64_t dModel, const std::string &mixer,
                    int64_t rank = 1) {
  ModelConfig config;
  config.kind = "fp_mamba";
  config.dModel = dModel;
  config.dState = 16;
  config.expand = 2;
  config.dConv = 4;
  config.mixer = mixer;
  config.mixerRank = rank;
  config.useShortConv = false;
  config.bcNorm = true;
  config.gluInLoop = false;
  config.symmMixer = false;
  config.mixerHDep = true;
  config.kroneckerNorm = "row";
  config.normEps = 1e-5;
  config.solver = ref::referenceSolverConfig("fp_mamba");
  return config;
}

/// The FP-RNN layer of models/lib/fp_rnn.fp: E = 2, no short convolution,
/// concatenated mixer input, eps 1e-5, FP-RNN solver (q = 0.9, η₀ = 1, no
/// decay).
ModelConfig fpRnn(int64_t dModel, const std::string &mixer, int64_t rank = 1) {
  ModelConfig config;
  config.kind = "fp_rnn";
  config.dModel = dModel;
  config.expand = 2;
  config.dConv = 4;
  config.mixer = mixer;
  config.mixerRank = rank;
  config.useShortConv = false;
  config.mixerHDep = true;
  config.normEps = 1e-5;
  config.solver = ref::referenceSolverConfig("fp_rnn");
  return config;
}

/// The FP-Mamba2 layer of models/lib/fp_mamba2.fp: FP-Mamba's options
/// (the mixer's input [x; ȳ], eps 1e-5), heads of 64 channels, one group,
/// no short convolution, FP-Mamba2's solver (q = 0.9).
ModelConfig fpMamba2(int64_t dModel, const std::string &mixer,
                     int64_t rank = 1) {
  ModelConfig config = fpMamba(dModel, mixer, rank);
  config.kind = "fp_mamba2";
  config.headDim = 64;
  config.nGroups = 1;
  config.solver = ref::referenceSolverConfig("fp_mamba2");
  return config;
}

std::vector<ReferenceModel> buildTable() {
  std::vector<ReferenceModel> table;
  auto add = [&](const std::string &name, ModelConfig config,
                 int64_t layers = 1) {
    config.nLayers = layers;
    table.push_back({name, std::move(config)});
  };

  // fp_mamba2_householder2.fp, fp_mamba2_kronecker.fp: FP-Mamba2
  // (models/lib/fp_mamba2.fp), N = 16, one group, no short convolution.
  add("fp_mamba2_householder2", fpMamba2(512, "householder", 2));
  add("fp_mamba2_kronecker", fpMamba2(512, "kronecker"));

  // fp_mamba_arith.fp: Kronecker (16 × 16), short convolution, 2 layers.
  ModelConfig arith = fpMamba(128, "kronecker");
  arith.useShortConv = true;
  arith.padVocabMultiple = 4;
  add("fp_mamba_arith", arith, 2);

  // fp_mamba_block_householder.fp: 8 blocks, 2 reflections each.
  ModelConfig block = fpMamba(512, "block_householder", 2);
  block.mixerBlocks = 8;
  add("fp_mamba_block_householder", block);

  // fp_mamba_catbabi.fp: Householder r = 4, short convolution.
  ModelConfig catbabi = fpMamba(512, "householder", 4);
  catbabi.useShortConv = true;
  add("fp_mamba_catbabi", catbabi);

  // fp_mamba_copy.fp: N = 32, short convolution, symmetric mixer input,
  // training cap 10.
  ModelConfig copy = fpMamba(1024, "householder", 1);
  copy.dState = 32;
  copy.useShortConv = true;
  copy.symmMixer = true;
  copy.solver.maxIterTrain = 10;
  add("fp_mamba_copy", copy);

  add("fp_mamba_dplr", fpMamba(512, "dplr", 2));
  add("fp_mamba_householder1", fpMamba(512, "householder", 1));
  add("fp_mamba_householder2", fpMamba(512, "householder", 2));
  add("fp_mamba_householder4", fpMamba(512, "householder", 4));
  add("fp_mamba_kronecker", fpMamba(512, "kronecker"));

  // fp_mamba_lm.fp: 12 layers, short convolution, gate inside the loop, no
  // B/C normalisation, Householder r = 2.
  ModelConfig lm = fpMamba(768, "householder", 2);
  lm.useShortConv = true;
  lm.gluInLoop = true;
  lm.bcNorm = false;
  add("fp_mamba_lm", lm, 12);

  // fp_mamba_monarch.fp: blocks of 16 channels.
  add("fp_mamba_monarch", fpMamba(512, "monarch", 16));

  // fp_mamba_nonselective.fp: one orthogonal matrix for every token.
  add("fp_mamba_nonselective", fpMamba(512, "nonselective"));

  // fp_rnn.fp: spectrally normalised Kronecker.
  ModelConfig rnn = fpRnn(128, "kronecker");
  rnn.kroneckerNorm = "spectral";
  add("fp_rnn", rnn);
  add("fp_rnn_mixture", fpRnn(128, "mixture", 4));
  add("fp_rnn_selective_dense", fpRnn(128, "selective_dense"));

  // mamba.fp: Mamba-1 as one undamped step of FP-Mamba with the identity
  // mixer (models/lib/mamba.fp), 2 layers.
  ModelConfig mamba;
  mamba.kind = "mamba";
  mamba.dModel = 512;
  mamba.dState = 16;
  mamba.expand = 2;
  mamba.dConv = 4;
  mamba.mixer = "identity";
  mamba.solver.maxIterTrain = 1;
  mamba.solver.maxIterEval = 1;
  mamba.solver.relaxStart = 1.0;
  add("mamba", mamba, 2);

  // mamba2.fp: Mamba-2 (models/lib/mamba2.fp), N = 16, one group, 2 layers.
  ModelConfig mamba2 = mamba;
  mamba2.kind = "mamba2";
  add("mamba2", mamba2, 2);
  return table;
}

std::string shapeText(const torch::Tensor &tensor) {
  std::ostringstream text;
  text << tensor.sizes();
  return text.str();
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::ostringstream text;
  text << torch::IntArrayRef(shape);
  return text.str();
}

} // namespace

const std::vector<ReferenceModel> &fp::rt::referenceModels() {
  static const std::vector<ReferenceModel> table = buildTable();
  return table;
}

const LayerInfo &fp::rt::referenceLayerOf(const Manifest &manifest) {
  if (manifest.model && !manifest.model->stack.empty())
    if (const LayerInfo *layer = manifest.findLayer(manifest.model->stack[0]))
      return *layer;
  if (manifest.layers.size() == 1)
    return manifest.layers[0];
  throw std::invalid_argument(
      "the manifest has several layers and no model stack to pick one");
}

ModelConfig fp::rt::referenceConfigFor(const Manifest &manifest,
                                       const std::string &modelName,
                                       torch::Dtype dtype) {
  std::string name = modelName;
  if (name.empty() && manifest.model)
    name = manifest.model->name;
  if (name.empty())
    throw std::invalid_argument(
        "the manifest names no model, so its reference is unknown; name one "
        "of models/*.fp explicitly");
  const ReferenceModel *entry = nullptr;
  for (const ReferenceModel &candidate : referenceModels())
    if (candidate.name == name)
      entry = &candidate;
  if (!entry) {
    std::string known;
    for (const ReferenceModel &candidate : referenceModels())
      known += (known.empty() ? "" : ", ") + candidate.name;
    throw std::invalid_argument("no reference for model '" + name +
                                "'; the table has " + known);
  }
  const LayerInfo &layer = referenceLayerOf(manifest);
  if (layer.name != entry->config.kind)
    throw std::invalid_argument(
        "model '" + name + "' maps to a reference '" + entry->config.kind +
        "' layer, but the library's layer is '" + layer.name + "'");
  ModelConfig config = referenceAtWidth(entry->config, layer.dModel);
  if (manifest.model) {
    config.nLayers = static_cast<int64_t>(manifest.model->stack.size());
    config.padVocabMultiple = manifest.model->padVocabMultiple;
    if (manifest.model->vocab > 0)
      config.vocabSize = manifest.model->vocab;
  }
  if (layer.solver) {
    const SolverDefaults &solver = *layer.solver;
    config.solver.tolerance = solver.tolerance;
    config.solver.trainQuantile = solver.trainQuantile;
    config.solver.maxIterTrain = solver.maxIterTrain;
    config.solver.maxIterEval = solver.maxIterEval;
    config.solver.relaxStart = solver.relaxStart;
    config.solver.relaxDecay = solver.relaxDecay;
    config.solver.relaxPatience = solver.relaxPatience;
    config.nBackwards =
        std::max<int64_t>(1, referenceBackwardSteps(solver.backward));
  }
  config.dtype = dtype;
  return config;
}

ModelConfig fp::rt::referenceAtWidth(const ModelConfig &config,
                                     int64_t dModel) {
  ModelConfig resized = config;
  resized.dModel = dModel;
  if (config.kind == "fp_mamba2" || config.kind == "mamba2") {
    const int64_t d = config.expand * dModel;
    resized.headDim = std::max<int64_t>(1, std::min<int64_t>(64, d));
    while (d % resized.headDim != 0)
      --resized.headDim;
  }
  return resized;
}

int64_t fp::rt::referenceBackwardSteps(const BackwardSpec &backward) {
  switch (backward.mode) {
  case BackwardMode::OneStep:
    return 1;
  case BackwardMode::Truncated:
    return backward.steps;
  case BackwardMode::Neumann:
  case BackwardMode::Implicit:
    break;
  }
  return 0;
}

namespace {

/// `one_step`, `truncated(3)`, `neumann(2)`, `implicit(1e-06)`.
std::string backwardText(const BackwardSpec &backward) {
  std::ostringstream text;
  text << toString(backward.mode);
  if (backward.mode == BackwardMode::Truncated ||
      backward.mode == BackwardMode::Neumann)
    text << "(" << backward.steps << ")";
  else if (backward.mode == BackwardMode::Implicit)
    text << "(" << backward.tolerance << ")";
  return text.str();
}

} // namespace

std::vector<std::string>
fp::rt::solverDifferences(const SolverDefaults &compiled,
                          const ModelConfig &referenceModel) {
  const SolverConfig &reference = referenceModel.solver;
  std::vector<std::string> differences;
  auto compare = [&](const char *name, double a, double b) {
    if (a == b)
      return;
    std::ostringstream text;
    text << name << ": compiled " << a << ", reference " << b;
    differences.push_back(text.str());
  };
  compare("tolerance", compiled.tolerance, reference.tolerance);
  compare("train_quantile", compiled.trainQuantile, reference.trainQuantile);
  compare("max_iter_train", compiled.maxIterTrain, reference.maxIterTrain);
  compare("max_iter_eval", compiled.maxIterEval, reference.maxIterEval);
  compare("relax_start", compiled.relaxStart, reference.relaxStart);
  compare("relax_decay", compiled.relaxDecay, reference.relaxDecay);
  compare("relax_patience", compiled.relaxPatience, reference.relaxPatience);
  const int64_t steps = referenceBackwardSteps(compiled.backward);
  if (steps == 0) {
    differences.push_back("backward: compiled " +
                          backwardText(compiled.backward) +
                          ", which the reference does not compute (it has "
                          "one_step and truncated(k), as n_backwards)");
  } else if (steps != referenceModel.nBackwards) {
    // n_backwards k computes the gradient of one_step (k = 1), truncated(k).
    BackwardSpec asCompiled;
    asCompiled.mode = referenceModel.nBackwards == 1 ? BackwardMode::OneStep
                                                     : BackwardMode::Truncated;
    asCompiled.steps = static_cast<int32_t>(referenceModel.nBackwards);
    differences.push_back(
        "backward: compiled " + backwardText(compiled.backward) +
        ", reference n_backwards " + std::to_string(referenceModel.nBackwards) +
        " (" + backwardText(asCompiled) + ")");
  }
  return differences;
}

namespace {

/// The tensor `pick` takes from each reference parameter, for every
/// parameter of `layer` in its order, by the mapping of ReferenceImport.h.
std::vector<torch::Tensor>
mapReference(const ref::BlockMixer &reference, const LayerInfo &layer,
             const std::function<torch::Tensor(const torch::Tensor &)> &pick) {
  struct Source {
    std::string referenceName;
    torch::Tensor value;
  };
  // Reference weights by the compiled name they map to.
  std::map<std::string, Source> sources;
  const bool splitConvolutions =
      dynamic_cast<const ref::FPRNNLayer *>(&reference) != nullptr;
  // Buffers too: a compiled frozen parameter is the reference's buffer
  // (the nonselective mixer's `weight.base`).
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto &item : reference.named_parameters(/*recurse=*/true))
    named.emplace_back(item.key(), item.value());
  for (const auto &item : reference.named_buffers(/*recurse=*/true))
    named.emplace_back(item.key(), item.value());
  for (const auto &[name, tensor] : named) {
    const torch::Tensor value = pick(tensor);
    if (splitConvolutions &&
        (name == "conv1d.weight" || name == "conv1d.bias")) {
      // FP-RNN stacks its four input convolutions as [4, d, K] / [4, d].
      static const char *const parts[] = {"conv_mix", "conv_b", "conv_lambda",
                                          "conv_x"};
      std::string leaf = name.substr(name.find('.') + 1);
      int64_t count = std::min<int64_t>(value.size(0), 4);
      for (int64_t k = 0; k < count; ++k)
        sources[std::string(parts[k]) + "." + leaf] = {
            name + "[" + std::to_string(k) + "]", value.select(0, k)};
      continue;
    }
    sources[name == "D" ? "D_skip" : name] = {name, value};
  }

  std::vector<std::string> problems;
  std::vector<torch::Tensor> weights;
  std::set<std::string> used;
  for (const ParamInfo &param : layer.params) {
    auto it = sources.find(param.name);
    if (it == sources.end()) {
      problems.push_back("compiled parameter '" + param.name + "' " +
                         shapeText(param.shape) +
                         " has no counterpart in the reference");
      continue;
    }
    used.insert(param.name);
    const Source &source = it->second;
    if (source.value.sizes() != torch::IntArrayRef(param.shape)) {
      problems.push_back("compiled parameter '" + param.name + "' is " +
                         shapeText(param.shape) + " but reference '" +
                         source.referenceName + "' is " +
                         shapeText(source.value));
      continue;
    }
    weights.push_back(source.value);
  }
  for (const auto &[compiledName, source] : sources)
    if (!used.count(compiledName))
      problems.push_back("reference weight '" + source.referenceName + "' " +
                         shapeText(source.value) +
                         " has no counterpart in the compiled layer (expected "
                         "a parameter '" +
                         compiledName + "')");
  if (!problems.empty()) {
    std::string message =
        "cannot import reference weights into layer '" + layer.name + "':";
    for (const std::string &problem : problems)
      message += "\n  " + problem;
    throw WeightImportError(message);
  }
  return weights;
}

} // namespace

std::vector<torch::Tensor>
fp::rt::referenceWeightsFor(const ref::BlockMixer &reference,
                            const LayerInfo &layer) {
  return mapReference(reference, layer,
                      [](const torch::Tensor &weight) { return weight; });
}

std::vector<torch::Tensor>
fp::rt::referenceGradientsFor(const ref::BlockMixer &reference,
                              const LayerInfo &layer) {
  return mapReference(reference, layer, [](const torch::Tensor &weight) {
    return weight.grad().defined() ? weight.grad() : torch::zeros_like(weight);
  });
}

void fp::rt::importReferenceWeights(const ref::BlockMixer &reference,
                                    CompiledLayer &layer) {
  std::vector<torch::Tensor> weights =
      referenceWeightsFor(reference, layer.info());
  torch::NoGradGuard noGrad;
  const std::vector<torch::Tensor> &params = layer.orderedParameters();
  for (size_t i = 0; i < params.size(); ++i)
    params[i].copy_(weights[i]);
}
