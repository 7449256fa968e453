//===- ReferenceImportTest.cpp - References of compiled models --*- C++ -*-===//
//
// The table of models/*.fp against the directory, every entry building a
// working reference layer at another width, the configuration taken from a
// manifest, and the weight-name mapping on parameter lists written from the
// DSL sources (what fpc lists for them), including FP-RNN's split
// convolutions and every kind of mapping error.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/ReferenceImport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

using namespace fp::rt;
using ::testing::HasSubstr;

namespace {

/// A manifest with one layer `kind` of width `dModel` stacked `layers` times
/// into model `name`, with the reference solver of `solver`.
Manifest manifestFor(const std::string &name, const std::string &kind,
                     int64_t dModel, int64_t layers,
                     const SolverConfig &solver) {
  Manifest manifest;
  manifest.abiVersion = 1;
  manifest.generator = "test";
  LayerInfo layer;
  layer.name = kind;
  layer.dModel = dModel;
  SolverDefaults defaults;
  defaults.tolerance = solver.tolerance;
  defaults.trainQuantile = solver.trainQuantile;
  defaults.maxIterTrain = static_cast<int32_t>(solver.maxIterTrain);
  defaults.maxIterEval = static_cast<int32_t>(solver.maxIterEval);
  defaults.relaxStart = solver.relaxStart;
  defaults.relaxDecay = solver.relaxDecay;
  defaults.relaxPatience = static_cast<int32_t>(solver.relaxPatience);
  layer.solver = defaults;
  manifest.layers.push_back(layer);
  ModelInfo model;
  model.name = name;
  model.dModel = dModel;
  model.stack.assign(layers, kind);
  manifest.model = model;
  return manifest;
}

/// A layer `name` with parameters of the given names and shapes.
LayerInfo layerWith(
    const std::string &name,
    const std::vector<std::pair<std::string, std::vector<int64_t>>> &params) {
  LayerInfo layer;
  layer.name = name;
  for (const auto &[paramName, shape] : params) {
    ParamInfo param;
    param.name = paramName;
    param.shape = shape;
    layer.params.push_back(param);
  }
  return layer;
}

std::string importError(const ref::BlockMixer &reference,
                        const LayerInfo &layer) {
  try {
    referenceWeightsFor(reference, layer);
  } catch (const WeightImportError &error) {
    return error.what();
  }
  ADD_FAILURE() << "the import succeeded";
  return {};
}

TEST(ReferenceTable, CoversEveryModelSource) {
  std::vector<std::string> sources, table;
  for (const auto &entry : std::filesystem::directory_iterator(FP_MODELS_DIR))
    if (entry.path().extension() == ".fp")
      sources.push_back(entry.path().stem().string());
  for (const ReferenceModel &model : referenceModels())
    table.push_back(model.name);
  std::sort(sources.begin(), sources.end());
  EXPECT_EQ(table, sources);
}

TEST(ReferenceTable, EveryEntryBuildsAReferenceAtAnotherWidth) {
  torch::manual_seed(0);
  for (const ReferenceModel &model : referenceModels()) {
    SCOPED_TRACE(model.name);
    // d = 32 takes every mixer's shape constraints (monarch blocks of 16,
    // 8 Householder blocks).
    Manifest manifest = manifestFor(model.name, model.config.kind, 16,
                                    model.config.nLayers, model.config.solver);
    ModelConfig config = referenceConfigFor(manifest, "", torch::kFloat64);
    EXPECT_EQ(config.dModel, 16);
    EXPECT_EQ(config.dtype, torch::kFloat64);
    config.solver.fixedIters = 3;
    std::shared_ptr<ref::BlockMixer> layer = ref::makeBlockMixer(config);
    layer->eval();
    torch::NoGradGuard noGrad;
    torch::Tensor out =
        layer->forward(torch::randn({2, 3, 16}, torch::kFloat64));
    EXPECT_EQ(out.sizes(), torch::IntArrayRef({2, 3, 16}));
    EXPECT_TRUE(torch::isfinite(out).all().item<bool>());
  }
}

TEST(ReferenceTable, ConfigurationFollowsTheManifest) {
  SolverConfig solver = ref::referenceSolverConfig("fp_mamba");
  solver.maxIterTrain = 7;
  solver.relaxPatience = 4;
  Manifest manifest = manifestFor("fp_mamba_copy", "fp_mamba", 40, 3, solver);
  manifest.model->padVocabMultiple = 4;
  ModelConfig config = referenceConfigFor(manifest);
  EXPECT_EQ(config.kind, "fp_mamba");
  EXPECT_EQ(config.dModel, 40);
  EXPECT_EQ(config.nLayers, 3);
  EXPECT_EQ(config.padVocabMultiple, 4);
  EXPECT_EQ(config.dState, 32);
  EXPECT_TRUE(config.symmMixer);
  EXPECT_TRUE(config.useShortConv);
  EXPECT_EQ(config.mixer, "householder");
  EXPECT_EQ(config.solver.maxIterTrain, 7);
  EXPECT_EQ(config.solver.relaxPatience, 4);
  // The solver comes from the manifest.
  EXPECT_TRUE(solverDifferences(*manifest.layers[0].solver, config).empty());
  ModelConfig defaults = config;
  defaults.solver = ref::referenceSolverConfig("fp_mamba");
  EXPECT_THAT(solverDifferences(*manifest.layers[0].solver, defaults),
              ::testing::ElementsAre("max_iter_train: compiled 7, reference "
                                     "100",
                                     "relax_patience: compiled 4, reference "
                                     "15"));
  // A name given explicitly wins over the manifest's.
  EXPECT_EQ(referenceConfigFor(manifest, "fp_mamba_lm").nLayers, 3);
  EXPECT_TRUE(referenceConfigFor(manifest, "fp_mamba_lm").gluInLoop);
}

TEST(ReferenceTable, PairsTheBackwardMode) {
  SolverConfig solver = ref::referenceSolverConfig("fp_mamba");
  Manifest manifest = manifestFor("fp_mamba_copy", "fp_mamba", 40, 1, solver);
  SolverDefaults &compiled = *manifest.layers[0].solver;
  EXPECT_EQ(referenceConfigFor(manifest).nBackwards, 1);

  // truncated(k) is the reference's n_backwards = k.
  compiled.backward.mode = BackwardMode::Truncated;
  compiled.backward.steps = 3;
  ModelConfig config = referenceConfigFor(manifest);
  EXPECT_EQ(config.nBackwards, 3);
  EXPECT_TRUE(solverDifferences(compiled, config).empty());
  config.nBackwards = 1;
  EXPECT_THAT(solverDifferences(compiled, config),
              ::testing::ElementsAre("backward: compiled truncated(3), "
                                     "reference n_backwards 1 (one_step)"));

  // neumann and implicit have no reference: every pairing says so.
  compiled.backward.mode = BackwardMode::Neumann;
  compiled.backward.steps = 2;
  config = referenceConfigFor(manifest);
  EXPECT_THAT(solverDifferences(compiled, config),
              ::testing::ElementsAre(
                  "backward: compiled neumann(2), which the reference does "
                  "not compute (it has one_step and truncated(k), as "
                  "n_backwards)"));
  compiled.backward = {BackwardMode::Implicit, 0, 1e-6};
  EXPECT_THAT(solverDifferences(compiled, referenceConfigFor(manifest)),
              ::testing::ElementsAre(HasSubstr("compiled implicit(1e-06)")));
}

TEST(ReferenceTable, RefusesModelsItCannotMap) {
  auto error = [](const Manifest &manifest, const std::string &name = "") {
    try {
      referenceConfigFor(manifest, name);
    } catch (const std::invalid_argument &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  SolverConfig solver;
  EXPECT_THAT(error(manifestFor("gru", "fp_mamba", 8, 1, solver)),
              HasSubstr("no reference for model 'gru'; the table has "
                        "fp_mamba2_householder2, fp_mamba2_kronecker, "
                        "fp_mamba_arith, "));
  EXPECT_THAT(error(manifestFor("fp_rnn", "fp_mamba", 8, 1, solver)),
              HasSubstr("model 'fp_rnn' maps to a reference 'fp_rnn' layer, "
                        "but the library's layer is 'fp_mamba'"));
  Manifest unnamed = manifestFor("", "fp_mamba", 8, 1, solver);
  EXPECT_THAT(error(unnamed), HasSubstr("the manifest names no model"));
  EXPECT_EQ(referenceConfigFor(unnamed, "fp_mamba_kronecker").mixer,
            "kronecker");
}

/// What fpc lists for models/lib/fp_mamba.fp with a one-reflection
/// Householder mixer, no convolution, D = 8 (d = 16, N = 16, R = 1).
LayerInfo compiledFpMambaHouseholder() {
  return layerWith("fp_mamba", {{"in_proj.weight", {32, 8}},
                                {"x_proj.weight", {33, 16}},
                                {"dt_proj.bias", {16}},
                                {"dt_proj.weight", {16, 1}},
                                {"A_log", {16, 16}},
                                {"z_y_proj.weight_g", {16}},
                                {"z_y_proj.weight_v", {16, 16}},
                                {"out_proj.weight", {8, 16}},
                                {"bc_y_proj.weight_g", {32}},
                                {"bc_y_proj.weight_v", {32, 16}},
                                {"D_skip", {16}},
                                {"out_norm.bias", {16}},
                                {"out_norm.weight", {16}},
                                {"mixer.u_proj.weight_g", {16}},
                                {"mixer.u_proj.weight_v", {16, 32}},
                                {"mixer.alpha_proj.weight_g", {1}},
                                {"mixer.alpha_proj.bias", {1}},
                                {"mixer.alpha_proj.weight_v", {1, 32}}});
}

ModelConfig smallFpMamba() {
  ModelConfig config;
  config.kind = "fp_mamba";
  config.dModel = 8;
  config.dState = 16;
  config.mixer = "householder";
  config.mixerRank = 1;
  config.dtype = torch::kFloat64;
  return config;
}

TEST(WeightImport, MapsFpMambaByNameWithTheSkipRenamed) {
  ref::FPMambaLayer reference(smallFpMamba());
  LayerInfo layer = compiledFpMambaHouseholder();
  std::vector<torch::Tensor> weights = referenceWeightsFor(reference, layer);
  ASSERT_EQ(weights.size(), layer.params.size());
  auto named = reference.named_parameters();
  for (size_t i = 0; i < weights.size(); ++i) {
    std::string source =
        layer.params[i].name == "D_skip" ? "D" : layer.params[i].name;
    EXPECT_TRUE(weights[i].is_same(*named.find(source)))
        << layer.params[i].name;
  }
}

TEST(WeightImport, MapsTheNonselectiveBaseBufferToItsFrozenParameter) {
  ModelConfig config = smallFpMamba();
  config.mixer = "nonselective";
  ref::FPMambaLayer reference(config);
  // The compiled layer's parameters by the reference's names, the buffer
  // `mixer.weight.base` among them.
  std::vector<std::pair<std::string, std::vector<int64_t>>> params;
  for (const auto &item : reference.named_parameters())
    params.emplace_back(item.key() == "D" ? "D_skip" : item.key(),
                        item.value().sizes().vec());
  params.push_back({"mixer.weight.base", {16, 16}});
  LayerInfo layer = layerWith("fp_mamba", params);
  std::vector<torch::Tensor> weights = referenceWeightsFor(reference, layer);
  ASSERT_EQ(weights.size(), params.size());
  EXPECT_TRUE(weights.back().is_same(
      *reference.named_buffers().find("mixer.weight.base")));
  // The buffer has no gradient: its counterpart gets zeros.
  std::vector<torch::Tensor> grads = referenceGradientsFor(reference, layer);
  EXPECT_TRUE(
      torch::equal(grads.back(), torch::zeros({16, 16}, torch::kFloat64)));
  // Without the compiled counterpart, the buffer is listed.
  params.pop_back();
  EXPECT_THAT(importError(reference, layerWith("fp_mamba", params)),
              HasSubstr("reference weight 'mixer.weight.base' [16, 16] has no "
                        "counterpart in the compiled layer"));
}

TEST(WeightImport, SplitsFpRnnConvolutions) {
  ModelConfig config;
  config.kind = "fp_rnn";
  config.dModel = 4; // d = 8
  config.mixer = "householder";
  config.useShortConv = true;
  config.dtype = torch::kFloat64;
  ref::FPRNNLayer reference(config);
  // models/lib/fp_rnn.fp with use_short_conv: four separate convolutions.
  LayerInfo layer =
      layerWith("fp_rnn", {{"io_proj.weight", {16, 4}},
                           {"conv_mix.weight", {8, 4}},
                           {"conv_mix.bias", {8}},
                           {"conv_b.weight", {8, 4}},
                           {"conv_b.bias", {8}},
                           {"conv_lambda.weight", {8, 4}},
                           {"conv_lambda.bias", {8}},
                           {"conv_x.weight", {8, 4}},
                           {"conv_x.bias", {8}},
                           {"b_proj.weight", {8, 8}},
                           {"lambda_proj.bias", {8}},
                           {"lambda_proj.weight", {8, 8}},
                           {"c_proj.weight", {8, 16}},
                           {"readout_conv.weight", {16, 4}},
                           {"readout_conv.bias", {16}},
                           {"out_norm.weight", {8}},
                           {"out_proj.weight", {4, 8}},
                           {"mixer.u_proj.weight_g", {8}},
                           {"mixer.u_proj.weight_v", {8, 16}},
                           {"mixer.alpha_proj.weight_g", {1}},
                           {"mixer.alpha_proj.bias", {1}},
                           {"mixer.alpha_proj.weight_v", {1, 16}}});
  std::vector<torch::Tensor> weights = referenceWeightsFor(reference, layer);
  ASSERT_EQ(weights.size(), layer.params.size());
  const char *convs[] = {"conv_mix", "conv_b", "conv_lambda", "conv_x"};
  for (size_t i = 0; i < layer.params.size(); ++i)
    for (int64_t k = 0; k < 4; ++k) {
      if (layer.params[i].name == std::string(convs[k]) + ".weight") {
        EXPECT_TRUE(torch::equal(weights[i], reference.convWeight[k]));
      }
      if (layer.params[i].name == std::string(convs[k]) + ".bias") {
        EXPECT_TRUE(torch::equal(weights[i], reference.convBias[k]));
      }
    }
}

TEST(WeightImport, ReportsEveryUnmappedNameAndMismatch) {
  ref::FPMambaLayer reference(smallFpMamba());
  LayerInfo layer = compiledFpMambaHouseholder();
  // Drop D_skip, add a parameter the reference lacks, break a shape.
  layer.params.erase(std::find_if(
      layer.params.begin(), layer.params.end(),
      [](const ParamInfo &param) { return param.name == "D_skip"; }));
  layer.params.push_back(
      layerWith("", {{"mixer.gate_proj.bias", {4}}}).params[0]);
  layer.params[0].shape = {8, 32};
  std::string message = importError(reference, layer);
  EXPECT_THAT(message, HasSubstr("cannot import reference weights into layer "
                                 "'fp_mamba':"));
  EXPECT_THAT(message,
              HasSubstr("compiled parameter 'in_proj.weight' is [8, 32] but "
                        "reference 'in_proj.weight' is [32, 8]"));
  EXPECT_THAT(message, HasSubstr("compiled parameter 'mixer.gate_proj.bias' "
                                 "[4] has no counterpart in the reference"));
  EXPECT_THAT(message,
              HasSubstr("reference weight 'D' [16] has no counterpart in the "
                        "compiled layer (expected a parameter 'D_skip')"));
}

} // namespace
