//===- Trainer.cpp - Train, checkpoint and evaluate a model -----*- C++ -*-===//
//
// The loop: for each step, draw the batch (a pure function of seed and
// step), set the scheduled learning rate, run forward and the task's loss,
// backward, clip, AdamW step, and account the step in the current log
// window. Everything the next step depends on — parameters, AdamW moments
// and step counts, the step, the trainer's RNG, the log window — goes into
// the checkpoint, which is why a resumed run continues exactly.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Train/Trainer.h"

#include "fp/Runtime/Reference/Autocast.h"
#include "fp/Runtime/Train/GradientReducer.h"
#include "fp/Runtime/Train/Interrupt.h"
#include "fp/Runtime/Train/Optimizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
#include <unistd.h>

namespace fp::rt {

namespace fs = std::filesystem;

namespace {

/// Seconds from `start` until now.
double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// SplitMix64: decorrelates the seeds derived from the run's seed.
uint64_t splitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

constexpr const char *kCheckpointFormat = "fpc-checkpoint-1";

/// A finite double as is, NaN/inf as JSON null.
nlohmann::ordered_json number(double value) {
  return std::isfinite(value) ? nlohmann::ordered_json(value)
                              : nlohmann::ordered_json();
}

/// What a progress line adds for samples whose solve diverged.
std::string nonFiniteNote(const LengthScores &scores) {
  if (scores.nonFinite == 0)
    return "";
  return fmt::format("; the fixed point of {} of {} sequences is not finite",
                     scores.nonFinite, scores.scores.sequences);
}

/// Bits per byte of a language-model task's scores: their cross-entropy
/// over the bytes their targets stand for; 0 where those are unknown.
double bitsPerByte(const Scores &scores) {
  if (scores.bytes <= 0 || scores.tokens <= 0)
    return 0;
  return scores.loss / std::log(2.0) / (scores.bytes / double(scores.tokens));
}

/// Perplexity and bits per byte of a language-model task's scores (the
/// latter null where the targets' bytes are unknown).
void addLanguageMetrics(nlohmann::ordered_json &record, const Task &task,
                        const Scores &scores) {
  if (!task.isLanguageModel())
    return;
  record["perplexity"] = number(std::exp(scores.loss));
  const double bits = bitsPerByte(scores);
  record["bits_per_byte"] = bits > 0 ? number(bits) : nlohmann::ordered_json();
}

/// Accuracy per group of a task with groups (catbabi: per bAbI task), as
/// {"qa1": accuracy, ...}, null for a group with no supervised position.
void addGroupMetrics(nlohmann::ordered_json &record, const Task &task,
                     const Scores &scores) {
  const std::vector<std::string> names = task.groupNames();
  if (names.empty() || scores.groupTokens.size() != names.size())
    return;
  nlohmann::ordered_json accuracy = nlohmann::ordered_json::object();
  for (size_t g = 0; g < names.size(); ++g)
    accuracy[names[g]] =
        scores.groupTokens[g] > 0
            ? nlohmann::ordered_json(double(scores.groupHits[g]) /
                                     double(scores.groupTokens[g]))
            : nlohmann::ordered_json();
  record["group_accuracy"] = accuracy;
}

/// One line's worth of scores: accuracies, or for language modelling the
/// loss, perplexity and bits per byte.
std::string scoreSummary(const Task &task, const Scores &scores) {
  if (!task.isLanguageModel())
    return fmt::format(
        "loss {:.4f}, token accuracy {:.4f}, sequence accuracy {:.4f}",
        scores.loss, scores.tokenAccuracy, scores.sequenceAccuracy);
  std::string line = fmt::format("loss {:.4f}, perplexity {:.3f}", scores.loss,
                                 std::exp(scores.loss));
  if (const double bits = bitsPerByte(scores); bits > 0)
    line += fmt::format(", {:.4f} bits per byte", bits);
  return line;
}

/// The configuration JSON without the fields a resume may change.
nlohmann::ordered_json comparableConfig(const TrainConfig &config) {
  nlohmann::ordered_json json = toJson(config);
  json["training"].erase("steps");
  return json;
}

/// Reads a string stored with OutputArchive::write(key, IValue).
std::string readString(torch::serialize::InputArchive &archive,
                       const std::string &key) {
  c10::IValue value;
  archive.read(key, value);
  if (!value.isString())
    throw std::runtime_error(fmt::format("entry '{}' is not a string", key));
  return value.toStringRef();
}

} // namespace

uint64_t validationSeed(uint64_t seed) {
  return splitMix64(seed ^ 0x56414C4944415445ull); // "VALIDATE"
}

uint64_t evaluationSeed(uint64_t seed) {
  return splitMix64(seed ^ 0x4556414C55415445ull); // "EVALUATE"
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

void writeFileAtomically(const fs::path &path, const std::string &content) {
  fs::path temporary = path;
  temporary += ".tmp";
  // POSIX I/O rather than a stream: every failure (a full disk, a file-size
  // limit) is seen with its reason, and the bytes are on disk before the
  // rename makes them the file. A second stop signal during the write
  // removes the temporary (Interrupt.h).
  setWriteInFlight(temporary.c_str());
  std::string problem;
  int fd =
      ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) {
    problem = std::strerror(errno);
  } else {
    const char *data = content.data();
    size_t left = content.size();
    while (left > 0) {
      ssize_t written = ::write(fd, data, left);
      if (written < 0 && errno == EINTR)
        continue;
      if (written < 0) {
        problem = std::strerror(errno);
        break;
      }
      data += written;
      left -= static_cast<size_t>(written);
    }
    if (problem.empty() && ::fsync(fd) != 0)
      problem = std::strerror(errno);
    if (::close(fd) != 0 && problem.empty())
      problem = std::strerror(errno);
  }
  std::error_code error;
  if (!problem.empty()) {
    fs::remove(temporary, error);
    clearWriteInFlight();
    throw std::runtime_error(
        fmt::format("cannot write '{}': {}", path.string(), problem));
  }
  fs::rename(temporary, path, error);
  clearWriteInFlight();
  if (error) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw std::runtime_error(fmt::format("cannot rename '{}' to '{}': {}",
                                         temporary.string(), path.string(),
                                         error.message()));
  }
}

void truncateMetrics(const fs::path &path, int64_t step) {
  std::ifstream in(path);
  if (!in)
    return;
  std::string kept, line;
  while (std::getline(in, line)) {
    nlohmann::json record = nlohmann::json::parse(line, nullptr,
                                                  /*allow_exceptions=*/false);
    if (!record.is_object() || !record.contains("step") ||
        !record["step"].is_number_integer())
      continue;
    if (record["step"].get<int64_t>() <= step)
      kept += line + "\n";
  }
  in.close();
  writeFileAtomically(path, kept);
}

nlohmann::ordered_json configFileJson(const TrainConfig &config,
                                      const Task &task) {
  nlohmann::ordered_json json = toJson(config);
  json["fpc_version"] = fpcVersion();
  json["torch_version"] = fmt::format("{}.{}.{}", TORCH_VERSION_MAJOR,
                                      TORCH_VERSION_MINOR, TORCH_VERSION_PATCH);
  json["task"]["eval_lengths"] = task.evalLengths();
  if (task.isLanguageModel())
    json["task"]["ids"] = task.idsTokenizer();
  return json;
}

//===----------------------------------------------------------------------===//
// Trainer
//===----------------------------------------------------------------------===//

Trainer::Trainer(TrainConfig config, std::shared_ptr<SequenceModel> model,
                 std::shared_ptr<const Task> task, fs::path directory,
                 TrainerOptions options)
    : trainConfig(std::move(config)), seqModel(std::move(model)),
      task(std::move(task)), directory(std::move(directory)),
      options(std::move(options)), device(torch::kCPU),
      rng(splitMix64(trainConfig.seed ^ 0x47414D4D41ull)) { // "GAMMA"
  // In a job, each process on its local rank's device.
  device = trainingDevice(
      trainConfig.device,
      this->options.collectives
          ? std::optional<int64_t>(this->options.collectives->localRank())
          : std::nullopt);
  windowMemory = DevicePeakMemory(device);
  if (trainConfig.gammaCap && this->task->options().trainLength <= 0)
    throw std::invalid_argument(
        "--gamma-cap needs the training length, which the task does not "
        "report; pass --train-len");
  if (this->options.collectives &&
      this->options.collectives->worldSize() != trainConfig.worldSize)
    throw std::invalid_argument(fmt::format(
        "the run is configured for {} processes but the job has {}",
        trainConfig.worldSize, this->options.collectives->worldSize()));
  if (trainConfig.worldSize > 1 &&
      trainConfig.batchSize % (trainConfig.worldSize * trainConfig.gradAccum) !=
          0)
    throw std::invalid_argument(fmt::format(
        "--batch {} does not split into {} processes x --grad-accum {} "
        "micro-batches of the same size; pass a multiple of {}",
        trainConfig.batchSize, trainConfig.worldSize, trainConfig.gradAccum,
        trainConfig.worldSize * trainConfig.gradAccum));
  if (trainConfig.gradAccum < 1 ||
      trainConfig.batchSize % trainConfig.gradAccum != 0)
    throw std::invalid_argument(fmt::format(
        "--batch {} is not a multiple of --grad-accum {}; each micro-batch "
        "must have the same number of sequences",
        trainConfig.batchSize, trainConfig.gradAccum));
  if (trainConfig.threads > 0)
    torch::set_num_threads(static_cast<int>(trainConfig.threads));

  seqModel->to(device);
  seqModel->train();
  optimizer = makeAdamW(*seqModel, trainConfig.optimizer);
  sessionStart = std::chrono::steady_clock::now();
}

Trainer::~Trainer() = default;

double Trainer::elapsedSeconds() const {
  return elapsedBefore + secondsSince(sessionStart);
}

RunOutcome Trainer::start() {
  if (writes()) {
    fs::create_directories(directory);
    writeFileAtomically(file(RunFiles::config),
                        configFileJson(trainConfig, *task).dump(2) + "\n");
    // A fresh run starts a fresh log.
    writeFileAtomically(file(RunFiles::metrics), "");
  }
  synchroniseParameters();
  return train();
}

void Trainer::synchroniseParameters() {
  if (!options.collectives)
    return;
  std::vector<torch::Tensor> tensors = seqModel->parameters();
  for (const torch::Tensor &buffer : seqModel->buffers())
    tensors.push_back(buffer);
  torch::NoGradGuard noGrad;
  options.collectives->broadcastFromRoot(tensors);
}

void Trainer::restore() {
  // A write that did not finish (the process killed, the disk full) leaves
  // its temporary file; the file it was to replace is whole.
  for (const char *kind : {RunFiles::checkpoint, RunFiles::config,
                           RunFiles::metrics, RunFiles::eval}) {
    if (!writes())
      break;
    fs::path partial = file(kind);
    partial += ".tmp";
    std::error_code error;
    if (fs::exists(partial, error) && fs::remove(partial, error))
      fmt::print(stderr,
                 "fp-train: note: removed '{}', left by a write that did not "
                 "finish; '{}' is the last complete one\n",
                 partial.string(), file(kind).filename().string());
  }
  if (fs::exists(file(RunFiles::checkpoint)))
    loadCheckpoint();
  else
    currentStep = 0;
  if (currentStep > trainConfig.steps)
    throw std::invalid_argument(fmt::format(
        "the run in '{}' has already done {} steps; --steps {} would undo "
        "some; pass --steps {} or more",
        directory.string(), currentStep, trainConfig.steps, currentStep));
  restored = true;
}

RunOutcome Trainer::resume() {
  if (!restored)
    restore();
  if (writes()) {
    truncateMetrics(file(RunFiles::metrics), currentStep);
    writeFileAtomically(file(RunFiles::config),
                        configFileJson(trainConfig, *task).dump(2) + "\n");
  }
  synchroniseParameters();
  return train();
}

torch::Tensor Trainer::forward(const torch::Tensor &inputs) {
  if (!trainConfig.autocastBf16)
    return seqModel->forward(inputs.to(device));
  ref::AutocastGuard autocast(device.type(), torch::kBFloat16);
  return seqModel->forward(inputs.to(device));
}

int64_t Trainer::drawIterationCap() {
  // docs/spec.md §3.5: ceil(Gamma(shape 4, scale k/16 + 1)), k = training
  // length. A fresh distribution per draw keeps the engine the whole RNG state.
  double k = static_cast<double>(task->options().trainLength);
  std::gamma_distribution<double> gamma(4.0, k / 16.0 + 1.0);
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(gamma(rng))));
}

RunOutcome Trainer::train() {
  const ScheduleConfig schedule = trainConfig.schedule();
  const int64_t totalSteps = trainConfig.steps;
  progress = std::make_unique<ProgressReporter>(
      options.progress, options.progressStream, currentStep, totalSteps);
  if (currentStep > 0)
    progress->note(
        fmt::format("resuming at step {}/{}", currentStep, totalSteps));
  if (options.handleSignals)
    installStopHandlers("fp-train");

  // A stop request is honoured between steps and between evaluation chunks:
  // the state after the last whole step is checkpointed (a validation it cut
  // short runs first on resume).
  auto interrupted = [&](const char *during) {
    if (lastCheckpointStep != currentStep || validationPending)
      saveCheckpoint();
    progress->finish();
    progress->note(fmt::format(
        "interrupted {}at step {}/{}; checkpoint written; continue with "
        "fp-train --resume {}",
        during, currentStep, totalSteps, directory.string()));
    return RunOutcome::Interrupted;
  };
  auto validateAndLog = [&] {
    validationPending = true;
    LengthScores scores = validate();
    validationPending = false;
    logValidation(scores);
    progress->note(fmt::format("validation at step {}: {}{}", currentStep,
                               scoreSummary(*task, scores.scores),
                               nonFiniteNote(scores)));
    keepIfBest(scores);
  };

  std::vector<torch::Tensor> parameters = seqModel->parameters();
  std::optional<GradientReducer> reducer;
  if (options.collectives)
    reducer.emplace(options.collectives, parameters,
                    trainConfig.bucketMiB * (int64_t(1) << 20),
                    trainConfig.overlapAllReduce);
  seqModel->train();
  try {
    if (validationPending)
      validateAndLog();
  } catch (const StopRequested &) {
    return interrupted("during validation ");
  }
  while (currentStep < totalSteps) {
    if (options.handleSignals && stopRequested() != 0 && !options.collectives)
      return interrupted("");
    if (options.collectives) {
      // Every process stops at the same step, or none does.
      std::vector<double> stop = {
          options.handleSignals && stopRequested() != 0 ? 1.0 : 0.0};
      options.collectives->allReduceMax(stop);
      if (stop[0] != 0)
        return interrupted("");
    }
    auto stepStart = std::chrono::steady_clock::now();
    if (window.steps == 0 && windowMemory.available())
      windowMemory.begin();

    int64_t cap = 0;
    if (trainConfig.gammaCap) {
      cap = drawIterationCap();
      seqModel->setTrainIterationCap(cap);
    }
    Batch batch =
        task->trainBatch(trainConfig.batchSize, trainConfig.seed, currentStep);
    double lr = learningRate(schedule, currentStep);
    setLearningRate(*optimizer, lr);

    // Gradients to None, as PyTorch's zero_grad() (the same on every
    // LibTorch): a parameter outside this step's graph gets no update.
    for (torch::Tensor &parameter : parameters)
      parameter.mutable_grad() = torch::Tensor();
    // The batch's loss is the mean over all its supervised positions: each
    // micro-batch's mean is weighted by its share of them, so that the
    // gradients add up to the whole batch's.
    // With several processes, each takes its rows of the batch (every
    // process draws the whole batch from the same seed) and the gradients
    // are summed over them after the last micro-batch's backward (or, with
    // --overlap-allreduce on, during it: GradientReducer.h).
    const int64_t parts = trainConfig.gradAccum;
    const int64_t world = worldSize();
    const int64_t rows = trainConfig.batchSize / (parts * world);
    const int64_t firstRow =
        options.collectives ? options.collectives->rank() * rows * parts : 0;
    const double supervised =
        double(batch.targets.ne(kIgnoreIndex).sum().item<int64_t>());
    double lossValue = 0, itersSum = 0;
    int64_t itersMax = 0, nonFinite = 0;
    for (int64_t part = 0; part < parts; ++part) {
      Batch micro =
          parts * world == 1 ? batch : batch.rows(firstRow + part * rows, rows);
      torch::Tensor logits = forward(micro.inputs);
      torch::Tensor loss = task->loss(logits, micro);
      if (parts * world > 1) {
        const double share =
            double(micro.targets.ne(kIgnoreIndex).sum().item<int64_t>()) /
            std::max(supervised, 1.0);
        loss = loss * share;
      }
      if (reducer && part == parts - 1)
        reducer->arm();
      loss.backward();
      lossValue += loss.item<double>();
      const FixedPointSummary stats = seqModel->lastStats().summarize();
      itersSum += stats.meanIterations;
      itersMax = std::max(itersMax, stats.maxIterations);
      nonFinite += stats.nonFiniteSamples;
    }
    if (options.collectives) {
      auto waitStart = std::chrono::steady_clock::now();
      reducer->finish();
      window.reduceWaitSeconds += secondsSince(waitStart);
      std::vector<double> sums = {lossValue, itersSum, double(nonFinite)};
      options.collectives->allReduceSum(sums);
      std::vector<double> most = {double(itersMax)};
      options.collectives->allReduceMax(most);
      lossValue = sums[0];
      itersSum = sums[1];
      nonFinite = static_cast<int64_t>(sums[2]);
      itersMax = static_cast<int64_t>(most[0]);
    }
    double gradNorm = clipGradients(parameters, trainConfig.optimizer.clipNorm);
    // A non-finite loss or gradient makes no update (the parameters and the
    // AdamW moments stay finite); too many in a row stop the run.
    const bool finiteStep = std::isfinite(lossValue) && std::isfinite(gradNorm);
    if (finiteStep) {
      optimizer->step();
      nonFiniteRun = 0;
    } else {
      ++nonFiniteRun;
      window.skipped += 1;
      progress->note(fmt::format(
          "warning: the {} is {} at step {}; the step makes no update ({} of "
          "--nonfinite-limit {} in a row)",
          std::isfinite(lossValue) ? "gradient norm" : "loss",
          std::isfinite(lossValue) ? gradNorm : lossValue, currentStep + 1,
          nonFiniteRun, trainConfig.nonFiniteLimit));
    }

    window.steps += 1;
    window.lossSum += lossValue;
    window.gradNormSum += gradNorm;
    window.itersSum += itersSum / double(parts * world);
    window.itersMax = std::max(window.itersMax, itersMax);
    window.nonFinite += nonFinite;
    window.tokens += batch.inputs.numel();
    window.seconds += secondsSince(stepStart);
    ++currentStep;

    const bool diverged = nonFiniteRun >= trainConfig.nonFiniteLimit;
    bool logStep = currentStep % trainConfig.logEvery == 0 ||
                   currentStep == totalSteps || diverged;
    ProgressSnapshot snapshot;
    snapshot.step = currentStep;
    snapshot.totalSteps = totalSteps;
    snapshot.loss = window.lossSum / window.steps;
    snapshot.lr = lr;
    snapshot.gradNorm = window.gradNormSum / window.steps;
    snapshot.itersMean = window.itersSum / window.steps;
    snapshot.itersMax = window.itersMax;
    snapshot.tokensPerSecond =
        window.seconds > 0 ? window.tokens / window.seconds : 0;
    progress->update(snapshot, logStep);
    if (logStep)
      logTrainingStep(lr, cap);
    if (diverged) {
      progress->finish();
      std::string kept =
          lastCheckpointStep >= 0
              ? fmt::format("'{}' (step {}) is the last checkpoint",
                            file(RunFiles::checkpoint).string(),
                            lastCheckpointStep)
              : std::string("no checkpoint was written");
      throw DivergedError(fmt::format(
          "the loss or the gradient was not finite in {} steps in a row "
          "(steps {} to {}; --nonfinite-limit {}), so the run stopped; {}; "
          "try a lower --lr",
          nonFiniteRun, currentStep - nonFiniteRun + 1, currentStep,
          trainConfig.nonFiniteLimit, kept));
    }

    try {
      if (trainConfig.evalEvery > 0 && currentStep % trainConfig.evalEvery == 0)
        validateAndLog();
    } catch (const StopRequested &) {
      return interrupted("during validation ");
    }
    if (trainConfig.checkpointEvery > 0 &&
        currentStep % trainConfig.checkpointEvery == 0)
      saveCheckpoint();
    if (currentStep == options.stopAfterStep) {
      progress->finish();
      return RunOutcome::Stopped;
    }
  }
  progress->finish();
  if (sessionPeakBytes > 0)
    progress->note(fmt::format("peak device memory while training: {:.0f} MiB",
                               sessionPeakBytes / (1024.0 * 1024.0)));

  if (lastCheckpointStep != currentStep)
    saveCheckpoint();
  std::vector<LengthScores> results;
  int64_t evaluatedStep = currentStep;
  try {
    evaluatedStep = loadBest();
    results = evaluate();
  } catch (const StopRequested &) {
    progress->note(fmt::format(
        "interrupted during the final evaluation; the checkpoint of step {} "
        "is written; fp-train --resume {} evaluates it",
        currentStep, directory.string()));
    return RunOutcome::Interrupted;
  }
  writeEvaluation(results, evaluatedStep);
  for (const LengthScores &result : results) {
    std::string line = fmt::format("eval length {}: {}", result.length,
                                   scoreSummary(*task, result.scores));
    if (result.itersMax > 0)
      line += fmt::format(", fp iterations {:.1f} (max {})", result.itersMean,
                          result.itersMax);
    progress->note(line + nonFiniteNote(result));
  }
  progress->note(fmt::format("wrote {}", file(RunFiles::eval).string()));
  return RunOutcome::Finished;
}

//===----------------------------------------------------------------------===//
// Metrics
//===----------------------------------------------------------------------===//

void Trainer::appendMetrics(const nlohmann::ordered_json &record) {
  if (!writes())
    return;
  std::ofstream out(file(RunFiles::metrics), std::ios::app);
  out << record.dump() << "\n";
  out.flush();
  if (!out)
    throw std::runtime_error(
        fmt::format("cannot append to '{}'", file(RunFiles::metrics).string()));
}

void Trainer::logTrainingStep(double lr, int64_t cap) {
  nlohmann::ordered_json record = {
      {"step", currentStep},
      {"kind", "train"},
      {"loss", number(window.lossSum / window.steps)},
      {"lr", lr},
      {"grad_norm", number(window.gradNormSum / window.steps)},
      {"fp_iters_mean", window.itersSum / window.steps},
      {"fp_iters_max", window.itersMax},
      {"fp_nonfinite", window.nonFinite},
      {"skipped_steps", window.skipped},
      {"tokens_per_s",
       window.seconds > 0 ? window.tokens / window.seconds : 0.0},
      {"elapsed_s", elapsedSeconds()},
  };
  if (trainConfig.gammaCap)
    record["iter_cap"] = cap;
  if (options.collectives)
    record["allreduce_wait_ms"] = 1e3 * window.reduceWaitSeconds / window.steps;
  if (windowMemory.available()) {
    double peak = windowMemory.peakBytes();
    sessionPeakBytes = std::max(sessionPeakBytes, peak);
    record["peak_mem_mib"] = peak / (1024.0 * 1024.0);
  }
  appendMetrics(record);
  window = Window{};
}

void Trainer::logValidation(const LengthScores &scores) {
  nlohmann::ordered_json record = {
      {"step", currentStep},
      {"kind", "val"},
      {"loss", number(scores.scores.loss)},
      {"token_accuracy", number(scores.scores.tokenAccuracy)},
      {"sequence_accuracy", number(scores.scores.sequenceAccuracy)},
      {"extra", number(scores.scores.extra)},
  };
  addLanguageMetrics(record, *task, scores.scores);
  if (task->isLanguageModel())
    record["tokens_seen"] = trainedTokens();
  addGroupMetrics(record, *task, scores.scores);
  record["fp_iters_mean"] = number(scores.itersMean);
  record["fp_iters_max"] = scores.itersMax;
  record["fp_nonfinite"] = scores.nonFinite;
  record["elapsed_s"] = elapsedSeconds();
  appendMetrics(record);
}

int64_t Trainer::trainedTokens() const {
  return currentStep * trainConfig.batchSize * task->options().trainLength;
}

//===----------------------------------------------------------------------===//
// Evaluation
//===----------------------------------------------------------------------===//

LengthScores Trainer::scoreInChunks(const Batch &batch, int64_t length) {
  bool wasTraining = seqModel->is_training();
  seqModel->eval();
  torch::NoGradGuard noGrad;

  LengthScores result;
  result.length = length;
  double lossSum = 0, tokenHits = 0, sequenceHits = 0, extraSum = 0;
  double bytesSum = 0;
  double itersSum = 0;
  int64_t finiteRows = 0;
  bool fixedPoint = false;
  // Tasks with groups: supervised positions per group, then right ones.
  const size_t groups = task->groupNames().size();
  std::vector<double> groupSums(2 * groups, 0.0);
  const int64_t rows = batch.inputs.size(0);
  const int64_t chunkRows = std::max<int64_t>(trainConfig.evalBatch, 1);
  // With several processes, chunk c runs on process c mod world: each
  // chunk is the computation one process would run, and the sums below
  // are added over the processes.
  const int64_t world = worldSize();
  const int64_t rank = options.collectives ? options.collectives->rank() : 0;
  for (int64_t first = 0, index = 0; first < rows;
       first += chunkRows, ++index) {
    if (index % world != rank)
      continue;
    if (options.handleSignals && !options.collectives)
      throwIfStopRequested();
    int64_t count = std::min(chunkRows, rows - first);
    Batch chunk = batch.rows(first, count);
    torch::Tensor logits = forward(chunk.inputs);
    Scores scores = task->score(logits, chunk);
    lossSum += scores.loss * scores.tokens;
    tokenHits += scores.tokenAccuracy * scores.tokens;
    sequenceHits += scores.sequenceAccuracy * scores.sequences;
    extraSum += scores.extra * scores.sequences;
    bytesSum += scores.bytes;
    result.scores.tokens += scores.tokens;
    result.scores.sequences += scores.sequences;
    groupSums.resize(2 * scores.groupTokens.size());
    for (size_t g = 0; g < scores.groupTokens.size(); ++g) {
      groupSums[g] += double(scores.groupTokens[g]);
      groupSums[scores.groupTokens.size() + g] += double(scores.groupHits[g]);
    }
    // Iterations are those of the samples whose solve stayed finite; the
    // others are counted apart.
    fixedPoint |= !seqModel->lastStats().iterations.empty();
    const FixedPointSummary stats = seqModel->lastStats().summarize();
    const int64_t diverged = stats.nonFiniteSamples;
    itersSum += stats.meanIterations * double(count - diverged);
    result.itersMax = std::max(result.itersMax, stats.maxIterations);
    result.nonFinite += diverged;
    finiteRows += count - diverged;
  }
  if (options.collectives) {
    groupSums.resize(2 * groups);
    std::vector<double> sums = {lossSum,
                                tokenHits,
                                sequenceHits,
                                extraSum,
                                double(result.scores.tokens),
                                double(result.scores.sequences),
                                itersSum,
                                double(result.nonFinite),
                                double(finiteRows),
                                bytesSum};
    const auto firstGroup = std::ptrdiff_t(sums.size());
    sums.insert(sums.end(), groupSums.begin(), groupSums.end());
    options.collectives->allReduceSum(sums);
    std::copy(sums.begin() + firstGroup, sums.end(), groupSums.begin());
    std::vector<double> most = {double(result.itersMax),
                                fixedPoint ? 1.0 : 0.0};
    options.collectives->allReduceMax(most);
    lossSum = sums[0];
    tokenHits = sums[1];
    sequenceHits = sums[2];
    extraSum = sums[3];
    result.scores.tokens = static_cast<int64_t>(sums[4]);
    result.scores.sequences = static_cast<int64_t>(sums[5]);
    itersSum = sums[6];
    result.nonFinite = static_cast<int64_t>(sums[7]);
    finiteRows = static_cast<int64_t>(sums[8]);
    bytesSum = sums[9];
    result.itersMax = static_cast<int64_t>(most[0]);
    fixedPoint = most[1] != 0;
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Scores &total = result.scores;
  total.loss = total.tokens ? lossSum / total.tokens : nan;
  total.tokenAccuracy = total.tokens ? tokenHits / total.tokens : nan;
  total.sequenceAccuracy =
      total.sequences ? sequenceHits / total.sequences : nan;
  total.extra = total.sequences ? extraSum / total.sequences : nan;
  total.bytes = bytesSum;
  if (groups > 0 && groupSums.size() == 2 * groups)
    for (size_t g = 0; g < groups; ++g) {
      total.groupTokens.push_back(static_cast<int64_t>(groupSums[g]));
      total.groupHits.push_back(static_cast<int64_t>(groupSums[groups + g]));
    }
  result.itersMean = finiteRows   ? itersSum / double(finiteRows)
                     : fixedPoint ? nan
                                  : 0;
  if (wasTraining)
    seqModel->train();
  return result;
}

LengthScores Trainer::validate() {
  if (!validationBatch)
    validationBatch = task->validationBatch(trainConfig.evalCount,
                                            validationSeed(trainConfig.seed));
  return scoreInChunks(*validationBatch, task->options().trainLength);
}

std::vector<LengthScores> Trainer::evaluate() {
  std::vector<LengthScores> results;
  uint64_t seed = evaluationSeed(trainConfig.seed);
  for (int64_t length : task->evalLengths())
    results.push_back(scoreInChunks(
        task->evalBatch(length, trainConfig.evalCount, seed), length));
  return results;
}

void Trainer::writeEvaluation(const std::vector<LengthScores> &results,
                              int64_t evaluatedStep) {
  nlohmann::ordered_json lengths = nlohmann::ordered_json::array();
  for (const LengthScores &result : results) {
    nlohmann::ordered_json entry = {
        {"length", result.length},
        {"sequence_accuracy", number(result.scores.sequenceAccuracy)},
        {"token_accuracy", number(result.scores.tokenAccuracy)},
        {"loss", number(result.scores.loss)},
        {"extra", number(result.scores.extra)},
    };
    addLanguageMetrics(entry, *task, result.scores);
    addGroupMetrics(entry, *task, result.scores);
    entry["fp_iters_mean"] = number(result.itersMean);
    entry["fp_iters_max"] = result.itersMax;
    entry["fp_nonfinite"] = result.nonFinite;
    entry["sequences"] = result.scores.sequences;
    entry["tokens"] = result.scores.tokens;
    lengths.push_back(entry);
  }
  nlohmann::ordered_json json = {
      {"task", trainConfig.task},
      {"model", trainConfig.modelSource},
      {"step", currentStep},
      {"train_length", task->options().trainLength},
      {"eval_count", trainConfig.evalCount},
      {"lengths", lengths},
  };
  if (task->isLanguageModel())
    json["tokens_seen"] = trainedTokens();
  if (trainConfig.keepBest) {
    json["evaluated_step"] = evaluatedStep;
    json["best_val_loss"] = number(bestLoss);
  }
  if (writes())
    writeFileAtomically(file(RunFiles::eval), json.dump(2) + "\n");
}

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

void Trainer::keepIfBest(const LengthScores &scores) {
  if (!trainConfig.keepBest || !(scores.scores.loss < bestLoss))
    return;
  bestLoss = scores.scores.loss;
  bestStep = currentStep;
  if (!writes())
    return;
  torch::serialize::OutputArchive archive;
  archive.write("format", c10::IValue(std::string(kCheckpointFormat)));
  archive.write("config", c10::IValue(toJson(trainConfig).dump()));
  nlohmann::json state = {{"step", currentStep}, {"val_loss", bestLoss}};
  archive.write("trainer", c10::IValue(state.dump()));
  torch::serialize::OutputArchive modelArchive;
  seqModel->save(modelArchive);
  archive.write("model", modelArchive);
  std::ostringstream bytes;
  archive.save_to(bytes);
  writeFileAtomically(file(RunFiles::best), std::move(bytes).str());
}

int64_t Trainer::loadBest() {
  if (!trainConfig.keepBest || bestStep < 0 || bestStep == currentStep)
    return currentStep;
  // Rank 0 holds best.pt; the others take its parameters from it.
  if (writes())
    loadCheckpointModel(file(RunFiles::best), *seqModel, device);
  synchroniseParameters();
  progress->note(fmt::format("evaluating the parameters of step {}, the "
                             "lowest validation loss ({:.4f}), from {}",
                             bestStep, bestLoss,
                             file(RunFiles::best).string()));
  return bestStep;
}

void Trainer::saveCheckpoint() {
  torch::serialize::OutputArchive archive;
  archive.write("format", c10::IValue(std::string(kCheckpointFormat)));
  archive.write("config", c10::IValue(toJson(trainConfig).dump()));

  std::ostringstream engine;
  engine << rng;
  // Parameters that are not finite are never written over a checkpoint.
  for (const torch::Tensor &parameter : seqModel->parameters())
    if (!torch::isfinite(parameter).all().item<bool>())
      throw std::runtime_error(fmt::format(
          "the parameters after step {} are not finite; '{}' keeps its last "
          "version",
          currentStep, file(RunFiles::checkpoint).string()));
  // Every process holds the same state; rank 0 writes it.
  if (!writes()) {
    lastCheckpointStep = currentStep;
    return;
  }

  nlohmann::json state = {
      {"step", currentStep},
      {"nonfinite_run", nonFiniteRun},
      {"validation_pending", validationPending},
      {"best_val_loss",
       std::isfinite(bestLoss) ? nlohmann::json(bestLoss) : nlohmann::json()},
      {"best_step", bestStep},
      {"elapsed_s", elapsedSeconds()},
      {"rng", engine.str()},
      {"window",
       {{"steps", window.steps},
        {"loss_sum", window.lossSum},
        {"grad_norm_sum", window.gradNormSum},
        {"iters_sum", window.itersSum},
        {"iters_max", window.itersMax},
        {"nonfinite", window.nonFinite},
        {"skipped", window.skipped},
        {"tokens", window.tokens},
        {"seconds", window.seconds},
        {"reduce_wait_seconds", window.reduceWaitSeconds}}},
  };
  archive.write("trainer", c10::IValue(state.dump()));

  torch::serialize::OutputArchive modelArchive;
  seqModel->save(modelArchive);
  archive.write("model", modelArchive);
  torch::serialize::OutputArchive optimizerArchive;
  optimizer->save(optimizerArchive);
  archive.write("optimizer", optimizerArchive);

  {
    at::Generator cpu = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(cpu.mutex());
    archive.write("rng_cpu", cpu.get_state(), /*is_buffer=*/true);
  }
  if (device.is_cuda()) {
    at::Generator cuda = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> lock(cuda.mutex());
    archive.write("rng_cuda", cuda.get_state(), /*is_buffer=*/true);
  }

  // Serialised in memory first: LibTorch's file writer reports a failed
  // write from its destructor, which aborts the process; the bytes then go
  // through writeFileAtomically, which reports it and keeps the previous
  // checkpoint.
  std::ostringstream bytes;
  archive.save_to(bytes);
  writeFileAtomically(file(RunFiles::checkpoint), std::move(bytes).str());
  lastCheckpointStep = currentStep;
}

/// A run directory's config.json, parsed. Throws std::runtime_error naming
/// the file when it is missing or not JSON.
static nlohmann::json readRunConfigJson(const fs::path &directory) {
  fs::path path = directory / RunFiles::config;
  std::error_code error;
  if (!fs::exists(path, error))
    throw std::runtime_error(fmt::format("{}: no run there ({} is missing)",
                                         directory.string(), path.string()));
  std::ifstream in(path);
  nlohmann::json json =
      nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded())
    throw std::runtime_error(fmt::format("{}: not valid JSON", path.string()));
  return json;
}

TrainConfig readRunConfig(const fs::path &directory) {
  nlohmann::json json = readRunConfigJson(directory);
  try {
    return trainConfigFromJson(json);
  } catch (const std::runtime_error &problem) {
    throw std::runtime_error(fmt::format(
        "{}: {}", (directory / RunFiles::config).string(), problem.what()));
  }
}

std::string readRunIdsTokenizer(const fs::path &directory) {
  nlohmann::json json = readRunConfigJson(directory);
  auto task = json.find("task");
  if (task == json.end() || !task->is_object())
    return {};
  auto ids = task->find("ids");
  if (ids == task->end())
    return {};
  if (!ids->is_string())
    throw std::runtime_error(
        fmt::format("{}: task.ids is not a string",
                    (directory / RunFiles::config).string()));
  return ids->get<std::string>();
}

void loadCheckpointModel(const fs::path &path, SequenceModel &model,
                         torch::Device device) {
  std::error_code error;
  if (!fs::exists(path, error))
    throw std::runtime_error(fmt::format(
        "{}: no checkpoint (the run wrote none yet)", path.string()));
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path.string(), device);
    if (readString(archive, "format") != kCheckpointFormat)
      throw std::runtime_error("not an fp-train checkpoint");
    torch::serialize::InputArchive modelArchive;
    archive.read("model", modelArchive);
    model.load(modelArchive);
  } catch (const c10::Error &problem) {
    throw std::runtime_error(fmt::format("{}: cannot load the model: {}",
                                         path.string(),
                                         problem.what_without_backtrace()));
  } catch (const std::runtime_error &problem) {
    throw std::runtime_error(
        fmt::format("{}: {}", path.string(), problem.what()));
  }
}

void Trainer::loadCheckpoint() {
  fs::path path = file(RunFiles::checkpoint);
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path.string(), device);
  } catch (const c10::Error &error) {
    throw std::runtime_error(fmt::format("cannot read '{}': {}", path.string(),
                                         error.what_without_backtrace()));
  }
  if (readString(archive, "format") != kCheckpointFormat)
    throw std::runtime_error(
        fmt::format("'{}' is not an fpc checkpoint of format {}", path.string(),
                    kCheckpointFormat));
  nlohmann::json saved = nlohmann::json::parse(readString(archive, "config"));
  nlohmann::ordered_json savedComparable =
      comparableConfig(trainConfigFromJson(saved));
  if (savedComparable != comparableConfig(trainConfig))
    throw std::runtime_error(
        fmt::format("'{}' was written for another configuration than '{}'",
                    path.string(), file(RunFiles::config).string()));

  torch::serialize::InputArchive modelArchive;
  archive.read("model", modelArchive);
  seqModel->load(modelArchive);
  torch::serialize::InputArchive optimizerArchive;
  archive.read("optimizer", optimizerArchive);
  optimizer->load(optimizerArchive);

  nlohmann::json state = nlohmann::json::parse(readString(archive, "trainer"));
  currentStep = state.at("step").get<int64_t>();
  nonFiniteRun = state.value("nonfinite_run", int64_t(0));
  validationPending = state.value("validation_pending", false);
  const nlohmann::json &best = state.value("best_val_loss", nlohmann::json());
  bestLoss = best.is_number() ? best.get<double>()
                              : std::numeric_limits<double>::infinity();
  bestStep = state.value("best_step", int64_t(-1));
  elapsedBefore = state.at("elapsed_s").get<double>();
  sessionStart = std::chrono::steady_clock::now();
  std::istringstream engine(state.at("rng").get<std::string>());
  engine >> rng;
  const nlohmann::json &w = state.at("window");
  window.steps = w.at("steps").get<int64_t>();
  window.lossSum = w.at("loss_sum").get<double>();
  window.gradNormSum = w.at("grad_norm_sum").get<double>();
  window.itersSum = w.at("iters_sum").get<double>();
  window.itersMax = w.at("iters_max").get<int64_t>();
  window.nonFinite = w.value("nonfinite", int64_t(0));
  window.skipped = w.value("skipped", int64_t(0));
  window.tokens = w.at("tokens").get<int64_t>();
  window.seconds = w.at("seconds").get<double>();
  window.reduceWaitSeconds = w.value("reduce_wait_seconds", 0.0);

  {
    torch::Tensor cpuState;
    archive.read("rng_cpu", cpuState, /*is_buffer=*/true);
    at::Generator cpu = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(cpu.mutex());
    cpu.set_state(cpuState.cpu());
  }
  if (device.is_cuda()) {
    torch::Tensor cudaState;
    if (archive.try_read("rng_cuda", cudaState, /*is_buffer=*/true)) {
      at::Generator cuda = at::globalContext().defaultGenerator(device);
      std::lock_guard<std::mutex> lock(cuda.mutex());
      cuda.set_state(cudaState.cpu());
    }
  }
  lastCheckpointStep = currentStep;
}

} // namespace fp::rt
