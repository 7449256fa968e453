//===- OptimizerTest.cpp - Schedules, decay groups, clipping ----*- C++ -*-===//
//
// learningRate() at the points that define each schedule, the decay rules on
// the parameter names the models use, AdamW's two groups checked through
// their effect (a zero-gradient step shrinks exactly the decayed
// parameters), and gradient-norm clipping.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Train/Optimizer.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace fp::rt;

namespace {

ScheduleConfig schedule(Schedule kind, int64_t warmup, double minLrRatio) {
  ScheduleConfig config;
  config.kind = kind;
  config.lr = 0.1;
  config.warmupSteps = warmup;
  config.minLrRatio = minLrRatio;
  config.totalSteps = 100;
  return config;
}

/// A module with the kinds of names the decay rules distinguish.
struct NamedModule : torch::nn::Module {
  NamedModule() {
    weight = register_parameter("weight", torch::ones({2, 2}));
    bias = register_parameter("bias", torch::ones({2}));
    auto mixer =
        register_module("mixer", std::make_shared<torch::nn::Module>());
    aLog = mixer->register_parameter("A_log", torch::ones({3}));
    d = mixer->register_parameter("D", torch::ones({3}));
    dense = mixer->register_parameter("D_skip", torch::ones({3}));
    auto norm =
        register_module("outNorm", std::make_shared<torch::nn::Module>());
    normWeight = norm->register_parameter("weight", torch::ones({2}));
  }
  torch::Tensor weight, bias, aLog, d, dense, normWeight;
};

} // namespace

TEST(LearningRateTest, ConstantIgnoresTheStep) {
  auto config = schedule(Schedule::Constant, 0, 0.5);
  for (int64_t step : {0, 1, 50, 99, 100, 1000})
    EXPECT_DOUBLE_EQ(learningRate(config, step), 0.1);
}

TEST(LearningRateTest, CosineGoesFromLrToMinLr) {
  auto config = schedule(Schedule::Cosine, 0, 0.1);
  EXPECT_DOUBLE_EQ(learningRate(config, 0), 0.1);
  EXPECT_NEAR(learningRate(config, 50), (0.1 + 0.01) / 2, 1e-15);
  EXPECT_NEAR(learningRate(config, 25),
              0.01 + 0.09 * 0.5 * (1 + std::cos(M_PI / 4)), 1e-15);
  EXPECT_NEAR(learningRate(config, 100), 0.01, 1e-15);
  EXPECT_NEAR(learningRate(config, 150), 0.01, 1e-15);
  // The reference's CosineAnnealingLR to 0.
  auto toZero = schedule(Schedule::Cosine, 0, 0.0);
  EXPECT_NEAR(learningRate(toZero, 100), 0.0, 1e-15);
  EXPECT_GT(learningRate(toZero, 99), 0.0);
}

TEST(LearningRateTest, WarmupCosineRampsFromZeroThenDecays) {
  auto config = schedule(Schedule::WarmupCosine, 10, 1e-3);
  EXPECT_DOUBLE_EQ(learningRate(config, 0), 0.0);
  EXPECT_NEAR(learningRate(config, 5), 0.05, 1e-15);
  EXPECT_NEAR(learningRate(config, 9), 0.09, 1e-15);
  EXPECT_DOUBLE_EQ(learningRate(config, 10), 0.1);
  // Halfway through the decay span [10, 100].
  EXPECT_NEAR(learningRate(config, 55), (0.1 + 1e-4) / 2, 1e-15);
  EXPECT_NEAR(learningRate(config, 100), 1e-4, 1e-15);
}

TEST(LearningRateTest, LinearRampsThenDecaysToTheFloor) {
  auto config = schedule(Schedule::Linear, 20, 0.0);
  EXPECT_DOUBLE_EQ(learningRate(config, 0), 0.0);
  EXPECT_NEAR(learningRate(config, 10), 0.05, 1e-15);
  EXPECT_DOUBLE_EQ(learningRate(config, 20), 0.1);
  EXPECT_NEAR(learningRate(config, 60), 0.05, 1e-15);
  EXPECT_NEAR(learningRate(config, 100), 0.0, 1e-15);
  EXPECT_NEAR(learningRate(config, 120), 0.0, 1e-15);
  auto floor = schedule(Schedule::Linear, 0, 0.2);
  EXPECT_NEAR(learningRate(floor, 50), 0.02 + 0.08 * 0.5, 1e-15);
  EXPECT_NEAR(learningRate(floor, 100), 0.02, 1e-15);
}

TEST(DecayRuleTest, NamesFollowTheSpec) {
  struct Case {
    const char *name;
    bool noBiasNoNormNoSsm, allButSsm;
  };
  const Case cases[] = {
      {"embedding.weight", true, true},
      {"layers.0.mixer.in_proj.weight", true, true},
      {"layers.0.mixer.W_bcy.g", true, true},
      {"layers.0.mixer.dt_proj.bias", false, true},
      {"layers.0.norm.weight", false, true},
      {"norm_f.weight", false, true},
      {"layers.1.mixer.outNorm.weight", false, true},
      {"head.Bias", false, true},
      {"layers.0.mixer.A_log", false, false},
      {"layers.0.mixer.D", false, false},
      {"A_log", false, false},
      {"layers.0.mixer.D_skip", true, true},
      {"layers.0.mixer.Dense.weight", true, true},
  };
  for (const Case &c : cases) {
    EXPECT_EQ(isDecayed(c.name, DecayRule::NoBiasNoNormNoSsm),
              c.noBiasNoNormNoSsm)
        << c.name;
    EXPECT_EQ(isDecayed(c.name, DecayRule::AllButSsm), c.allButSsm) << c.name;
    EXPECT_TRUE(isDecayed(c.name, DecayRule::All)) << c.name;
  }
}

TEST(AdamWTest, ZeroGradientStepShrinksExactlyTheDecayedParameters) {
  for (DecayRule rule :
       {DecayRule::NoBiasNoNormNoSsm, DecayRule::AllButSsm, DecayRule::All}) {
    NamedModule module;
    OptimizerConfig config;
    config.lr = 0.1;
    config.weightDecay = 0.5;
    config.decay = rule;
    auto optimizer = makeAdamW(module, config);
    for (auto &parameter : module.parameters())
      parameter.mutable_grad() = torch::zeros_like(parameter);
    optimizer->step();

    DecayGroups groups = decayGroups(module, rule);
    auto named = module.named_parameters();
    for (const std::string &name : groups.decayed)
      EXPECT_TRUE(
          torch::allclose(named[name], torch::full_like(named[name], 0.95)))
          << decayRuleName(rule) << " " << name;
    for (const std::string &name : groups.undecayed)
      EXPECT_TRUE(torch::equal(named[name], torch::ones_like(named[name])))
          << decayRuleName(rule) << " " << name;
    size_t expectedDecayed = rule == DecayRule::All         ? 6
                             : rule == DecayRule::AllButSsm ? 4
                                                            : 2;
    EXPECT_EQ(groups.decayed.size(), expectedDecayed) << decayRuleName(rule);
  }
}

TEST(AdamWTest, SetLearningRateReachesEveryGroup) {
  NamedModule module;
  OptimizerConfig config;
  auto optimizer = makeAdamW(module, config);
  ASSERT_EQ(optimizer->param_groups().size(), 2u);
  setLearningRate(*optimizer, 0.25);
  for (auto &group : optimizer->param_groups())
    EXPECT_DOUBLE_EQ(
        static_cast<torch::optim::AdamWOptions &>(group.options()).lr(), 0.25);
}

TEST(ClipGradientsTest, ReturnsTheNormBeforeClippingAndClips) {
  torch::Tensor a = torch::zeros({2}, torch::requires_grad());
  torch::Tensor b = torch::zeros({1}, torch::requires_grad());
  torch::Tensor unused = torch::zeros({3}, torch::requires_grad());
  auto setGrads = [&] {
    a.mutable_grad() = torch::tensor({3.0f, 0.0f});
    b.mutable_grad() = torch::tensor({4.0f});
  };
  setGrads();
  EXPECT_NEAR(clipGradients({a, b, unused}, 1.0), 5.0, 1e-6);
  EXPECT_NEAR(a.grad()[0].item<double>(), 0.6, 1e-5);
  EXPECT_NEAR(b.grad()[0].item<double>(), 0.8, 1e-5);

  setGrads();
  EXPECT_NEAR(clipGradients({a, b}, 0.0), 5.0, 1e-6);
  EXPECT_EQ(a.grad()[0].item<float>(), 3.0f);
  setGrads();
  EXPECT_NEAR(clipGradients({a, b}, 10.0), 5.0, 1e-6);
  EXPECT_EQ(b.grad()[0].item<float>(), 4.0f);
  EXPECT_EQ(clipGradients({unused}, 1.0), 0.0);
}
