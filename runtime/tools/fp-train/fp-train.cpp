//===- fp-train.cpp - Train a model on a task -------------------*- C++ -*-===//
//
// The training driver: parses the command line (fp/Runtime/Train/
// CommandLine.h), resolves a fresh run's configuration from the task's
// defaults and the flags, or a resumed run's from DIR/config.json, builds the
// task and the model (an eager reference, a baseline, or a compiled model
// library), and hands them to the Trainer.
//
// Exit status: 0 done; 1 an error while running; 2 a bad command line or an
// impossible configuration (one line on stderr); 130 interrupted by SIGINT
// or SIGTERM after writing a checkpoint.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/CompiledLayer.h"
#include "fp/Runtime/HostMemory.h"
#include "fp/Runtime/Reference/SequenceModel.h"
#include "fp/Runtime/Tasks/Task.h"
#include "fp/Runtime/Train/CommandLine.h"
#include "fp/Runtime/Train/Trainer.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
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

/// Reads DIR/config.json of a run to resume.
TrainConfig readStoredConfig(const fs::path &directory) {
  fs::path path = directory / RunFiles::config;
  if (!fs::exists(path))
    throw UsageError(fmt::format("--resume {}: no run there ({} is missing)",
                                 directory.string(), path.string()));
  std::ifstream in(path);
  nlohmann::json json =
      nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded())
    throw std::runtime_error(fmt::format("{}: not valid JSON", path.string()));
  try {
    return trainConfigFromJson(json);
  } catch (const std::runtime_error &error) {
    throw std::runtime_error(
        fmt::format("{}: {}", path.string(), error.what()));
  }
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

  const bool resuming = commandLine.has("resume");
  TrainConfig config;
  fs::path directory;
  std::unique_ptr<Trainer> trainer;
  try {
    if (resuming) {
      directory = *commandLine.value("resume");
      config = resumeTrainConfig(commandLine, readStoredConfig(directory));
    } else {
      // The task's defaults are needed to resolve the flags.
      std::unique_ptr<Task> probe = makeTask(taskNameFromFlags(commandLine),
                                             taskOptionsFromFlags(commandLine));
      config =
          makeTrainConfig(commandLine, probe->defaults(), probe->vocabSize());
      directory = *commandLine.value("out");
      checkFreshOutputDirectory(directory);
    }
    std::shared_ptr<const Task> task =
        makeTask(config.task, config.taskOptions);
    // Record the options in effect, so that config.json says what ran.
    config.taskOptions = task->options();
    config.model.vocabSize = task->vocabSize();

    torch::manual_seed(config.seed);
    std::shared_ptr<SequenceModel> model;
    if (config.model.kind == "compiled") {
      std::shared_ptr<CompiledModel> compiled =
          makeCompiledModel(config.modelSource, config.model, config.seed);
      requireCompiledBackward(*compiled, config.modelSource, config.device);
      model = std::move(compiled);
    } else {
      model = makeReferenceModel(config.model);
    }
    trainer =
        std::make_unique<Trainer>(config, model, task, directory, options);
    if (resuming)
      trainer->restore();
  } catch (const std::invalid_argument &error) {
    // Impossible configurations found by the task, model or trainer.
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
  try {
    return run(args);
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
