//===- ParityTest.cpp - Tests of the parity task ----------------*- C++ -*-===//
//
// Bits in {1, 2} followed by padding 0, exactly one supervised position (the
// last bit) whose target is (#2s mod 2) + 1 recomputed here, and lengths.
//
//===----------------------------------------------------------------------===//

#include "TaskTestUtil.h"

#include <gtest/gtest.h>

#include <set>

using namespace fp::rt;
using namespace fp::rt::test;

namespace {

/// Checks every row; returns the sample lengths n (bits + 1) and counts the
/// answers seen.
std::vector<int64_t> checkBatch(const Batch &batch, int64_t *odd = nullptr) {
  EXPECT_EQ(batch.inputs.sizes(), batch.targets.sizes());
  auto inputs = rowsOf(batch.inputs);
  auto targets = rowsOf(batch.targets);
  std::vector<int64_t> lengths;
  for (size_t r = 0; r < inputs.size(); ++r) {
    SCOPED_TRACE("row " + std::to_string(r));
    const auto &in = inputs[r];
    const auto &out = targets[r];
    size_t bits = 0;
    int64_t twos = 0;
    while (bits < in.size() && in[bits] != 0) {
      EXPECT_TRUE(in[bits] == 1 || in[bits] == 2) << in[bits];
      twos += in[bits] == 2;
      ++bits;
    }
    EXPECT_GE(bits, 1u);
    for (size_t p = bits; p < in.size(); ++p)
      EXPECT_EQ(in[p], 0);
    for (size_t p = 0; p < out.size(); ++p) {
      if (p + 1 == bits)
        EXPECT_EQ(out[p], twos % 2 + 1);
      else
        EXPECT_EQ(out[p], kIgnoreIndex) << "at " << p;
    }
    if (odd)
      *odd += twos % 2;
    lengths.push_back(static_cast<int64_t>(bits) + 1);
  }
  return lengths;
}

TEST(ParityTask, VocabularyAndDefaults) {
  auto task = makeTask("parity");
  EXPECT_EQ(task->vocabSize(), 3);
  EXPECT_EQ(paddedVocabSize(3, task->defaults().padVocabMultiple), 4);
  EXPECT_EQ(task->options().trainMinLength, 3);
  EXPECT_EQ(task->options().trainLength, 40);
  EXPECT_EQ(task->evalLengths(), (std::vector<int64_t>{40, 80, 120, 160}));
}

TEST(ParityTask, TrainAnswersAreParities) {
  auto task = makeTask("parity");
  uint64_t seed = testSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Batch batch = task->trainBatch(512, seed, 2);
  int64_t odd = 0;
  std::vector<int64_t> lengths = checkBatch(batch, &odd);
  ASSERT_EQ(lengths.size(), 512u);
  std::set<int64_t> distinct(lengths.begin(), lengths.end());
  EXPECT_EQ(*distinct.begin(), 3);
  EXPECT_EQ(*distinct.rbegin(), 40);
  EXPECT_EQ(batch.inputs.size(1), 39);
  // Both answers are common (each has probability 1/2 per row).
  EXPECT_GT(odd, 512 / 4);
  EXPECT_LT(odd, 3 * 512 / 4);
}

TEST(ParityTask, EvalBatchHasExactLength) {
  auto task = makeTask("parity");
  uint64_t seed = testSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (int64_t n : {2, 3, 40, 161}) {
    SCOPED_TRACE("n " + std::to_string(n));
    Batch batch = task->evalBatch(n, 32, seed);
    ASSERT_EQ(batch.inputs.sizes(), (std::vector<int64_t>{32, n - 1}));
    for (int64_t length : checkBatch(batch))
      EXPECT_EQ(length, n);
  }
  EXPECT_THROW(task->evalBatch(1, 32, seed), std::invalid_argument);
  TaskOptions tooShort;
  tooShort.trainMinLength = 1;
  EXPECT_THROW(makeTask("parity", tooShort), std::invalid_argument);
}

} // namespace
