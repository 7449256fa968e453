//===- ParamInitTest.cpp - Manifest initialisers ----------------*- C++ -*-===//
//
// Every initialiser kind against its definition (exact values, or ranges
// and moments on many draws), the dependency order of `of`, seeds and
// dtypes, and the errors for kinds and arguments the runtime refuses.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/ParamInit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

using namespace fp::rt;
using ::testing::HasSubstr;

namespace {

ParamInfo param(const std::string &name, std::vector<int64_t> shape,
                const std::string &kind,
                std::map<std::string, double> args = {},
                const std::string &of = "") {
  ParamInfo info;
  info.name = name;
  info.shape = std::move(shape);
  info.init.kind = kind;
  info.init.args = std::move(args);
  info.init.of = of;
  return info;
}

LayerInfo layerOf(std::vector<ParamInfo> params) {
  LayerInfo layer;
  layer.name = "test_layer";
  layer.dModel = 4;
  layer.params = std::move(params);
  return layer;
}

std::vector<torch::Tensor> init(const LayerInfo &layer, uint64_t seed = 1,
                                torch::Dtype dtype = torch::kFloat64) {
  at::Generator generator = makeGenerator(seed);
  return initLayerParams(layer, generator, dtype);
}

/// The message of the ParamInitError initLayerParams throws for `layer`.
std::string initError(const LayerInfo &layer) {
  try {
    init(layer);
  } catch (const ParamInitError &error) {
    return error.what();
  }
  ADD_FAILURE() << "initLayerParams accepted the layer";
  return {};
}

double maxAbs(const torch::Tensor &t) { return t.abs().max().item<double>(); }

TEST(ParamInit, ConstantKinds) {
  auto values =
      init(layerOf({param("z", {2, 3}, "zeros"), param("o", {5}, "ones"),
                    param("c", {3, 1}, "constant", {{"value", 2.5}})}));
  ASSERT_EQ(values.size(), 3u);
  EXPECT_TRUE(torch::equal(values[0], torch::zeros({2, 3}, torch::kFloat64)));
  EXPECT_TRUE(torch::equal(values[1], torch::ones({5}, torch::kFloat64)));
  EXPECT_TRUE(
      torch::equal(values[2], torch::full({3, 1}, 2.5, torch::kFloat64)));
  for (const torch::Tensor &value : values) {
    EXPECT_FALSE(value.requires_grad());
    EXPECT_EQ(value.scalar_type(), torch::kFloat64);
  }
}

TEST(ParamInit, UniformAndFanInUniformStayInTheirBounds) {
  auto values = init(
      layerOf({param("u", {400, 50}, "uniform", {{"low", -0.3}, {"high", 0.7}}),
               param("f", {300, 64}, "fan_in_uniform"),
               param("s", {300, 16}, "fan_in_uniform", {{"scale", 0.5}})}));
  EXPECT_GE(values[0].min().item<double>(), -0.3);
  EXPECT_LE(values[0].max().item<double>(), 0.7);
  EXPECT_NEAR(values[0].mean().item<double>(), 0.2, 0.01);
  // U(±scale/√in) with in = the last extent: the draws reach close to the
  // bound and never past it.
  EXPECT_LE(maxAbs(values[1]), 1.0 / 8);
  EXPECT_GT(maxAbs(values[1]), 0.99 / 8);
  EXPECT_LE(maxAbs(values[2]), 0.5 / 4);
  EXPECT_GT(maxAbs(values[2]), 0.99 * 0.5 / 4);
}

TEST(ParamInit, NormalHasItsMoments) {
  auto values = init(
      layerOf({param("n", {200000}, "normal", {{"mean", 1.5}, {"std", 0.02}}),
               param("m", {200000}, "normal", {{"std", 2.0}})}));
  EXPECT_NEAR(values[0].mean().item<double>(), 1.5, 1e-3);
  EXPECT_NEAR(values[0].std().item<double>(), 0.02, 5e-4);
  // The mean defaults to 0.
  EXPECT_NEAR(values[1].mean().item<double>(), 0.0, 0.05);
  EXPECT_NEAR(values[1].std().item<double>(), 2.0, 0.05);
}

TEST(ParamInit, S4DRealIsLogOfOneToN) {
  auto values = init(layerOf({param("A_log", {3, 5}, "s4d_real")}));
  torch::Tensor expected =
      torch::log(torch::arange(1, 6, torch::kFloat64)).expand({3, 5});
  EXPECT_LT(maxAbs(values[0] - expected), 1e-15);
}

TEST(ParamInit, DtBiasIsInverseSoftplusOfARangedStep) {
  auto values = init(
      layerOf({param("b", {20000}, "dt_bias",
                     {{"dt_min", 1e-3}, {"dt_max", 0.1}, {"floor", 1e-4}}),
               param("c", {2000}, "dt_bias",
                     {{"dt_min", 1e-5}, {"dt_max", 1e-3}, {"floor", 1e-4}})}));
  torch::Tensor dt = torch::softplus(values[0]);
  EXPECT_GE(dt.min().item<double>(), 1e-3 * (1 - 1e-9));
  EXPECT_LE(dt.max().item<double>(), 0.1 * (1 + 1e-9));
  // log Δ is uniform: its mean is the middle of [log 1e-3, log 0.1].
  EXPECT_NEAR(torch::log(dt).mean().item<double>(),
              0.5 * (std::log(1e-3) + std::log(0.1)), 0.05);
  // Steps below the floor are raised to it.
  torch::Tensor floored = torch::softplus(values[1]);
  EXPECT_GE(floored.min().item<double>(), 1e-4 * (1 - 1e-9));
  EXPECT_LT((floored - 1e-4).abs().min().item<double>(), 1e-12);
}

TEST(ParamInit, LogUniformIsTheLogOfAUniformDraw) {
  auto values = init(layerOf({param("A_log", {20000}, "log_uniform",
                                    {{"low", 1.0}, {"high", 16.0}})}));
  torch::Tensor a = torch::exp(values[0]);
  EXPECT_GE(a.min().item<double>(), 1.0 * (1 - 1e-12));
  EXPECT_LE(a.max().item<double>(), 16.0 * (1 + 1e-12));
  // exp(A_log) ~ U(1, 16): mean 8.5, standard deviation 15 / √12 ≈ 4.33; the
  // mean of 20000 draws has a standard error of 0.031.
  EXPECT_NEAR(a.mean().item<double>(), 8.5, 0.15);
  EXPECT_THAT(initError(layerOf({param("w", {3}, "log_uniform",
                                       {{"low", 0.0}, {"high", 1.0}})})),
              HasSubstr("needs 0 < low <= high"));
}

TEST(ParamInit, EyeAndOrthogonalFillSquareMatrices) {
  auto values = init(layerOf({param("original", {6, 6}, "eye", {{"value", -1}}),
                              param("base", {6, 6}, "orthogonal")}));
  EXPECT_TRUE(torch::equal(values[0], -torch::eye(6, torch::kFloat64)));
  // Qᵀ Q = I to rounding, with R's diagonal positive: Q is the Q factor of
  // a draw whose QR gives it back.
  const torch::Tensor &q = values[1];
  EXPECT_LT(maxAbs(torch::matmul(q.t(), q) - torch::eye(6, torch::kFloat64)),
            1e-14);
  // The draw itself: the fan-in uniform matrix the same generator gives
  // first, whose Q (signs fixed) is the parameter.
  at::Generator generator = makeGenerator(1);
  torch::Tensor draw =
      torch::empty({6, 6}, torch::kFloat64)
          .uniform_(-1 / std::sqrt(6.0), 1 / std::sqrt(6.0), generator);
  torch::Tensor r = torch::matmul(q.t(), draw);
  EXPECT_LT(maxAbs(torch::tril(r, -1)), 1e-14);
  EXPECT_GT(r.diagonal().min().item<double>(), 0);
  EXPECT_THAT(initError(layerOf({param("w", {3, 2}, "orthogonal")})),
              HasSubstr("parameter 'w': initialiser 'orthogonal' needs a "
                        "square matrix"));
  EXPECT_THAT(initError(layerOf({param("w", {3}, "eye", {{"value", 1}})})),
              HasSubstr("initialiser 'eye' needs a square matrix"));
}

TEST(ParamInit, RowNormReadsItsParameterEvenWhenListedFirst) {
  // fpc lists the gain before the direction it measures.
  LayerInfo layer =
      layerOf({param("proj.weight_g", {6}, "row_norm", {}, "proj.weight_v"),
               param("proj.weight_v", {6, 9}, "fan_in_uniform")});
  auto values = init(layer);
  EXPECT_LT(maxAbs(values[0] - values[1].norm(2, {1})), 1e-15);
  // A chain of references resolves too.
  layer.params.push_back(param("twice", {}, "row_norm", {}, "proj.weight_g"));
  values = init(layer);
  EXPECT_NEAR(values[2].item<double>(), values[0].norm().item<double>(), 1e-14);
}

TEST(ParamInit, SeedsAndDtypes) {
  LayerInfo layer = layerOf({param("a", {7, 5}, "fan_in_uniform"),
                             param("b", {11}, "normal", {{"std", 1.0}})});
  auto first = init(layer, 42), again = init(layer, 42),
       other = init(layer, 43);
  EXPECT_TRUE(torch::equal(first[0], again[0]));
  EXPECT_TRUE(torch::equal(first[1], again[1]));
  EXPECT_FALSE(torch::equal(first[0], other[0]));
  // The same draws in every dtype.
  auto single = init(layer, 42, torch::kFloat32);
  EXPECT_EQ(single[0].scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(single[1], first[1].to(torch::kFloat32)));
}

TEST(ParamInit, KnowsTheKindsOfTheDialect) {
  EXPECT_THAT(initKinds(), ::testing::UnorderedElementsAre(
                               "zeros", "ones", "constant", "uniform", "normal",
                               "fan_in_uniform", "s4d_real", "dt_bias",
                               "row_norm", "log_uniform", "eye", "orthogonal"));
}

TEST(ParamInit, RefusesWhatItCannotApply) {
  EXPECT_THAT(initError(layerOf({param("w", {3}, "kaiming")})),
              HasSubstr("layer 'test_layer', parameter 'w': unknown "
                        "initialiser 'kaiming'; this runtime knows zeros, "
                        "ones, constant"));
  EXPECT_THAT(initError(layerOf({param("w", {3}, "uniform", {{"low", 0}})})),
              HasSubstr("parameter 'w': initialiser 'uniform' needs the "
                        "argument 'high'"));
  EXPECT_THAT(initError(layerOf({param("w", {3}, "ones", {{"std", 0.1}})})),
              HasSubstr("initialiser 'ones' takes no argument 'std'"));
  EXPECT_THAT(initError(layerOf(
                  {param("w", {3}, "uniform", {{"low", 1}, {"high", 0}})})),
              HasSubstr("needs low <= high"));
  EXPECT_THAT(initError(layerOf({param("w", {}, "fan_in_uniform")})),
              HasSubstr("needs a parameter with at least one dimension"));
  EXPECT_THAT(initError(layerOf({param("g", {4}, "row_norm")})),
              HasSubstr("needs 'of'"));
  EXPECT_THAT(
      initError(layerOf(
          {param("g", {4}, "ones", {}, "v"), param("v", {4, 2}, "zeros")})),
      HasSubstr("initialiser 'ones' reads no other parameter, but names 'v'"));
  EXPECT_THAT(initError(layerOf({param("g", {5}, "row_norm", {}, "v"),
                                 param("v", {4, 2}, "zeros")})),
              HasSubstr("of 'v' [4, 2] gives shape [4], but the parameter is "
                        "[5]"));
  EXPECT_THAT(initError(layerOf({param("a", {4}, "row_norm", {}, "b"),
                                 param("b", {4}, "row_norm", {}, "a")})),
              HasSubstr("depends on itself"));
  EXPECT_THAT(initError(layerOf({param("a", {4}, "row_norm", {}, "zz")})),
              HasSubstr("'of' names parameter 'zz', which the layer lacks"));
}

} // namespace
