//===- GradientReducerTest.cpp - Buckets, overlap and failures -----------===//
//
// GradientReducer against a job of two identical processes played by one:
// every sum doubles its tensor, so the reduced gradients are exactly twice
// the local ones, and the collectives record when and what they were
// given. The weights and inputs are drawn from TestSeed.h's seed.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Train/GradientReducer.h"

#include "TestSeed.h"

#include <gtest/gtest.h>

using namespace fp::rt;

namespace {

/// Two processes that compute the same gradients, as one.
class Twins final : public Collectives {
public:
  Twins() : Collectives(DistributedEnv{0, 2, 0, "127.0.0.1", 29500}) {}

  std::unique_ptr<PendingCollective>
  startSum(const torch::Tensor &tensor) override {
    if (failAt == static_cast<int64_t>(started.size()))
      throw DistributedError("rank 0 of 2: the peer is gone");
    started.push_back(tensor.numel());
    startedDuringBackward.push_back(inBackward);
    return std::make_unique<Doubling>(tensor);
  }
  void broadcastFromRoot(const std::vector<torch::Tensor> &) override {}
  void allReduceSum(std::vector<double> &) override {}
  void allReduceMax(std::vector<double> &) override {}
  void barrier() override {}

  /// The sizes of the sums started, in order.
  std::vector<int64_t> started;
  std::vector<bool> startedDuringBackward;
  /// Set by the test while the backward is below the last layer.
  bool inBackward = false;
  /// The index of the sum whose start fails (-1: none).
  int64_t failAt = -1;

private:
  class Doubling final : public PendingCollective {
  public:
    explicit Doubling(torch::Tensor tensor) : tensor(std::move(tensor)) {}
    void wait() override { tensor.mul_(2); }

  private:
    torch::Tensor tensor;
  };
};

/// Two linear layers, a parameter outside the graph and a frozen one; the
/// hook on the input's gradient marks the backward's end (the first
/// layer's backward computes it with the first layer's gradients, after
/// the second layer's).
struct TwoLayers {
  TwoLayers() {
    torch::manual_seed(static_cast<int64_t>(fp::test::testSeed()));
    first = torch::randn({8, 4}, torch::kFloat64).requires_grad_();
    firstBias = torch::randn({8}, torch::kFloat64).requires_grad_();
    second = torch::randn({3, 8}, torch::kFloat64).requires_grad_();
    unused = torch::randn({5}, torch::kFloat64).requires_grad_();
    frozen = torch::randn({2}, torch::kFloat64);
  }

  std::vector<torch::Tensor> parameters() const {
    return {first, firstBias, second, unused, frozen};
  }
  /// The parameters the backward reaches.
  std::vector<torch::Tensor> trained() const {
    return {first, firstBias, second};
  }

  /// Runs forward and backward on `input`; `twins.inBackward` is true from
  /// the backward's start until the input's gradient is computed.
  void backward(const torch::Tensor &input, Twins &twins) {
    torch::Tensor x = input.clone().requires_grad_();
    x.register_hook([&twins](const torch::Tensor &grad) {
      twins.inBackward = false;
      return grad;
    });
    torch::Tensor hidden = torch::tanh(torch::linear(x, first, firstBias));
    torch::Tensor loss = torch::linear(hidden, second).square().sum();
    twins.inBackward = true;
    loss.backward();
    EXPECT_FALSE(twins.inBackward);
  }

  torch::Tensor first, firstBias, second, unused, frozen;
};

std::vector<torch::Tensor> gradients(const std::vector<torch::Tensor> &params) {
  std::vector<torch::Tensor> grads;
  grads.reserve(params.size());
  for (const torch::Tensor &parameter : params)
    grads.push_back(parameter.grad().defined() ? parameter.grad().clone()
                                               : torch::Tensor());
  return grads;
}

TEST(GradientReducer, BucketsTakeTheParametersInReverseUpToTheSize) {
  TwoLayers model;
  auto twins = std::make_shared<Twins>();
  // 8 bytes an element, from the last: `unused` 40 bytes, `second` 192,
  // `firstBias` 64, `first` 256; the frozen one has no bucket. At 192
  // bytes, each is alone (a parameter larger than the size, too).
  GradientReducer reducer(twins, model.parameters(), 192, false);
  EXPECT_EQ(reducer.bucketMembers(),
            (std::vector<std::vector<size_t>>{{3}, {2}, {1}, {0}}));
  GradientReducer wide(twins, model.parameters(), 1 << 20, false);
  EXPECT_EQ(wide.bucketMembers(),
            (std::vector<std::vector<size_t>>{{3, 2, 1, 0}}));
  GradientReducer middling(twins, model.parameters(), 250, false);
  EXPECT_EQ(middling.bucketMembers(),
            (std::vector<std::vector<size_t>>{{3, 2}, {1}, {0}}));
}

TEST(GradientReducer, ElementTypesDoNotShareABucket) {
  torch::Tensor a = torch::ones({2}, torch::kFloat32).requires_grad_();
  torch::Tensor b = torch::ones({2}, torch::kFloat64).requires_grad_();
  torch::Tensor c = torch::ones({2}, torch::kFloat64).requires_grad_();
  GradientReducer reducer(std::make_shared<Twins>(), {a, b, c}, 1 << 20, false);
  EXPECT_EQ(reducer.bucketMembers(),
            (std::vector<std::vector<size_t>>{{2, 1}, {0}}));
}

// With overlap, the second layer's bucket starts while the backward is
// still in the first layer; either way the sums are the same, and the
// parameter outside the graph keeps no gradient.
TEST(GradientReducer, OverlapStartsBucketsDuringTheBackwardWithTheSameSums) {
  torch::Tensor input = torch::randn({6, 4}, torch::kFloat64);
  std::vector<std::vector<torch::Tensor>> results;
  for (bool overlap : {false, true}) {
    TwoLayers model;
    auto twins = std::make_shared<Twins>();
    GradientReducer reducer(twins, model.parameters(), 192, overlap);
    reducer.arm();
    model.backward(input, *twins);
    std::vector<torch::Tensor> local = gradients(model.parameters());
    reducer.finish();
    std::vector<torch::Tensor> summed = gradients(model.parameters());
    for (size_t i : {0, 1, 2})
      EXPECT_TRUE(torch::equal(summed[i], 2 * local[i])) << "parameter " << i;
    EXPECT_FALSE(summed[3].defined());
    EXPECT_FALSE(summed[4].defined());
    // `unused` never gets a gradient, so its bucket (the first) waits for
    // finish(), and the ones after it too: the order is kept.
    EXPECT_EQ(twins->started, (std::vector<int64_t>{24, 8, 32}));
    EXPECT_EQ(twins->startedDuringBackward,
              (std::vector<bool>{false, false, false}));
    EXPECT_EQ(reducer.startedEarly(), 0);
    results.push_back(summed);
  }
  for (size_t i : {0, 1, 2})
    EXPECT_TRUE(torch::equal(results[0][i], results[1][i]));
}

TEST(GradientReducer, CompleteBucketsStartInOrderBeforeTheBackwardEnds) {
  TwoLayers model;
  std::vector<torch::Tensor> params = model.trained();
  auto twins = std::make_shared<Twins>();
  GradientReducer reducer(twins, params, 192, true);
  torch::Tensor input = torch::randn({6, 4}, torch::kFloat64);
  for (int step = 0; step < 2; ++step) {
    twins->started.clear();
    twins->startedDuringBackward.clear();
    for (torch::Tensor &parameter : params)
      parameter.mutable_grad() = torch::Tensor();
    reducer.arm();
    model.backward(input, *twins);
    std::vector<torch::Tensor> local = gradients(params);
    reducer.finish();
    EXPECT_EQ(twins->started, (std::vector<int64_t>{24, 8, 32}));
    // `second`'s bucket starts while the backward is in the first layer.
    ASSERT_EQ(twins->startedDuringBackward.size(), 3u);
    EXPECT_TRUE(twins->startedDuringBackward[0]) << "step " << step;
    EXPECT_EQ(reducer.startedEarly(), 3);
    for (size_t i = 0; i < params.size(); ++i)
      EXPECT_TRUE(torch::equal(params[i].grad(), 2 * local[i]));
  }
}

// With accumulated micro-batches only the armed (last) backward starts
// sums, and they hold the whole accumulated gradient.
TEST(GradientReducer, OnlyTheArmedBackwardStartsSums) {
  TwoLayers model;
  std::vector<torch::Tensor> params = model.trained();
  auto twins = std::make_shared<Twins>();
  GradientReducer reducer(twins, params, 192, true);
  model.backward(torch::randn({6, 4}, torch::kFloat64), *twins);
  EXPECT_TRUE(twins->started.empty());
  reducer.arm();
  model.backward(torch::randn({6, 4}, torch::kFloat64), *twins);
  std::vector<torch::Tensor> local = gradients(params);
  EXPECT_EQ(twins->started.size(), 3u);
  reducer.finish();
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_TRUE(torch::equal(params[i].grad(), 2 * local[i]));
}

// A collective that fails inside a hook does not escape through the
// autograd engine: the backward ends, and finish() throws it.
TEST(GradientReducer, AFailureInAHookIsThrownByFinish) {
  TwoLayers model;
  std::vector<torch::Tensor> params = model.trained();
  auto twins = std::make_shared<Twins>();
  twins->failAt = 1;
  GradientReducer reducer(twins, params, 192, true);
  reducer.arm();
  EXPECT_NO_THROW(
      model.backward(torch::randn({6, 4}, torch::kFloat64), *twins));
  EXPECT_EQ(twins->started.size(), 1u);
  EXPECT_THROW(reducer.finish(), DistributedError);
}

// The hooks go with the reducer: a backward after it is gone is plain.
TEST(GradientReducer, HooksLeaveWithTheReducer) {
  TwoLayers model;
  std::vector<torch::Tensor> params = model.trained();
  auto twins = std::make_shared<Twins>();
  {
    GradientReducer reducer(twins, params, 192, true);
    reducer.arm();
  }
  model.backward(torch::randn({6, 4}, torch::kFloat64), *twins);
  EXPECT_TRUE(twins->started.empty());
}

} // namespace
