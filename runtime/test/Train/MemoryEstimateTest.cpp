//===- MemoryEstimateTest.cpp - The memory a run needs ----------*- C++ -*-===//
//
// The estimate fp-train refuses too-large runs with: its activations grow
// linearly with the micro-batch, a step with --grad-accum K holds one
// micro-batch of batch / K sequences at a time, and evaluation chunks count
// when they are the larger.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Train/MemoryEstimate.h"

#include <gtest/gtest.h>

using namespace fp::rt;

namespace {

TrainConfig parityConfig(int64_t batch, int64_t gradAccum) {
  TrainConfig config;
  config.modelSource = "reference:lstm";
  config.model.kind = "lstm";
  config.model.vocabSize = 3;
  config.task = "parity";
  config.batchSize = batch;
  config.gradAccum = gradAccum;
  config.evalBatch = 1; // training dominates
  return config;
}

} // namespace

TEST(MemoryEstimate, AStepHoldsOneMicroBatch) {
  std::unique_ptr<Task> task = makeTask("parity");
  auto activations = [&](int64_t batch, int64_t gradAccum) {
    return estimateTrainingMemory(parityConfig(batch, gradAccum), *task,
                                  /*parameterCount=*/1000, nullptr)
        .activations;
  };
  EXPECT_GT(activations(64, 1), 0);
  EXPECT_DOUBLE_EQ(activations(64, 1), 2 * activations(32, 1));
  EXPECT_DOUBLE_EQ(activations(64, 4), activations(16, 1));
  // Parameters do not depend on the batch.
  EXPECT_DOUBLE_EQ(
      estimateTrainingMemory(parityConfig(64, 4), *task, 1000, nullptr)
          .parameters,
      4.0 * 1000 * 4);
}
