//===- CommandLineTest.cpp - fp-train flags and configuration ---*- C++ -*-===//
//
// The parser's messages for every kind of mistake, the resolution of a fresh
// run's configuration (task defaults, per-kind solver constants, flags), the
// rules of a resumed run's flags, the output-directory check, the JSON round
// trip of TrainConfig, and the progress formatting.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Train/CommandLine.h"
#include "fp/Runtime/Train/Progress.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include <unistd.h>

using namespace fp::rt;
using testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

/// The message of the UsageError `body` throws; "" when it throws none.
template <typename Body> std::string usageMessage(Body body) {
  try {
    body();
  } catch (const UsageError &error) {
    return error.what();
  }
  return "";
}

CommandLine parse(const std::vector<std::string> &args) {
  return CommandLine::parse(args);
}

TaskDefaults recipe() {
  TaskDefaults defaults;
  defaults.lr = 3e-3;
  defaults.weightDecay = 0.1;
  defaults.beta2 = 0.95;
  defaults.clipNorm = -1; // the task's "no clipping"
  defaults.schedule = Schedule::WarmupCosine;
  defaults.warmupSteps = 100;
  defaults.minLrRatio = 1e-3;
  defaults.batchSize = 32;
  defaults.steps = 1000;
  defaults.decay = DecayRule::AllButSsm;
  defaults.padVocabMultiple = 4;
  defaults.normEps = 1e-6;
  return defaults;
}

TrainConfig fresh(const std::vector<std::string> &args) {
  return makeTrainConfig(parse(args), recipe(), 12);
}

/// A scratch directory removed at the end of the test.
struct ScratchDir {
  ScratchDir() {
    path = fs::temp_directory_path() /
           ("fp-cli-test-" + std::to_string(::getpid()) + "-" +
            testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
  }
  ~ScratchDir() { fs::remove_all(path); }
  fs::path path;
};

} // namespace

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

TEST(CommandLineTest, AcceptsBothValueSpellingsAndSwitches) {
  CommandLine line =
      parse({"--task", "a5", "--lr=0.01", "--gamma-cap", "--out", "dir"});
  EXPECT_EQ(line.value("task"), "a5");
  EXPECT_EQ(line.value("lr"), "0.01");
  EXPECT_EQ(line.value("gamma-cap"), "");
  EXPECT_FALSE(line.has("steps"));
  EXPECT_FALSE(line.helpRequested());
  EXPECT_TRUE(parse({"-h"}).helpRequested());
  EXPECT_TRUE(parse({"--task", "a5", "--help"}).helpRequested());
}

TEST(CommandLineTest, SyntaxErrorsHaveClearMessages) {
  struct Case {
    std::vector<std::string> args;
    const char *message;
  };
  const Case cases[] = {
      {{"--layer", "2"}, "unknown flag '--layer'; did you mean '--layers'?"},
      {{"--frobnicate"}, "unknown flag '--frobnicate'"},
      {{"--lr"}, "--lr needs a value (X)"},
      {{"--lr", "--steps", "3"}, "--lr needs a value (X)"},
      {{"--gamma-cap=yes"}, "--gamma-cap takes no value"},
      {{"--steps", "3", "--steps", "4"}, "--steps is given more than once"},
      {{"a5"}, "unexpected argument 'a5'; flags start with '--'"},
      {{"-lr", "3"}, "unexpected argument '-lr'"},
      {{"--"}, "unexpected argument '--'"},
  };
  for (const Case &c : cases)
    EXPECT_THAT(usageMessage([&] { parse(c.args); }), HasSubstr(c.message))
        << testing::PrintToString(c.args);
}

TEST(CommandLineTest, BadValuesNameTheFlag) {
  struct Case {
    std::vector<std::string> args;
    const char *message;
  };
  const Case cases[] = {
      {{"--layers", "two"}, "--layers expects an integer, got 'two'"},
      {{"--layers", "2.5"}, "--layers expects an integer, got '2.5'"},
      {{"--lr", "fast"}, "--lr expects a number, got 'fast'"},
      {{"--lr", "inf"}, "--lr expects a number, got 'inf'"},
      {{"--seed", "-3"}, "--seed expects a non-negative integer, got '-3'"},
      {{"--layers", "0"}, "--layers must be at least 1, got 0"},
      {{"--d-model", "-8"}, "--d-model must be at least 1, got -8"},
      {{"--lr", "-1"}, "--lr must be positive, got -1"},
      {{"--lr", "0"}, "--lr must be positive, got 0"},
      {{"--beta1", "1"}, "--beta1 must be in [0, 1), got 1"},
      {{"--min-lr-ratio", "2"}, "--min-lr-ratio must be in [0, 1], got 2"},
      {{"--clip", "-0.5"}, "--clip must be at least 0"},
      {{"--quantile", "0"}, "--quantile must be in (0, 1], got 0"},
      {{"--max-iter", "0"}, "--max-iter must be at least 1, got 0"},
      {{"--batch", "0"}, "--batch must be at least 1, got 0"},
      {{"--steps", "0"}, "--steps must be at least 1, got 0"},
      {{"--warmup", "50", "--steps", "50"},
       "--warmup 50 must be below --steps 50"},
      {{"--dtype", "f16"},
       "--dtype: unknown value 'f16'; expected f32, f64 or bf16"},
      {{"--mixer", "fancy"},
       "--mixer: unknown value 'fancy'; expected "
       "householder, dplr, kronecker, monarch, nonselective or "
       "identity"},
      {{"--schedule", "step"}, "--schedule: unknown value 'step'"},
      {{"--decay", "none"}, "--decay: unknown value 'none'"},
      {{"--kronecker-norm", "col"}, "--kronecker-norm: unknown value 'col'"},
      {{"--device", "gpu"}, "--device: unknown value 'gpu'"},
      {{"--tf32", "yes"}, "--tf32: unknown value 'yes'; expected on or off"},
      {{"--tf32", "on"},
       "--tf32 on lets f32 matrix products on CUDA use TF32 tensor cores; "
       "this run trains on cpu (use --device cuda, or leave --tf32 off)"},
      {{"--model", "reference:gru"}, "--model reference:gru: unknown model"},
      {{"--model", "build/missing.so"}, "--model: cannot load model library '"},
      {{"--epochs", "2"}, "--epochs and --steps-per-epoch go together"},
      {{"--epochs", "2", "--steps-per-epoch", "5", "--steps", "3"},
       "--epochs and --steps both set the length of the run"},
      {{"--epochs", "0", "--steps-per-epoch", "5"},
       "--epochs must be at least 1, got 0"},
  };
  for (const Case &c : cases) {
    std::vector<std::string> args = {"--task", "a5", "--out", "x"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    EXPECT_THAT(usageMessage([&] { fresh(args); }), HasSubstr(c.message))
        << testing::PrintToString(c.args);
  }
  EXPECT_THAT(usageMessage([&] {
                fresh({"--out", "x"});
              }),
              HasSubstr("--task is required"));
  EXPECT_THAT(usageMessage([&] {
                fresh({"--task", "a5"});
              }),
              HasSubstr("--out DIR is required for a fresh run"));
  EXPECT_THAT(usageMessage([&] {
                progressModeFromFlags(parse({"--progress", "fancy"}));
              }),
              HasSubstr("--progress: unknown value 'fancy'"));
}

TEST(CommandLineTest, HelpDocumentsEveryFlagWithItsDefault) {
  std::string help = trainHelpText();
  for (const FlagInfo &flag : trainFlags()) {
    EXPECT_THAT(help, HasSubstr(std::string("--") + flag.name)) << flag.name;
    if (*flag.defaultText) {
      // The default may be wrapped; its first word is on the flag's lines.
      std::string first = flag.defaultText;
      first = first.substr(0, first.find(' '));
      EXPECT_THAT(help, HasSubstr("[default: " + first)) << flag.name;
    }
  }
  // No line runs past 79 columns.
  size_t start = 0;
  while (start < help.size()) {
    size_t end = help.find('\n', start);
    EXPECT_LE(end - start, 79u) << help.substr(start, end - start);
    start = end + 1;
  }
}

TEST(CommandLineTest, TrainingDocDocumentsEveryFlag) {
  std::ifstream in(FP_TRAINING_DOC);
  ASSERT_TRUE(in) << FP_TRAINING_DOC;
  std::string doc((std::istreambuf_iterator<char>(in)),
                  std::istreambuf_iterator<char>());
  for (const FlagInfo &flag : trainFlags()) {
    std::string entry = std::string("  --") + flag.name;
    if (flag.valueName)
      entry += std::string(" ") + flag.valueName;
    EXPECT_THAT(doc, HasSubstr(entry + " "))
        << "docs/training.md lacks " << entry;
  }
}

TEST(CommandLineTest, EveryFlagInTheTableIsAccepted) {
  for (const FlagInfo &flag : trainFlags()) {
    std::vector<std::string> args = {std::string("--") + flag.name};
    if (flag.valueName)
      args.emplace_back("1");
    EXPECT_NO_THROW(parse(args)) << flag.name;
  }
}

//===----------------------------------------------------------------------===//
// Fresh configurations
//===----------------------------------------------------------------------===//

TEST(MakeTrainConfigTest, TaskDefaultsFillWhatTheFlagsLeaveOpen) {
  TrainConfig config = fresh({"--task", "arith", "--out", "x"});
  EXPECT_EQ(config.task, "arith");
  EXPECT_EQ(config.modelSource, "reference:fp_mamba");
  EXPECT_EQ(config.model.kind, "fp_mamba");
  EXPECT_EQ(config.model.vocabSize, 12);
  EXPECT_EQ(config.model.padVocabMultiple, 4);
  EXPECT_DOUBLE_EQ(config.model.normEps, 1e-6);
  EXPECT_DOUBLE_EQ(config.optimizer.lr, 3e-3);
  EXPECT_DOUBLE_EQ(config.optimizer.weightDecay, 0.1);
  EXPECT_DOUBLE_EQ(config.optimizer.beta2, 0.95);
  EXPECT_DOUBLE_EQ(config.optimizer.clipNorm, 0.0);
  EXPECT_EQ(config.optimizer.schedule, Schedule::WarmupCosine);
  EXPECT_EQ(config.optimizer.warmupSteps, 100);
  EXPECT_EQ(config.optimizer.decay, DecayRule::AllButSsm);
  EXPECT_EQ(config.batchSize, 32);
  EXPECT_EQ(config.steps, 1000);
  EXPECT_EQ(config.evalBatch, 32);
  EXPECT_DOUBLE_EQ(config.model.solver.trainQuantile, 0.75);
  EXPECT_DOUBLE_EQ(config.model.solver.relaxStart, 0.99);
}

TEST(MakeTrainConfigTest, FlagsOverrideDefaults) {
  TrainConfig config = fresh({"--task",
                              "a5",
                              "--out",
                              "x",
                              "--model",
                              "reference:transformer",
                              "--d-model",
                              "32",
                              "--layers",
                              "3",
                              "--heads",
                              "8",
                              "--lr",
                              "0.02",
                              "--clip",
                              "0.5",
                              "--schedule",
                              "linear",
                              "--warmup",
                              "7",
                              "--decay",
                              "all",
                              "--batch",
                              "5",
                              "--steps",
                              "40",
                              "--eval-batch",
                              "3",
                              "--dtype",
                              "f64",
                              "--seed",
                              "18446744073709551615",
                              "--no-bc-norm",
                              "--short-conv",
                              "--symm-mixer",
                              "--no-mixer-h-dep",
                              "--glu-in-loop",
                              "--kronecker-norm",
                              "spectral",
                              "--max-iter",
                              "12",
                              "--tolerance",
                              "0.05",
                              "--train-len",
                              "9",
                              "--device",
                              "cuda:1",
                              "--threads",
                              "2"});
  EXPECT_EQ(config.model.kind, "transformer");
  EXPECT_EQ(config.model.dModel, 32);
  EXPECT_EQ(config.model.nLayers, 3);
  EXPECT_EQ(config.model.nHeads, 8);
  EXPECT_DOUBLE_EQ(config.optimizer.lr, 0.02);
  EXPECT_DOUBLE_EQ(config.optimizer.clipNorm, 0.5);
  EXPECT_EQ(config.optimizer.schedule, Schedule::Linear);
  EXPECT_EQ(config.optimizer.warmupSteps, 7);
  EXPECT_EQ(config.optimizer.decay, DecayRule::All);
  EXPECT_EQ(config.batchSize, 5);
  EXPECT_EQ(config.steps, 40);
  EXPECT_EQ(config.evalBatch, 3);
  EXPECT_EQ(config.model.dtype, torch::kFloat64);
  EXPECT_EQ(config.seed, 18446744073709551615ull);
  EXPECT_FALSE(config.model.bcNorm);
  EXPECT_TRUE(config.model.useShortConv);
  EXPECT_TRUE(config.model.symmMixer);
  EXPECT_FALSE(config.model.mixerHDep);
  EXPECT_TRUE(config.model.gluInLoop);
  EXPECT_EQ(config.model.kroneckerNorm, "spectral");
  EXPECT_EQ(config.model.solver.maxIterTrain, 12);
  EXPECT_DOUBLE_EQ(config.model.solver.tolerance, 0.05);
  EXPECT_EQ(config.taskOptions.trainLength, 9);
  EXPECT_EQ(config.device, "cuda:1");
  EXPECT_EQ(config.threads, 2);
  EXPECT_EQ(taskOptionsFromFlags(
                parse({"--train-len", "9", "--alphabet", "4", "--lr", "1"}))
                .alphabetSize,
            4);
}

TEST(MakeTrainConfigTest, SolverDefaultsFollowTheModelKind) {
  TrainConfig rnn = fresh({"--task", "a5", "--out", "x", "--model", "fp_rnn"});
  EXPECT_EQ(rnn.modelSource, "reference:fp_rnn");
  EXPECT_DOUBLE_EQ(rnn.model.solver.trainQuantile, 0.9);
  EXPECT_DOUBLE_EQ(rnn.model.solver.relaxStart, 1.0);
  EXPECT_DOUBLE_EQ(rnn.model.solver.relaxDecay, 1.0);
  // A flag still wins, wherever it stands relative to --model.
  TrainConfig tuned = fresh({"--task", "a5", "--quantile", "0.5", "--out", "x",
                             "--model", "reference:fp_rnn"});
  EXPECT_DOUBLE_EQ(tuned.model.solver.trainQuantile, 0.5);
  EXPECT_DOUBLE_EQ(tuned.model.solver.relaxStart, 1.0);
}

TEST(MakeTrainConfigTest, EpochsAndWarmupScaling) {
  TrainConfig epochs = fresh({"--task", "a5", "--out", "x", "--epochs", "3",
                              "--steps-per-epoch", "70"});
  EXPECT_EQ(epochs.steps, 210);
  // The recipe's warmup is 10 % of its 1000 steps; it stays 10 %.
  EXPECT_EQ(epochs.optimizer.warmupSteps, 21);
  TrainConfig explicitWarmup =
      fresh({"--task", "a5", "--out", "x", "--steps", "200", "--warmup", "3"});
  EXPECT_EQ(explicitWarmup.optimizer.warmupSteps, 3);
}

//===----------------------------------------------------------------------===//
// Resumed configurations
//===----------------------------------------------------------------------===//

TEST(ResumeTrainConfigTest, RefusesFlagsThatChangeWhatTheRunComputes) {
  TrainConfig stored = fresh({"--task", "a5", "--out", "x", "--lr", "0.001",
                              "--model", "lstm", "--gamma-cap"});
  TrainConfig longer = resumeTrainConfig(
      parse({"--resume", "x", "--steps", "5000", "--progress", "none"}),
      stored);
  EXPECT_EQ(longer.steps, 5000);
  TrainConfig unchanged = longer;
  unchanged.steps = stored.steps;
  EXPECT_EQ(toJson(unchanged), toJson(stored));

  // Restating a stored value is fine.
  EXPECT_NO_THROW(resumeTrainConfig(
      parse({"--resume", "x", "--lr", "1e-3", "--model", "reference:lstm",
             "--gamma-cap", "--out", "x/", "--task", "a5"}),
      stored));

  EXPECT_EQ(
      usageMessage([&] {
        resumeTrainConfig(parse({"--resume", "x", "--lr", "0.01"}), stored);
      }),
      "--lr 0.01 conflicts with the run being resumed (it has "
      "optimizer.lr = 0.001); only --steps, --progress, --tf32 and the "
      "process flags may change on --resume");
  EXPECT_THAT(
      usageMessage([&] {
        resumeTrainConfig(parse({"--resume", "x", "--short-conv"}), stored);
      }),
      HasSubstr("--short-conv conflicts with the run being resumed "
                "(it has model.short_conv = false)"));
  EXPECT_THAT(
      usageMessage([&] {
        resumeTrainConfig(parse({"--resume", "x", "--task", "s5"}), stored);
      }),
      HasSubstr("task.name = \"a5\""));
  EXPECT_THAT(usageMessage([&] {
                resumeTrainConfig(parse({"--resume", "x", "--epochs", "2",
                                         "--steps-per-epoch", "3"}),
                                  stored);
              }),
              HasSubstr("--epochs cannot be used with --resume"));
  EXPECT_THAT(
      usageMessage([&] {
        resumeTrainConfig(parse({"--resume", "x", "--out", "y"}), stored);
      }),
      HasSubstr("--out y conflicts with --resume x"));
  EXPECT_THAT(
      usageMessage([&] {
        resumeTrainConfig(parse({"--resume", "x", "--steps", "0"}), stored);
      }),
      HasSubstr("--steps must be at least 1"));
}

TEST(ResumeTrainConfigTest, TF32MayChangeOnCuda) {
  // The switch changes the rounding of f32 GEMMs on CUDA, not the run's
  // configuration: it may be turned on or off on --resume, where the run
  // trains on CUDA.
  TrainConfig stored =
      fresh({"--task", "a5", "--out", "x", "--device", "cuda"});
  EXPECT_FALSE(stored.tf32);
  EXPECT_TRUE(
      resumeTrainConfig(parse({"--resume", "x", "--tf32", "on"}), stored).tf32);
  TrainConfig onCpu = fresh({"--task", "a5", "--out", "x"});
  EXPECT_THAT(
      usageMessage([&] {
        resumeTrainConfig(parse({"--resume", "x", "--tf32", "on"}), onCpu);
      }),
      HasSubstr("this run trains on cpu"));
}

TEST(OutputDirectoryTest, OnlyMissingOrEmptyDirectoriesAreFresh) {
  ScratchDir scratch;
  EXPECT_EQ(usageMessage([&] { checkFreshOutputDirectory(scratch.path); }), "");
  fs::create_directories(scratch.path);
  EXPECT_EQ(usageMessage([&] { checkFreshOutputDirectory(scratch.path); }), "");
  std::ofstream(scratch.path / "notes.txt") << "hello\n";
  EXPECT_THAT(usageMessage([&] { checkFreshOutputDirectory(scratch.path); }),
              HasSubstr("exists and is not empty; choose a fresh directory"));
  std::ofstream(scratch.path / "config.json") << "{}\n";
  EXPECT_THAT(usageMessage([&] { checkFreshOutputDirectory(scratch.path); }),
              HasSubstr("holds a previous run; continue it with --resume"));
  EXPECT_THAT(usageMessage([&] {
                checkFreshOutputDirectory(scratch.path / "notes.txt");
              }),
              HasSubstr("exists and is not a directory"));
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

TEST(TrainConfigJsonTest, RoundTripsEveryField) {
  TrainConfig config = fresh({"--task",
                              "copy",
                              "--out",
                              "x",
                              "--model",
                              "fp_rnn",
                              "--d-model",
                              "24",
                              "--mixer",
                              "householder",
                              "--mixer-rank",
                              "3",
                              "--dtype",
                              "f64",
                              "--seed",
                              "12345678901234",
                              "--gamma-cap",
                              "--schedule",
                              "linear",
                              "--alphabet",
                              "7",
                              "--context-len",
                              "90",
                              "--eval-count",
                              "17",
                              "--device",
                              "cuda",
                              "--norm-eps",
                              "1e-7",
                              "--n-backwards",
                              "2"});
  config.model.solver.fixedIters = 3;
  nlohmann::ordered_json json = toJson(config);
  TrainConfig back = trainConfigFromJson(nlohmann::json::parse(json.dump()));
  EXPECT_EQ(toJson(back), json);
  EXPECT_EQ(back.model.dtype, torch::kFloat64);
  EXPECT_EQ(back.seed, 12345678901234ull);
  EXPECT_EQ(back.taskOptions.alphabetSize, 7);
  EXPECT_EQ(back.model.solver.fixedIters, 3);
}

TEST(TrainConfigJsonTest, ErrorsNameTheField) {
  nlohmann::json json = nlohmann::json::parse(
      toJson(fresh({"--task", "a5", "--out", "x"})).dump());
  auto message = [](const nlohmann::json &broken) {
    try {
      trainConfigFromJson(broken);
    } catch (const std::runtime_error &error) {
      return std::string(error.what());
    }
    return std::string();
  };
  nlohmann::json missing = json;
  missing["model"].erase("d_model");
  EXPECT_EQ(message(missing), "missing field 'model.d_model'");
  nlohmann::json wrongType = json;
  wrongType["training"]["steps"] = "many";
  EXPECT_EQ(message(wrongType), "field 'training.steps' has the wrong type");
  nlohmann::json noSolver = json;
  noSolver["model"].erase("solver");
  EXPECT_EQ(message(noSolver), "missing section 'model.solver'");
  nlohmann::json badSchedule = json;
  badSchedule["optimizer"]["schedule"] = "step";
  EXPECT_THAT(message(badSchedule), HasSubstr("'optimizer.schedule'"));
  EXPECT_EQ(message(nlohmann::json::array()), "missing section 'model'");
}

//===----------------------------------------------------------------------===//
// Progress
//===----------------------------------------------------------------------===//

TEST(ProgressTest, DurationsAndLines) {
  EXPECT_EQ(formatDuration(0), "00:00");
  EXPECT_EQ(formatDuration(75.4), "01:15");
  EXPECT_EQ(formatDuration(3725), "1:02:05");
  EXPECT_EQ(formatDuration(std::nan("")), "--:--");
  EXPECT_EQ(formatDuration(-1), "--:--");

  ProgressSnapshot snapshot;
  snapshot.step = 120;
  snapshot.totalSteps = 1000;
  snapshot.loss = 2.34567;
  snapshot.lr = 1e-4;
  snapshot.gradNorm = 0.5123;
  snapshot.tokensPerSecond = 310;
  std::string bar = formatBarLine(snapshot, 12.34, 72, 100);
  EXPECT_EQ(bar, " 120/1000 [####                                    ]  12% "
                 "loss 2.3457 | 12.3 steps/s | ETA 01:12");
  for (int width : {40, 60, 80, 120})
    EXPECT_LE(formatBarLine(snapshot, 12.34, 72, width).size(),
              static_cast<size_t>(width))
        << width;
  EXPECT_THAT(formatBarLine(snapshot, 0.5, 1760, 100),
              HasSubstr("2.0 s/step | ETA 29:20"));

  EXPECT_EQ(formatLogLine(snapshot, 12.34, 72),
            "step 120/1000 loss 2.3457 lr 1.00e-04 grad 0.512 310 tok/s "
            "12.3 steps/s ETA 01:12");
  snapshot.itersMean = 4.25;
  snapshot.itersMax = 7;
  EXPECT_THAT(formatLogLine(snapshot, 12.34, 72), HasSubstr(" fp 4.2/7 "));
}

TEST(ProgressTest, LinesModePrintsLoggedStepsAndNotes) {
  std::FILE *out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  {
    ProgressReporter reporter(ProgressMode::Auto, out, 0, 4);
    // A temporary file is not a terminal.
    EXPECT_EQ(reporter.mode(), ProgressMode::Lines);
    ProgressSnapshot snapshot;
    snapshot.totalSteps = 4;
    for (int64_t step = 1; step <= 4; ++step) {
      snapshot.step = step;
      reporter.update(snapshot, /*logStep=*/step % 2 == 0);
    }
    reporter.note("validation done");
  }
  std::rewind(out);
  std::string text;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, out))
    text += buffer;
  std::fclose(out);
  EXPECT_THAT(text, HasSubstr("step 2/4 "));
  EXPECT_THAT(text, HasSubstr("step 4/4 "));
  EXPECT_THAT(text, testing::Not(HasSubstr("step 1/4 ")));
  EXPECT_THAT(text, HasSubstr("validation done\n"));
  EXPECT_EQ(text.find('\r'), std::string::npos);
}

TEST(ProgressTest, BarModeRedrawsInPlace) {
  std::FILE *out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  {
    ProgressReporter reporter(ProgressMode::Bar, out, 0, 2);
    ProgressSnapshot snapshot;
    snapshot.totalSteps = 2;
    snapshot.step = 2;
    reporter.update(snapshot, true);
    reporter.note("a note");
  }
  std::rewind(out);
  std::string text;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, out))
    text += buffer;
  std::fclose(out);
  EXPECT_EQ(text.rfind("\r", 0), 0u);
  EXPECT_THAT(text, HasSubstr("2/2 ["));
  EXPECT_THAT(text, HasSubstr("\r\x1b[Ka note\n"));
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(parseProgressMode("none"), ProgressMode::Quiet);
  EXPECT_EQ(parseProgressMode("loud"), std::nullopt);
}
