//===- TrainerTest.cpp - Training loop, checkpoints, evaluation -*- C++ -*-===//
//
// Runs the Trainer on a small task (predict the previous token) with an LSTM,
// the reference FP-Mamba, and a toy model whose output depends on its
// iteration cap and which reports fixed-point statistics. Checks: training
// learns; an interrupted and resumed run reproduces the uninterrupted one bit
// for bit (losses, learning rates, gradient norms, iteration caps, final
// parameters, evaluation); stale metrics after a crash are cut; checkpoints of
// another configuration are refused; chunked evaluation equals unchunked; Gamma
// caps follow docs/spec.md §3.5 and reach the model before its forward pass.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Train/Trainer.h"

#include "RealText.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include <unistd.h>

using namespace fp::rt;
using testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

/// Targets are the previous input token (position 0 unsupervised). Training
/// sequences have length 6.
class ShiftTask : public Task {
public:
  std::string name() const override { return "shift"; }
  int64_t vocabSize() const override { return 5; }
  TaskDefaults defaults() const override { return {}; }
  Batch trainBatch(int64_t batchSize, uint64_t seed,
                   int64_t step) const override {
    return make(batchSize, 6, seed * 1000003u + static_cast<uint64_t>(step));
  }
  std::vector<int64_t> evalLengths() const override { return {4, 12}; }
  Batch evalBatch(int64_t length, int64_t count, uint64_t seed) const override {
    return make(count, length, seed ^ (static_cast<uint64_t>(length) << 32));
  }
  TaskOptions options() const override {
    TaskOptions options;
    options.trainLength = 6;
    return options;
  }

private:
  static Batch make(int64_t rows, int64_t length, uint64_t seed) {
    auto generator = torch::make_generator<at::CPUGeneratorImpl>(seed);
    torch::Tensor inputs =
        torch::randint(5, {rows, length}, generator, torch::kLong);
    torch::Tensor targets =
        torch::full({rows, length}, kIgnoreIndex, torch::kLong);
    targets.narrow(1, 1, length - 1).copy_(inputs.narrow(1, 0, length - 1));
    return {inputs, targets};
  }
};

/// A model whose output depends on its iteration cap: `cap` rounds of
/// h ← tanh(W h + u) per token, with u mixing the current and previous
/// token. Reports cap + 1 iterations for every sample.
class CappedModel : public SequenceModel {
public:
  CappedModel() {
    current = register_module("current", torch::nn::Embedding(8, 8));
    previous = register_module("previous", torch::nn::Embedding(8, 8));
    mix = register_module("mix", torch::nn::Linear(8, 8));
    head = register_module("head", torch::nn::Linear(8, 8));
  }
  torch::Tensor forward(const torch::Tensor &tokens) override {
    torch::Tensor shifted =
        torch::cat({torch::zeros_like(tokens.narrow(1, 0, 1)),
                    tokens.narrow(1, 0, tokens.size(1) - 1)},
                   1);
    torch::Tensor u = current->forward(tokens) + previous->forward(shifted);
    torch::Tensor h = torch::zeros_like(u);
    for (int64_t i = 0; i < cap; ++i)
      h = torch::tanh(mix->forward(h) + u);
    stats = ForwardStats{};
    stats.iterations.push_back(
        torch::full({tokens.size(0)}, cap + 1, torch::kLong));
    return head->forward(h);
  }
  void setTrainIterationCap(int64_t newCap) override { cap = newCap; }

private:
  int64_t cap = 3;
  torch::nn::Embedding current{nullptr}, previous{nullptr};
  torch::nn::Linear mix{nullptr}, head{nullptr};
};

/// CappedModel whose training forwards from the `poisonFrom`-th on return
/// NaN logits, and whose statistics mark every sequence starting with token
/// 0 as diverged (residual NaN, 100 iterations; the others 7).
class PoisonedModel : public CappedModel {
public:
  explicit PoisonedModel(int64_t poisonFrom) : poisonFrom(poisonFrom) {}
  torch::Tensor forward(const torch::Tensor &tokens) override {
    torch::Tensor logits = CappedModel::forward(tokens);
    torch::Tensor diverged = tokens.select(1, 0) == 0;
    stats = ForwardStats{};
    stats.add(torch::where(diverged,
                           torch::full_like(diverged, 100, torch::kLong),
                           torch::full_like(diverged, 7, torch::kLong)),
              torch::where(
                  diverged,
                  torch::full(diverged.sizes(), std::nan(""), torch::kFloat32),
                  torch::full(diverged.sizes(), 0.01f)));
    if (is_training() && ++trainingCalls >= poisonFrom)
      logits = logits * std::nan("");
    return logits;
  }

private:
  int64_t poisonFrom, trainingCalls = 0;
};

TrainConfig smallConfig(const std::string &kind) {
  TrainConfig config;
  config.modelSource = "reference:" + kind;
  config.model.kind = kind;
  config.model.vocabSize = 5;
  config.model.dModel = 8;
  config.task = "shift";
  config.evalCount = 10;
  config.evalBatch = 4;
  config.optimizer.lr = 1e-2;
  config.optimizer.schedule = Schedule::WarmupCosine;
  config.optimizer.warmupSteps = 2;
  config.optimizer.minLrRatio = 0.1;
  config.optimizer.clipNorm = 0.5;
  config.batchSize = 8;
  config.steps = 8;
  config.seed = 11;
  config.logEvery = 1;
  config.evalEvery = 4;
  config.checkpointEvery = 3;
  config.threads = 1;
  return config;
}

std::shared_ptr<SequenceModel> buildModel(const TrainConfig &config,
                                          uint64_t initSeed) {
  torch::manual_seed(initSeed);
  if (config.model.kind == "capped")
    return std::make_shared<CappedModel>();
  return makeReferenceModel(config.model);
}

TrainerOptions quiet() {
  TrainerOptions options;
  options.progress = ProgressMode::Quiet;
  return options;
}

/// A run directory under the temporary directory, removed at the end. A
/// parameterised test's name holds a '/', which would make the directory a
/// subdirectory of one that outlives it.
struct RunDir {
  explicit RunDir(const std::string &tag) {
    std::string test =
        testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(test.begin(), test.end(), '/', '_');
    path = fs::temp_directory_path() /
           fmt::format("fp-trainer-test-{}-{}-{}", ::getpid(), test, tag);
    fs::remove_all(path);
  }
  ~RunDir() { fs::remove_all(path); }
  fs::path path;
};

std::vector<nlohmann::json> readMetrics(const fs::path &directory) {
  std::vector<nlohmann::json> records;
  std::ifstream in(directory / RunFiles::metrics);
  std::string line;
  while (std::getline(in, line))
    records.push_back(nlohmann::json::parse(line));
  return records;
}

/// The records without their timing fields, which differ between runs.
std::vector<nlohmann::json>
withoutTimings(std::vector<nlohmann::json> records) {
  for (nlohmann::json &record : records) {
    record.erase("tokens_per_s");
    record.erase("elapsed_s");
  }
  return records;
}

nlohmann::json readJson(const fs::path &path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

std::shared_ptr<const Task> shiftTask() {
  return std::make_shared<ShiftTask>();
}

} // namespace

TEST(TrainerTest, LstmLearnsTheShiftTask) {
  RunDir dir("lstm");
  TrainConfig config = smallConfig("lstm");
  config.model.dModel = 16;
  config.optimizer.schedule = Schedule::Constant;
  config.optimizer.warmupSteps = 0;
  config.optimizer.clipNorm = 1.0;
  config.steps = 150;
  config.batchSize = 16;
  config.logEvery = 10;
  config.evalEvery = 0;
  config.checkpointEvery = 0;
  Trainer trainer(config, buildModel(config, 1), shiftTask(), dir.path,
                  quiet());
  EXPECT_EQ(trainer.start(), RunOutcome::Finished);
  EXPECT_EQ(trainer.step(), 150);

  std::vector<nlohmann::json> metrics = readMetrics(dir.path);
  ASSERT_EQ(metrics.size(), 15u);
  double first = metrics.front()["loss"], last = metrics.back()["loss"];
  EXPECT_LT(last, 0.3 * first);
  nlohmann::json eval = readJson(dir.path / RunFiles::eval);
  ASSERT_EQ(eval["lengths"].size(), 2u);
  for (const nlohmann::json &length : eval["lengths"]) {
    EXPECT_GT(length["token_accuracy"].get<double>(), 0.95) << length;
    EXPECT_EQ(length["sequences"], 10);
  }
  EXPECT_EQ(eval["lengths"][1]["length"], 12);
  EXPECT_EQ(eval["lengths"][1]["tokens"], 10 * 11);
  EXPECT_TRUE(fs::exists(dir.path / RunFiles::checkpoint));
  EXPECT_FALSE(fs::exists(dir.path / "checkpoint.pt.tmp"));
}

class ResumeTest : public testing::TestWithParam<std::string> {};

TEST_P(ResumeTest, ResumedRunReproducesTheUninterruptedRun) {
  TrainConfig config = smallConfig(GetParam());
  config.gammaCap = GetParam() != "lstm";
  config.model.solver.maxIterTrain = 5;
  config.model.solver.maxIterEval = 20;
  // The checkpoint at step 3 falls inside the log window of steps 3-4.
  config.logEvery = 2;
  RunDir straightDir("straight"), resumedDir("resumed");

  Trainer straight(config, buildModel(config, 5), shiftTask(), straightDir.path,
                   quiet());
  ASSERT_EQ(straight.start(), RunOutcome::Finished);

  // Killed after step 5: the last checkpoint is at step 3, and metrics.jsonl
  // already holds step 4 and the validation at step 4.
  TrainerOptions killed = quiet();
  killed.stopAfterStep = 5;
  {
    Trainer first(config, buildModel(config, 5), shiftTask(), resumedDir.path,
                  killed);
    ASSERT_EQ(first.start(), RunOutcome::Stopped);
  }
  EXPECT_EQ(readMetrics(resumedDir.path).back()["step"], 4);
  EXPECT_FALSE(fs::exists(resumedDir.path / RunFiles::eval));

  // The resumed model starts from other weights: everything must come from
  // the checkpoint.
  Trainer second(config, buildModel(config, 999), shiftTask(), resumedDir.path,
                 quiet());
  ASSERT_EQ(second.resume(), RunOutcome::Finished);
  EXPECT_EQ(second.step(), 8);

  std::vector<nlohmann::json> expected =
      withoutTimings(readMetrics(straightDir.path));
  std::vector<nlohmann::json> actual =
      withoutTimings(readMetrics(resumedDir.path));
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(actual[i], expected[i]) << "record " << i;
  // Exact, not approximate: compare the losses as doubles too.
  for (size_t i = 0; i < expected.size(); ++i)
    if (expected[i]["kind"] == "train") {
      EXPECT_EQ(actual[i]["loss"].get<double>(),
                expected[i]["loss"].get<double>());
      if (config.gammaCap) {
        EXPECT_EQ(actual[i]["iter_cap"], expected[i]["iter_cap"]);
      }
    }

  auto straightParams = straight.model().named_parameters();
  auto resumedParams = second.model().named_parameters();
  for (const auto &item : straightParams)
    EXPECT_TRUE(torch::equal(item.value(), resumedParams[item.key()]))
        << item.key();
  EXPECT_EQ(readJson(straightDir.path / RunFiles::eval)["lengths"],
            readJson(resumedDir.path / RunFiles::eval)["lengths"]);
}

TEST(TrainerTest, ResumeAfterAKillDuringACheckpointWriteIsExact) {
  // A run killed while writing its checkpoint at step 6 leaves checkpoint.pt
  // of step 3 whole, checkpoint.pt.tmp cut short, and metrics through step 6.
  // The resumed run must remove the temporary, continue from step 3 and
  // reproduce the uninterrupted run exactly.
  TrainConfig config = smallConfig("fp_mamba");
  config.gammaCap = true;
  config.model.solver.maxIterTrain = 5;
  config.model.solver.maxIterEval = 20;
  RunDir straightDir("straight"), killedDir("killed"), aheadDir("ahead");

  Trainer straight(config, buildModel(config, 5), shiftTask(), straightDir.path,
                   quiet());
  ASSERT_EQ(straight.start(), RunOutcome::Finished);

  TrainerOptions stopAt = quiet();
  stopAt.stopAfterStep = 6;
  {
    // The bytes the killed writer had begun: step 6's checkpoint.
    Trainer ahead(config, buildModel(config, 5), shiftTask(), aheadDir.path,
                  stopAt);
    ASSERT_EQ(ahead.start(), RunOutcome::Stopped);
  }
  stopAt.stopAfterStep = 5;
  {
    Trainer killed(config, buildModel(config, 5), shiftTask(), killedDir.path,
                   stopAt);
    ASSERT_EQ(killed.start(), RunOutcome::Stopped);
  }
  std::string partial;
  {
    std::ifstream in(aheadDir.path / RunFiles::checkpoint, std::ios::binary);
    partial.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(partial.size(), 1000u);
  partial.resize(partial.size() / 2);
  fs::path temporary = killedDir.path / "checkpoint.pt.tmp";
  std::ofstream(temporary, std::ios::binary) << partial;
  fs::copy_file(aheadDir.path / RunFiles::metrics,
                killedDir.path / RunFiles::metrics,
                fs::copy_options::overwrite_existing);

  Trainer resumed(config, buildModel(config, 999), shiftTask(), killedDir.path,
                  quiet());
  ASSERT_EQ(resumed.resume(), RunOutcome::Finished);
  EXPECT_FALSE(fs::exists(temporary));
  EXPECT_EQ(withoutTimings(readMetrics(killedDir.path)),
            withoutTimings(readMetrics(straightDir.path)));
  auto expected = straight.model().named_parameters();
  for (const auto &item : resumed.model().named_parameters())
    EXPECT_TRUE(torch::equal(item.value(), expected[item.key()])) << item.key();
}

TEST(TrainerTest, NonFiniteStepsMakeNoUpdateAndStopTheRun) {
  // Training forwards 5, 6 and 7 give NaN logits: none of them updates the
  // parameters, and the third in a row stops the run with DivergedError.
  // The checkpoint of step 6 holds the parameters of step 4.
  TrainConfig config = smallConfig("capped");
  config.steps = 10;
  config.evalEvery = 0;
  config.checkpointEvery = 2;
  config.nonFiniteLimit = 3;
  RunDir poisonedDir("poisoned"), cleanDir("clean");

  TrainerOptions stopAt = quiet();
  stopAt.stopAfterStep = 4;
  torch::manual_seed(5);
  Trainer clean(config, std::make_shared<PoisonedModel>(1000), shiftTask(),
                cleanDir.path, stopAt);
  ASSERT_EQ(clean.start(), RunOutcome::Stopped);

  torch::manual_seed(5);
  Trainer poisoned(config, std::make_shared<PoisonedModel>(5), shiftTask(),
                   poisonedDir.path, quiet());
  try {
    poisoned.start();
    FAIL() << "the run did not stop";
  } catch (const DivergedError &error) {
    EXPECT_THAT(error.what(), HasSubstr("3 steps in a row (steps 5 to 7"));
    EXPECT_THAT(error.what(), HasSubstr("(step 6) is the last checkpoint"));
  }
  EXPECT_EQ(poisoned.step(), 7);
  auto expected = clean.model().named_parameters();
  for (const auto &item : poisoned.model().named_parameters()) {
    EXPECT_TRUE(torch::isfinite(item.value()).all().item<bool>());
    EXPECT_TRUE(torch::equal(item.value(), expected[item.key()])) << item.key();
  }
  std::vector<nlohmann::json> metrics = readMetrics(poisonedDir.path);
  ASSERT_EQ(metrics.size(), 7u);
  EXPECT_EQ(metrics[3]["skipped_steps"], 0);
  EXPECT_TRUE(metrics[4]["loss"].is_null());
  EXPECT_EQ(metrics[4]["skipped_steps"], 1);
  EXPECT_EQ(metrics[6]["step"], 7);
  EXPECT_FALSE(fs::exists(poisonedDir.path / RunFiles::eval));
}

TEST(TrainerTest, DivergedSolvesAreCountedNotAveraged) {
  // Sequences starting with token 0 report a NaN residual: validation counts
  // them apart, and the iterations it reports are those of the others.
  TrainConfig config = smallConfig("capped");
  config.evalCount = 40;
  config.evalBatch = 7;
  RunDir dir("validate");
  Trainer trainer(config, std::make_shared<PoisonedModel>(1000), shiftTask(),
                  dir.path, quiet());
  LengthScores scores = trainer.validate();
  Batch batch =
      ShiftTask().trainBatch(config.evalCount, validationSeed(config.seed), 0);
  const int64_t diverged =
      (batch.inputs.select(1, 0) == 0).sum().item<int64_t>();
  ASSERT_GT(diverged, 0);
  EXPECT_EQ(scores.nonFinite, diverged);
  EXPECT_EQ(scores.itersMean, 7.0);
  EXPECT_EQ(scores.itersMax, 7);
}

INSTANTIATE_TEST_SUITE_P(Models, ResumeTest,
                         testing::Values("lstm", "capped", "fp_mamba"),
                         [](const testing::TestParamInfo<std::string> &info) {
                           return info.param;
                         });

TEST(TrainerTest, ResumeExtendsARunAndRefusesFewerSteps) {
  RunDir dir("extend");
  TrainConfig config = smallConfig("lstm");
  {
    Trainer trainer(config, buildModel(config, 1), shiftTask(), dir.path,
                    quiet());
    trainer.start();
  }
  TrainConfig longer = config;
  longer.steps = 10;
  Trainer extended(longer, buildModel(config, 2), shiftTask(), dir.path,
                   quiet());
  EXPECT_EQ(extended.resume(), RunOutcome::Finished);
  std::vector<nlohmann::json> metrics = readMetrics(dir.path);
  EXPECT_EQ(metrics.back()["step"], 10);
  EXPECT_EQ(readJson(dir.path / RunFiles::config)["training"]["steps"], 10);
  EXPECT_EQ(readJson(dir.path / RunFiles::eval)["step"], 10);
  // Steps are strictly increasing per kind: nothing was logged twice.
  int64_t lastTrain = 0;
  for (const nlohmann::json &record : metrics)
    if (record["kind"] == "train") {
      EXPECT_GT(record["step"].get<int64_t>(), lastTrain);
      lastTrain = record["step"];
    }

  TrainConfig shorter = config;
  shorter.steps = 4;
  Trainer refused(shorter, buildModel(config, 3), shiftTask(), dir.path,
                  quiet());
  try {
    refused.restore();
    ADD_FAILURE() << "restoring 10 steps into a 4-step run succeeded";
  } catch (const std::invalid_argument &error) {
    EXPECT_THAT(error.what(), HasSubstr("has already done 10 steps"));
  }
}

TEST(TrainerTest, CheckpointOfAnotherConfigurationIsRefused) {
  RunDir dir("mismatch");
  TrainConfig config = smallConfig("lstm");
  {
    Trainer trainer(config, buildModel(config, 1), shiftTask(), dir.path,
                    quiet());
    trainer.start();
  }
  TrainConfig other = config;
  other.optimizer.lr = 0.5;
  Trainer trainer(other, buildModel(config, 1), shiftTask(), dir.path, quiet());
  try {
    trainer.restore();
    ADD_FAILURE() << "a checkpoint of another configuration was accepted";
  } catch (const std::runtime_error &error) {
    EXPECT_THAT(error.what(), HasSubstr("was written for another "
                                        "configuration"));
  }
}

TEST(TrainerTest, ResumeWithoutCheckpointRestartsFromStepZero) {
  RunDir dir("nocheckpoint");
  TrainConfig config = smallConfig("lstm");
  config.checkpointEvery = 0;
  TrainerOptions killed = quiet();
  killed.stopAfterStep = 2;
  {
    Trainer trainer(config, buildModel(config, 1), shiftTask(), dir.path,
                    killed);
    EXPECT_EQ(trainer.start(), RunOutcome::Stopped);
  }
  EXPECT_FALSE(fs::exists(dir.path / RunFiles::checkpoint));
  // A half-written line, as a crash can leave.
  std::ofstream(dir.path / RunFiles::metrics, std::ios::app)
      << R"({"step": 3, "kind": "tr)";
  Trainer trainer(config, buildModel(config, 1), shiftTask(), dir.path,
                  quiet());
  EXPECT_EQ(trainer.resume(), RunOutcome::Finished);
  std::vector<nlohmann::json> metrics = readMetrics(dir.path);
  std::vector<int64_t> trainSteps;
  for (const nlohmann::json &record : metrics)
    if (record["kind"] == "train")
      trainSteps.push_back(record["step"]);
  EXPECT_EQ(trainSteps, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(TrainerTest, TruncateMetricsKeepsRecordsUpToTheStep) {
  RunDir dir("truncate");
  fs::create_directories(dir.path);
  fs::path path = dir.path / RunFiles::metrics;
  std::ofstream(path) << R"({"step":1,"kind":"train"})"
                         "\n"
                      << R"({"step":2,"kind":"train"})"
                         "\n"
                      << R"({"step":2,"kind":"val"})"
                         "\n"
                      << "not json\n"
                      << R"({"step":3,"kind":"train"})"
                         "\n"
                      << R"({"step":4,"ki)";
  truncateMetrics(path, 2);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  EXPECT_EQ(text, R"({"step":1,"kind":"train"})"
                  "\n"
                  R"({"step":2,"kind":"train"})"
                  "\n"
                  R"({"step":2,"kind":"val"})"
                  "\n");
  truncateMetrics(dir.path / "missing.jsonl", 3);
  EXPECT_FALSE(fs::exists(dir.path / "missing.jsonl"));
}

TEST(TrainerTest, ChunkedEvaluationEqualsOneChunk) {
  RunDir dir("chunks");
  TrainConfig config = smallConfig("transformer");
  config.model.nHeads = 2;
  config.model.dtype = torch::kFloat64;
  config.evalCount = 10;
  auto model = buildModel(config, 4);
  config.evalBatch = 3; // chunks of 3, 3, 3, 1
  Trainer chunked(config, model, shiftTask(), dir.path, quiet());
  std::vector<LengthScores> a = chunked.evaluate();
  config.evalBatch = 10;
  Trainer whole(config, model, shiftTask(), dir.path, quiet());
  std::vector<LengthScores> b = whole.evaluate();
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].length, b[i].length);
    EXPECT_EQ(a[i].scores.sequences, 10);
    EXPECT_EQ(a[i].scores.tokens, b[i].scores.tokens);
    EXPECT_NEAR(a[i].scores.loss, b[i].scores.loss, 1e-12);
    EXPECT_NEAR(a[i].scores.tokenAccuracy, b[i].scores.tokenAccuracy, 1e-12);
    EXPECT_NEAR(a[i].scores.sequenceAccuracy, b[i].scores.sequenceAccuracy,
                1e-12);
    EXPECT_TRUE(std::isnan(a[i].scores.extra));
  }
  // Evaluation leaves the model in training mode.
  EXPECT_TRUE(model->is_training());
}

TEST(TrainerTest, GammaCapsFollowTheSpecAndReachTheForwardPass) {
  RunDir dir("gamma");
  TrainConfig config = smallConfig("capped");
  config.gammaCap = true;
  config.steps = 300;
  config.batchSize = 2;
  config.evalEvery = 0;
  config.checkpointEvery = 0;
  Trainer trainer(config, buildModel(config, 1), shiftTask(), dir.path,
                  quiet());
  trainer.start();
  double sum = 0;
  int64_t count = 0, smallest = 1 << 20;
  for (const nlohmann::json &record : readMetrics(dir.path)) {
    if (record["kind"] != "train")
      continue;
    int64_t cap = record["iter_cap"];
    // The model ran with the cap drawn for this very step.
    EXPECT_EQ(record["fp_iters_max"].get<int64_t>(), cap + 1);
    EXPECT_DOUBLE_EQ(record["fp_iters_mean"].get<double>(), cap + 1.0);
    sum += cap;
    smallest = std::min(smallest, cap);
    ++count;
  }
  ASSERT_EQ(count, 300);
  EXPECT_GE(smallest, 1);
  // ceil(Gamma(4, 6/16 + 1)): mean 4 * 1.375 = 5.5, plus ~0.5 from the
  // ceiling; the standard error of 300 draws is ~0.16.
  EXPECT_NEAR(sum / count, 6.0, 0.6);
}

TEST(TrainerTest, MetricsAndEvaluationHaveTheDocumentedFields) {
  RunDir dir("fields");
  TrainConfig config = smallConfig("capped");
  Trainer trainer(config, buildModel(config, 1), shiftTask(), dir.path,
                  quiet());
  trainer.start();
  std::vector<nlohmann::json> metrics = readMetrics(dir.path);
  ASSERT_EQ(metrics.size(), 8u + 2u); // 8 training steps, validation at 4, 8
  for (const nlohmann::json &record : metrics) {
    const char *train[] = {"step",         "kind",         "loss",
                           "lr",           "grad_norm",    "fp_iters_mean",
                           "fp_iters_max", "tokens_per_s", "elapsed_s"};
    const char *val[] = {"step",
                         "kind",
                         "loss",
                         "token_accuracy",
                         "sequence_accuracy",
                         "extra",
                         "fp_iters_mean",
                         "fp_iters_max",
                         "elapsed_s"};
    if (record["kind"] == "train") {
      for (const char *key : train)
        EXPECT_TRUE(record.contains(key)) << key;
      EXPECT_EQ(record["fp_iters_max"], 4); // the default cap 3, plus one
    } else {
      ASSERT_EQ(record["kind"], "val");
      for (const char *key : val)
        EXPECT_TRUE(record.contains(key)) << key;
      EXPECT_GE(record["token_accuracy"].get<double>(), 0.0);
      EXPECT_LE(record["token_accuracy"].get<double>(), 1.0);
      EXPECT_TRUE(record["extra"].is_null());
    }
  }
  nlohmann::json configFile = readJson(dir.path / RunFiles::config);
  EXPECT_EQ(configFile["fpc_version"], fpcVersion());
  EXPECT_TRUE(configFile.contains("torch_version"));
  EXPECT_EQ(configFile["task"]["eval_lengths"], nlohmann::json({4, 12}));
  EXPECT_EQ(toJson(trainConfigFromJson(configFile)), toJson(config));
  nlohmann::json eval = readJson(dir.path / RunFiles::eval);
  EXPECT_EQ(eval["task"], "shift");
  EXPECT_EQ(eval["model"], "reference:capped");
  EXPECT_EQ(eval["step"], 8);
  EXPECT_EQ(eval["train_length"], 6);
  EXPECT_EQ(eval["lengths"][0]["fp_iters_mean"], 4.0);
}

/// The parameters of `model`, in order, as one f64 vector.
torch::Tensor flatParameters(SequenceModel &model) {
  std::vector<torch::Tensor> flat;
  for (const torch::Tensor &parameter : model.parameters())
    flat.push_back(parameter.detach().to(torch::kFloat64).flatten());
  return torch::cat(flat);
}

TEST(TrainerTest, GradientAccumulationAddsUpToTheWholeBatch) {
  // Copy rows supervise different numbers of positions, so each
  // micro-batch's loss must be weighted by its share of them. f64: the
  // parts differ from the whole only in the order of the additions.
  std::shared_ptr<const Task> copy = makeTask("copy");
  TrainConfig config = smallConfig("lstm");
  config.task = "copy";
  config.model.vocabSize = copy->vocabSize();
  config.model.dtype = torch::kFloat64;
  config.steps = 6;
  config.evalEvery = 0;
  config.checkpointEvery = 0;
  torch::Tensor whole;
  std::vector<nlohmann::json> wholeMetrics;
  for (int64_t parts : {1, 2, 4}) {
    SCOPED_TRACE(fmt::format("{} micro-batches", parts));
    RunDir dir(fmt::format("accum{}", parts));
    config.gradAccum = parts;
    auto model = buildModel(config, 3);
    Trainer trainer(config, model, copy, dir.path, quiet());
    ASSERT_EQ(trainer.start(), RunOutcome::Finished);
    torch::Tensor parameters = flatParameters(*model);
    std::vector<nlohmann::json> metrics = readMetrics(dir.path);
    if (parts == 1) {
      whole = parameters;
      wholeMetrics = metrics;
      continue;
    }
    EXPECT_LE((parameters - whole).abs().max().item<double>(),
              1e-10 * whole.abs().max().item<double>());
    ASSERT_EQ(metrics.size(), wholeMetrics.size());
    for (size_t i = 0; i < metrics.size(); ++i) {
      if (metrics[i]["kind"] != "train")
        continue;
      EXPECT_NEAR(metrics[i]["loss"].get<double>(),
                  wholeMetrics[i]["loss"].get<double>(), 1e-12)
          << "step " << metrics[i]["step"];
    }
  }
  config.gradAccum = 3; // 8 rows do not split in 3
  RunDir dir("accum3");
  EXPECT_THROW(Trainer(config, buildModel(config, 3), copy, dir.path, quiet()),
               std::invalid_argument);
}

TEST(TrainerTest, LanguageModelsReportPerplexityBitsPerByteAndTokens) {
  TaskOptions options;
  options.dataPaths = {fp::test::fortuneFile().string()};
  options.documentSeparator = fp::test::kFortuneSeparator;
  options.contextLength = 32;
  std::shared_ptr<const Task> lm = makeTask("lm", options);
  TrainConfig config = smallConfig("lstm");
  config.task = "lm";
  config.taskOptions = lm->options();
  config.model.vocabSize = lm->vocabSize();
  config.batchSize = 4;
  config.steps = 4;
  config.evalEvery = 2;
  config.evalCount = 6;
  RunDir dir("lm");
  Trainer trainer(config, buildModel(config, 2), lm, dir.path, quiet());
  ASSERT_EQ(trainer.start(), RunOutcome::Finished);

  auto expectLanguageMetrics = [](const nlohmann::json &record) {
    const double loss = record["loss"];
    EXPECT_NEAR(record["perplexity"].get<double>(), std::exp(loss),
                1e-12 * std::exp(loss));
    // Byte-level text: one byte per token.
    EXPECT_NEAR(record["bits_per_byte"].get<double>(), loss / std::log(2.0),
                1e-12);
  };
  int64_t validations = 0;
  for (const nlohmann::json &record : readMetrics(dir.path)) {
    if (record["kind"] != "val")
      continue;
    ++validations;
    expectLanguageMetrics(record);
    EXPECT_EQ(record["tokens_seen"], record["step"].get<int64_t>() * 4 * 32);
  }
  EXPECT_EQ(validations, 2);
  nlohmann::json eval = readJson(dir.path / RunFiles::eval);
  EXPECT_EQ(eval["tokens_seen"], 4 * 4 * 32);
  ASSERT_EQ(eval["lengths"].size(), 1u);
  expectLanguageMetrics(eval["lengths"][0]);
  EXPECT_EQ(eval["lengths"][0]["length"], 32);
  EXPECT_EQ(eval["lengths"][0]["tokens"], 6 * 32);
  // config.json records the data and its size, and reads back.
  nlohmann::json configFile = readJson(dir.path / RunFiles::config);
  EXPECT_EQ(configFile["task"]["train_tokens"], lm->options().trainTokens);
  EXPECT_EQ(toJson(trainConfigFromJson(configFile)), toJson(config));
}

TEST(TrainerTest, Bf16AutocastComputesInBf16WithF32Weights) {
  TrainConfig config = smallConfig("fp_mamba");
  config.model.solver.maxIterEval = 20;
  auto model = buildModel(config, 6);
  RunDir dir("bf16");
  Trainer f32(config, model, shiftTask(), dir.path, quiet());
  const double f32Loss = f32.validate().scores.loss;
  config.autocastBf16 = true;
  Trainer bf16(config, model, shiftTask(), dir.path, quiet());
  const double bf16Loss = bf16.validate().scores.loss;
  // bf16 keeps 8 significant bits (relative rounding 2^-9 ≈ 2e-3 per
  // operation): the loss moves, by far less than its size.
  EXPECT_NE(bf16Loss, f32Loss);
  EXPECT_NEAR(bf16Loss, f32Loss, 2e-2 * f32Loss);
  for (const torch::Tensor &parameter : model->parameters())
    EXPECT_EQ(parameter.scalar_type(), torch::kFloat32);
}

TEST(TrainerTest, UnavailableCudaIsAClearError) {
  if (torch::cuda::is_available())
    GTEST_SKIP() << "a CUDA device is available here";
  TrainConfig config = smallConfig("lstm");
  config.device = "cuda";
  RunDir dir("cuda");
  try {
    Trainer trainer(config, buildModel(config, 1), shiftTask(), dir.path,
                    quiet());
    ADD_FAILURE() << "--device cuda was accepted without CUDA";
  } catch (const std::invalid_argument &error) {
    EXPECT_THAT(error.what(), HasSubstr("CUDA is not available"));
  }
}
