//===- WordProblemTest.cpp - Tests of the A5 / S5 word problems -*- C++ -*-===//
//
// Batch layout (BOS, padding, shapes), prefix products recomputed from the
// inputs with an independent permutation implementation, lengths, and the
// prefix property of evaluation batches.
//
//===----------------------------------------------------------------------===//

#include "TaskTestUtil.h"

#include <gtest/gtest.h>

#include <set>

using namespace fp::rt;
using namespace fp::rt::test;

namespace {

class WordProblemTest : public ::testing::TestWithParam<std::string> {
protected:
  bool alternating() const { return GetParam() == "a5"; }
  int64_t groupSize() const { return alternating() ? 60 : 120; }
  int64_t pad() const { return groupSize(); }
  int64_t bos() const { return groupSize() + 1; }

  /// Checks every row: BOS first, then elements of the group whose prefix
  /// products (independently recomputed) are the targets, then PAD in both;
  /// returns the number of elements k of every row.
  std::vector<int64_t> checkRows(const Batch &batch) const {
    std::vector<Perm5> elements = referenceGroup(alternating());
    std::map<Perm5, int64_t> index = indexGroup(elements);
    auto inputs = rowsOf(batch.inputs);
    auto targets = rowsOf(batch.targets);
    EXPECT_EQ(batch.inputs.sizes(), batch.targets.sizes());
    std::vector<int64_t> lengths;
    for (size_t r = 0; r < inputs.size(); ++r) {
      const auto &in = inputs[r];
      const auto &out = targets[r];
      EXPECT_EQ(in[0], bos());
      EXPECT_EQ(out[0], bos());
      Perm5 prefix = {0, 1, 2, 3, 4};
      size_t p = 1;
      for (; p < in.size() && in[p] != pad(); ++p) {
        EXPECT_GE(in[p], 0);
        EXPECT_LT(in[p], groupSize());
        if (in[p] < 0 || in[p] >= groupSize())
          return {};
        prefix = compose(prefix, elements[in[p]]);
        EXPECT_EQ(out[p], index.at(prefix)) << "row " << r << " pos " << p;
      }
      lengths.push_back(static_cast<int64_t>(p) - 1);
      for (; p < in.size(); ++p) {
        EXPECT_EQ(in[p], pad());
        EXPECT_EQ(out[p], pad()); // padding is supervised (PAD → PAD)
      }
    }
    return lengths;
  }
};

TEST_P(WordProblemTest, Vocabulary) {
  auto task = makeTask(GetParam());
  EXPECT_EQ(task->name(), GetParam());
  EXPECT_EQ(task->vocabSize(), groupSize() + 7);
  EXPECT_EQ(
      paddedVocabSize(task->vocabSize(), task->defaults().padVocabMultiple),
      alternating() ? 72 : 128);
}

TEST_P(WordProblemTest, TrainBatchIsPrefixProductsOfFixedLength) {
  auto task = makeTask(GetParam());
  uint64_t seed = testSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Batch batch = task->trainBatch(48, seed, 3);
  ASSERT_EQ(batch.inputs.sizes(), (std::vector<int64_t>{48, 17}));
  EXPECT_EQ(batch.inputs.scalar_type(), torch::kLong);
  EXPECT_EQ(batch.targets.scalar_type(), torch::kLong);
  for (int64_t k : checkRows(batch))
    EXPECT_EQ(k, 16);
  // Every position is supervised (the reference has no ignore index).
  EXPECT_FALSE(batch.targets.eq(kIgnoreIndex).any().item<bool>());
  // Elements are spread over the group.
  std::set<int64_t> used;
  for (const auto &row : rowsOf(batch.inputs.slice(1, 1)))
    used.insert(row.begin(), row.end());
  EXPECT_GT(static_cast<int64_t>(used.size()), groupSize() / 2);
}

TEST_P(WordProblemTest, VariableTrainLengthsArePadded) {
  TaskOptions options;
  options.trainMinLength = 2;
  options.trainLength = 9;
  auto task = makeTask(GetParam(), options);
  EXPECT_EQ(task->options().trainMinLength, 2);
  EXPECT_EQ(task->options().trainLength, 9);
  uint64_t seed = testSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Batch batch = task->trainBatch(256, seed, 0);
  std::vector<int64_t> lengths = checkRows(batch);
  ASSERT_EQ(lengths.size(), 256u);
  std::set<int64_t> distinct(lengths.begin(), lengths.end());
  EXPECT_EQ(*distinct.begin(), 2);
  EXPECT_EQ(*distinct.rbegin(), 9);
  EXPECT_EQ(distinct.size(), 8u); // 256 rows hit every length in 2..9
  EXPECT_EQ(batch.inputs.size(1), 10);
}

TEST_P(WordProblemTest, EvalBatchesArePrefixesOfOneStream) {
  auto task = makeTask(GetParam());
  uint64_t seed = testSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Batch longBatch = task->evalBatch(50, 32, seed);
  ASSERT_EQ(longBatch.inputs.sizes(), (std::vector<int64_t>{32, 51}));
  for (int64_t k : checkRows(longBatch))
    EXPECT_EQ(k, 50);
  for (int64_t k : {1, 7, 20}) {
    Batch shortBatch = task->evalBatch(k, 32, seed);
    ASSERT_EQ(shortBatch.inputs.sizes(), (std::vector<int64_t>{32, k + 1}));
    EXPECT_TRUE(shortBatch.inputs.equal(longBatch.inputs.slice(1, 0, k + 1)));
    EXPECT_TRUE(shortBatch.targets.equal(longBatch.targets.slice(1, 0, k + 1)));
  }
  // Evaluation data is not the training data of the same seed.
  Batch train = task->trainBatch(32, seed, 0);
  EXPECT_FALSE(train.inputs.equal(task->evalBatch(16, 32, seed).inputs));
}

TEST_P(WordProblemTest, EvalLengthsFollowOptions) {
  EXPECT_EQ(makeTask(GetParam())->evalLengths(),
            (std::vector<int64_t>{5, 10, 15, 20, 25, 30, 35, 40, 45, 50}));
  TaskOptions options;
  options.evalMinLength = 2;
  options.evalMaxLength = 12;
  options.evalStep = 3;
  EXPECT_EQ(makeTask(GetParam(), options)->evalLengths(),
            (std::vector<int64_t>{2, 5, 8, 11}));
}

TEST_P(WordProblemTest, RejectsWrongOptions) {
  TaskOptions context;
  context.contextLength = 64;
  EXPECT_THROW(makeTask(GetParam(), context), std::invalid_argument);
  TaskOptions minAboveMax;
  minAboveMax.trainMinLength = 20; // default trainLength 16
  EXPECT_THROW(makeTask(GetParam(), minAboveMax), std::invalid_argument);
  auto task = makeTask(GetParam());
  EXPECT_THROW(task->evalBatch(0, 4, 1), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Groups, WordProblemTest,
                         ::testing::Values("a5", "s5"));

} // namespace
