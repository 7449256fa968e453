//===- TaskTest.cpp - Factory, determinism and scoring ----------*- C++ -*-===//
//
// What every task shares: makeTask()'s names and errors, batches as pure
// functions of (seed, step) / (seed, length) regardless of call order and
// thread count, and Task::score() / Task::loss() on hand-built logits.
//
//===----------------------------------------------------------------------===//

#include "TaskTestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

using namespace fp::rt;
using namespace fp::rt::test;
using ::testing::HasSubstr;

namespace {

//===----------------------------------------------------------------------===//
// makeTask
//===----------------------------------------------------------------------===//

TEST(MakeTask, NamesAndVocabularies) {
  EXPECT_EQ(taskNames(),
            (std::vector<std::string>{"a5", "s5", "copy", "arith", "parity"}));
  std::map<std::string, int64_t> vocab = {
      {"a5", 67}, {"s5", 127}, {"copy", 30}, {"arith", 12}, {"parity", 3}};
  for (const std::string &name : taskNames()) {
    auto task = makeTask(name);
    ASSERT_TRUE(task);
    EXPECT_EQ(task->name(), name);
    EXPECT_EQ(task->vocabSize(), vocab.at(name));
    EXPECT_FALSE(task->evalLengths().empty());
    TaskDefaults d = task->defaults();
    EXPECT_GT(d.lr, 0);
    EXPECT_GT(d.batchSize, 0);
    EXPECT_GT(d.steps, d.warmupSteps);
  }
}

TEST(MakeTask, UnknownNameListsTheValidOnes) {
  try {
    makeTask("a6");
    FAIL() << "no exception";
  } catch (const std::invalid_argument &error) {
    EXPECT_THAT(error.what(), HasSubstr("'a6'"));
    for (const std::string &name : taskNames())
      EXPECT_THAT(error.what(), HasSubstr(name));
  }
}

TEST(MakeTask, ImpossibleOptionsThrow) {
  auto expectThrow = [](const std::string &name, TaskOptions options,
                        const std::string &mentions) {
    SCOPED_TRACE(name + ": " + mentions);
    try {
      makeTask(name, options);
      ADD_FAILURE() << "no exception";
    } catch (const std::invalid_argument &error) {
      EXPECT_THAT(error.what(), HasSubstr(mentions));
      EXPECT_THAT(error.what(), HasSubstr("'" + name + "'"));
    }
  };
  for (const std::string &name : taskNames()) {
    TaskOptions negative;
    negative.trainLength = -3;
    expectThrow(name, negative, "trainLength");
    TaskOptions negativeStep;
    negativeStep.evalStep = -1;
    expectThrow(name, negativeStep, "evalStep");
    TaskOptions inverted;
    inverted.evalMinLength = 60;
    inverted.evalMaxLength = 50;
    expectThrow(name, inverted, "evalMaxLength");
    TaskOptions minAboveMax;
    minAboveMax.trainMinLength = 12;
    minAboveMax.trainLength = 10;
    expectThrow(name, minAboveMax, "trainLength");
  }
  TaskOptions context;
  context.contextLength = 100;
  expectThrow("parity", context, "contextLength");
  TaskOptions small;
  small.contextLength = 20; // default longest example: 2 * 16 + 3 = 35
  expectThrow("copy", small, "contextLength");
}

TEST(MakeTask, BadBatchRequestsThrow) {
  for (const std::string &name : taskNames()) {
    auto task = makeTask(name);
    EXPECT_THROW(task->trainBatch(0, 1, 0), std::invalid_argument) << name;
    EXPECT_THROW(task->evalBatch(task->evalLengths().front(), 0, 1),
                 std::invalid_argument)
        << name;
  }
}

//===----------------------------------------------------------------------===//
// Determinism
//===----------------------------------------------------------------------===//

class DeterminismTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DeterminismTest, TrainBatchIsAFunctionOfSeedAndStep) {
  uint64_t seed = testSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto task = makeTask(GetParam());
  auto other = makeTask(GetParam());
  Batch first = task->trainBatch(40, seed, 7);
  task->trainBatch(40, seed, 8); // unrelated calls in between
  task->evalBatch(task->evalLengths().back(), 5, seed);
  EXPECT_TRUE(sameBatch(first, task->trainBatch(40, seed, 7)));
  EXPECT_TRUE(sameBatch(first, other->trainBatch(40, seed, 7)));
  EXPECT_FALSE(sameBatch(first, task->trainBatch(40, seed, 6)));
  EXPECT_FALSE(sameBatch(first, task->trainBatch(40, seed + 1, 7)));
}

TEST_P(DeterminismTest, EvalBatchIsIndependentOfCallOrder) {
  uint64_t seed = testSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto task = makeTask(GetParam());
  std::vector<int64_t> lengths = task->evalLengths();
  std::vector<Batch> forward, backward(lengths.size());
  for (int64_t length : lengths)
    forward.push_back(task->evalBatch(length, 12, seed));
  auto fresh = makeTask(GetParam());
  for (size_t i = lengths.size(); i-- > 0;)
    backward[i] = fresh->evalBatch(lengths[i], 12, seed);
  for (size_t i = 0; i < lengths.size(); ++i)
    EXPECT_TRUE(sameBatch(forward[i], backward[i])) << lengths[i];
  EXPECT_FALSE(sameBatch(forward[0], task->evalBatch(lengths[0], 12, ~seed)));
}

TEST_P(DeterminismTest, RowsDependOnlyOnTheirIndex) {
  // Row r of a batch is the same whatever the batch size; only the padding
  // width can differ for variable-length tasks.
  uint64_t seed = testSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto task = makeTask(GetParam());
  Batch small = task->trainBatch(5, seed, 3);
  Batch large = task->trainBatch(200, seed, 3);
  int64_t cols = small.inputs.size(1);
  ASSERT_LE(cols, large.inputs.size(1));
  EXPECT_TRUE(
      small.inputs.equal(large.inputs.slice(0, 0, 5).slice(1, 0, cols)));
  EXPECT_TRUE(
      small.targets.equal(large.targets.slice(0, 0, 5).slice(1, 0, cols)));
}

TEST_P(DeterminismTest, IndependentOfThreadCount) {
  uint64_t seed = testSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto task = makeTask(GetParam());
  int threads = at::get_num_threads();
  at::set_num_threads(1);
  Batch serial = task->trainBatch(300, seed, 1);
  Batch serialEval = task->evalBatch(task->evalLengths().back(), 300, seed);
  at::set_num_threads(4);
  Batch parallel = task->trainBatch(300, seed, 1);
  Batch parallelEval = task->evalBatch(task->evalLengths().back(), 300, seed);
  at::set_num_threads(threads);
  EXPECT_TRUE(sameBatch(serial, parallel));
  EXPECT_TRUE(sameBatch(serialEval, parallelEval));
}

TEST_P(DeterminismTest, IndependentOfTorchsGenerator) {
  uint64_t seed = testSeed();
  auto task = makeTask(GetParam());
  torch::manual_seed(1);
  Batch first = task->trainBatch(16, seed, 0);
  torch::manual_seed(2);
  torch::rand({100});
  EXPECT_TRUE(sameBatch(first, task->trainBatch(16, seed, 0)));
}

INSTANTIATE_TEST_SUITE_P(AllTasks, DeterminismTest,
                         ::testing::Values("a5", "s5", "copy", "arith",
                                           "parity"));

//===----------------------------------------------------------------------===//
// score() and loss()
//===----------------------------------------------------------------------===//

/// Logits [B, T, classes] that put `margin` on the target of every
/// supervised position and random noise elsewhere (below the margin).
torch::Tensor perfectLogits(const Batch &batch, int64_t classes,
                            double margin = 40.0) {
  int64_t rows = batch.targets.size(0), cols = batch.targets.size(1);
  torch::Tensor logits = torch::rand({rows, cols, classes});
  torch::Tensor supervised = batch.targets.ne(kIgnoreIndex);
  torch::Tensor index = batch.targets.clamp_min(0).unsqueeze(2);
  torch::Tensor hot = torch::zeros_like(logits).scatter_(2, index, margin);
  return logits + hot * supervised.unsqueeze(2);
}

/// A tiny hand-made batch: 3 rows × 4 positions, vocabulary 5 (padded 8).
Batch handBatch() {
  Batch batch;
  batch.inputs = torch::zeros({3, 4}, torch::kLong);
  const int64_t x = kIgnoreIndex;
  std::vector<int64_t> targets = {2, x, 4, 1, //
                                  x, 0, x, 3, //
                                  x, x, x, x};
  batch.targets = torch::tensor(targets, torch::kLong).view({3, 4});
  return batch;
}

TEST(Score, PerfectLogits) {
  auto task = makeTask("arith"); // vocabulary 12 >= 5, any task will do
  Batch batch = handBatch();
  batch.targets.masked_fill_(batch.targets.ge(5), 1);
  torch::Tensor logits = perfectLogits(batch, 16);
  Scores scores = task->score(logits, batch);
  EXPECT_DOUBLE_EQ(scores.tokenAccuracy, 1.0);
  EXPECT_DOUBLE_EQ(scores.sequenceAccuracy, 1.0);
  EXPECT_LT(scores.loss, 1e-12);
  EXPECT_GE(scores.loss, 0.0);
  EXPECT_EQ(scores.tokens, 5);
  EXPECT_EQ(scores.sequences, 2); // the third row has no supervised position
}

TEST(Score, OneWrongTokenFailsItsSequence) {
  auto task = makeTask("s5");
  uint64_t seed = testSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Batch batch = task->trainBatch(10, seed, 0); // 10 × 17, all supervised
  torch::Tensor logits = perfectLogits(batch, 128);
  // Row 3, position 5: move the margin to a wrong class.
  int64_t target = batch.targets[3][5].item<int64_t>();
  int64_t wrong = (target + 1) % 127;
  logits[3][5][wrong] = 100.0;
  Scores scores = task->score(logits, batch);
  EXPECT_EQ(scores.tokens, 170);
  EXPECT_EQ(scores.sequences, 10);
  EXPECT_DOUBLE_EQ(scores.tokenAccuracy, 169.0 / 170.0);
  EXPECT_DOUBLE_EQ(scores.sequenceAccuracy, 0.9);
  // That position costs about 60 nats; the others nearly nothing.
  double wrongLoss = (torch::logsumexp(logits[3][5].to(torch::kDouble), 0) -
                      logits[3][5][target].to(torch::kDouble))
                         .item<double>();
  EXPECT_GT(wrongLoss, 58.0);
  EXPECT_NEAR(scores.loss, wrongLoss / 170.0, 1e-6);
  EXPECT_TRUE(std::isnan(scores.extra));
}

TEST(Score, IgnoredPositionsDoNotCount) {
  auto task = makeTask("copy");
  Batch batch = handBatch();
  torch::Tensor logits = perfectLogits(batch, 32);
  // Garbage at ignored positions: a huge logit on a class that is not the
  // (ignored) target.
  torch::Tensor ignored = batch.targets.eq(kIgnoreIndex);
  logits.select(2, 7).masked_fill_(ignored, 1000.0);
  Scores scores = task->score(logits, batch);
  EXPECT_DOUBLE_EQ(scores.tokenAccuracy, 1.0);
  EXPECT_DOUBLE_EQ(scores.sequenceAccuracy, 1.0);
  EXPECT_LT(scores.loss, 1e-12);
}

TEST(Score, LossMatchesLogSoftmaxOverAllPaddedClasses) {
  auto task = makeTask("a5");
  uint64_t seed = testSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  torch::manual_seed(static_cast<int64_t>(seed >> 1));
  Batch batch = handBatch();
  torch::Tensor logits = torch::randn({3, 4, 72}) * 3;
  // A padded class (id >= 67) wins at position (0, 0): it counts as a
  // wrong prediction and enters the normaliser.
  logits[0][0][70] = 50.0;
  double expected = 0;
  int64_t count = 0, correct = 0;
  auto logProbs = torch::log_softmax(logits.to(torch::kDouble), 2);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t t = 0; t < 4; ++t) {
      int64_t target = batch.targets[r][t].item<int64_t>();
      if (target == kIgnoreIndex)
        continue;
      expected -= logProbs[r][t][target].item<double>();
      correct += logits[r][t].argmax().item<int64_t>() == target;
      ++count;
    }
  Scores scores = task->score(logits, batch);
  EXPECT_NEAR(scores.loss, expected / count, 1e-5);
  EXPECT_DOUBLE_EQ(scores.tokenAccuracy, static_cast<double>(correct) / count);
  EXPECT_LT(scores.tokenAccuracy, 1.0);
  torch::Tensor loss = task->loss(logits, batch);
  EXPECT_NEAR(loss.item<double>(), expected / count, 1e-5);
}

TEST(Score, ScaledAccuracyForArithmetic) {
  auto task = makeTask("arith");
  uint64_t seed = testSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Batch batch = task->evalBatch(20, 50, seed);
  torch::Tensor logits = perfectLogits(batch, 12);
  // Make 20 of the 50 answers wrong: accuracy 0.6, scaled (0.6 − 0.2)/0.8.
  torch::Tensor position =
      batch.targets.ne(kIgnoreIndex).to(torch::kLong).argmax(1);
  for (int64_t r = 0; r < 20; ++r) {
    int64_t p = position[r].item<int64_t>();
    int64_t target = batch.targets[r][p].item<int64_t>();
    logits[r][p][(target + 1) % 5] = 100.0;
  }
  Scores scores = task->score(logits, batch);
  EXPECT_EQ(scores.tokens, 50);
  EXPECT_DOUBLE_EQ(scores.tokenAccuracy, 0.6);
  EXPECT_DOUBLE_EQ(scores.sequenceAccuracy, 0.6);
  EXPECT_NEAR(scores.extra, 0.5, 1e-12);
  Scores perfect = task->score(perfectLogits(batch, 12), batch);
  EXPECT_NEAR(perfect.extra, 1.0, 1e-12);
}

TEST(Score, RejectsMismatchedInputs) {
  auto task = makeTask("a5");
  Batch batch = handBatch();
  EXPECT_THROW(task->score(torch::zeros({3, 5, 72}), batch),
               std::invalid_argument);
  EXPECT_THROW(task->score(torch::zeros({3, 4}), batch), std::invalid_argument);
  // Fewer classes than the vocabulary (67).
  EXPECT_THROW(task->score(torch::zeros({3, 4, 60}), batch),
               std::invalid_argument);
  EXPECT_THROW(task->loss(torch::zeros({3, 4, 60}), batch),
               std::invalid_argument);
  Batch outOfRange = handBatch();
  outOfRange.targets[0][0] = 72;
  EXPECT_THROW(task->score(torch::zeros({3, 4, 72}), outOfRange),
               std::invalid_argument);
  outOfRange.targets[0][0] = -5;
  EXPECT_THROW(task->score(torch::zeros({3, 4, 72}), outOfRange),
               std::invalid_argument);
}

TEST(Loss, DifferentiableAndZeroWithoutSupervision) {
  auto task = makeTask("parity");
  Batch batch = handBatch();
  batch.targets.masked_fill_(batch.targets.ge(3), 1);
  torch::Tensor logits = torch::randn({3, 4, 4}, torch::requires_grad());
  torch::Tensor loss = task->loss(logits, batch);
  EXPECT_EQ(loss.dim(), 0);
  loss.backward();
  ASSERT_TRUE(logits.grad().defined());
  // Gradient only at supervised positions; each row of the softmax gradient
  // sums to zero.
  torch::Tensor gradNorm = logits.grad().abs().sum(2);
  EXPECT_TRUE(gradNorm.gt(0).equal(batch.targets.ne(kIgnoreIndex)));
  EXPECT_LT(logits.grad().sum(2).abs().max().item<double>(), 1e-6);

  Batch none = handBatch();
  none.targets.fill_(kIgnoreIndex);
  torch::Tensor other = torch::randn({3, 4, 4}, torch::requires_grad());
  torch::Tensor zero = task->loss(other, none);
  EXPECT_EQ(zero.item<double>(), 0.0);
  zero.backward();
  EXPECT_EQ(other.grad().abs().sum().item<double>(), 0.0);
  Scores scores = task->score(other.detach(), none);
  EXPECT_EQ(scores.tokens, 0);
  EXPECT_EQ(scores.sequences, 0);
  EXPECT_EQ(scores.loss, 0.0);
}

TEST(Loss, AcceptsReducedPrecisionLogits) {
  auto task = makeTask("a5");
  Batch batch = handBatch();
  torch::Tensor logits = torch::randn({3, 4, 72});
  double reference = task->loss(logits, batch).item<double>();
  torch::Tensor low = logits.to(torch::kBFloat16);
  EXPECT_NEAR(task->loss(low, batch).item<double>(), reference, 0.05);
  EXPECT_NEAR(task->score(low, batch).loss, reference, 0.05);
}

} // namespace
