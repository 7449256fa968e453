//===- fp-train.cpp - Train a model on a task -------------------*- C++ -*-===//
//
// The training driver: parses the command line (fp/Runtime/Train/
// CommandLine.h), resolves a fresh run's configuration from the task's
// defaults and the flags, or a resumed run's from DIR/config.json, builds the
// task and the model (an eager reference, a baseline, or a compiled model
// library), and hands them to the Trainer. With --nproc-per-node N it
// starts N workers of itself instead (Launcher.h); a worker, or a process
// that torchrun or srun started, joins its job (Distributed.h) and trains
// its share of every batch.
//
// Exit status: 0 done; 1 an error while running (a run whose loss stayed
// non-finite too long included); 2 a bad command line, an impossible
// configuration or unusable data (one line on stderr); 130 interrupted by
// SIGINT or SIGTERM: after writing a checkpoint, before anything was written
// while the run was being set up, or at once on a second signal.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/CompiledLayer.h"
#include "fp/Runtime/HostMemory.h"
#include "fp/Runtime/Reference/SequenceModel.h"
#include "fp/Runtime/Tasks/Task.h"
#include "fp/Runtime/Tasks/TokenCorpus.h"
#include "fp/Runtime/Train/CommandLine.h"
#include "fp/Runtime/Train/Distributed.h"
#include "fp/Runtime/Train/Interrupt.h"
#include "fp/Runtime/Train/MemoryEstimate.h"
#include "fp/Runtime/Train/Trainer.h"

#include "Launcher.h"

#include <ATen/Context.h>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace fp::rt;
namespace fs = std::filesystem;

namespace {

/// Refuses a compiled model that cannot train on `device`: a layer whose
/// library has no compiled backward for the device's target (built without
/// `fpc --backward`). Checked before the run directory is written, rather
/// than at the first step's backward.
void requireCompiledBackward(const CompiledModel &model,
                             const std::string &path,
                             const std::string &device) {
  const bool cuda = device.rfind("cuda", 0) == 0;
  const fp_target target = cuda ? FP_TARGET_CUDA : FP_TARGET_CPU;
  for (const auto &layer : model.layers)
    if (!layer->info().hasBackward(target))
      throw std::invalid_argument(
          "'" + path + "' has no compiled backward for " +
          (cuda ? "cuda" : "cpu") + " (layer '" + layer->info().name +
          "'), so it cannot train; compile it with `fpc --backward`");
}

/// Makes the compiled layers compute in bf16 (f32 weights, cast per call),
/// refusing a library compiled without bf16 kernels.
void computeInBf16(CompiledModel &model, const std::string &path) {
  for (const auto &layer : model.layers) {
    if (!layer->library().manifest().hasDType(FP_DTYPE_BF16))
      throw std::invalid_argument(
          "'" + path +
          "' has no bf16 kernels, so it cannot train with "
          "--dtype bf16; compile it with bf16 among `fpc --dtypes` (the "
          "default)");
    layer->computeDtype = torch::kBFloat16;
  }
}

/// The number of scalar parameters of `model`.
int64_t parameterCount(const SequenceModel &model) {
  int64_t count = 0;
  for (const torch::Tensor &parameter : model.parameters())
    count += parameter.numel();
  return count;
}

int run(const std::vector<std::string> &args) {
  CommandLine commandLine = CommandLine::parse(args);
  if (commandLine.helpRequested()) {
    fmt::print("{}", trainHelpText());
    return 0;
  }
  TrainerOptions options;
  options.progress = progressModeFromFlags(commandLine);
  options.handleSignals = true;

  // The local launcher, unless this process is one of its workers.
  if (auto text = commandLine.value("nproc-per-node");
      text && !std::getenv(fp::train::kLaunchedVariable)) {
    char *end = nullptr;
    long long processes = std::strtoll(text->c_str(), &end, 10);
    if (text->empty() || *end != '\0' || processes < 1 || processes > 1024)
      throw UsageError(fmt::format(
          "--nproc-per-node: expected a number of processes from 1 to 1024, "
          "got '{}'",
          *text));
    if (std::getenv("WORLD_SIZE"))
      throw UsageError("--nproc-per-node starts its own processes, but "
                       "WORLD_SIZE is set (torchrun or srun started this "
                       "one); leave one of them out");
    if (processes > 1)
      return fp::train::launchWorkers(args, processes, /*graceSeconds=*/30);
  }
  DistributedEnv job;
  try {
    job = distributedEnvFromEnvironment();
  } catch (const std::invalid_argument &error) {
    throw UsageError(error.what());
  }
  // Rank 0 reports; the others work quietly.
  if (job.rank != 0)
    options.progress = ProgressMode::Quiet;

  const bool resuming = commandLine.has("resume");
  TrainConfig config;
  fs::path directory;
  std::unique_ptr<Trainer> trainer;
  // A fresh run's task is built once, from the flags, before the
  // configuration it gives defaults to (its data read once); a resumed
  // run's from its stored options.
  std::shared_ptr<const Task> task;
  try {
    if (resuming) {
      directory = *commandLine.value("resume");
      if (!fs::exists(directory / RunFiles::config))
        throw UsageError(fmt::format(
            "--resume {}: no run there ({} is missing)", directory.string(),
            (directory / RunFiles::config).string()));
      config = resumeTrainConfig(commandLine, readRunConfig(directory));
      if (config.worldSize != job.worldSize)
        throw UsageError(fmt::format(
            "the run in {} trains in {} process(es), and its batches are "
            "split that way; resume it in {} (fp-train --nproc-per-node {} "
            "--resume {}, or WORLD_SIZE={} under torchrun or srun), not {}",
            directory.string(), config.worldSize, config.worldSize,
            config.worldSize, directory.string(), config.worldSize,
            job.worldSize));
    } else {
      // The task's defaults are needed to resolve the flags; the task
      // options of the configuration come from the same flags.
      task = makeTask(taskNameFromFlags(commandLine),
                      taskOptionsFromFlags(commandLine));
      config =
          makeTrainConfig(commandLine, task->defaults(), task->vocabSize());
      directory = *commandLine.value("out");
      config.worldSize = job.worldSize;
      if (job.rank == 0)
        checkFreshOutputDirectory(directory);
    }
    // PyTorch's switch, which the reference models' matmuls and every
    // compiled call read (CompiledLayer passes it as allow_tf32).
    at::globalContext().setAllowTF32CuBLAS(config.tf32);
    // The Trainer checks that the batch splits over the processes. A job
    // of one process opens a group only where a backend is named.
    if (job.distributed() || config.distBackend != "auto") {
      torch::Device device = trainingDevice(config.device, job.localRank);
      options.collectives = Collectives::connect(
          job, std::chrono::seconds(config.distTimeout),
          chooseBackend(config.distBackend, device), device);
    }
    // Building a run can take long (a large model, a task's data): a stop
    // request is honoured between its phases, before anything is written.
    throwIfStopRequested();
    if (!task)
      task = makeTask(config.task, config.taskOptions);
    throwIfStopRequested();
    const bool notes = options.progress != ProgressMode::Quiet;
    if (std::string data = task->dataDescription(); notes && !data.empty())
      fmt::print(stderr, "fp-train: data: {}\n", data);
    // Record the options in effect, so that config.json says what ran.
    config.taskOptions = task->options();
    config.model.vocabSize = task->vocabSize();

    // A run that cannot fit is refused before its model and first batch
    // are allocated (a reference model's parameters are counted on small
    // copies, before the seed is set for the real one).
    const bool isCompiled = config.model.kind == "compiled";
    if (!isCompiled)
      requireMemoryFor(
          config, estimateTrainingMemory(config, *task,
                                         referenceParameterCount(config.model),
                                         /*compiled=*/nullptr));
    torch::manual_seed(config.seed);
    std::shared_ptr<SequenceModel> model;
    if (isCompiled) {
      std::shared_ptr<CompiledModel> compiled =
          makeCompiledModel(config.modelSource, config.model, config.seed);
      requireCompiledBackward(*compiled, config.modelSource, config.device);
      if (config.autocastBf16)
        computeInBf16(*compiled, config.modelSource);
      requireMemoryFor(config, estimateTrainingMemory(config, *task,
                                                      parameterCount(*compiled),
                                                      compiled.get()));
      model = std::move(compiled);
    } else {
      model = makeReferenceModel(config.model);
    }
    if (notes)
      fmt::print(stderr, "fp-train: model: {} parameters\n",
                 parameterCount(*model));
    throwIfStopRequested();
    trainer =
        std::make_unique<Trainer>(config, model, task, directory, options);
    if (resuming)
      trainer->restore();
    throwIfStopRequested();
  } catch (const std::invalid_argument &error) {
    // Impossible configurations found by the task, model or trainer.
    throw UsageError(error.what());
  } catch (const DataError &error) {
    // Data that cannot be used (lm): the file and the problem.
    throw UsageError(error.what());
  }

  RunOutcome outcome = resuming ? trainer->resume() : trainer->start();
  return outcome == RunOutcome::Interrupted ? 130 : 0;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // Every step allocates the same temporaries again: keep freed host memory
  // for them rather than fault fresh pages in (fp/Runtime/HostMemory.h).
  fp::rt::keepFreedHostMemory();
  fp::rt::installStopHandlers("fp-train");
  try {
    return run(args);
  } catch (const StopRequested &) {
    fmt::print(stderr, "fp-train: interrupted while setting up the run; "
                       "nothing was written\n");
    return 130;
  } catch (const UsageError &error) {
    fmt::print(stderr, "fp-train: error: {}\n", error.what());
    return 2;
  } catch (const c10::Error &error) {
    fmt::print(stderr, "fp-train: error: {}\n", error.what_without_backtrace());
    return 1;
  } catch (const std::exception &error) {
    fmt::print(stderr, "fp-train: error: {}\n", error.what());
    return 1;
  }
}
