//===- ArithmeticTest.cpp - Tests of modular arithmetic ---------*- C++ -*-===//
//
// Every generated expression is parsed and evaluated by an independent
// recursive-descent evaluator; the single supervised position must sit on
// '=' with the evaluator's result as target, the result must be hidden in the
// input, and lengths must follow the options.
//
//===----------------------------------------------------------------------===//

#include "TaskTestUtil.h"

#include <gtest/gtest.h>

#include <set>

using namespace fp::rt;
using namespace fp::rt::test;

namespace {

constexpr int64_t kPlus = 5, kMinus = 6, kTimes = 7, kOpen = 8, kClose = 9,
                  kEquals = 10, kPad = 11;

/// Recursive-descent evaluator of the grammar
///   expr := digit | '-' expr | '(' expr [op expr] ')'
/// over Z_5; fails the test on a syntax error.
class Evaluator {
public:
  explicit Evaluator(const std::vector<int64_t> &tokens) : tokens(tokens) {}

  /// Value of the whole token list (which must be one expression).
  int64_t evaluateAll() {
    int64_t value = expression();
    EXPECT_EQ(pos, tokens.size()) << "trailing tokens";
    return value;
  }
  std::set<int64_t> operatorsSeen;

private:
  int64_t next() {
    if (pos >= tokens.size()) {
      ADD_FAILURE() << "unexpected end of expression";
      return kClose;
    }
    return tokens[pos++];
  }
  static int64_t mod5(int64_t v) { return ((v % 5) + 5) % 5; }

  int64_t expression() {
    int64_t token = next();
    if (token >= 0 && token <= 4)
      return token;
    if (token == kMinus)
      return mod5(-expression());
    if (token != kOpen) {
      ADD_FAILURE() << "unexpected token " << token;
      return 0;
    }
    int64_t left = expression();
    int64_t op = next();
    if (op == kClose)
      return left;
    int64_t right = expression();
    EXPECT_EQ(next(), kClose);
    operatorsSeen.insert(op);
    switch (op) {
    case kPlus:
      return mod5(left + right);
    case kMinus:
      return mod5(left - right);
    case kTimes:
      return mod5(left * right);
    default:
      ADD_FAILURE() << "bad operator " << op;
      return 0;
    }
  }

  const std::vector<int64_t> &tokens;
  size_t pos = 0;
};

/// Checks every row and returns the sample lengths n (position of '=' + 3).
std::vector<int64_t> checkBatch(const Batch &batch,
                                std::set<int64_t> *operators = nullptr) {
  EXPECT_EQ(batch.inputs.sizes(), batch.targets.sizes());
  auto inputs = rowsOf(batch.inputs);
  auto targets = rowsOf(batch.targets);
  std::vector<int64_t> lengths;
  for (size_t r = 0; r < inputs.size(); ++r) {
    SCOPED_TRACE("row " + std::to_string(r));
    const auto &in = inputs[r];
    const auto &out = targets[r];
    std::vector<size_t> supervised;
    for (size_t p = 0; p < out.size(); ++p)
      if (out[p] != kIgnoreIndex)
        supervised.push_back(p);
    EXPECT_EQ(supervised.size(), 1u);
    if (supervised.size() != 1)
      continue;
    size_t eq = supervised[0];
    EXPECT_EQ(in[eq], kEquals);
    // '=' appears once, and the expression before it is well formed.
    for (size_t p = 0; p < eq; ++p) {
      EXPECT_NE(in[p], kEquals);
      EXPECT_NE(in[p], kPad);
    }
    std::vector<int64_t> expression(in.begin(), in.begin() + eq);
    Evaluator evaluator(expression);
    EXPECT_EQ(out[eq], evaluator.evaluateAll());
    if (operators)
      operators->insert(evaluator.operatorsSeen.begin(),
                        evaluator.operatorsSeen.end());
    // The result is hidden (token 0), then PAD to the end.
    EXPECT_LT(eq + 1, in.size());
    if (eq + 1 >= in.size())
      continue;
    EXPECT_EQ(in[eq + 1], 0);
    for (size_t p = eq + 2; p < in.size(); ++p)
      EXPECT_EQ(in[p], kPad);
    lengths.push_back(static_cast<int64_t>(eq) + 3);
  }
  return lengths;
}

TEST(ArithmeticTask, VocabularyAndDefaults) {
  auto task = makeTask("arith");
  EXPECT_EQ(task->vocabSize(), 12);
  TaskDefaults d = task->defaults();
  EXPECT_EQ(paddedVocabSize(task->vocabSize(), d.padVocabMultiple), 12);
  EXPECT_EQ(d.decay, DecayRule::AllButSsm);
  EXPECT_EQ(d.schedule, Schedule::WarmupCosine);
  EXPECT_LE(d.clipNorm, 0.0);
  EXPECT_DOUBLE_EQ(d.weightDecay, 0.1);
  EXPECT_DOUBLE_EQ(d.minLrRatio, 1e-3);
  EXPECT_DOUBLE_EQ(d.normEps, 1e-6);
  EXPECT_EQ(task->options().trainMinLength, 3);
  EXPECT_EQ(task->options().trainLength, 40);
}

TEST(ArithmeticTask, TrainExpressionsEvaluateToTheirTargets) {
  auto task = makeTask("arith");
  uint64_t seed = testSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Batch batch = task->trainBatch(512, seed, 5);
  std::set<int64_t> operators;
  std::vector<int64_t> lengths = checkBatch(batch, &operators);
  ASSERT_EQ(lengths.size(), 512u);
  std::set<int64_t> distinct(lengths.begin(), lengths.end());
  // n = max(U{3..40}, 5): 3 and 4 become 5.
  EXPECT_EQ(*distinct.begin(), 5);
  EXPECT_EQ(*distinct.rbegin(), 40);
  EXPECT_GT(distinct.size(), 30u);
  // Padded to the longest sample of the batch (inputs drop its last token).
  EXPECT_EQ(batch.inputs.size(1), *distinct.rbegin() - 1);
  EXPECT_EQ(operators, (std::set<int64_t>{kPlus, kMinus, kTimes}));
  // Results cover Z_5.
  torch::Tensor results =
      batch.targets.masked_select(batch.targets.ne(kIgnoreIndex));
  for (int64_t v = 0; v < 5; ++v)
    EXPECT_TRUE(results.eq(v).any().item<bool>()) << "result " << v;
}

TEST(ArithmeticTask, EvalBatchHasExactLength) {
  auto task = makeTask("arith");
  EXPECT_EQ(task->evalLengths(), (std::vector<int64_t>{40, 80, 120, 160}));
  uint64_t seed = testSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (int64_t n : {5, 6, 9, 57, 256}) {
    SCOPED_TRACE("n " + std::to_string(n));
    Batch batch = task->evalBatch(n, 16, seed);
    ASSERT_EQ(batch.inputs.sizes(), (std::vector<int64_t>{16, n - 1}));
    for (int64_t length : checkBatch(batch))
      EXPECT_EQ(length, n);
  }
  EXPECT_THROW(task->evalBatch(4, 16, seed), std::invalid_argument);
}

TEST(ArithmeticTask, LengthOptions) {
  TaskOptions options;
  options.trainMinLength = 12;
  options.trainLength = 14;
  auto task = makeTask("arith", options);
  uint64_t seed = testSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::set<int64_t> distinct;
  for (int64_t length : checkBatch(task->trainBatch(128, seed, 0)))
    distinct.insert(length);
  EXPECT_EQ(distinct, (std::set<int64_t>{12, 13, 14}));

  TaskOptions shortEval;
  shortEval.evalMinLength = 4;
  EXPECT_THROW(makeTask("arith", shortEval), std::invalid_argument);
  TaskOptions alphabet;
  alphabet.alphabetSize = 4;
  EXPECT_THROW(makeTask("arith", alphabet), std::invalid_argument);
}

} // namespace
