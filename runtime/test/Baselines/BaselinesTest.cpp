//===- BaselinesTest.cpp - Tests of the LSTM and Transformer ----*- C++ -*-===//
//
// Shapes and dtypes of both baselines, causality checked numerically (a
// change of a future token leaves earlier logits bit-identical and changes
// later ones), gradients reaching every parameter, length independence of the
// Transformer and the factory's handling of kinds and bad configurations.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Baselines/Baselines.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

using namespace fp::rt;

namespace {

ModelConfig smallConfig(const std::string &kind, torch::Dtype dtype) {
  ModelConfig config;
  config.kind = kind;
  config.vocabSize = 13; // padded to 16
  config.padVocabMultiple = 8;
  config.dModel = 16;
  config.nLayers = 2;
  config.nHeads = 4;
  config.dtype = dtype;
  return config;
}

torch::Tensor randomTokens(int64_t batch, int64_t length, int64_t vocab,
                           uint64_t seed) {
  auto generator = torch::make_generator<at::CPUGeneratorImpl>(seed);
  return torch::randint(vocab, {batch, length}, generator,
                        torch::TensorOptions().dtype(torch::kLong));
}

struct KindAndDtype {
  std::string kind;
  torch::Dtype dtype;
};

void PrintTo(const KindAndDtype &param, std::ostream *os) {
  *os << param.kind << (param.dtype == torch::kFloat64 ? "/f64" : "/f32");
}

std::string paramName(const testing::TestParamInfo<KindAndDtype> &info) {
  return info.param.kind +
         (info.param.dtype == torch::kFloat64 ? "_f64" : "_f32");
}

class BaselineTest : public testing::TestWithParam<KindAndDtype> {
protected:
  std::shared_ptr<SequenceModel> build() {
    torch::manual_seed(7);
    auto model =
        makeBaselineModel(smallConfig(GetParam().kind, GetParam().dtype));
    EXPECT_NE(model, nullptr);
    return model;
  }
};

} // namespace

TEST_P(BaselineTest, LogitsHavePaddedVocabularyShapeAndModelDtype) {
  auto model = build();
  for (int64_t length : {1, 9}) {
    torch::Tensor logits = model->forward(randomTokens(3, length, 13, 1));
    EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, length, 16}));
    EXPECT_EQ(logits.scalar_type(), GetParam().dtype);
    EXPECT_TRUE(torch::isfinite(logits).all().item<bool>());
  }
  EXPECT_TRUE(model->lastStats().iterations.empty());
  for (const auto &parameter : model->parameters())
    EXPECT_EQ(parameter.scalar_type(), GetParam().dtype);
}

TEST_P(BaselineTest, FutureTokensDoNotChangeEarlierLogits) {
  auto model = build();
  model->eval();
  torch::NoGradGuard noGrad;
  const int64_t changed = 6;
  torch::Tensor tokens = randomTokens(2, 11, 13, 2);
  torch::Tensor other = tokens.clone();
  other.select(1, changed).add_(1).remainder_(13);

  torch::Tensor before = model->forward(tokens);
  torch::Tensor after = model->forward(other);
  // Positions before the change: bit-identical.
  EXPECT_TRUE(
      torch::equal(before.narrow(1, 0, changed), after.narrow(1, 0, changed)));
  // From the change on the logits move, so the check above is not vacuous.
  double laterDiff = (before.narrow(1, changed, 11 - changed) -
                      after.narrow(1, changed, 11 - changed))
                         .abs()
                         .max()
                         .item<double>();
  EXPECT_GT(laterDiff, 1e-4);
}

TEST_P(BaselineTest, GradientsReachEveryParameter) {
  auto model = build();
  torch::Tensor tokens = randomTokens(4, 7, 13, 3);
  torch::Tensor logits = model->forward(tokens);
  torch::Tensor targets = randomTokens(4, 7, 16, 4);
  torch::Tensor loss = torch::nn::functional::cross_entropy(
      logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}));
  loss.backward();
  auto named = model->named_parameters(/*recurse=*/true);
  EXPECT_GT(named.size(), 4u);
  for (const auto &item : named) {
    const torch::Tensor &grad = item.value().grad();
    ASSERT_TRUE(grad.defined()) << item.key();
    double norm = grad.norm().item<double>();
    EXPECT_TRUE(std::isfinite(norm)) << item.key();
    EXPECT_GT(norm, 0.0) << item.key();
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllBaselines, BaselineTest,
    testing::Values(KindAndDtype{"lstm", torch::kFloat32},
                    KindAndDtype{"lstm", torch::kFloat64},
                    KindAndDtype{"transformer", torch::kFloat32},
                    KindAndDtype{"transformer", torch::kFloat64}),
    paramName);

TEST(TransformerTest, RunsAtAnyLengthAndIsShiftDependent) {
  torch::manual_seed(3);
  auto model = makeBaselineModel(smallConfig("transformer", torch::kFloat64));
  model->eval();
  torch::NoGradGuard noGrad;
  // Longer than any learned table would be sized for in these tests.
  torch::Tensor logits = model->forward(randomTokens(1, 700, 13, 5));
  EXPECT_EQ(logits.size(1), 700);
  EXPECT_TRUE(torch::isfinite(logits).all().item<bool>());
  // Positions are encoded: the same token at two positions with identical
  // (empty) history apart from itself gives different logits.
  torch::Tensor same = torch::full({1, 2}, 5, torch::kLong);
  torch::Tensor out = model->forward(same);
  EXPECT_FALSE(torch::allclose(out[0][0], out[0][1]));
}

TEST(TransformerTest, SinusoidalPositionsMatchTheFormula) {
  torch::Tensor table =
      sinusoidalPositions(5, 6, torch::TensorOptions().dtype(torch::kFloat64));
  ASSERT_EQ(table.sizes(), (std::vector<int64_t>{5, 6}));
  for (int64_t t = 0; t < 5; ++t)
    for (int64_t i = 0; i < 3; ++i) {
      double angle = t / std::pow(10000.0, 2.0 * i / 6.0);
      EXPECT_NEAR(table[t][2 * i].item<double>(), std::sin(angle), 1e-12);
      EXPECT_NEAR(table[t][2 * i + 1].item<double>(), std::cos(angle), 1e-12);
    }
  // Odd widths drop the last cos channel.
  EXPECT_EQ(sinusoidalPositions(3, 5, torch::kFloat32).size(1), 5);
}

TEST(BaselineFactoryTest, ReturnsNullForKindsItDoesNotBuild) {
  for (const char *kind : {"fp_mamba", "mamba", "fp_rnn", "gru", ""})
    EXPECT_EQ(makeBaselineModel(smallConfig(kind, torch::kFloat32)), nullptr)
        << kind;
  EXPECT_NE(std::dynamic_pointer_cast<LSTMModel>(
                makeBaselineModel(smallConfig("lstm", torch::kFloat32))),
            nullptr);
  EXPECT_NE(std::dynamic_pointer_cast<TransformerModel>(
                makeBaselineModel(smallConfig("transformer", torch::kFloat32))),
            nullptr);
}

TEST(BaselineFactoryTest, RejectsImpossibleConfigurations) {
  auto expectError = [](const ModelConfig &config, const std::string &needle) {
    try {
      makeBaselineModel(config);
      ADD_FAILURE() << "no error, expected one mentioning '" << needle << "'";
    } catch (const std::invalid_argument &error) {
      EXPECT_THAT(error.what(), testing::HasSubstr(needle));
    }
  };
  ModelConfig heads = smallConfig("transformer", torch::kFloat32);
  heads.nHeads = 3;
  expectError(heads, "d_model 16 is not a multiple of 3 heads");
  ModelConfig layers = smallConfig("lstm", torch::kFloat32);
  layers.nLayers = 0;
  expectError(layers, "layers must be positive, got 0");
  ModelConfig vocab = smallConfig("transformer", torch::kFloat32);
  vocab.vocabSize = 0;
  expectError(vocab, "vocabulary size must be positive");
  ModelConfig dtype = smallConfig("lstm", torch::kFloat32);
  dtype.dtype = torch::kFloat16;
  expectError(dtype, "dtype must be float32 or float64");
}

TEST(BaselineFactoryTest, NormAndBiasParametersAreNamedForDecayRules) {
  auto model = makeBaselineModel(smallConfig("transformer", torch::kFloat32));
  std::set<std::string> names;
  for (const auto &item : model->named_parameters())
    names.insert(item.key());
  for (const char *name :
       {"embedding.weight", "blocks.0.norm_attn.weight",
        "blocks.0.norm_attn.bias", "blocks.1.qkv.weight",
        "blocks.1.fc_out.bias", "norm_f.weight", "head.weight", "head.bias"})
    EXPECT_EQ(names.count(name), 1u) << name;
  auto lstm = makeBaselineModel(smallConfig("lstm", torch::kFloat32));
  std::set<std::string> lstmNames;
  for (const auto &item : lstm->named_parameters())
    lstmNames.insert(item.key());
  for (const char *name : {"embedding.weight", "lstm.weight_ih_l0",
                           "lstm.bias_hh_l1", "head.weight", "head.bias"})
    EXPECT_EQ(lstmNames.count(name), 1u) << name;
}
