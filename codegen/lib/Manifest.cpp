//===- Manifest.cpp - The JSON manifest of a model library ----------------===//
//
// Writes the manifest of docs/abi.md with llvm::json: what the runtime needs
// to create, initialise and call every layer, and to assemble the model.
//
//===----------------------------------------------------------------------===//

#include "fp/Codegen/Manifest.h"

#include "fp/Codegen/IterationCost.h"

#include "fp/Dialect/FpAttrs.h"
#include "fp/Runtime/ModelABI.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace mlir;
using namespace mlir::fp;
using namespace mlir::fp::codegen;

std::string mlir::fp::codegen::entryPointName(StringRef layer, StringRef role) {
  return ("fp_" + layer + "_" + role).str();
}

/// The init object of a parameter: the kind and its named arguments.
static llvm::json::Object initObject(InitAttr init) {
  llvm::json::Object object;
  object["kind"] = stringifyInitKind(init.getKind()).str();
  ArrayRef<double> args;
  if (init.getArgs())
    args = init.getArgs().asArrayRef();
  auto arg = [&](size_t i, StringRef name) {
    if (i < args.size())
      object[name] = args[i];
  };
  switch (init.getKind()) {
  case InitKind::Constant:
  case InitKind::Eye:
    arg(0, "value");
    break;
  case InitKind::Uniform:
  case InitKind::LogUniform:
    arg(0, "low");
    arg(1, "high");
    break;
  case InitKind::Normal:
    arg(0, "mean");
    arg(1, "std");
    break;
  case InitKind::FanInUniform:
    arg(0, "scale");
    break;
  case InitKind::DtBias:
    arg(0, "dt_min");
    arg(1, "dt_max");
    arg(2, "floor");
    break;
  case InitKind::RowNorm:
    if (init.getOf())
      object["of"] = init.getOf().getValue().str();
    break;
  case InitKind::Zeros:
  case InitKind::Ones:
  case InitKind::S4DReal:
  case InitKind::Orthogonal:
    break;
  }
  return object;
}

static llvm::json::Value backwardValue(BackwardAttr backward) {
  switch (backward.getMode()) {
  case BackwardMode::OneStep:
    return "one_step";
  case BackwardMode::Truncated:
    return llvm::json::Object{{"mode", "truncated"},
                              {"steps", backward.getSteps()}};
  case BackwardMode::Neumann:
    return llvm::json::Object{{"mode", "neumann"},
                              {"steps", backward.getSteps()}};
  case BackwardMode::Implicit:
    return llvm::json::Object{
        {"mode", "implicit"},
        {"tolerance", backward.getTolerance().convertToDouble()}};
  }
  llvm_unreachable("unknown backward mode");
}

static llvm::json::Object termsObject(const CostTerms &terms) {
  return llvm::json::Object{{"per_token", terms.perToken},
                            {"per_sample", terms.perSample},
                            {"fixed", terms.fixed}};
}

/// `{"launches": [...]}`: an `iteration_cost`, or a part of a `call_cost`.
static llvm::json::Object launchesObject(ArrayRef<LaunchCost> cost) {
  llvm::json::Array launches;
  for (const LaunchCost &launch : cost)
    launches.push_back(
        llvm::json::Object{{"op", launch.op},
                           {"flops", termsObject(launch.flops)},
                           {"elements", termsObject(launch.elements)}});
  return llvm::json::Object{{"launches", std::move(launches)}};
}

/// The optional `call_cost` of a layer: the launches of a call outside its
/// solver loop, of the forward and of the derived backward (with one step of
/// the backward's own solve, where it has one). Absent when the forward's
/// cost is not modelled; `backward` is absent when its cost is not.
static std::optional<llvm::json::Object> callCostObject(const LayerPlan &plan) {
  FailureOr<SmallVector<LaunchCost>> forward = callCost(plan);
  if (failed(forward))
    return std::nullopt;
  llvm::json::Object cost{{"forward", launchesObject(*forward)}};
  if (!plan.backward)
    return cost;
  FailureOr<SmallVector<LaunchCost>> backward = callCost(*plan.backward);
  if (failed(backward))
    return cost;
  if (plan.backward->loop) {
    FailureOr<SmallVector<LaunchCost>> step = iterationCost(*plan.backward);
    if (failed(step))
      return cost;
    cost["backward_step"] = launchesObject(*step);
  }
  cost["backward"] = launchesObject(*backward);
  return cost;
}

static llvm::json::Object layerObject(const LayerPlan &plan,
                                      const LayerPlan *split,
                                      const LibraryInfo &info) {
  StringRef name = plan.layer.getSymName();
  llvm::json::Array params;
  for (const ParamInfo &param : plan.params) {
    llvm::json::Array shape;
    for (int64_t extent : param.shape)
      shape.push_back(extent);
    llvm::json::Object entry{{"name", param.name},
                             {"shape", std::move(shape)},
                             {"init", initObject(param.op.getInit())},
                             {"weight_decay", bool(param.op.getDecay())}};
    // Only where set, so that manifests without frozen parameters are
    // unchanged.
    if (param.op.getFrozen())
      entry["frozen"] = true;
    params.push_back(std::move(entry));
  }
  llvm::json::Object layer{
      {"name", name.str()},
      {"d_model", plan.dModel},
      {"entry_points",
       llvm::json::Object{
           {"buffer_sizes", entryPointName(name, "buffer_sizes")},
           {"forward", entryPointName(name, "forward")},
           {"backward", entryPointName(name, "backward")},
           {"schedule", entryPointName(name, "schedule")}}},
      {"schedule", info.schedule},
      {"params", std::move(params)}};
  // A derived backward is compiled for every target of the library.
  llvm::json::Array backwardTargets;
  if (plan.backward)
    for (const std::string &target : info.targets)
      backwardTargets.push_back(target);
  layer["backward_targets"] = std::move(backwardTargets);
  // The chunked forward (docs/streaming.md) and the states it carries, each
  // with its shape per sample.
  if (plan.chunk) {
    layer["entry_points"].getAsObject()->try_emplace(
        "forward_chunk", entryPointName(name, "forward_chunk"));
    llvm::json::Array states;
    for (const LayerPlan::State &state : plan.chunk->states) {
      llvm::json::Array shape;
      for (const Extent &extent : llvm::drop_begin(state.shape.extents))
        shape.push_back(extent.size);
      states.push_back(llvm::json::Object{{"name", state.name},
                                          {"shape", std::move(shape)}});
    }
    layer["chunk"] = llvm::json::Object{{"states", std::move(states)}};
  }
  if (plan.solver) {
    SolverAttr solver = plan.solver.getSolver();
    layer["solver"] = llvm::json::Object{
        {"tolerance", solver.getTolerance().convertToDouble()},
        {"train_quantile", solver.getQuantile().convertToDouble()},
        {"max_iter_train", solver.getMaxIterTrain()},
        {"max_iter_eval", solver.getMaxIterEval()},
        {"relax_start", solver.getRelaxStart().convertToDouble()},
        {"relax_decay", solver.getRelaxDecay().convertToDouble()},
        {"relax_patience", solver.getRelaxPatience()},
        {"backward", backwardValue(plan.solver.getBackward())}};
  }
  if (FailureOr<SmallVector<LaunchCost>> cost = iterationCost(plan);
      succeeded(cost))
    layer["iteration_cost"] = launchesObject(*cost);
  if (std::optional<llvm::json::Object> cost = callCostObject(plan))
    layer["call_cost"] = std::move(*cost);
  if (split) {
    llvm::json::Object schedule;
    if (FailureOr<SmallVector<LaunchCost>> cost = iterationCost(*split);
        succeeded(cost))
      schedule["iteration_cost"] = launchesObject(*cost);
    if (std::optional<llvm::json::Object> cost = callCostObject(*split))
      schedule["call_cost"] = std::move(*cost);
    layer["cuda_split"] = std::move(schedule);
  }
  return layer;
}

/// The `model` object from one entry of the module's `fp.models`.
static FailureOr<llvm::json::Object> modelObject(ModuleOp module,
                                                 DictionaryAttr model) {
  auto integer = [&](StringRef key) -> std::optional<int64_t> {
    if (auto attr = model.getAs<IntegerAttr>(key))
      return attr.getInt();
    return std::nullopt;
  };
  auto layer = model.getAs<FlatSymbolRefAttr>("layer");
  std::optional<int64_t> dModel = integer("d_model");
  std::optional<int64_t> layers = integer("n_layers");
  if (!layer || !dModel || !layers || *layers < 1)
    return module.emitError("cannot emit the model description ")
               << model << ": it needs 'layer', 'd_model' and 'n_layers'",
           failure();
  llvm::json::Array stack;
  for (int64_t i = 0; i < *layers; ++i)
    stack.push_back(layer.getValue().str());
  llvm::json::Object object{{"d_model", *dModel}, {"stack", std::move(stack)}};
  if (auto name = model.getAs<StringAttr>("name"))
    object["name"] = name.getValue().str();
  if (std::optional<int64_t> vocab = integer("vocab"))
    object["vocab"] = *vocab;
  auto norm = model.getAs<StringAttr>("norm");
  object["final_norm"] = norm ? norm.getValue().str() : "none";
  auto tied = model.getAs<BoolAttr>("tie_embeddings");
  object["tied_head"] = tied && tied.getValue();
  if (auto eps = model.getAs<FloatAttr>("norm_eps"))
    object["norm_eps"] = eps.getValueAsDouble();
  if (std::optional<int64_t> pad = integer("pad_vocab_multiple"))
    object["pad_vocab_multiple"] = *pad;
  return object;
}

FailureOr<std::string>
mlir::fp::codegen::buildManifest(ModuleOp module, ArrayRef<LayerPlan> layers,
                                 const LibraryInfo &info,
                                 ArrayRef<LayerPlan> splitLayers) {
  llvm::json::Array layerArray, targets, dtypes;
  const bool split = !splitLayers.empty() &&
                     llvm::is_contained(info.targets, std::string("cuda"));
  for (auto [index, plan] : llvm::enumerate(layers))
    layerArray.push_back(
        layerObject(plan, split ? &splitLayers[index] : nullptr, info));
  for (const std::string &target : info.targets)
    targets.push_back(target);
  for (StringRef dtype : knownDTypes())
    if (llvm::is_contained(info.dtypes, dtype))
      dtypes.push_back(dtype);
  llvm::json::Object manifest{{"abi_version", FP_MODEL_ABI_VERSION},
                              {"generator", info.generator},
                              {"targets", std::move(targets)},
                              {"dtypes", std::move(dtypes)},
                              {"layers", std::move(layerArray)}};
  if (!info.source.empty())
    manifest["source"] = info.source;
  if (auto models = module->getAttrOfType<ArrayAttr>("fp.models")) {
    if (models.size() > 1)
      return module.emitError("cannot emit ")
                 << models.size()
                 << " models into one library; a library holds at most one",
             failure();
    if (models.size() == 1) {
      auto model = dyn_cast<DictionaryAttr>(models[0]);
      if (!model)
        return module.emitError("cannot emit the model description ")
                   << models[0] << ": not a dictionary",
               failure();
      FailureOr<llvm::json::Object> object = modelObject(module, model);
      if (failed(object))
        return failure();
      manifest["model"] = std::move(*object);
    }
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(manifest));
  return text;
}
