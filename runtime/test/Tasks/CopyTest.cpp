//===- CopyTest.cpp - Tests of the copy task --------------------*- C++ -*-===//
//
// Training rows are parsed back into examples "$ w | w ." with an independent
// parser, and the expected targets (the copy and the final '.' of every
// complete example, nothing of the truncated tail) are rebuilt and compared.
// Evaluation batches are checked position by position.
//
//===----------------------------------------------------------------------===//

#include "TaskTestUtil.h"

#include <gtest/gtest.h>

#include <set>

using namespace fp::rt;
using namespace fp::rt::test;

namespace {

constexpr int64_t kUnknown = -1;

struct RowSummary {
  std::vector<int64_t> completeLengths;
  bool truncatedTail = false;
};

/// Parses one training row of the copy task with `letters` letters, whose
/// examples have lengths in [minLength, maxLength], and checks its targets.
RowSummary checkTrainRow(const std::vector<int64_t> &in,
                         const std::vector<int64_t> &out, int64_t letters,
                         int64_t minLength, int64_t maxLength) {
  const int64_t dollar = letters, bar = letters + 1, dot = letters + 2;
  auto context = static_cast<int64_t>(in.size()) + 1;
  // ids[C − 1] is visible only as a supervised target.
  std::vector<int64_t> ids(in);
  ids.push_back(out.back() != kIgnoreIndex ? out.back() : kUnknown);
  std::vector<int64_t> expected(in.size(), kIgnoreIndex);

  RowSummary summary;
  int64_t pos = 0;
  auto known = [&](int64_t p) { return p < context && ids[p] != kUnknown; };
  while (pos < context) {
    EXPECT_FALSE(summary.truncatedTail) << "example after a truncated one";
    EXPECT_EQ(ids[pos], known(pos) ? dollar : kUnknown) << "at " << pos;
    int64_t j = pos + 1;
    while (known(j) && ids[j] < letters)
      ++j;
    int64_t n = j - pos - 1;
    EXPECT_LE(n, maxLength);
    if (!known(j)) { // cut inside the first copy of w
      summary.truncatedTail = true;
      break;
    }
    EXPECT_EQ(ids[j], bar) << "at " << j;
    bool complete = true;
    for (int64_t i = 0; i < n && complete; ++i) {
      int64_t q = j + 1 + i;
      if (!known(q))
        complete = false;
      else
        EXPECT_EQ(ids[q], ids[pos + 1 + i]) << "copy at " << q;
    }
    int64_t end = pos + 2 * n + 3;
    if (!complete || !known(end - 1)) {
      summary.truncatedTail = true;
      EXPECT_GT(end, context) << "an example that fits must be complete";
      break;
    }
    EXPECT_EQ(ids[end - 1], dot);
    EXPECT_GE(n, minLength);
    summary.completeLengths.push_back(n);
    // Targets: the last n + 1 characters, predicted one position earlier.
    for (int64_t q = pos + n + 2; q < end; ++q)
      expected[q - 1] = ids[q];
    pos = end;
  }
  EXPECT_EQ(out, expected);
  return summary;
}

TEST(CopyTask, VocabularyAndDefaults) {
  auto task = makeTask("copy");
  EXPECT_EQ(task->vocabSize(), 30);
  TaskOptions options = task->options();
  EXPECT_EQ(options.alphabetSize, 26);
  EXPECT_EQ(options.contextLength, 64);
  EXPECT_EQ(options.trainMinLength, 1);
  EXPECT_EQ(options.trainLength, 16);
  EXPECT_EQ(task->evalLengths(),
            (std::vector<int64_t>{4, 8, 12, 16, 20, 24, 28, 32}));
  EXPECT_EQ(task->defaults().decay, DecayRule::All);
  EXPECT_EQ(task->defaults().schedule, Schedule::Linear);
  EXPECT_GT(task->defaults().warmupSteps, 0);
}

TEST(CopyTask, TrainRowsFollowTheGrammarAndMask) {
  auto task = makeTask("copy");
  uint64_t seed = testSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Batch batch = task->trainBatch(64, seed, 11);
  ASSERT_EQ(batch.inputs.sizes(), (std::vector<int64_t>{64, 63}));
  ASSERT_EQ(batch.targets.sizes(), (std::vector<int64_t>{64, 63}));
  auto inputs = rowsOf(batch.inputs);
  auto targets = rowsOf(batch.targets);
  std::set<int64_t> lengths;
  int64_t truncatedRows = 0;
  for (size_t r = 0; r < inputs.size(); ++r) {
    SCOPED_TRACE("row " + std::to_string(r));
    RowSummary summary = checkTrainRow(inputs[r], targets[r], 26, 1, 16);
    EXPECT_GE(summary.completeLengths.size(), 1u);
    lengths.insert(summary.completeLengths.begin(),
                   summary.completeLengths.end());
    truncatedRows += summary.truncatedTail;
  }
  EXPECT_GT(truncatedRows, 0);
  EXPECT_EQ(*lengths.begin(), 1);
  EXPECT_EQ(*lengths.rbegin(), 16);
  // '*' (id V + 3) is never produced.
  EXPECT_FALSE(batch.inputs.eq(29).any().item<bool>());
  EXPECT_FALSE(batch.targets.eq(29).any().item<bool>());
}

TEST(CopyTask, AlphabetAndContextOptions) {
  TaskOptions options;
  options.alphabetSize = 3;
  options.contextLength = 40;
  options.trainMinLength = 4;
  options.trainLength = 18; // 2 * 18 + 3 = 39 <= 40
  auto task = makeTask("copy", options);
  EXPECT_EQ(task->vocabSize(), 7);
  uint64_t seed = testSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Batch batch = task->trainBatch(32, seed, 0);
  ASSERT_EQ(batch.inputs.size(1), 39);
  auto inputs = rowsOf(batch.inputs);
  auto targets = rowsOf(batch.targets);
  for (size_t r = 0; r < inputs.size(); ++r) {
    SCOPED_TRACE("row " + std::to_string(r));
    checkTrainRow(inputs[r], targets[r], 3, 4, 18);
  }
  EXPECT_LE(batch.inputs.max().item<int64_t>(), 5);

  options.trainLength = 19; // 41 tokens do not fit into 40
  EXPECT_THROW(makeTask("copy", options), std::invalid_argument);
}

TEST(CopyTask, EvalBatchLayout) {
  auto task = makeTask("copy");
  uint64_t seed = testSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t dollar = 26, bar = 27, dot = 28;
  // n = 5 fits into the context: padded with '.' to C = 64 tokens;
  // n = 40 does not: the row holds exactly the example.
  for (int64_t n : {1, 5, 30, 40}) {
    SCOPED_TRACE("n " + std::to_string(n));
    Batch batch = task->evalBatch(n, 8, seed);
    int64_t cols = std::max<int64_t>(64, 2 * n + 3) - 1;
    ASSERT_EQ(batch.inputs.sizes(), (std::vector<int64_t>{8, cols}));
    auto inputs = rowsOf(batch.inputs);
    auto targets = rowsOf(batch.targets);
    for (size_t r = 0; r < inputs.size(); ++r) {
      const auto &in = inputs[r];
      const auto &out = targets[r];
      EXPECT_EQ(in[0], dollar);
      EXPECT_EQ(in[n + 1], bar);
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_LT(in[1 + i], 26);
        EXPECT_EQ(in[n + 2 + i], in[1 + i]);
      }
      for (int64_t p = 2 * n + 2; p < cols; ++p)
        EXPECT_EQ(in[p], dot);
      // Supervised: exactly the n positions pos('|') .. pos('|') + n − 1,
      // each predicting the next letter of w.
      for (int64_t p = 0; p < cols; ++p) {
        if (p >= n + 1 && p <= 2 * n)
          EXPECT_EQ(out[p], in[p - n]) << "at " << p;
        else
          EXPECT_EQ(out[p], kIgnoreIndex) << "at " << p;
      }
    }
  }
  EXPECT_THROW(task->evalBatch(0, 8, seed), std::invalid_argument);
}

} // namespace
