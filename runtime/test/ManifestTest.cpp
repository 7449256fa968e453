//===- ManifestTest.cpp - Tests of the manifest parser ----------*- C++ -*-===//
//
// Runs parseManifest() on JSON text: a complete manifest parses into the
// expected structs, optional parts may be left out, unknown keys are ignored,
// and each validation rule rejects a broken variant of the good manifest with
// a message that names the offending field.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Manifest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>

using namespace fp::rt;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

namespace {

/// The example manifest of docs/abi.md.
constexpr const char *goodManifest = R"json({
  "abi_version": 6, "generator": "fpc 0.1.0", "source": "models/x.fp",
  "targets": ["cpu", "cuda"], "dtypes": ["f32", "f64"],
  "layers": [{"name": "fp_mamba", "d_model": 512,
              "entry_points": {"buffer_sizes": "fp_fp_mamba_buffer_sizes",
                               "forward": "fp_fp_mamba_forward",
                               "backward": "fp_fp_mamba_backward"},
              "backward_targets": ["cpu"],
              "params": [{"name": "W_in", "shape": [2048, 512],
                          "init": {"kind": "uniform_fan_in"},
                          "weight_decay": true},
                         {"name": "D_skip", "shape": [1024],
                          "init": {"kind": "constant", "value": 1.0},
                          "weight_decay": false}],
              "solver": {"tolerance": 0.1, "train_quantile": 0.75,
                         "max_iter_train": 100, "max_iter_eval": 1000,
                         "relax_start": 0.99, "relax_decay": 0.9,
                         "relax_patience": 15, "backward": "one_step"}}],
  "model": {"vocab": 67, "d_model": 512, "stack": ["fp_mamba", "fp_mamba"],
            "final_norm": "rms_norm", "tied_head": true}
})json";

/// The good manifest with `edit` applied, as text.
std::string edited(const std::function<void(Json &)> &edit) {
  Json document = Json::parse(goodManifest);
  edit(document);
  return document.dump();
}

/// The message parseManifest() throws for `text`; fails the test when it
/// does not throw.
std::string parseError(const std::string &text) {
  try {
    parseManifest(text);
  } catch (const ManifestError &error) {
    return error.what();
  }
  ADD_FAILURE() << "parseManifest accepted:\n" << text;
  return {};
}

//===----------------------------------------------------------------------===//
// Accepted manifests
//===----------------------------------------------------------------------===//

TEST(ManifestTest, ParsesEveryField) {
  Manifest manifest = parseManifest(goodManifest);
  EXPECT_EQ(manifest.abiVersion, 6u);
  EXPECT_EQ(manifest.generator, "fpc 0.1.0");
  EXPECT_EQ(manifest.source, "models/x.fp");
  EXPECT_THAT(manifest.targets, ElementsAre(FP_TARGET_CPU, FP_TARGET_CUDA));
  EXPECT_THAT(manifest.dtypes, ElementsAre(FP_DTYPE_F32, FP_DTYPE_F64));
  EXPECT_TRUE(manifest.hasTarget(FP_TARGET_CUDA));
  EXPECT_FALSE(manifest.hasDType(FP_DTYPE_BF16));

  ASSERT_EQ(manifest.layers.size(), 1u);
  const LayerInfo &layer = manifest.layers[0];
  EXPECT_EQ(&layer, manifest.findLayer("fp_mamba"));
  EXPECT_EQ(manifest.findLayer("lstm"), nullptr);
  EXPECT_EQ(layer.name, "fp_mamba");
  EXPECT_EQ(layer.dModel, 512);
  EXPECT_EQ(layer.entryPoints.bufferSizes, "fp_fp_mamba_buffer_sizes");
  EXPECT_EQ(layer.entryPoints.forward, "fp_fp_mamba_forward");
  EXPECT_EQ(layer.entryPoints.backward, "fp_fp_mamba_backward");
  EXPECT_EQ(layer.backwardTargets, std::vector<fp_target>{FP_TARGET_CPU});

  ASSERT_EQ(layer.params.size(), 2u);
  EXPECT_EQ(layer.params[0].name, "W_in");
  EXPECT_THAT(layer.params[0].shape, ElementsAre(2048, 512));
  EXPECT_EQ(layer.params[0].numElements(), 2048 * 512);
  EXPECT_EQ(layer.params[0].init.kind, "uniform_fan_in");
  EXPECT_TRUE(layer.params[0].init.args.empty());
  EXPECT_TRUE(layer.params[0].weightDecay);
  EXPECT_EQ(layer.params[1].init.kind, "constant");
  EXPECT_EQ(layer.params[1].init.args.at("value"), 1.0);
  EXPECT_FALSE(layer.params[1].weightDecay);

  ASSERT_TRUE(layer.solver.has_value());
  const SolverDefaults &solver = *layer.solver;
  EXPECT_DOUBLE_EQ(solver.tolerance, 0.1);
  EXPECT_DOUBLE_EQ(solver.trainQuantile, 0.75);
  EXPECT_EQ(solver.maxIterTrain, 100);
  EXPECT_EQ(solver.maxIterEval, 1000);
  EXPECT_DOUBLE_EQ(solver.relaxStart, 0.99);
  EXPECT_DOUBLE_EQ(solver.relaxDecay, 0.9);
  EXPECT_EQ(solver.relaxPatience, 15);
  EXPECT_EQ(solver.backward.mode, BackwardMode::OneStep);

  ASSERT_TRUE(manifest.model.has_value());
  const ModelInfo &model = *manifest.model;
  EXPECT_EQ(model.vocab, 67);
  EXPECT_EQ(model.dModel, 512);
  EXPECT_THAT(model.stack, ElementsAre("fp_mamba", "fp_mamba"));
  EXPECT_EQ(model.finalNorm, FinalNorm::RmsNorm);
  EXPECT_TRUE(model.tiedHead);
}

TEST(ManifestTest, OptionalPartsMayBeOmitted) {
  Manifest manifest = parseManifest(edited([](Json &m) {
    m.erase("model");
    m.erase("source");
    m["layers"][0].erase("solver");
    m["layers"][0]["params"] = Json::array();
  }));
  EXPECT_FALSE(manifest.model.has_value());
  EXPECT_EQ(manifest.source, "");
  EXPECT_FALSE(manifest.layers[0].solver.has_value());
  EXPECT_TRUE(manifest.layers[0].params.empty());
}

TEST(ManifestTest, ParsesTheIterationCost) {
  EXPECT_TRUE(parseManifest(goodManifest).layers[0].iterationCost.empty());
  Manifest manifest = parseManifest(edited([](Json &m) {
    m["layers"][0]["iteration_cost"] = Json::parse(R"json({"launches": [
        {"op": "fp.linear",
         "flops": {"per_token": 2048, "per_sample": 0, "fixed": 0},
         "elements": {"per_token": 1536, "per_sample": 0, "fixed": 524288}},
        {"op": "fp.solver_update",
         "flops": {"per_token": 0, "per_sample": 3, "fixed": 1},
         "elements": {"per_token": 0, "per_sample": 0, "fixed": 0}}]})json");
  }));
  const std::vector<LaunchCost> &cost = manifest.layers[0].iterationCost;
  ASSERT_EQ(cost.size(), 2u);
  EXPECT_EQ(cost[0].op, "fp.linear");
  EXPECT_DOUBLE_EQ(cost[0].flops.at(4, 10), 2048.0 * 40);
  EXPECT_DOUBLE_EQ(cost[0].elements.at(4, 10), 1536.0 * 40 + 524288);
  EXPECT_EQ(cost[1].op, "fp.solver_update");
  EXPECT_DOUBLE_EQ(cost[1].flops.at(4, 10), 3.0 * 4 + 1);
  EXPECT_DOUBLE_EQ(cost[1].elements.at(4, 10), 0.0);
}

TEST(ManifestTest, ParsesTheCallCost) {
  EXPECT_FALSE(parseManifest(goodManifest).layers[0].callCost.present);
  const std::string launch = R"json({"op": "fp.weight_grad",
      "flops": {"per_token": 128, "per_sample": 0, "fixed": 0},
      "elements": {"per_token": 16, "per_sample": 0, "fixed": 64}})json";
  Manifest manifest = parseManifest(edited([&](Json &m) {
    m["layers"][0]["call_cost"] = Json::parse(
        R"json({"forward": {"launches": []}, "backward": {"launches": [)json" +
        launch + "," + launch + R"json(]},
        "backward_step": {"launches": [)json" +
        launch + "]}}");
    m["layers"][0]["cuda_split"] =
        Json::parse(R"json({"call_cost": {"forward": {"launches": [)json" +
                    launch + "]}}}");
  }));
  const LayerInfo &layer = manifest.layers[0];
  EXPECT_TRUE(layer.callCost.present);
  EXPECT_TRUE(layer.callCost.forward.empty());
  EXPECT_TRUE(layer.callCost.hasBackward);
  ASSERT_EQ(layer.callCost.backward.size(), 2u);
  EXPECT_EQ(layer.callCost.backward[1].op, "fp.weight_grad");
  EXPECT_DOUBLE_EQ(layer.callCost.backward[1].flops.at(2, 5), 128.0 * 10);
  EXPECT_DOUBLE_EQ(layer.callCost.backward[1].elements.at(2, 5),
                   16.0 * 10 + 64);
  EXPECT_EQ(layer.callCost.backwardStep.size(), 1u);
  EXPECT_TRUE(layer.splitCallCost.present);
  EXPECT_EQ(layer.splitCallCost.forward.size(), 1u);
  EXPECT_FALSE(layer.splitCallCost.hasBackward);
  EXPECT_TRUE(layer.splitCallCost.backwardStep.empty());
}

TEST(ManifestTest, ParsesTheSchedules) {
  const LayerInfo &plain = parseManifest(goodManifest).layers[0];
  EXPECT_EQ(plain.schedule, "");
  EXPECT_EQ(plain.entryPoints.schedule, "");
  EXPECT_FALSE(plain.hasCudaSplit);
  Manifest manifest = parseManifest(edited([](Json &m) {
    m["layers"][0]["schedule"] = "fused";
    m["layers"][0]["entry_points"]["schedule"] = "fp_fp_mamba_schedule";
    m["layers"][0]["cuda_split"] = Json::parse(R"json({"iteration_cost":
        {"launches": [{"op": "fp.selective_scan",
         "flops": {"per_token": 96, "per_sample": 0, "fixed": 0},
         "elements": {"per_token": 80, "per_sample": 0, "fixed": 0}}]}})json");
  }));
  const LayerInfo &layer = manifest.layers[0];
  EXPECT_EQ(layer.schedule, "fused");
  EXPECT_EQ(layer.entryPoints.schedule, "fp_fp_mamba_schedule");
  EXPECT_TRUE(layer.hasCudaSplit);
  ASSERT_EQ(layer.splitIterationCost.size(), 1u);
  EXPECT_EQ(layer.splitIterationCost[0].op, "fp.selective_scan");
  EXPECT_DOUBLE_EQ(layer.splitIterationCost[0].flops.at(2, 3), 96.0 * 6);
}

TEST(ManifestTest, ParsesTheChunkedForward) {
  const LayerInfo &plain = parseManifest(goodManifest).layers[0];
  EXPECT_FALSE(plain.hasChunkedForward());
  EXPECT_TRUE(plain.chunkStates.empty());
  Manifest manifest = parseManifest(edited([](Json &m) {
    m["layers"][0]["entry_points"]["forward_chunk"] =
        "fp_fp_mamba_forward_chunk";
    m["layers"][0]["chunk"] = Json::parse(R"json({"states": [
        {"name": "fp_mamba.f.shift", "shape": [1, 1024]},
        {"name": "fp_mamba.f.selective_scan", "shape": [1024, 16]}]})json");
  }));
  const LayerInfo &layer = manifest.layers[0];
  EXPECT_TRUE(layer.hasChunkedForward());
  EXPECT_EQ(layer.entryPoints.forwardChunk, "fp_fp_mamba_forward_chunk");
  ASSERT_EQ(layer.chunkStates.size(), 2u);
  EXPECT_EQ(layer.chunkStates[1].name, "fp_mamba.f.selective_scan");
  EXPECT_EQ(layer.chunkStates[1].shape, (std::vector<int64_t>{1024, 16}));
}

TEST(ManifestTest, IgnoresUnknownKeys) {
  Manifest manifest = parseManifest(edited([](Json &m) {
    m["build_id"] = "abc";
    m["layers"][0]["kernels"] = {{"fused", 3}};
    m["layers"][0]["solver"]["future_knob"] = true;
    m["model"]["dropout"] = 0.1;
    m["layers"][0]["params"][0]["init"]["comment"] = "not an argument";
  }));
  EXPECT_EQ(manifest.layers[0].name, "fp_mamba");
  EXPECT_TRUE(manifest.layers[0].params[0].init.args.empty());
}

TEST(ManifestTest, ModelDefaultsWhenOptionalKeysAreAbsent) {
  Manifest manifest = parseManifest(goodManifest);
  const ModelInfo &model = *manifest.model;
  EXPECT_EQ(model.name, "");
  EXPECT_DOUBLE_EQ(model.normEps, 1e-5);
  EXPECT_EQ(model.padVocabMultiple, 8);
  EXPECT_EQ(manifest.layers[0].params[0].init.of, "");
}

TEST(ManifestTest, ParsesModelNameEpsAndPadding) {
  Manifest manifest = parseManifest(edited([](Json &m) {
    m["model"]["name"] = "fp_mamba_householder1";
    m["model"]["norm_eps"] = 1e-6;
    m["model"]["pad_vocab_multiple"] = 4;
  }));
  const ModelInfo &model = *manifest.model;
  EXPECT_EQ(model.name, "fp_mamba_householder1");
  EXPECT_DOUBLE_EQ(model.normEps, 1e-6);
  EXPECT_EQ(model.padVocabMultiple, 4);
}

TEST(ManifestTest, VocabularyIsOptional) {
  Manifest manifest =
      parseManifest(edited([](Json &m) { m["model"].erase("vocab"); }));
  ASSERT_TRUE(manifest.model.has_value());
  EXPECT_EQ(manifest.model->vocab, 0);
}

TEST(ManifestTest, ParsesTheParameterAnInitialiserReads) {
  Manifest manifest = parseManifest(edited([](Json &m) {
    m["layers"][0]["params"].push_back(
        {{"name", "W_in_gain"},
         {"shape", {2048}},
         {"init", {{"kind", "row_norm"}, {"of", "W_in"}}},
         {"weight_decay", true}});
  }));
  const ParamInfo &gain = manifest.layers[0].params.at(2);
  EXPECT_EQ(gain.init.kind, "row_norm");
  EXPECT_EQ(gain.init.of, "W_in");
  EXPECT_TRUE(gain.init.args.empty());
  // `of` may name a parameter listed later in the layer.
  manifest = parseManifest(edited(
      [](Json &m) { m["layers"][0]["params"][0]["init"]["of"] = "D_skip"; }));
  EXPECT_EQ(manifest.layers[0].params[0].init.of, "D_skip");
}

TEST(ManifestTest, ParsesAFrozenParameter) {
  Manifest manifest = parseManifest(
      edited([](Json &m) { m["layers"][0]["params"][1]["frozen"] = true; }));
  EXPECT_FALSE(manifest.layers[0].params[0].frozen);
  EXPECT_TRUE(manifest.layers[0].params[1].frozen);
}

TEST(ManifestTest, ScalarParameterHasOneElement) {
  Manifest manifest = parseManifest(edited(
      [](Json &m) { m["layers"][0]["params"][0]["shape"] = Json::array(); }));
  EXPECT_TRUE(manifest.layers[0].params[0].shape.empty());
  EXPECT_EQ(manifest.layers[0].params[0].numElements(), 1);
}

TEST(ManifestTest, ParsesBackwardModesWithArguments) {
  auto backwardOf = [](Json backward) {
    Manifest manifest = parseManifest(edited(
        [&](Json &m) { m["layers"][0]["solver"]["backward"] = backward; }));
    return manifest.layers[0].solver->backward;
  };
  BackwardSpec truncated = backwardOf({{"mode", "truncated"}, {"steps", 4}});
  EXPECT_EQ(truncated.mode, BackwardMode::Truncated);
  EXPECT_EQ(truncated.steps, 4);
  BackwardSpec neumann = backwardOf({{"mode", "neumann"}, {"steps", 8}});
  EXPECT_EQ(neumann.mode, BackwardMode::Neumann);
  EXPECT_EQ(neumann.steps, 8);
  BackwardSpec implicit =
      backwardOf({{"mode", "implicit"}, {"tolerance", 1e-4}});
  EXPECT_EQ(implicit.mode, BackwardMode::Implicit);
  EXPECT_DOUBLE_EQ(implicit.tolerance, 1e-4);
  EXPECT_EQ(backwardOf({{"mode", "one_step"}}).mode, BackwardMode::OneStep);
}

TEST(ManifestTest, ParsesBackwardTargets) {
  Manifest absent = parseManifest(
      edited([](Json &m) { m["layers"][0].erase("backward_targets"); }));
  EXPECT_TRUE(absent.layers[0].backwardTargets.empty());
  EXPECT_FALSE(absent.layers[0].hasBackward(FP_TARGET_CPU));
  Manifest cpu = parseManifest(
      edited([](Json &m) { m["layers"][0]["backward_targets"] = {"cpu"}; }));
  EXPECT_TRUE(cpu.layers[0].hasBackward(FP_TARGET_CPU));
  EXPECT_FALSE(cpu.layers[0].hasBackward(FP_TARGET_CUDA));
}

TEST(ManifestTest, SpellsEnumsAsInTheManifest) {
  EXPECT_STREQ(toString(FP_TARGET_CUDA), "cuda");
  EXPECT_STREQ(toString(FP_DTYPE_BF16), "bf16");
  EXPECT_STREQ(toString(BackwardMode::Implicit), "implicit");
  EXPECT_STREQ(toString(FinalNorm::LayerNorm), "layer_norm");
}

//===----------------------------------------------------------------------===//
// Rejected manifests
//===----------------------------------------------------------------------===//

TEST(ManifestTest, RejectsMalformedJson) {
  EXPECT_THAT(parseError(R"({"abi_version": 1, "layers": [)"),
              HasSubstr("malformed JSON: parse error"));
  EXPECT_THAT(parseError(""), HasSubstr("malformed JSON"));
  EXPECT_THAT(parseError("[1, 2]"),
              HasSubstr("the manifest must be a JSON object, got an array"));
}

/// One broken variant of the good manifest and the text its message must
/// contain.
struct InvalidCase {
  const char *name;
  std::function<void(Json &)> edit;
  const char *message;
};

void PrintTo(const InvalidCase &invalid, std::ostream *os) {
  *os << invalid.name;
}

class InvalidManifestTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidManifestTest, RejectsWithMessage) {
  const InvalidCase &invalid = GetParam();
  std::string message = parseError(edited(invalid.edit));
  EXPECT_THAT(message, HasSubstr(invalid.message));
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

// Shorthands for the edits below.
Json &layer0(Json &m) { return m["layers"][0]; }
Json &solver0(Json &m) { return m["layers"][0]["solver"]; }
Json &param0(Json &m) { return m["layers"][0]["params"][0]; }

const InvalidCase invalidCases[] = {
    // Top level.
    {"MissingAbiVersion", [](Json &m) { m.erase("abi_version"); },
     "missing required field 'abi_version'"},
    {"AbiVersionString", [](Json &m) { m["abi_version"] = "1"; },
     "field 'abi_version' must be a positive integer, got \"1\""},
    {"AbiVersionZero", [](Json &m) { m["abi_version"] = 0; },
     "field 'abi_version' must be a positive integer, got 0"},
    {"MissingGenerator", [](Json &m) { m.erase("generator"); },
     "missing required field 'generator'"},
    {"SourceNotString", [](Json &m) { m["source"] = 3; },
     "field 'source' must be a string, got 3"},
    {"UnknownTarget",
     [](Json &m) {
       m["targets"] = {"cpu", "tpu"};
     },
     "field 'targets[1]' is 'tpu', expected 'cpu' or 'cuda'"},
    {"EmptyTargets", [](Json &m) { m["targets"] = Json::array(); },
     "field 'targets' must not be empty"},
    {"RepeatedTarget",
     [](Json &m) {
       m["targets"] = {"cuda", "cuda"};
     },
     "field 'targets[1]' repeats 'cuda'"},
    {"UnknownDType", [](Json &m) { m["dtypes"] = {"f16"}; },
     "field 'dtypes[0]' is 'f16', expected 'f32', 'f64' or 'bf16'"},
    {"DTypesNotArray", [](Json &m) { m["dtypes"] = "f32"; },
     "field 'dtypes' must be an array, got \"f32\""},
    {"MissingLayers", [](Json &m) { m.erase("layers"); },
     "missing required field 'layers'"},
    {"EmptyLayers", [](Json &m) { m["layers"] = Json::array(); },
     "field 'layers' must not be empty"},
    // Layers.
    {"UnknownBackwardTarget",
     [](Json &m) { layer0(m)["backward_targets"] = {"gpu"}; },
     "field 'layers[0].backward_targets[0]' is 'gpu', expected 'cpu' or "
     "'cuda'"},
    {"RepeatedBackwardTarget",
     [](Json &m) {
       layer0(m)["backward_targets"] = {"cpu", "cpu"};
     },
     "field 'layers[0].backward_targets[1]' repeats 'cpu'"},
    {"BackwardTargetNotCompiled",
     [](Json &m) {
       m["targets"] = {"cpu"};
       layer0(m)["backward_targets"] = {"cuda"};
     },
     "field 'layers[0].backward_targets[0]' names target 'cuda', which the "
     "library's 'targets' lacks"},
    {"LayerNotObject", [](Json &m) { m["layers"][0] = 5; },
     "field 'layers[0]' must be an object, got 5"},
    {"MissingLayerName", [](Json &m) { layer0(m).erase("name"); },
     "missing required field 'layers[0].name'"},
    {"RepeatedLayerName",
     [](Json &m) { m["layers"].push_back(m["layers"][0]); },
     "field 'layers[1].name' repeats layer name 'fp_mamba'"},
    {"ZeroDModel", [](Json &m) { layer0(m)["d_model"] = 0; },
     "field 'layers[0].d_model' must be a positive integer, got 0"},
    {"FractionalDModel", [](Json &m) { layer0(m)["d_model"] = 51.2; },
     "field 'layers[0].d_model' must be a positive integer, got 51.2"},
    {"MissingForward",
     [](Json &m) { layer0(m)["entry_points"].erase("forward"); },
     "missing required field 'layers[0].entry_points.forward'"},
    {"EntryPointsNotObject",
     [](Json &m) { layer0(m)["entry_points"] = "fp_forward"; },
     "field 'layers[0].entry_points' must be an object"},
    {"EntryPointNotIdentifier",
     [](Json &m) { layer0(m)["entry_points"]["backward"] = "fp-backward"; },
     "field 'layers[0].entry_points.backward' must be a C identifier, got "
     "'fp-backward'"},
    {"ChunkEntryWithoutStates",
     [](Json &m) { layer0(m)["entry_points"]["forward_chunk"] = "fp_chunk"; },
     "field 'layers[0].entry_points.forward_chunk' is given, but the layer "
     "has no 'chunk' states"},
    {"ChunkStatesWithoutEntry",
     [](Json &m) { layer0(m)["chunk"] = Json::parse(R"({"states": []})"); },
     "field 'layers[0].chunk' is given, but 'entry_points' has no "
     "'forward_chunk'"},
    {"RepeatedChunkState",
     [](Json &m) {
       layer0(m)["entry_points"]["forward_chunk"] = "fp_chunk";
       layer0(m)["chunk"] = Json::parse(
           R"({"states": [{"name": "s", "shape": [1]},
                          {"name": "s", "shape": [2]}]})");
     },
     "field 'layers[0].chunk.states[1].name' repeats state name 's'"},
    {"ZeroChunkStateExtent",
     [](Json &m) {
       layer0(m)["entry_points"]["forward_chunk"] = "fp_chunk";
       layer0(m)["chunk"] =
           Json::parse(R"({"states": [{"name": "s", "shape": [0]}]})");
     },
     "field 'layers[0].chunk.states[0].shape[0]' must be a positive integer, "
     "got 0"},
    {"MissingParams", [](Json &m) { layer0(m).erase("params"); },
     "missing required field 'layers[0].params'"},
    // Parameters.
    {"ZeroExtent",
     [](Json &m) {
       param0(m)["shape"] = {2048, 0};
     },
     "field 'layers[0].params[0].shape[1]' must be a positive integer, got 0"},
    {"NegativeExtent", [](Json &m) { param0(m)["shape"] = {-3}; },
     "field 'layers[0].params[0].shape[0]' must be a positive integer, got -3"},
    {"HugeParameter",
     [](Json &m) {
       param0(m)["shape"] = {1ll << 40, 1ll << 40};
     },
     "field 'layers[0].params[0].shape[1]' makes the parameter too large"},
    {"ShapeNotArray", [](Json &m) { param0(m)["shape"] = 512; },
     "field 'layers[0].params[0].shape' must be an array, got 512"},
    {"MissingInitKind", [](Json &m) { param0(m)["init"].erase("kind"); },
     "missing required field 'layers[0].params[0].init.kind'"},
    {"MissingWeightDecay", [](Json &m) { param0(m).erase("weight_decay"); },
     "missing required field 'layers[0].params[0].weight_decay'"},
    {"WeightDecayNotBool", [](Json &m) { param0(m)["weight_decay"] = 1; },
     "field 'layers[0].params[0].weight_decay' must be true or false, got 1"},
    {"FrozenNotBool", [](Json &m) { param0(m)["frozen"] = "yes"; },
     "field 'layers[0].params[0].frozen' must be true or false"},
    {"FrozenAndDecayed", [](Json &m) { param0(m)["frozen"] = true; },
     "field 'layers[0].params[0].frozen' is true, but a frozen parameter "
     "cannot have weight_decay"},
    {"RepeatedParamName",
     [](Json &m) { layer0(m)["params"][1]["name"] = "W_in"; },
     "field 'layers[0].params[1].name' repeats parameter name 'W_in'"},
    // Solver.
    {"NegativeTolerance", [](Json &m) { solver0(m)["tolerance"] = -0.1; },
     "field 'layers[0].solver.tolerance' must be a positive number, got -0.1"},
    {"QuantileAboveOne", [](Json &m) { solver0(m)["train_quantile"] = 1.5; },
     "field 'layers[0].solver.train_quantile' must be in (0, 1], got 1.5"},
    {"ZeroMaxIter", [](Json &m) { solver0(m)["max_iter_train"] = 0; },
     "field 'layers[0].solver.max_iter_train' must be a positive 32-bit "
     "integer, got 0"},
    {"MissingPatience", [](Json &m) { solver0(m).erase("relax_patience"); },
     "missing required field 'layers[0].solver.relax_patience'"},
    {"UnknownBackwardMode",
     [](Json &m) { solver0(m)["backward"] = "sideways"; },
     "field 'layers[0].solver.backward' is 'sideways', expected 'one_step', "
     "'truncated', 'neumann' or 'implicit'"},
    {"BackwardModeNeedsArgument",
     [](Json &m) { solver0(m)["backward"] = "truncated"; },
     "is 'truncated', which needs an argument"},
    {"NeumannWithoutSteps",
     [](Json &m) {
       solver0(m)["backward"] = {{"mode", "neumann"}};
     },
     "missing required field 'layers[0].solver.backward.steps'"},
    // Schedules.
    {"SplitScheduleNotAnObject", [](Json &m) { layer0(m)["cuda_split"] = 3; },
     "field 'layers[0].cuda_split' must be an object"},
    {"EmptyScheduleName", [](Json &m) { layer0(m)["schedule"] = ""; },
     "field 'layers[0].schedule' must not be empty"},
    {"BadScheduleSymbol",
     [](Json &m) { layer0(m)["entry_points"]["schedule"] = "not a symbol"; },
     "layers[0].entry_points.schedule"},
    // Iteration cost.
    {"CostWithoutLaunches",
     [](Json &m) { layer0(m)["iteration_cost"] = Json::object(); },
     "missing required field 'layers[0].iteration_cost.launches'"},
    {"CostWithNoLaunch",
     [](Json &m) {
       layer0(m)["iteration_cost"] = {{"launches", Json::array()}};
     },
     "field 'layers[0].iteration_cost.launches' must not be empty"},
    {"NegativeCost",
     [](Json &m) {
       layer0(m)["iteration_cost"] = {
           {"launches",
            {{{"op", "fp.shift"},
              {"flops", {{"per_token", 0}, {"per_sample", 0}, {"fixed", 0}}},
              {"elements",
               {{"per_token", -2}, {"per_sample", 0}, {"fixed", 0}}}}}}};
     },
     "field 'layers[0].iteration_cost.launches[0].elements.per_token' must "
     "be a non-negative number, got -2"},
    {"CostWithoutOp",
     [](Json &m) {
       layer0(m)["iteration_cost"] = {
           {"launches",
            {{{"flops", {{"per_token", 0}, {"per_sample", 0}, {"fixed", 0}}},
              {"elements",
               {{"per_token", 0}, {"per_sample", 0}, {"fixed", 0}}}}}}};
     },
     "missing required field 'layers[0].iteration_cost.launches[0].op'"},
    // Call cost.
    {"CallCostWithoutForward",
     [](Json &m) {
       layer0(m)["call_cost"] = {{"backward", {{"launches", Json::array()}}}};
     },
     "missing required field 'layers[0].call_cost.forward'"},
    {"CallCostWithEmptyBackwardStep",
     [](Json &m) {
       layer0(m)["call_cost"] = {
           {"forward", {{"launches", Json::array()}}},
           {"backward_step", {{"launches", Json::array()}}}};
     },
     "field 'layers[0].call_cost.backward_step.launches' must not be empty"},
    {"CallCostLaunchWithoutFlops",
     [](Json &m) {
       layer0(m)["call_cost"] = {
           {"forward",
            {{"launches",
              {{{"op", "fp.linear"},
                {"elements",
                 {{"per_token", 0}, {"per_sample", 0}, {"fixed", 0}}}}}}}}};
     },
     "missing required field 'layers[0].call_cost.forward.launches[0].flops'"},
    // Model.
    {"UnknownStackLayer",
     [](Json &m) {
       m["model"]["stack"] = {"fp_mamba", "lstm"};
     },
     "field 'model.stack[1]' names layer 'lstm', which the manifest lacks"},
    {"EmptyStack", [](Json &m) { m["model"]["stack"] = Json::array(); },
     "field 'model.stack' must not be empty"},
    {"StackWidthMismatch", [](Json &m) { m["model"]["d_model"] = 256; },
     "field 'model.stack[0]' names layer 'fp_mamba' of d_model 512, but the "
     "model's d_model is 256"},
    {"UnknownFinalNorm", [](Json &m) { m["model"]["final_norm"] = "batch"; },
     "field 'model.final_norm' is 'batch', expected 'none', 'rms_norm' or "
     "'layer_norm'"},
    {"ZeroVocab", [](Json &m) { m["model"]["vocab"] = 0; },
     "field 'model.vocab' must be a positive integer, got 0"},
    {"EmptyModelName", [](Json &m) { m["model"]["name"] = ""; },
     "field 'model.name' must not be empty"},
    {"ModelNameNotString", [](Json &m) { m["model"]["name"] = 7; },
     "field 'model.name' must be a string, got 7"},
    {"ZeroNormEps", [](Json &m) { m["model"]["norm_eps"] = 0; },
     "field 'model.norm_eps' must be a positive number, got 0"},
    {"NormEpsString", [](Json &m) { m["model"]["norm_eps"] = "1e-5"; },
     "field 'model.norm_eps' must be a finite number, got \"1e-5\""},
    {"ZeroPadVocabMultiple",
     [](Json &m) { m["model"]["pad_vocab_multiple"] = 0; },
     "field 'model.pad_vocab_multiple' must be a positive integer, got 0"},
    {"FractionalPadVocabMultiple",
     [](Json &m) { m["model"]["pad_vocab_multiple"] = 2.5; },
     "field 'model.pad_vocab_multiple' must be a positive integer, got 2.5"},
    // Initialisers reading another parameter.
    {"InitOfUnknownParam", [](Json &m) { param0(m)["init"]["of"] = "W_out"; },
     "field 'layers[0].params[0].init.of' names parameter 'W_out', which "
     "layer 'fp_mamba' lacks"},
    {"InitOfItself", [](Json &m) { param0(m)["init"]["of"] = "W_in"; },
     "field 'layers[0].params[0].init.of' names its own parameter 'W_in'"},
    {"InitOfEmpty", [](Json &m) { param0(m)["init"]["of"] = ""; },
     "field 'layers[0].params[0].init.of' must not be empty"},
    {"InitOfNotString", [](Json &m) { param0(m)["init"]["of"] = 1; },
     "field 'layers[0].params[0].init.of' must be a string, got 1"},
};

INSTANTIATE_TEST_SUITE_P(ManifestTest, InvalidManifestTest,
                         ::testing::ValuesIn(invalidCases),
                         [](const ::testing::TestParamInfo<InvalidCase> &info) {
                           return std::string(info.param.name);
                         });

} // namespace
