//===- Trainer.h - Train, checkpoint and evaluate a model -------*- C++ -*-===//
//
// The training loop of fp-train. A Trainer owns one run directory:
//
//   config.json      the resolved TrainConfig (plus versions, eval lengths)
//   metrics.jsonl    one JSON object per logged training step and per
//                    validation
//   checkpoint.pt    model, optimiser, step, RNG states and config, written
//                    atomically; resume() continues from it exactly
//   eval.json        scores per evaluated length at the end of the run
//
// docs/training.md documents every field.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TRAIN_TRAINER_H
#define FP_RUNTIME_TRAIN_TRAINER_H

#include "fp/Runtime/DeviceMemory.h"
#include "fp/Runtime/Reference/SequenceModel.h"
#include "fp/Runtime/Tasks/Task.h"
#include "fp/Runtime/Train/Distributed.h"
#include "fp/Runtime/Train/Progress.h"
#include "fp/Runtime/Train/TrainConfig.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace fp::rt {

/// The scores of a model on many sequences of one length, aggregated over the
/// chunks they were run in.
struct LengthScores {
  int64_t length = 0;
  /// loss and tokenAccuracy are weighted by supervised tokens,
  /// sequenceAccuracy and extra by sequences.
  Scores scores;
  /// Fixed-point iterations per sample (docs/spec.md §3.6), mean and max over
  /// layers and the samples whose solve stayed finite; 0 for models without
  /// a fixed point, a NaN mean when no sample stayed finite.
  double itersMean = 0;
  int64_t itersMax = 0;
  /// Sequences whose fixed-point solve met a non-finite value (diverged).
  int64_t nonFinite = 0;
};

/// Knobs of a Trainer that are not part of the run's configuration.
struct TrainerOptions {
  ProgressMode progress = ProgressMode::Auto;
  std::FILE *progressStream = stderr;
  /// Stop after this step as if the process had been killed there: no
  /// final checkpoint, no evaluation. For tests of resume; -1: never.
  int64_t stopAfterStep = -1;
  /// On SIGINT or SIGTERM, finish the current step or evaluation chunk,
  /// write a checkpoint and stop (RunOutcome::Interrupted) instead of dying;
  /// a second signal exits at once (Interrupt.h).
  bool handleSignals = false;
  /// The job this process is part of (Distributed.h); null: a job of one.
  /// Its world size must be the configuration's. Rank 0 alone writes the
  /// run directory and reports progress.
  std::shared_ptr<Collectives> collectives;
};

/// Thrown by the training loop when --nonfinite-limit steps in a row had a
/// non-finite loss or gradient: the run cannot go on, and the last checkpoint
/// is kept.
class DivergedError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

enum class RunOutcome {
  /// Trained to the configured steps, checkpointed and evaluated.
  Finished,
  /// Stopped by a signal after writing a checkpoint.
  Interrupted,
  /// Stopped at TrainerOptions::stopAfterStep.
  Stopped,
};

/// The names of the files of a run directory.
struct RunFiles {
  static constexpr const char *config = "config.json";
  static constexpr const char *metrics = "metrics.jsonl";
  static constexpr const char *checkpoint = "checkpoint.pt";
  static constexpr const char *eval = "eval.json";
  /// With --keep-best: the parameters of the lowest validation loss, in
  /// checkpoint.pt's format (its optimiser state left out).
  static constexpr const char *best = "best.pt";
};

/// The seed of the validation set (training distribution, held out by
/// seed) and of the evaluation batches, derived from the run's seed.
uint64_t validationSeed(uint64_t seed);
uint64_t evaluationSeed(uint64_t seed);

/// Trains `model` on `task` as `config` says, in `directory`.
///
/// The caller builds the model (after torch::manual_seed(config.seed), so a
/// fresh run is reproducible) and the task from the same config; the
/// Trainer moves the model to config.device and sets the thread count.
class Trainer {
public:
  /// Throws std::invalid_argument when config.device is unusable (e.g. cuda
  /// without a GPU) or the configuration needs something the task lacks.
  Trainer(TrainConfig config, std::shared_ptr<SequenceModel> model,
          std::shared_ptr<const Task> task, std::filesystem::path directory,
          TrainerOptions options = {});
  ~Trainer();
  Trainer(const Trainer &) = delete;
  Trainer &operator=(const Trainer &) = delete;

  /// A fresh run: creates the directory, writes config.json, trains from
  /// step 0, writes the final checkpoint and eval.json.
  RunOutcome start();

  /// Loads checkpoint.pt of the run in the directory, if there is one (a run
  /// that died before its first checkpoint restarts from step 0). Throws
  /// std::invalid_argument when config.steps is below the steps already
  /// done. resume() calls it unless it was called before.
  void restore();

  /// Continues the run in the directory from its checkpoint (restore()):
  /// metrics.jsonl is cut back to the checkpoint's step, config.json is
  /// rewritten (config.steps may have changed), and the run goes on to
  /// config.steps. On the CPU, a resumed run reproduces the uninterrupted
  /// run's losses bit for bit.
  RunOutcome resume();

  /// Optimiser steps done so far.
  int64_t step() const { return currentStep; }
  const TrainConfig &config() const { return trainConfig; }
  SequenceModel &model() { return *seqModel; }

  /// Scores on the validation set (the training distribution at the
  /// training length, evalCount sequences from validationSeed()), in eval
  /// mode.
  LengthScores validate();
  /// Scores at every length of task.evalLengths(), evalCount sequences each
  /// from evaluationSeed(), run evalBatch at a time, in eval mode.
  std::vector<LengthScores> evaluate();

  /// Writes checkpoint.pt atomically (checkpoint.pt.tmp, then rename).
  /// Throws std::runtime_error, keeping the previous checkpoint, when a
  /// parameter is not finite or the write fails.
  void saveCheckpoint();
  /// Restores model, optimiser, step, RNGs and log window from
  /// checkpoint.pt; throws std::runtime_error when it was written for another
  /// configuration (config.steps aside).
  void loadCheckpoint();

private:
  /// Accumulators of the current --log-every window (part of the
  /// checkpoint, so that a resumed run logs the same means).
  struct Window {
    int64_t steps = 0;
    double lossSum = 0;
    double gradNormSum = 0;
    double itersSum = 0;
    int64_t itersMax = 0;
    /// Samples whose solve diverged, and steps that made no update.
    int64_t nonFinite = 0;
    int64_t skipped = 0;
    int64_t tokens = 0;
    double seconds = 0;
    /// Of those, the seconds spent waiting, after the backward, for the
    /// gradients' sums over the processes.
    double reduceWaitSeconds = 0;
  };

  RunOutcome train();
  /// The model's logits for `inputs` (on the host), under bf16 autocast
  /// when the run computes in bf16.
  torch::Tensor forward(const torch::Tensor &inputs);
  /// Tokens of the training steps done (language modelling).
  int64_t trainedTokens() const;
  LengthScores scoreInChunks(const Batch &batch, int64_t length);
  int64_t drawIterationCap();
  void logTrainingStep(double lr, int64_t cap);
  void logValidation(const LengthScores &scores);
  /// Writes eval.json; `evaluatedStep` is the step of the parameters
  /// evaluated (the best one's with --keep-best).
  void writeEvaluation(const std::vector<LengthScores> &results,
                       int64_t evaluatedStep);
  void appendMetrics(const nlohmann::ordered_json &record);
  double elapsedSeconds() const;
  /// Whether this process writes the run directory (rank 0).
  bool writes() const {
    return !options.collectives || options.collectives->isRoot();
  }
  int64_t worldSize() const {
    return options.collectives ? options.collectives->worldSize() : 1;
  }
  /// Makes every process start from rank 0's parameters and buffers.
  void synchroniseParameters();
  /// With --keep-best: writes best.pt when `scores` has the lowest
  /// validation loss so far.
  void keepIfBest(const LengthScores &scores);
  /// With --keep-best: loads best.pt's parameters for the final evaluation;
  /// returns the step they are from (currentStep without best.pt).
  int64_t loadBest();
  std::filesystem::path file(const char *name) const {
    return directory / name;
  }

  TrainConfig trainConfig;
  std::shared_ptr<SequenceModel> seqModel;
  std::shared_ptr<const Task> task;
  std::filesystem::path directory;
  TrainerOptions options;
  torch::Device device;
  /// Peak device memory of the current --log-every window (CUDA only).
  DevicePeakMemory windowMemory{torch::kCPU};
  /// The largest of the windows' peaks in this session, in bytes.
  double sessionPeakBytes = 0;
  std::unique_ptr<torch::optim::AdamW> optimizer;
  /// The trainer's own RNG (Gamma iteration caps).
  std::mt19937_64 rng;
  int64_t currentStep = 0;
  int64_t lastCheckpointStep = -1;
  /// Steps in a row with a non-finite loss or gradient.
  int64_t nonFiniteRun = 0;
  /// A validation is due at currentStep (a stop request cut it short).
  bool validationPending = false;
  /// With --keep-best: the lowest validation loss so far and its step
  /// (-1: none yet).
  double bestLoss = std::numeric_limits<double>::infinity();
  int64_t bestStep = -1;
  bool restored = false;
  Window window;
  /// Seconds of earlier sessions of this run.
  double elapsedBefore = 0;
  std::chrono::steady_clock::time_point sessionStart;
  std::unique_ptr<ProgressReporter> progress;
  std::optional<Batch> validationBatch;
};

/// Cuts `path` (a metrics.jsonl) back to the records whose "step" is at most
/// `step`, dropping malformed (e.g. half-written) lines; rewrites it
/// atomically. A missing file is left missing.
void truncateMetrics(const std::filesystem::path &path, int64_t step);

/// The configuration stored in a run directory's config.json. Throws
/// std::runtime_error naming the file when it is missing or malformed.
TrainConfig readRunConfig(const std::filesystem::path &directory);
/// What a language-model run's ids are, as its config.json records them
/// (Task::idsTokenizer()): "byte-level", "gpt2-bpe" or "unknown"; empty where
/// config.json records none (a run written before the record, or another
/// task). Throws as readRunConfig().
std::string readRunIdsTokenizer(const std::filesystem::path &directory);

/// Loads the model parameters of checkpoint.pt at `path` (written by a
/// Trainer) into `model`, which must be built from the same configuration,
/// onto `device`. Throws std::runtime_error naming the file when it is not
/// such a checkpoint or does not fit the model.
void loadCheckpointModel(const std::filesystem::path &path,
                         SequenceModel &model, torch::Device device);

/// Writes `content` to `path` atomically (path + ".tmp", then rename).
void writeFileAtomically(const std::filesystem::path &path,
                         const std::string &content);

/// The JSON written to config.json: toJson(config) plus "fpc_version",
/// "torch_version", the task's "eval_lengths" and, for a language model, its
/// "ids" (Task::idsTokenizer()) (ignored by trainConfigFromJson()).
nlohmann::ordered_json configFileJson(const TrainConfig &config,
                                      const Task &task);

} // namespace fp::rt

#endif // FP_RUNTIME_TRAIN_TRAINER_H
