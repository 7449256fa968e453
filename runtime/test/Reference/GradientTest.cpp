//===- GradientTest.cpp - One-step gradients vs finite differences --------===//
//
// In fp64 on small shapes: the gradient the reference layers produce through
// autograd is compared with central finite differences of the quantity the
// one-step backward claims to compute (docs/spec.md §4): the layer output with
// the fixed point y* held constant, i.e. head(f_θ(y*)) as a function of the
// parameters θ and the input u. Mamba-1 has no fixed point and is checked
// against finite differences of its plain forward.
//
//===----------------------------------------------------------------------===//

#include "TestSeed.h"
#include "fp/Runtime/Reference/Layers.h"

#include "gtest/gtest.h"

#include <random>

using namespace fp::rt;
using namespace fp::rt::ref;

namespace {

ModelConfig smallConfig(const std::string &kind, const std::string &mixer,
                        int64_t rank = 1) {
  ModelConfig config;
  config.kind = kind;
  config.vocabSize = 5;
  config.dModel = 4;
  config.expand = 2; // d = 8
  config.dState = 3;
  config.mixer = mixer;
  config.mixerRank = rank;
  config.dtype = torch::kFloat64;
  config.solver.tolerance = 1e-4;
  return config;
}

/// Compares autograd gradients of `loss()` with central differences for a
/// few random coordinates of each tensor in `inputs`.
void checkGradients(
    const std::function<torch::Tensor()> &autogradLoss,
    const std::function<double()> &heldLoss,
    const std::vector<std::pair<std::string, torch::Tensor>> &inputs,
    std::mt19937_64 &rng) {
  for (const auto &[name, tensor] : inputs)
    if (tensor.grad().defined())
      tensor.mutable_grad().zero_();
  autogradLoss().backward();
  const double h = 1e-6;
  for (const auto &[name, tensor] : inputs) {
    ASSERT_TRUE(tensor.grad().defined()) << name << " receives no gradient";
    torch::Tensor flat = tensor.detach().view(-1);
    torch::Tensor grad = tensor.grad().view(-1);
    std::uniform_int_distribution<int64_t> pick(0, flat.numel() - 1);
    for (int sample = 0; sample < 3; ++sample) {
      int64_t i = pick(rng);
      double original = flat[i].item<double>();
      flat[i] = original + h;
      double plus = heldLoss();
      flat[i] = original - h;
      double minus = heldLoss();
      flat[i] = original;
      double numeric = (plus - minus) / (2 * h);
      double analytic = grad[i].item<double>();
      EXPECT_NEAR(analytic, numeric, 1e-6 * std::max(1.0, std::abs(numeric)))
          << name << "[" << i << "]";
    }
  }
}

std::vector<std::pair<std::string, torch::Tensor>>
parametersOf(torch::nn::Module &module) {
  std::vector<std::pair<std::string, torch::Tensor>> result;
  for (const auto &item : module.named_parameters())
    result.emplace_back(item.key(), item.value());
  return result;
}

void checkFPMamba(ModelConfig config) {
  std::mt19937_64 rng(fp::test::testSeed());
  torch::manual_seed(static_cast<int64_t>(rng() >> 1));
  FPMambaLayer layer(config);
  layer.eval();
  torch::Tensor u = torch::randn({2, 5, config.dModel},
                                 torch::TensorOptions().dtype(torch::kFloat64))
                        .requires_grad_();
  torch::Tensor weights = torch::randn(
      {2, 5, config.dModel}, torch::TensorOptions().dtype(torch::kFloat64));
  // The fixed point of the unperturbed layer, held constant below.
  torch::Tensor yStar;
  {
    torch::NoGradGuard noGrad;
    FPMambaInvariants inv = layer.precompute(u);
    yStar = solveFixedPoint(
                [&](const torch::Tensor &y) { return layer.applyMap(y, inv); },
                torch::zeros_like(inv.x), config.solver, false)
                .y;
  }
  auto autogradLoss = [&]() { return (layer.forward(u) * weights).sum(); };
  auto heldLoss = [&]() {
    torch::NoGradGuard noGrad;
    FPMambaInvariants inv = layer.precompute(u);
    torch::Tensor yhat = yStar;
    for (int64_t i = 0; i < config.nBackwards; ++i)
      yhat = layer.applyMap(yhat, inv);
    return (layer.head(yhat, inv) * weights).sum().item<double>();
  };
  auto inputs = parametersOf(layer);
  inputs.emplace_back("u", u);
  checkGradients(autogradLoss, heldLoss, inputs, rng);
}

/// FP-Mamba2 at d = 8: two heads of 4 channels.
ModelConfig smallMamba2Config(const std::string &kind, const std::string &mixer,
                              int64_t rank = 1) {
  ModelConfig config = smallConfig(kind, mixer, rank);
  config.headDim = 4;
  return config;
}

void checkFPMamba2(ModelConfig config) {
  std::mt19937_64 rng(fp::test::testSeed());
  torch::manual_seed(static_cast<int64_t>(rng() >> 1));
  FPMamba2Layer layer(config);
  layer.eval();
  auto options = torch::TensorOptions().dtype(torch::kFloat64);
  torch::Tensor u =
      torch::randn({2, 5, config.dModel}, options).requires_grad_();
  torch::Tensor weights = torch::randn({2, 5, config.dModel}, options);
  torch::Tensor yStar;
  {
    torch::NoGradGuard noGrad;
    FPMamba2Invariants inv = layer.precompute(u);
    yStar = solveFixedPoint(
                [&](const torch::Tensor &y) { return layer.applyMap(y, inv); },
                torch::zeros_like(inv.x), config.solver, false)
                .y;
  }
  auto heldLoss = [&]() {
    torch::NoGradGuard noGrad;
    FPMamba2Invariants inv = layer.precompute(u);
    torch::Tensor yhat = yStar;
    for (int64_t i = 0; i < config.nBackwards; ++i)
      yhat = layer.applyMap(yhat, inv);
    return (layer.head(yhat, inv) * weights).sum().item<double>();
  };
  auto inputs = parametersOf(layer);
  inputs.emplace_back("u", u);
  checkGradients([&]() { return (layer.forward(u) * weights).sum(); }, heldLoss,
                 inputs, rng);
}

TEST(OneStepGradient, FPMamba2Kronecker) {
  checkFPMamba2(smallMamba2Config("fp_mamba2", "kronecker"));
}

TEST(OneStepGradient, FPMamba2HouseholderGroupsConvGluInLoop) {
  ModelConfig config = smallMamba2Config("fp_mamba2", "householder", 2);
  config.nGroups = 2;
  config.useShortConv = true;
  config.gluInLoop = true;
  checkFPMamba2(config);
}

TEST(Gradient, Mamba2MatchesFiniteDifferences) {
  std::mt19937_64 rng(fp::test::testSeed());
  torch::manual_seed(static_cast<int64_t>(rng() >> 1));
  ModelConfig config = smallMamba2Config("mamba2", "identity");
  config.nGroups = 2;
  Mamba2Layer layer(config);
  auto options = torch::TensorOptions().dtype(torch::kFloat64);
  torch::Tensor u =
      torch::randn({2, 6, config.dModel}, options).requires_grad_();
  torch::Tensor weights = torch::randn({2, 6, config.dModel}, options);
  auto inputs = parametersOf(layer);
  inputs.emplace_back("u", u);
  checkGradients([&]() { return (layer.forward(u) * weights).sum(); },
                 [&]() {
                   torch::NoGradGuard noGrad;
                   return (layer.forward(u) * weights).sum().item<double>();
                 },
                 inputs, rng);
}

/// The chunked SSD scan's gradients (autograd through its quadratic form
/// and the states passed between chunks) against finite differences.
TEST(Gradient, SsdScanMatchesFiniteDifferences) {
  std::mt19937_64 rng(fp::test::testSeed());
  torch::manual_seed(static_cast<int64_t>(rng() >> 1));
  auto options = torch::TensorOptions().dtype(torch::kFloat64);
  const int64_t batch = 2, length = 11, heads = 4, dim = 3, groups = 2,
                states = 5;
  torch::Tensor x =
      torch::randn({batch, length, heads, dim}, options).requires_grad_();
  torch::Tensor dt = (torch::rand({batch, length, heads}, options) * 0.5 + 0.05)
                         .requires_grad_();
  torch::Tensor a = (-torch::rand({heads}, options) * 2 - 0.1).requires_grad_();
  torch::Tensor b =
      torch::randn({batch, length, groups, states}, options).requires_grad_();
  torch::Tensor c =
      torch::randn({batch, length, groups, states}, options).requires_grad_();
  torch::Tensor skip = torch::randn({heads}, options).requires_grad_();
  torch::Tensor initial =
      torch::randn({batch, heads, dim, states}, options).requires_grad_();
  torch::Tensor weights = torch::randn({batch, length, heads, dim}, options);
  torch::Tensor finalWeights =
      torch::randn({batch, heads, dim, states}, options);
  auto loss = [&]() {
    torch::Tensor final;
    torch::Tensor y = ssdScan(x, dt, a, b, c, skip, initial, &final, 4);
    return (y * weights).sum() + (final * finalWeights).sum();
  };
  checkGradients(
      loss,
      [&]() {
        torch::NoGradGuard noGrad;
        return loss().item<double>();
      },
      {{"x", x},
       {"dt", dt},
       {"a", a},
       {"B", b},
       {"C", c},
       {"D", skip},
       {"initial", initial}},
      rng);
}

TEST(OneStepGradient, FPMambaKronecker) {
  checkFPMamba(smallConfig("fp_mamba", "kronecker"));
}

TEST(OneStepGradient, FPMambaHouseholderRank2) {
  checkFPMamba(smallConfig("fp_mamba", "householder", 2));
}

TEST(OneStepGradient, FPMambaDPLRWithConvAndGluInLoop) {
  ModelConfig config = smallConfig("fp_mamba", "dplr", 2);
  config.useShortConv = true;
  config.gluInLoop = true;
  config.bcNorm = false;
  checkFPMamba(config);
}

TEST(OneStepGradient, FPMambaNonselective) {
  checkFPMamba(smallConfig("fp_mamba", "nonselective"));
}

TEST(OneStepGradient, FPMambaSymmetricMixerTwoBackwardSteps) {
  ModelConfig config = smallConfig("fp_mamba", "householder");
  config.symmMixer = true;
  config.nBackwards = 2;
  checkFPMamba(config);
}

TEST(OneStepGradient, FPRNNKroneckerSpectral) {
  std::mt19937_64 rng(fp::test::testSeed());
  torch::manual_seed(static_cast<int64_t>(rng() >> 1));
  ModelConfig config = smallConfig("fp_rnn", "kronecker");
  config.solver = referenceSolverConfig("fp_rnn");
  config.solver.tolerance = 1e-4;
  config.useShortConv = true;
  FPRNNLayer layer(config);
  layer.eval();
  auto options = torch::TensorOptions().dtype(torch::kFloat64);
  torch::Tensor u =
      torch::randn({2, 4, config.dModel}, options).requires_grad_();
  torch::Tensor weights = torch::randn({2, 4, config.dModel}, options);
  torch::Tensor hStar;
  {
    torch::NoGradGuard noGrad;
    FPRNNInvariants inv = layer.precompute(u);
    hStar = solveFixedPoint(
                [&](const torch::Tensor &h) { return layer.applyMap(h, inv); },
                torch::zeros_like(inv.x), config.solver, false)
                .y;
  }
  // The layer's readout after ŷ = f(h*), rebuilt from the public pieces.
  auto readout = [&](const torch::Tensor &yhat, const FPRNNInvariants &inv) {
    torch::Tensor in =
        torch::silu(causalConv(torch::cat({inv.x, yhat}, -1),
                               layer.readoutConvWeight, layer.readoutConvBias));
    torch::Tensor gated = torch::silu(layer.cProj->forward(in)) * yhat;
    return layer.outProj->forward(
        layer.outNorm->forward(torch::silu(inv.z) * gated));
  };
  auto autogradLoss = [&]() { return (layer.forward(u) * weights).sum(); };
  auto heldLoss = [&]() {
    torch::NoGradGuard noGrad;
    FPRNNInvariants inv = layer.precompute(u);
    return (readout(layer.applyMap(hStar, inv), inv) * weights)
        .sum()
        .item<double>();
  };
  auto inputs = parametersOf(layer);
  inputs.emplace_back("u", u);
  checkGradients(autogradLoss, heldLoss, inputs, rng);
}

TEST(Gradient, MambaMatchesFiniteDifferences) {
  std::mt19937_64 rng(fp::test::testSeed());
  torch::manual_seed(static_cast<int64_t>(rng() >> 1));
  ModelConfig config = smallConfig("mamba", "identity");
  MambaLayer layer(config);
  auto options = torch::TensorOptions().dtype(torch::kFloat64);
  torch::Tensor u =
      torch::randn({2, 6, config.dModel}, options).requires_grad_();
  torch::Tensor weights = torch::randn({2, 6, config.dModel}, options);
  auto inputs = parametersOf(layer);
  inputs.emplace_back("u", u);
  checkGradients([&]() { return (layer.forward(u) * weights).sum(); },
                 [&]() {
                   torch::NoGradGuard noGrad;
                   return (layer.forward(u) * weights).sum().item<double>();
                 },
                 inputs, rng);
}

/// The one-step gradient differs from the gradient of the converged fixed
/// point: no gradient flows into y*. With y* rebuilt *with* gradient through
/// the iterations, the input gradient changes.
TEST(OneStepGradient, HoldsTheFixedPointConstant) {
  torch::manual_seed(7);
  ModelConfig config = smallConfig("fp_mamba", "householder");
  FPMambaLayer layer(config);
  layer.eval();
  auto options = torch::TensorOptions().dtype(torch::kFloat64);
  torch::Tensor u =
      torch::randn({1, 4, config.dModel}, options).requires_grad_();
  (layer.forward(u).sum()).backward();
  torch::Tensor oneStep = u.grad().clone();
  u.mutable_grad().zero_();
  // Differentiate through 30 unrelaxed iterations instead.
  FPMambaInvariants inv = layer.precompute(u);
  torch::Tensor y = torch::zeros_like(inv.x);
  for (int i = 0; i < 30; ++i)
    y = layer.applyMap(y, inv);
  layer.head(y, inv).sum().backward();
  EXPECT_GT((u.grad() - oneStep).abs().max().item<double>(), 1e-6);
}

} // namespace
