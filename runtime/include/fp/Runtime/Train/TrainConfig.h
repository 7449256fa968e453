//===- TrainConfig.h - The resolved configuration of a run ------*- C++ -*-===//
//
// Everything a training run depends on — model, task, optimiser, schedule,
// seed, steps, device — in one struct, with its JSON form (DIR/config.json,
// also embedded in every checkpoint) and the spellings of the enums on the
// command line and in JSON.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TRAIN_TRAINCONFIG_H
#define FP_RUNTIME_TRAIN_TRAINCONFIG_H

#include "fp/Runtime/Reference/SequenceModel.h"
#include "fp/Runtime/Tasks/Task.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace fp::rt {

/// The learning-rate schedule of a run (docs/spec.md §7), a pure function of
/// the step via learningRate().
struct ScheduleConfig {
  Schedule kind = Schedule::Constant;
  /// Peak learning rate.
  double lr = 1e-3;
  /// Linear warmup from 0 over this many steps (every kind).
  int64_t warmupSteps = 0;
  /// Final learning rate of cosine and linear decay, as a fraction of lr.
  double minLrRatio = 0.0;
  /// The step at which the decay reaches its end.
  int64_t totalSteps = 1;
};

/// AdamW and its surroundings.
struct OptimizerConfig {
  double lr = 1e-4;
  double weightDecay = 0.01;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  /// Gradient-norm clipping threshold; <= 0: no clipping.
  double clipNorm = 1.0;
  DecayRule decay = DecayRule::NoBiasNoNormNoSsm;
  Schedule schedule = Schedule::Cosine;
  int64_t warmupSteps = 0;
  double minLrRatio = 0.0;
};

/// The resolved configuration of a training run.
struct TrainConfig {
  /// What --model said, e.g. "reference:fp_mamba".
  std::string modelSource = "reference:fp_mamba";
  ModelConfig model;
  /// Task name for makeTask().
  std::string task;
  /// The task's options in effect (defaults filled in once the task exists).
  TaskOptions taskOptions;
  /// Sequences per evaluated length (and in the validation set).
  int64_t evalCount = 256;
  /// Sequences per forward pass during evaluation (bounds memory).
  int64_t evalBatch = 64;
  OptimizerConfig optimizer;
  /// Sequences per optimiser step.
  int64_t batchSize = 64;
  /// Micro-batches per step: the batch runs as gradAccum equal parts whose
  /// gradients add up to the whole batch's (docs/training.md).
  int64_t gradAccum = 1;
  int64_t steps = 1000;
  uint64_t seed = 0;
  /// Draw the training iteration cap from Gamma before every batch
  /// (docs/spec.md §3.5).
  bool gammaCap = false;
  int64_t logEvery = 10;
  /// Validation every this many steps; 0: none.
  int64_t evalEvery = 100;
  /// Checkpoint every this many steps; 0: only at the end.
  int64_t checkpointEvery = 100;
  /// Keep the parameters of the lowest validation loss in best.pt and run
  /// the final evaluation on them (docs/training.md, "Run directory").
  bool keepBest = false;
  /// A step whose loss or gradient norm is not finite makes no update; this
  /// many such steps in a row stop the run (docs/training.md, "Faults").
  int64_t nonFiniteLimit = 3;
  /// Compute in bf16 under autocast, the weights and the optimiser in
  /// model.dtype (f32): `--dtype bf16` (docs/spec.md §1.9).
  bool autocastBf16 = false;
  /// "cpu", "cuda" or "cuda:<index>".
  std::string device = "cpu";
  /// f32 GEMMs on CUDA may use TF32 tensor cores: `--tf32 on` sets
  /// PyTorch's switch (torch.backends.cuda.matmul.allow_tf32), which the
  /// reference models' matmuls and every compiled call read
  /// (docs/performance.md, "TF32").
  bool tf32 = false;
  /// LibTorch intra-op threads; 0: LibTorch's default.
  int64_t threads = 0;
  /// Processes the run trains in (docs/training.md, "Several processes"):
  /// each takes batchSize / worldSize sequences of every batch.
  int64_t worldSize = 1;
  /// Seconds a collective waits for the other processes before failing.
  int64_t distTimeout = 300;
  /// The processes' transport (Distributed.h, chooseBackend): "auto",
  /// "gloo" or "nccl". Naming one opens a process group even for a job of
  /// one process.
  std::string distBackend = "auto";
  /// The gradients are summed over the processes in buckets of at most this
  /// many MiB (GradientReducer.h; PyTorch DDP's default)...
  int64_t bucketMiB = 25;
  /// ...each started as soon as the backward has written its gradients,
  /// rather than after the backward (off by default: on CPUs it measured
  /// no faster, docs/training.md).
  bool overlapAllReduce = false;

  /// The schedule over `steps`.
  ScheduleConfig schedule() const;
};

/// The version string of fpc recorded in config.json.
std::string fpcVersion();

//===----------------------------------------------------------------------===//
// Names of enums (command line and JSON)
//===----------------------------------------------------------------------===//

/// constant | cosine | warmup-cosine | linear
std::string scheduleName(Schedule schedule);
std::optional<Schedule> parseSchedule(const std::string &name);

/// no-bias-no-norm-no-ssm | all-but-ssm | all
std::string decayRuleName(DecayRule rule);
std::optional<DecayRule> parseDecayRule(const std::string &name);

/// f32 | f64 (bf16 is a compute dtype: TrainConfig::autocastBf16)
std::string dtypeName(torch::Dtype dtype);
std::optional<torch::Dtype> parseDtype(const std::string &name);

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

/// The configuration as JSON: sections "model", "task", "optimizer",
/// "training", "runtime" (docs/training.md lists every field), keys in a
/// fixed, readable order.
nlohmann::ordered_json toJson(const TrainConfig &config);

/// The inverse of toJson(). Throws std::runtime_error naming the first
/// missing or malformed field.
TrainConfig trainConfigFromJson(const nlohmann::json &json);
TrainConfig trainConfigFromJson(const nlohmann::ordered_json &json);

} // namespace fp::rt

#endif // FP_RUNTIME_TRAIN_TRAINCONFIG_H
