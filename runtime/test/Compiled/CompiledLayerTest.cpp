//===- CompiledLayerTest.cpp - Modules over a fixture model.so --*- C++ -*-===//
//
// CompiledLayer and CompiledModel on the hand-written fixture library
// (runtime/test/fixtures/FixtureModel.c: one layer "scale", y = x ⊙ gain):
// parameter registration under the manifest's names, forward and backward
// in f32 and f64 against the formula, statistics, and every refusal with its
// message.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/CompiledLayer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

using namespace fp::rt;
using ::testing::HasSubstr;

namespace {

std::shared_ptr<const ModelLibrary> fixture() {
  static std::shared_ptr<const ModelLibrary> library =
      loadModelLibrary(FP_FIXTURE_GOOD);
  return library;
}

template <typename Error, typename Fn> std::string errorOf(Fn &&fn) {
  try {
    fn();
  } catch (const Error &error) {
    return error.what();
  }
  ADD_FAILURE() << "expected an exception";
  return {};
}

TEST(CompiledLayer, RegistersTheManifestParameters) {
  CompiledLayer layer(fixture(), "scale");
  auto named = layer.named_parameters();
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named.begin()->key(), "gain");
  EXPECT_TRUE(torch::equal(layer.parameter("gain"), torch::ones({4})));
  EXPECT_TRUE(layer.hasParameter("gain"));
  EXPECT_FALSE(layer.hasParameter("bias"));
  EXPECT_THAT(errorOf<std::out_of_range>([&] { layer.parameter("bias"); }),
              HasSubstr("layer 'scale' has no parameter 'bias'"));
  EXPECT_EQ(layer.info().dModel, 4);
  EXPECT_EQ(layer.orderedParameters().size(), 1u);
}

TEST(CompiledLayer, DottedNamesBecomeSubmodules) {
  CompiledLayer layer(loadModelLibrary(FP_FIXTURE_DOTTED_PARAM), "scale");
  auto named = layer.named_parameters();
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named.begin()->key(), "mixer.scale.gain");
  EXPECT_EQ(layer.named_children().begin()->key(), "mixer");
  EXPECT_TRUE(layer.parameter("mixer.scale.gain")
                  .is_same(*layer.named_parameters().find("mixer.scale.gain")));
  // The forward reads the registered tensor.
  torch::NoGradGuard noGrad;
  layer.parameter("mixer.scale.gain").fill_(3.0);
  torch::Tensor x = torch::randn({1, 2, 4});
  EXPECT_TRUE(torch::allclose(layer.forward(x), 3 * x));
}

TEST(CompiledLayer, ForwardMatchesTheFormulaInBothDtypes) {
  for (torch::Dtype dtype : {torch::kFloat32, torch::kFloat64}) {
    CompiledLayer layer(fixture(), "scale", /*seed=*/0, dtype);
    torch::NoGradGuard noGrad;
    layer.parameter("gain").copy_(torch::randn({4}));
    torch::Tensor x = torch::randn({3, 7, 4}, dtype);
    torch::Tensor y = layer.forward(x);
    EXPECT_EQ(y.scalar_type(), dtype);
    EXPECT_EQ(y.sizes(), x.sizes());
    EXPECT_TRUE(torch::equal(y, x * layer.parameter("gain")));
    // The fixture reports one iteration per sample and one step.
    EXPECT_TRUE(
        torch::equal(layer.lastIterations, torch::ones({3}, torch::kLong)));
    EXPECT_EQ(layer.lastSteps(), 1);
    EXPECT_EQ(layer.lastResiduals.numel(), 3);
  }
}

TEST(CompiledLayer, ConvertsWithTo) {
  CompiledLayer layer(fixture(), "scale");
  layer.to(torch::kFloat64);
  EXPECT_EQ(layer.parameter("gain").scalar_type(), torch::kFloat64);
  torch::NoGradGuard noGrad;
  torch::Tensor x = torch::randn({2, 3, 4}, torch::kFloat64);
  EXPECT_TRUE(torch::equal(layer.forward(x), x));
}

TEST(CompiledLayer, NonContiguousInput) {
  CompiledLayer layer(fixture(), "scale");
  torch::NoGradGuard noGrad;
  layer.parameter("gain").copy_(torch::tensor({1.0, 2.0, 3.0, 4.0}));
  torch::Tensor x = torch::randn({5, 3, 4}).transpose(0, 1);
  ASSERT_FALSE(x.is_contiguous());
  EXPECT_TRUE(torch::equal(layer.forward(x), x * layer.parameter("gain")));
}

TEST(CompiledLayer, RefusesWhatItCannotPass) {
  CompiledLayer layer(fixture(), "scale");
  torch::NoGradGuard noGrad;
  EXPECT_THAT(
      errorOf<std::invalid_argument>([&] {
        layer.forward(torch::randn({2, 3, 5}));
      }),
      HasSubstr("layer 'scale' of '" FP_FIXTURE_GOOD
                "': expects an input [B, T, 4] with B, T >= 1, got [2, 3, 5]"));
  EXPECT_THAT(errorOf<std::invalid_argument>([&] {
                layer.forward(torch::randn({3, 4}));
              }),
              HasSubstr("got [3, 4]"));
  EXPECT_THAT(errorOf<std::invalid_argument>([&] {
                layer.forward(torch::randn({1, 2, 4}, torch::kBFloat16));
              }),
              HasSubstr("was not compiled for dtype bf16"));
  EXPECT_THAT(errorOf<std::invalid_argument>([&] {
                layer.forward(torch::randn({1, 2, 4}, torch::kFloat64));
              }),
              HasSubstr("parameter 'gain' is Float on cpu but the input is "
                        "Double on cpu; convert the layer with to()"));
  EXPECT_THAT(errorOf<std::invalid_argument>([&] {
                layer.forward(torch::ones({1, 2, 4}, torch::kLong));
              }),
              HasSubstr("the model ABI has no element type for Long"));
  EXPECT_THAT(
      errorOf<std::invalid_argument>([&] { CompiledLayer(fixture(), "lstm"); }),
      HasSubstr("has no layer 'lstm'; it has 'scale'"));
}

TEST(CompiledLayer, BackpropagatesThroughTheLibrarysBackward) {
  for (torch::Dtype dtype : {torch::kFloat32, torch::kFloat64}) {
    CompiledLayer layer(fixture(), "scale", /*seed=*/0, dtype);
    {
      torch::NoGradGuard noGrad;
      layer.parameter("gain").copy_(torch::randn({4}, dtype));
    }
    torch::Tensor x = torch::randn({2, 3, 4}, dtype).requires_grad_();
    torch::Tensor w = torch::randn({2, 3, 4}, dtype);
    torch::Tensor y = layer.forward(x);
    ASSERT_TRUE(y.grad_fn()) << "the output has no gradient function";
    EXPECT_EQ(y.grad_fn()->name(), "CompiledLayerBackward");
    (y * w).sum().backward();
    // y = x ⊙ gain: dx = w ⊙ gain, dgain = Σ_{b,t} w ⊙ x (the fixture reads
    // x back from the saved buffer).
    const torch::Tensor &gain = layer.parameter("gain");
    EXPECT_TRUE(torch::allclose(x.grad(), w * gain.detach()));
    torch::Tensor dgain = (w * x.detach()).sum(torch::IntArrayRef{0, 1});
    EXPECT_TRUE(torch::allclose(gain.grad(), dgain));
    // A second backward accumulates, as for any module.
    (layer.forward(x) * w).sum().backward();
    EXPECT_TRUE(torch::allclose(gain.grad(), 2 * dgain));
    EXPECT_EQ(layer.lastBackwardSteps(), 0);
  }
}

TEST(CompiledLayer, DifferentiatesOnlyWhatRequiresGrad) {
  CompiledLayer layer(fixture(), "scale");
  torch::Tensor x = torch::randn({1, 2, 4});
  // Parameters only: the input needs no gradient. The gradient sums 3·x
  // over the tokens, in an order of its own: the sum may cancel, so the
  // tolerance is relative to the sum of magnitudes (float rounding of two
  // terms is far below 1e-6 of it).
  (layer.forward(x) * 3).sum().backward();
  const double magnitude =
      (3 * x.abs().sum(torch::IntArrayRef{0, 1})).max().item<double>();
  EXPECT_TRUE(torch::allclose(layer.parameter("gain").grad(),
                              3 * x.sum(torch::IntArrayRef{0, 1}), 1e-5,
                              1e-6 * magnitude));
  // The input only.
  for (auto &param : layer.parameters())
    param.set_requires_grad(false);
  torch::Tensor xr = x.clone().requires_grad_();
  layer.forward(xr).sum().backward();
  EXPECT_TRUE(torch::allclose(xr.grad(), torch::ones_like(x)));
  // Neither: an output without history.
  EXPECT_FALSE(layer.forward(x).requires_grad());
}

TEST(CompiledLayer, RefusesABackwardAfterAnInPlaceChange) {
  CompiledLayer layer(fixture(), "scale");
  torch::Tensor y = layer.forward(torch::randn({1, 2, 4}));
  {
    torch::NoGradGuard noGrad;
    layer.parameter("gain").mul_(2);
  }
  EXPECT_THAT(errorOf<c10::Error>([&] { y.sum().backward(); }),
              HasSubstr("modified by an inplace operation"));
}

TEST(CompiledLayer, RefusesToDifferentiateAForwardOnlyLibrary) {
  CompiledLayer layer(loadModelLibrary(FP_FIXTURE_FORWARD_ONLY), "scale");
  torch::Tensor x = torch::randn({1, 2, 4});
  // Parameters require grad by default, so grad mode needs a backward.
  EXPECT_THAT(errorOf<std::runtime_error>([&] { layer.forward(x); }),
              HasSubstr("the library has no compiled backward for target cpu, "
                        "so this forward cannot be differentiated; compile "
                        "the model with `fpc --backward`"));
  for (auto &param : layer.parameters())
    param.set_requires_grad(false);
  EXPECT_TRUE(torch::equal(layer.forward(x), x));
  EXPECT_THAT(errorOf<std::runtime_error>(
                  [&] { layer.forward(x.clone().requires_grad_()); }),
              HasSubstr("or run it under torch::NoGradGuard"));
  torch::NoGradGuard noGrad;
  EXPECT_TRUE(torch::equal(layer.forward(x.clone().requires_grad_()), x));
}

TEST(CompiledLayer, ReportsTheLibrarysError) {
  CompiledLayer layer(loadModelLibrary(FP_FIXTURE_FORWARD_FAILS), "scale");
  torch::NoGradGuard noGrad;
  EXPECT_THAT(errorOf<std::runtime_error>([&] {
                layer.forward(torch::randn({1, 2, 4}));
              }),
              HasSubstr("layer 'scale' of '" FP_FIXTURE_FORWARD_FAILS
                        "': forward failed with FP_ERROR_UNSUPPORTED: the "
                        "forward of layer 'scale' is disabled in this "
                        "fixture"));
}

TEST(CompiledLayer, PassesModeOverridesAndAnAlignedWorkspace) {
  // The echo fixture reports 1000·training + solver->max_iter per sample and
  // whether the workspace was 256-byte aligned.
  CompiledLayer layer(loadModelLibrary(FP_FIXTURE_ECHO_ARGS), "scale");
  torch::NoGradGuard noGrad;
  torch::Tensor x = torch::randn({2, 3, 4});
  auto iterations = [&] {
    layer.forward(x);
    return layer.lastIterations[0].item<int64_t>();
  };
  layer.eval();
  EXPECT_EQ(iterations(), -1); // keep the compiled cap
  EXPECT_TRUE(torch::equal(layer.lastResiduals, torch::ones({2})));
  layer.train();
  EXPECT_EQ(iterations(), 999);
  // A training cap applies in training only.
  layer.setTrainIterationCap(12);
  EXPECT_EQ(iterations(), 1012);
  layer.eval();
  EXPECT_EQ(iterations(), -1);
  // An explicit override wins.
  layer.solverOverrides.max_iter = 5;
  EXPECT_EQ(iterations(), 5);
  layer.train();
  EXPECT_EQ(iterations(), 1005);
}

TEST(CompiledModel, AssemblesTheManifestStack) {
  CompiledModelOptions options;
  options.seed = 5;
  options.dtype = torch::kFloat64;
  CompiledModel model(fixture(), options);
  // vocab 11 padded to a multiple of 8, two "scale" blocks, tied head.
  EXPECT_EQ(model.vocabSize, 11);
  EXPECT_EQ(model.paddedVocab, 16);
  EXPECT_EQ(model.embedding.sizes(), torch::IntArrayRef({16, 4}));
  ASSERT_EQ(model.layers.size(), 2u);
  EXPECT_TRUE(model.head.is_same(model.embedding));
  std::vector<std::string> names;
  for (const auto &item : model.named_parameters())
    names.push_back(item.key());
  EXPECT_THAT(names, ::testing::UnorderedElementsAre(
                         "embedding.weight", "layers.0.mixer.gain",
                         "layers.0.norm.weight", "layers.1.mixer.gain",
                         "layers.1.norm.weight", "norm_f.weight"));
  // N(0, 0.02²) embedding.
  EXPECT_LT(model.embedding.abs().max().item<double>(), 0.02 * 6);

  torch::NoGradGuard noGrad;
  model.layers[0]->parameter("gain").copy_(torch::randn({4}));
  model.layers[1]->parameter("gain").copy_(torch::randn({4}));
  torch::Tensor tokens = torch::randint(0, 11, {2, 5});
  torch::Tensor logits = model.forward(tokens);
  EXPECT_EQ(logits.sizes(), torch::IntArrayRef({2, 5, 16}));

  // r_l = r_{l−1} + gain_l ⊙ RMSN(r_{l−1}); logits = RMSN(r_L) Eᵀ.
  auto rms = [](const torch::Tensor &x) {
    return x * torch::rsqrt(x.pow(2).mean(-1, true) + 1e-5);
  };
  torch::Tensor r =
      model.embedding.index_select(0, tokens.view(-1)).view({2, 5, 4});
  for (const auto &layer : model.layers)
    r = r + layer->parameter("gain") * rms(r);
  torch::Tensor expected = torch::matmul(rms(r), model.embedding.t());
  EXPECT_LT((logits - expected).abs().max().item<double>(), 1e-12);
  ASSERT_EQ(model.lastStats().iterations.size(), 2u);
  EXPECT_EQ(model.lastStats().summarize().maxIterations, 1);
}

TEST(CompiledModel, BackpropagatesToEveryParameter) {
  CompiledModelOptions options;
  options.dtype = torch::kFloat64;
  CompiledModel model(fixture(), options);
  torch::Tensor tokens = torch::randint(0, 11, {2, 5});
  torch::nn::functional::cross_entropy(
      model.forward(tokens).reshape({-1, model.paddedVocab}),
      tokens.reshape({-1}))
      .backward();
  for (const auto &item : model.named_parameters()) {
    ASSERT_TRUE(item.value().grad().defined()) << item.key();
    EXPECT_GT(item.value().grad().abs().max().item<double>(), 0) << item.key();
  }
}

TEST(CompiledModel, VocabularyFromTheOptions) {
  CompiledModelOptions options;
  options.vocabSize = 30;
  CompiledModel model(fixture(), options);
  EXPECT_EQ(model.paddedVocab, 32);
}

} // namespace
