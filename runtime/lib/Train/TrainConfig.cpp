//===- TrainConfig.cpp - The resolved configuration of a run ----*- C++ -*-===//
//
// JSON (de)serialisation of TrainConfig and the names of its enums. Reading
// is strict: every field toJson() writes must be present with the right
// type, and the error names the field, so a hand-edited or truncated
// config.json is reported rather than half-applied.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Train/TrainConfig.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#ifndef FP_VERSION
#define FP_VERSION "unknown"
#endif

namespace fp::rt {

ScheduleConfig TrainConfig::schedule() const {
  ScheduleConfig result;
  result.kind = optimizer.schedule;
  result.lr = optimizer.lr;
  result.warmupSteps = optimizer.warmupSteps;
  result.minLrRatio = optimizer.minLrRatio;
  result.totalSteps = steps;
  return result;
}

std::string fpcVersion() { return FP_VERSION; }

//===----------------------------------------------------------------------===//
// Enum names
//===----------------------------------------------------------------------===//

std::string scheduleName(Schedule schedule) {
  switch (schedule) {
  case Schedule::Constant:
    return "constant";
  case Schedule::Cosine:
    return "cosine";
  case Schedule::WarmupCosine:
    return "warmup-cosine";
  case Schedule::Linear:
    return "linear";
  }
  return "unknown";
}

std::optional<Schedule> parseSchedule(const std::string &name) {
  for (Schedule schedule : {Schedule::Constant, Schedule::Cosine,
                            Schedule::WarmupCosine, Schedule::Linear})
    if (scheduleName(schedule) == name)
      return schedule;
  return std::nullopt;
}

std::string decayRuleName(DecayRule rule) {
  switch (rule) {
  case DecayRule::NoBiasNoNormNoSsm:
    return "no-bias-no-norm-no-ssm";
  case DecayRule::AllButSsm:
    return "all-but-ssm";
  case DecayRule::All:
    return "all";
  }
  return "unknown";
}

std::optional<DecayRule> parseDecayRule(const std::string &name) {
  for (DecayRule rule :
       {DecayRule::NoBiasNoNormNoSsm, DecayRule::AllButSsm, DecayRule::All})
    if (decayRuleName(rule) == name)
      return rule;
  return std::nullopt;
}

std::string dtypeName(torch::Dtype dtype) {
  if (dtype == torch::kFloat32)
    return "f32";
  if (dtype == torch::kFloat64)
    return "f64";
  return std::string(c10::toString(dtype));
}

std::optional<torch::Dtype> parseDtype(const std::string &name) {
  if (name == "f32")
    return torch::kFloat32;
  if (name == "f64")
    return torch::kFloat64;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

nlohmann::ordered_json toJson(const TrainConfig &config) {
  const ModelConfig &model = config.model;
  const SolverConfig &solver = model.solver;
  const TaskOptions &task = config.taskOptions;
  const OptimizerConfig &optimizer = config.optimizer;
  nlohmann::ordered_json json;
  json["model"] = {
      {"source", config.modelSource},
      {"kind", model.kind},
      {"vocab_size", model.vocabSize},
      {"pad_vocab_multiple", model.padVocabMultiple},
      {"d_model", model.dModel},
      {"layers", model.nLayers},
      {"d_state", model.dState},
      {"expand", model.expand},
      {"dt_rank", model.dtRank},
      {"d_conv", model.dConv},
      {"head_dim", model.headDim},
      {"n_groups", model.nGroups},
      {"mixer", model.mixer},
      {"mixer_rank", model.mixerRank},
      {"short_conv", model.useShortConv},
      {"bc_norm", model.bcNorm},
      {"glu_in_loop", model.gluInLoop},
      {"symm_mixer", model.symmMixer},
      {"mixer_h_dep", model.mixerHDep},
      {"kronecker_norm", model.kroneckerNorm},
      {"norm_eps", model.normEps},
      {"n_backwards", model.nBackwards},
      {"heads", model.nHeads},
      {"dtype", dtypeName(model.dtype)},
      {"autocast", config.autocastBf16 ? "bf16" : "none"},
      {"solver",
       {{"tolerance", solver.tolerance},
        {"train_quantile", solver.trainQuantile},
        {"max_iter_train", solver.maxIterTrain},
        {"max_iter_eval", solver.maxIterEval},
        {"relax_start", solver.relaxStart},
        {"relax_decay", solver.relaxDecay},
        {"relax_patience", solver.relaxPatience},
        {"fixed_iters", solver.fixedIters}}},
  };
  json["task"] = {
      {"name", config.task},
      {"train_length", task.trainLength},
      {"train_min_length", task.trainMinLength},
      {"eval_min_length", task.evalMinLength},
      {"eval_max_length", task.evalMaxLength},
      {"eval_step", task.evalStep},
      {"context_length", task.contextLength},
      {"alphabet_size", task.alphabetSize},
      {"eval_count", config.evalCount},
      {"eval_batch", config.evalBatch},
  };
  if (config.task == "lm" || !task.dataPaths.empty()) {
    nlohmann::ordered_json &data = json["task"];
    data["data"] = task.dataPaths;
    data["val_data"] = task.validationPath;
    data["val_fraction"] = task.validationFraction;
    data["token_vocab"] = task.vocabSize;
    data["token_bytes"] = task.tokenBytes;
    data["doc_sep"] = task.documentSeparator;
    data["tokenizer"] = task.tokenizer;
    data["train_tokens"] = task.trainTokens;
    data["val_tokens"] = task.validationTokens;
  }
  json["optimizer"] = {
      {"name", "adamw"},
      {"lr", optimizer.lr},
      {"weight_decay", optimizer.weightDecay},
      {"beta1", optimizer.beta1},
      {"beta2", optimizer.beta2},
      {"eps", optimizer.eps},
      {"clip_norm", optimizer.clipNorm},
      {"decay", decayRuleName(optimizer.decay)},
      {"schedule", scheduleName(optimizer.schedule)},
      {"warmup_steps", optimizer.warmupSteps},
      {"min_lr_ratio", optimizer.minLrRatio},
  };
  json["training"] = {
      {"batch_size", config.batchSize},
      {"grad_accum", config.gradAccum},
      {"steps", config.steps},
      {"seed", config.seed},
      {"gamma_cap", config.gammaCap},
      {"log_every", config.logEvery},
      {"eval_every", config.evalEvery},
      {"checkpoint_every", config.checkpointEvery},
      {"keep_best", config.keepBest},
      {"nonfinite_limit", config.nonFiniteLimit},
  };
  json["runtime"] = {
      {"device", config.device},
      {"tf32", config.tf32},
      {"threads", config.threads},
      {"world_size", config.worldSize},
      {"dist_timeout", config.distTimeout},
      {"dist_backend", config.distBackend},
      {"bucket_mib", config.bucketMiB},
      {"overlap_allreduce", config.overlapAllReduce},
  };
  return json;
}

namespace {

/// Reads typed fields of one JSON section, naming "section.field" in every
/// error.
class SectionReader {
public:
  /// Reads root[key]; errors call the section `name` (default: key).
  SectionReader(const nlohmann::json &root, const std::string &key,
                const std::string &name = "")
      : section(name.empty() ? key : name) {
    if (!root.is_object() || !root.contains(key) || !root.at(key).is_object())
      throw std::runtime_error(fmt::format("missing section '{}'", section));
    json = &root.at(key);
  }

  /// get(), or `fallback` when the field is absent (one added since runs
  /// were first written).
  template <typename T> T get(const std::string &field, T fallback) const {
    return json->contains(field) ? get<T>(field) : fallback;
  }

  template <typename T> T get(const std::string &field) const {
    if (!json->contains(field))
      throw std::runtime_error(
          fmt::format("missing field '{}.{}'", section, field));
    const nlohmann::json &value = json->at(field);
    bool ok;
    if constexpr (std::is_same_v<T, bool>)
      ok = value.is_boolean();
    else if constexpr (std::is_same_v<T, std::string>)
      ok = value.is_string();
    else if constexpr (std::is_same_v<T, std::vector<std::string>>)
      ok = value.is_array() && std::all_of(value.begin(), value.end(),
                                           [](const nlohmann::json &item) {
                                             return item.is_string();
                                           });
    else if constexpr (std::is_floating_point_v<T>)
      ok = value.is_number();
    else if constexpr (std::is_unsigned_v<T>)
      ok = value.is_number_unsigned() ||
           (value.is_number_integer() && value.get<int64_t>() >= 0);
    else
      ok = value.is_number_integer();
    if (!ok)
      throw std::runtime_error(
          fmt::format("field '{}.{}' has the wrong type", section, field));
    return value.get<T>();
  }

private:
  std::string section;
  const nlohmann::json *json;
};

} // namespace

TrainConfig trainConfigFromJson(const nlohmann::json &json) {
  TrainConfig config;

  SectionReader model(json, "model");
  ModelConfig &m = config.model;
  config.modelSource = model.get<std::string>("source");
  m.kind = model.get<std::string>("kind");
  m.vocabSize = model.get<int64_t>("vocab_size");
  m.padVocabMultiple = model.get<int64_t>("pad_vocab_multiple");
  m.dModel = model.get<int64_t>("d_model");
  m.nLayers = model.get<int64_t>("layers");
  m.dState = model.get<int64_t>("d_state");
  m.expand = model.get<int64_t>("expand");
  m.dtRank = model.get<int64_t>("dt_rank");
  m.dConv = model.get<int64_t>("d_conv");
  m.headDim = model.get<int64_t>("head_dim", ModelConfig().headDim);
  m.nGroups = model.get<int64_t>("n_groups", ModelConfig().nGroups);
  m.mixer = model.get<std::string>("mixer");
  m.mixerRank = model.get<int64_t>("mixer_rank");
  m.useShortConv = model.get<bool>("short_conv");
  m.bcNorm = model.get<bool>("bc_norm");
  m.gluInLoop = model.get<bool>("glu_in_loop");
  m.symmMixer = model.get<bool>("symm_mixer");
  m.mixerHDep = model.get<bool>("mixer_h_dep");
  m.kroneckerNorm = model.get<std::string>("kronecker_norm");
  m.normEps = model.get<double>("norm_eps");
  m.nBackwards = model.get<int64_t>("n_backwards");
  m.nHeads = model.get<int64_t>("heads");
  std::string dtype = model.get<std::string>("dtype");
  if (auto parsed = parseDtype(dtype))
    m.dtype = *parsed;
  else
    throw std::runtime_error(
        fmt::format("field 'model.dtype' is '{}', expected f32 or f64", dtype));
  std::string autocast = model.get<std::string>("autocast", "none");
  if (autocast != "none" && autocast != "bf16")
    throw std::runtime_error(fmt::format(
        "field 'model.autocast' is '{}', expected none or bf16", autocast));
  config.autocastBf16 = autocast == "bf16";

  SectionReader solver(json.at("model"), "solver", "model.solver");
  SolverConfig &s = m.solver;
  s.tolerance = solver.get<double>("tolerance");
  s.trainQuantile = solver.get<double>("train_quantile");
  s.maxIterTrain = solver.get<int64_t>("max_iter_train");
  s.maxIterEval = solver.get<int64_t>("max_iter_eval");
  s.relaxStart = solver.get<double>("relax_start");
  s.relaxDecay = solver.get<double>("relax_decay");
  s.relaxPatience = solver.get<int64_t>("relax_patience");
  s.fixedIters = solver.get<int64_t>("fixed_iters");

  SectionReader task(json, "task");
  TaskOptions &t = config.taskOptions;
  config.task = task.get<std::string>("name");
  t.trainLength = task.get<int64_t>("train_length");
  t.trainMinLength = task.get<int64_t>("train_min_length");
  t.evalMinLength = task.get<int64_t>("eval_min_length");
  t.evalMaxLength = task.get<int64_t>("eval_max_length");
  t.evalStep = task.get<int64_t>("eval_step");
  t.contextLength = task.get<int64_t>("context_length");
  t.alphabetSize = task.get<int64_t>("alphabet_size");
  config.evalCount = task.get<int64_t>("eval_count");
  config.evalBatch = task.get<int64_t>("eval_batch");
  t.dataPaths = task.get<std::vector<std::string>>("data", {});
  t.validationPath = task.get<std::string>("val_data", "");
  t.validationFraction = task.get<double>("val_fraction", 0.0);
  t.vocabSize = task.get<int64_t>("token_vocab", 0);
  t.tokenBytes = task.get<int64_t>("token_bytes", 0);
  t.documentSeparator = task.get<std::string>("doc_sep", "");
  t.tokenizer = task.get<std::string>("tokenizer", "");
  t.trainTokens = task.get<int64_t>("train_tokens", 0);
  t.validationTokens = task.get<int64_t>("val_tokens", 0);

  SectionReader optimizer(json, "optimizer");
  OptimizerConfig &o = config.optimizer;
  if (optimizer.get<std::string>("name") != "adamw")
    throw std::runtime_error("field 'optimizer.name' must be 'adamw'");
  o.lr = optimizer.get<double>("lr");
  o.weightDecay = optimizer.get<double>("weight_decay");
  o.beta1 = optimizer.get<double>("beta1");
  o.beta2 = optimizer.get<double>("beta2");
  o.eps = optimizer.get<double>("eps");
  o.clipNorm = optimizer.get<double>("clip_norm");
  std::string decay = optimizer.get<std::string>("decay");
  if (auto parsed = parseDecayRule(decay))
    o.decay = *parsed;
  else
    throw std::runtime_error(
        fmt::format("field 'optimizer.decay' has unknown value '{}'", decay));
  std::string schedule = optimizer.get<std::string>("schedule");
  if (auto parsed = parseSchedule(schedule))
    o.schedule = *parsed;
  else
    throw std::runtime_error(fmt::format(
        "field 'optimizer.schedule' has unknown value '{}'", schedule));
  o.warmupSteps = optimizer.get<int64_t>("warmup_steps");
  o.minLrRatio = optimizer.get<double>("min_lr_ratio");

  SectionReader training(json, "training");
  config.batchSize = training.get<int64_t>("batch_size");
  config.gradAccum = training.get<int64_t>("grad_accum", 1);
  config.steps = training.get<int64_t>("steps");
  config.seed = training.get<uint64_t>("seed");
  config.gammaCap = training.get<bool>("gamma_cap");
  config.logEvery = training.get<int64_t>("log_every");
  config.evalEvery = training.get<int64_t>("eval_every");
  config.checkpointEvery = training.get<int64_t>("checkpoint_every");
  config.keepBest = training.get<bool>("keep_best", false);
  config.nonFiniteLimit =
      training.get<int64_t>("nonfinite_limit", TrainConfig().nonFiniteLimit);

  SectionReader runtime(json, "runtime");
  config.device = runtime.get<std::string>("device");
  config.tf32 = runtime.get<bool>("tf32", TrainConfig().tf32);
  config.threads = runtime.get<int64_t>("threads");
  config.worldSize = runtime.get<int64_t>("world_size", 1);
  config.distTimeout = runtime.get<int64_t>("dist_timeout", 300);
  config.distBackend =
      runtime.get<std::string>("dist_backend", TrainConfig().distBackend);
  config.bucketMiB =
      runtime.get<int64_t>("bucket_mib", TrainConfig().bucketMiB);
  config.overlapAllReduce =
      runtime.get<bool>("overlap_allreduce", TrainConfig().overlapAllReduce);
  return config;
}

TrainConfig trainConfigFromJson(const nlohmann::ordered_json &json) {
  return trainConfigFromJson(nlohmann::json::parse(json.dump()));
}

} // namespace fp::rt
