//===- HostGradientsTest.cpp - Gradient kernels vs differences --*- C++ -*-===//
//
// Each kernel of fp/Runtime/Kernels/HostGradients.h against central finite
// differences of the forward kernel it differentiates, in f64 on random
// inputs (TestSeed.h's seed, printed): for a random cotangent w and the loss
// L(x) = ⟨w, f(x)⟩, the kernel's output must match (L(x + h e_i) −
// L(x − h e_i)) / 2h at sampled coordinates i within 1e-6 relative (1e-8
// absolute). Layout adjoints are checked exactly through ⟨f(p), m⟩ =
// ⟨p, fᵀ(m)⟩.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Kernels/HostGradients.h"
#include "TestSeed.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <iostream>
#include <random>
#include <vector>

namespace {

using Vector = std::vector<double>;

class HostGradients : public ::testing::Test {
protected:
  void SetUp() override { rng.seed(fp::test::testSeed()); }

  Vector random(size_t n, double scale = 1.0) {
    std::normal_distribution<double> normal(0.0, scale);
    Vector v(n);
    for (double &x : v)
      x = normal(rng);
    return v;
  }

  /// Checks `analytic` = ∂L/∂x against central differences of `loss` at up
  /// to `samples` random coordinates of `x` (restored afterwards).
  void expectGradient(const char *what, Vector &x, const Vector &analytic,
                      const std::function<double()> &loss, int samples = 24) {
    ASSERT_EQ(x.size(), analytic.size()) << what;
    std::uniform_int_distribution<size_t> pick(0, x.size() - 1);
    for (int s = 0; s < samples; ++s) {
      const size_t i =
          samples >= int(x.size()) ? size_t(s) % x.size() : pick(rng);
      const double saved = x[i];
      const double h = 1e-6 * std::max(1.0, std::fabs(saved));
      x[i] = saved + h;
      const double up = loss();
      x[i] = saved - h;
      const double down = loss();
      x[i] = saved;
      const double numeric = (up - down) / (2 * h);
      EXPECT_NEAR(analytic[i], numeric,
                  1e-8 + 1e-6 * std::max(1.0, std::fabs(numeric)))
          << what << "[" << i << "]";
    }
  }

  static double dot(const Vector &a, const Vector &b) {
    double sum = 0;
    for (size_t i = 0; i < a.size(); ++i)
      sum += a[i] * b[i];
    return sum;
  }

  std::mt19937_64 rng;
};

TEST_F(HostGradients, TransposeSwapsTheIndices) {
  const int64_t rows = 3, cols = 5;
  Vector in = random(rows * cols), out(rows * cols);
  fp::host::transpose(in.data(), rows, cols, out.data());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      EXPECT_EQ(out[j * rows + i], in[i * cols + j]);
}

TEST_F(HostGradients, WeightGradIsTheGradientOfTheLinearMap) {
  const int64_t rows = 7, in = 5, out = 4;
  Vector x = random(rows * in), weight = random(out * in);
  Vector w = random(rows * out), y(rows * out);
  auto loss = [&] {
    fp::host::linear(x.data(), rows, in, weight.data(), out, nullptr, y.data());
    return dot(w, y);
  };
  Vector dWeight(out * in);
  fp::host::weightGrad(w.data(), x.data(), rows, out, in, dWeight.data());
  expectGradient("dweight", weight, dWeight, loss);
}

TEST_F(HostGradients, WeightGradReadsColumnRangesWhereTheyLie) {
  // The linear map of columns [2, 7) of a rows × 9 input, and its cotangent
  // as columns [1, 5) of a rows × 6 matrix, as fp.slice ops read in place
  // give them.
  const int64_t rows = 7, in = 5, out = 4;
  const int64_t inStride = 9, inStart = 2, gradStride = 6, gradStart = 1;
  Vector x = random(rows * inStride), weight = random(out * in);
  Vector w = random(rows * gradStride), y(rows * out);
  auto loss = [&] {
    fp::host::linearStrided(x.data() + inStart, inStride, rows, in,
                            weight.data(), in, false, out, nullptr, y.data());
    double sum = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < out; ++o)
        sum += w[r * gradStride + gradStart + o] * y[r * out + o];
    return sum;
  };
  Vector dWeight(out * in);
  fp::host::weightGradStrided(w.data() + gradStart, gradStride,
                              x.data() + inStart, inStride, rows, out, in,
                              dWeight.data());
  expectGradient("dweight", weight, dWeight, loss);
}

TEST_F(HostGradients, LinearTransposedIsTheInputGradientOfTheLinearMap) {
  const int64_t rows = 7, in = 5, out = 4;
  Vector x = random(rows * in), weight = random(out * in);
  Vector w = random(rows * out), y(rows * out);
  auto loss = [&] {
    fp::host::linear(x.data(), rows, in, weight.data(), out, nullptr, y.data());
    return dot(w, y);
  };
  // dx = w · W: the map out → in whose PyTorch-layout weight is Wᵀ, given
  // as W itself.
  Vector dx(rows * in);
  fp::host::linearTransposed(w.data(), rows, out, weight.data(), in, nullptr,
                             dx.data());
  expectGradient("dx", x, dx, loss);

  // With a bias, as linear on the materialised transpose.
  Vector bias = random(in), weightT(in * out), viaTranspose(rows * in);
  fp::host::transpose(weight.data(), out, in, weightT.data());
  fp::host::linear(w.data(), rows, out, weightT.data(), in, bias.data(),
                   viaTranspose.data());
  fp::host::linearTransposed(w.data(), rows, out, weight.data(), in,
                             bias.data(), dx.data());
  for (int64_t i = 0; i < rows * in; ++i)
    EXPECT_NEAR(dx[i], viaTranspose[i], 1e-12 * (1 + std::fabs(dx[i])))
        << "[" << i << "]";
}

TEST_F(HostGradients, AccumulateAllAddsEachGradientIntoItsOwn) {
  Vector a = random(3), b = random(70), into = random(73);
  const Vector before = into;
  const fp::host::GradientSum<double> sums[] = {
      {a.data(), 3, into.data()}, {b.data(), 70, into.data() + 3}};
  fp::host::accumulateAll(sums, 2);
  for (int64_t i = 0; i < 73; ++i)
    EXPECT_EQ(into[i], before[i] + (i < 3 ? a[i] : b[i - 3]))
        << "[" << i << "]";
}

TEST_F(HostGradients, SumColumnsAddsEveryRow) {
  const int64_t rows = 6, width = 3;
  Vector in = random(rows * width), out(width);
  fp::host::sumColumns(in.data(), rows, width, out.data());
  for (int64_t j = 0; j < width; ++j) {
    double sum = 0;
    for (int64_t r = 0; r < rows; ++r)
      sum += in[r * width + j];
    EXPECT_DOUBLE_EQ(out[j], sum);
  }
}

TEST_F(HostGradients, TriuPackIsTheAdjointOfTriu) {
  const int64_t rows = 3, m = 4, packed = m * (m + 1) / 2;
  Vector p = random(rows * packed), matrices = random(rows * m * m);
  Vector unpacked(rows * m * m), repacked(rows * packed);
  fp::host::triu(p.data(), rows, m, unpacked.data());
  fp::host::triuPack(matrices.data(), rows, m, repacked.data());
  EXPECT_NEAR(dot(unpacked, matrices), dot(p, repacked), 1e-12);
}

TEST_F(HostGradients, ReduceMaxGradIsTheGradientOfTheMaximum) {
  fp::host::Shape shape{3, {2, 3, 4}};
  const bool reduced[] = {false, true, true};
  Vector x = random(shape.numElements()), w = random(2), y(2);
  auto loss = [&] {
    fp::host::reduce(x.data(), shape, reduced, fp::host::Reduction::Max,
                     y.data());
    return dot(w, y);
  };
  Vector dx(x.size());
  fp::host::reduceMaxGrad(x.data(), w.data(), shape, reduced, dx.data());
  expectGradient("dx", x, dx, loss, int(x.size()));
}

TEST_F(HostGradients, L2NormGradIsTheGradientInBothRegimes) {
  // Rows 0 and 1 have norms above eps; row 2 is under it (the clamp).
  const int64_t rows = 3, width = 5;
  const double eps = 0.5;
  Vector x = random(rows * width);
  for (int64_t j = 0; j < width; ++j) {
    x[j] *= 4;
    x[2 * width + j] *= 0.01;
  }
  Vector w = random(rows * width), y(rows * width);
  auto loss = [&] {
    fp::host::l2norm(x.data(), rows, width, eps, y.data());
    return dot(w, y);
  };
  Vector dx(x.size());
  fp::host::l2normGrad(x.data(), w.data(), rows, width, eps, dx.data());
  expectGradient("dx", x, dx, loss, int(x.size()));
}

TEST_F(HostGradients, WeightNormGradIsTheGradientOfBothOperands) {
  const int64_t rows = 3, cols = 7;
  Vector v = random(rows * cols), gain = random(rows);
  Vector w = random(rows * cols), y(rows * cols);
  auto loss = [&] {
    fp::host::weightNorm(v.data(), gain.data(), rows, cols, y.data());
    return dot(w, y);
  };
  Vector dv(v.size()), dgain(gain.size());
  fp::host::weightNormGrad(v.data(), gain.data(), w.data(), rows, cols,
                           dv.data(), dgain.data());
  expectGradient("dweight", v, dv, loss, int(v.size()));
  expectGradient("dgain", gain, dgain, loss, int(gain.size()));
}

TEST_F(HostGradients, CausalConvGradIsTheGradientOfTheConvolution) {
  const int64_t batch = 2, length = 6, channels = 3, width = 4;
  Vector x = random(batch * length * channels);
  Vector weight = random(channels * width);
  Vector w = random(x.size()), y(x.size());
  auto loss = [&] {
    fp::host::causalConv(x.data(), weight.data(), nullptr, batch, length,
                         channels, width, y.data());
    return dot(w, y);
  };
  Vector dx(x.size()), dWeight(weight.size());
  fp::host::causalConvGrad(x.data(), weight.data(), w.data(), batch, length,
                           channels, width, dx.data(), dWeight.data());
  expectGradient("dinput", x, dx, loss, int(x.size()));
  expectGradient("dweight", weight, dWeight, loss, int(weight.size()));
}

TEST_F(HostGradients, CausalConvWeightGradSumsEveryTokenAcrossChunks) {
  // 3 · 217 tokens: partial sums over several chunks of kConvGradTokens,
  // whose boundaries fall inside samples; against a direct sum in f64.
  const int64_t batch = 3, length = 217, channels = 5, width = 4;
  ASSERT_GT(batch * length, 2 * fp::host::kConvGradTokens);
  Vector x = random(batch * length * channels);
  Vector weight = random(channels * width), g = random(x.size());
  Vector dx(x.size()), dWeight(weight.size());
  fp::host::causalConvGrad(x.data(), weight.data(), g.data(), batch, length,
                           channels, width, dx.data(), dWeight.data());
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t k = 0; k < width; ++k) {
      double expected = 0, magnitude = 0;
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t t = width - 1 - k; t < length; ++t) {
          const double term =
              g[(b * length + t) * channels + c] *
              x[(b * length + t - width + 1 + k) * channels + c];
          expected += term;
          magnitude += std::fabs(term);
        }
      EXPECT_NEAR(dWeight[c * width + k], expected, 1e-13 * magnitude)
          << "dweight[" << c << ", " << k << "]";
    }
}

TEST_F(HostGradients, CausalConvGradReadsColumnRangesWhereTheyLie) {
  // in: columns [3, 3 + channels) of a tokens × 10 matrix, as an fp.slice
  // read in place gives it: the same gradients as from a packed copy.
  const int64_t batch = 2, length = 300, channels = 3, width = 4;
  const int64_t inStride = 10, inStart = 3, tokens = batch * length;
  Vector wide = random(tokens * inStride), packed(tokens * channels);
  for (int64_t r = 0; r < tokens; ++r)
    for (int64_t c = 0; c < channels; ++c)
      packed[r * channels + c] = wide[r * inStride + inStart + c];
  Vector weight = random(channels * width), g = random(packed.size());
  Vector dx(packed.size()), dWeight(weight.size());
  Vector dxPacked(packed.size()), dWeightPacked(weight.size());
  fp::host::causalConvGradStrided(wide.data() + inStart, inStride,
                                  weight.data(), g.data(), batch, length,
                                  channels, width, dx.data(), dWeight.data());
  fp::host::causalConvGrad(packed.data(), weight.data(), g.data(), batch,
                           length, channels, width, dxPacked.data(),
                           dWeightPacked.data());
  EXPECT_EQ(dx, dxPacked);
  EXPECT_EQ(dWeight, dWeightPacked);
}

TEST_F(HostGradients, SelectiveScanGradIsTheGradientOfTheRecurrence) {
  const int64_t batch = 2, length = 5, channels = 3, state = 4;
  const size_t tokens = batch * length;
  Vector u = random(tokens * channels);
  Vector delta(tokens * channels);
  for (double &d : delta) // Δ > 0, as after the softplus
    d = 0.1 + std::fabs(random(1)[0]);
  Vector a(channels * state);
  for (double &v : a) // A < 0, as −exp(A_log)
    v = -0.5 - std::fabs(random(1)[0]);
  Vector bm = random(tokens * state), cm = random(tokens * state);
  Vector w = random(tokens * channels), y(tokens * channels);
  auto loss = [&] {
    fp::host::selectiveScan(u.data(), delta.data(), a.data(), bm.data(),
                            cm.data(), static_cast<const double *>(nullptr),
                            batch, length, channels, state, y.data());
    return dot(w, y);
  };
  Vector du(u.size()), dDelta(delta.size()), dA(a.size()), dB(bm.size()),
      dC(cm.size());
  fp::host::selectiveScanGrad(u.data(), delta.data(), a.data(), bm.data(),
                              cm.data(), w.data(), batch, length, channels,
                              state, du.data(), dDelta.data(), dA.data(),
                              dB.data(), dC.data());
  expectGradient("du", u, du, loss, int(u.size()));
  expectGradient("ddelta", delta, dDelta, loss, int(delta.size()));
  expectGradient("dA", a, dA, loss, int(a.size()));
  expectGradient("dB", bm, dB, loss, int(bm.size()));
  expectGradient("dC", cm, dC, loss, int(cm.size()));
}

} // namespace
