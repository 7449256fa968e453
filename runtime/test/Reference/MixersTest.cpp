//===- MixersTest.cpp - Channel mixers against dense matrices ---*- C++ -*-===//
//
// Each mixer's Q(p)·v against the dense matrix the spec (or, for the mixers
// the spec leaves open, the DSL source in models/lib/) defines, built
// independently, on random inputs; the contraction property of
// Householder products; the Kronecker factorisation rule; the power
// iterations against exact eigenvalues.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Reference/Mixers.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>

using namespace fp::rt::ref;

namespace {

torch::TensorOptions f64() {
  return torch::TensorOptions().dtype(torch::kFloat64);
}

/// Max |a − b| / max(1, max |b|).
double relativeError(const torch::Tensor &a, const torch::Tensor &b) {
  return ((a - b).abs().max() / b.abs().max().clamp_min(1.0)).item<double>();
}

TEST(Mixers, HouseholderProductNeverExpands) {
  for (int64_t rank : {1, 2, 4}) {
    HouseholderMixer mixer(12, 16, rank, /*sum=*/false, MixerActivation::Silu,
                           1e-5, torch::kFloat64);
    torch::Tensor p = torch::randn({5, 7, 12}, f64());
    torch::Tensor v = torch::randn({5, 7, 16}, f64());
    torch::Tensor norms = mixer.forward(p, v).norm(2, {-1});
    EXPECT_TRUE((norms <= v.norm(2, {-1}) * (1 + 1e-12)).all().item<bool>())
        << "rank " << rank;
  }
}

TEST(Mixers, HouseholderMatchesDenseProductOfReflections) {
  const int64_t d = 10, rank = 3;
  HouseholderMixer mixer(6, d, rank, /*sum=*/false, MixerActivation::Silu, 1e-5,
                         torch::kFloat64);
  torch::Tensor p = torch::randn({4, 6}, f64());
  torch::Tensor v = torch::randn({4, d}, f64());
  auto [u, alpha] = mixer.parameters(p);
  torch::Tensor out = mixer.forward(p, v);
  for (int64_t b = 0; b < 4; ++b) {
    torch::Tensor q = torch::eye(d, f64());
    for (int64_t i = 0; i < rank; ++i) {
      torch::Tensor ui = u[b][i].unsqueeze(1);
      torch::Tensor h =
          torch::eye(d, f64()) - 2 * alpha[b][i] * torch::matmul(ui, ui.t());
      q = torch::matmul(h, q); // H_{r−1} ⋯ H_0
    }
    EXPECT_LT(relativeError(out[b], torch::matmul(q, v[b])), 1e-12);
    // u_i are unit vectors and α_i ∈ (0, 1).
    EXPECT_LT((u[b].norm(2, {-1}) - 1).abs().max().item<double>(), 1e-12);
    EXPECT_TRUE(((alpha[b] > 0) & (alpha[b] < 1)).all().item<bool>());
  }
}

TEST(Mixers, DPLRMatchesDenseFormula) {
  const int64_t d = 8, rank = 3;
  HouseholderMixer mixer(5, d, rank, /*sum=*/true, MixerActivation::Silu, 1e-5,
                         torch::kFloat64);
  torch::Tensor p = torch::randn({3, 5}, f64());
  torch::Tensor v = torch::randn({3, d}, f64());
  auto [u, alpha] = mixer.parameters(p);
  torch::Tensor out = mixer.forward(p, v);
  for (int64_t b = 0; b < 3; ++b) {
    torch::Tensor q = torch::eye(d, f64());
    for (int64_t i = 0; i < rank; ++i) {
      torch::Tensor ui = u[b][i].unsqueeze(1);
      q = q - 2 * alpha[b][i] * torch::matmul(ui, ui.t());
    }
    EXPECT_LT(relativeError(out[b], torch::matmul(q, v[b])), 1e-12);
  }
}

/// exp(M) by its Taylor series, summed until the terms vanish (f64, ‖M‖
/// small): independent of torch::matrix_exp.
torch::Tensor taylorExp(const torch::Tensor &m) {
  torch::Tensor sum = torch::eye(m.size(0), f64()), term = sum;
  for (int k = 1; k < 60; ++k) {
    term = torch::matmul(term, m) / k;
    sum = sum + term;
  }
  return sum;
}

TEST(Mixers, NonselectiveIsOneOrthogonalMatrix) {
  torch::manual_seed(19);
  const int64_t d = 6;
  NonselectiveMixer mixer(d, torch::kFloat64);
  torch::Tensor eye = torch::eye(d, f64());
  // At initialisation W is the orthogonal base.
  EXPECT_LT((mixer.matrix() - mixer.base).abs().max().item<double>(), 1e-15);
  EXPECT_LT((torch::matmul(mixer.base, mixer.base.t()) - eye)
                .abs()
                .max()
                .item<double>(),
            1e-12);
  // A trained `original`: W = base · exp(L − Lᵀ), still orthogonal, the
  // same for every token and independent of p; Q v = W v.
  {
    torch::NoGradGuard noGrad;
    mixer.original.add_(torch::randn({d, d}, f64()) * 0.3);
  }
  torch::Tensor lower = mixer.original.detach().tril();
  torch::Tensor expected =
      torch::matmul(mixer.base, taylorExp(lower - lower.t()));
  torch::NoGradGuard noGrad;
  torch::Tensor w = mixer.matrix();
  EXPECT_LT((w - expected).abs().max().item<double>(), 1e-12);
  EXPECT_LT((torch::matmul(w, w.t()) - eye).abs().max().item<double>(), 1e-12);
  torch::Tensor v = torch::randn({3, 4, d}, f64());
  torch::Tensor out = mixer.forward(torch::randn({3, 4, 5}, f64()), v);
  EXPECT_LT((out - torch::matmul(v, expected.t())).abs().max().item<double>(),
            1e-12);
  // The matrix computed without gradient follows the parameter's updates.
  mixer.original.add_(torch::randn({d, d}, f64()) * 0.1);
  torch::Tensor moved = mixer.original.tril();
  EXPECT_LT(
      (mixer.matrix() - torch::matmul(mixer.base, taylorExp(moved - moved.t())))
          .abs()
          .max()
          .item<double>(),
      1e-12);
}

TEST(Mixers, NonselectiveGradientMatchesFiniteDifferences) {
  torch::manual_seed(23);
  const int64_t d = 5;
  NonselectiveMixer mixer(d, torch::kFloat64);
  {
    torch::NoGradGuard noGrad;
    mixer.original.add_(torch::randn({d, d}, f64()) * 0.3);
  }
  torch::Tensor v = torch::randn({4, d}, f64());
  torch::Tensor weights = torch::randn({4, d}, f64());
  auto loss = [&] { return (mixer.forward(v, v) * weights).sum(); };
  loss().backward();
  torch::Tensor grad = mixer.original.grad().clone();
  // The diagonal and the upper triangle do not enter W.
  EXPECT_EQ(grad.triu(1).abs().max().item<double>(), 0.0);
  EXPECT_LT(grad.diagonal().abs().max().item<double>(), 1e-12);
  const double h = 1e-6;
  torch::NoGradGuard noGrad;
  for (int64_t i = 1; i < d; ++i)
    for (int64_t j = 0; j < i; ++j) {
      double original = mixer.original[i][j].item<double>();
      mixer.original[i][j] = original + h;
      double plus = loss().item<double>();
      mixer.original[i][j] = original - h;
      double minus = loss().item<double>();
      mixer.original[i][j] = original;
      EXPECT_NEAR(grad[i][j].item<double>(), (plus - minus) / (2 * h), 1e-7)
          << i << ", " << j;
    }
}

TEST(Mixers, KroneckerFactorisation) {
  using Pair = std::pair<int64_t, int64_t>;
  EXPECT_EQ(KroneckerMixer::factorize(256), Pair(16, 16));
  EXPECT_EQ(KroneckerMixer::factorize(1024), Pair(32, 32));
  EXPECT_EQ(KroneckerMixer::factorize(2048), Pair(32, 64));
  EXPECT_EQ(KroneckerMixer::factorize(1536), Pair(32, 48));
  EXPECT_EQ(KroneckerMixer::factorize(12), Pair(3, 4));
  EXPECT_EQ(KroneckerMixer::factorize(13), Pair(1, 13));
}

TEST(Mixers, KroneckerEqualsDenseKroneckerProduct) {
  for (KroneckerNorm norm : {KroneckerNorm::Row, KroneckerNorm::Spectral}) {
    const int64_t d = 12; // 3 × 4
    KroneckerMixer mixer(7, d, norm, MixerActivation::Silu, 1e-5,
                         torch::kFloat64);
    torch::Tensor p = torch::randn({2, 3, 7}, f64());
    torch::Tensor v = torch::randn({2, 3, d}, f64());
    auto [u, vf] = mixer.factors(p);
    ASSERT_EQ(u.size(-1), 3);
    ASSERT_EQ(vf.size(-1), 4);
    torch::Tensor out = mixer.forward(p, v);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t t = 0; t < 3; ++t) {
        // Q = I − 2 (Uᵀ ⊗ V) under row-major vectorisation.
        torch::Tensor q = torch::eye(d, f64()) -
                          2 * torch::kron(u[b][t].t().contiguous(), vf[b][t]);
        EXPECT_LT(relativeError(out[b][t], torch::matmul(q, v[b][t])), 1e-12);
      }
  }
}

TEST(Mixers, KroneckerRowNormalisationBoundsRows) {
  KroneckerMixer mixer(5, 16, KroneckerNorm::Row, MixerActivation::Silu, 1e-5,
                       torch::kFloat64);
  auto [u, v] = mixer.factors(torch::randn({6, 5}, f64()));
  // Rows of S have unit norm, then a gate in (0, 1) scales each row.
  EXPECT_TRUE((u.norm(2, {-1}) < 1 + 1e-12).all().item<bool>());
  EXPECT_TRUE((v.norm(2, {-1}) < 1 + 1e-12).all().item<bool>());
}

TEST(Mixers, PowerIterationFindsDominantEigenvalue) {
  torch::Tensor l = torch::randn({4, 6, 6}, f64());
  // Well-separated spectrum so 16 steps suffice.
  torch::Tensor diag = torch::tensor({10.0, 3.0, 2.0, 1.0, 0.5, 0.1}, f64());
  auto [qr, r] = torch::linalg_qr(l);
  torch::Tensor m = torch::matmul(qr * diag, qr.transpose(-1, -2)); // Q diag Qᵀ
  torch::Tensor estimate = powerIterationEigenvalue(m, 36);
  EXPECT_LT((estimate - 10.0).abs().max().item<double>(), 1e-6);
}

TEST(Mixers, MonarchMatchesBlockDiagonalMatrix) {
  const int64_t d = 8, block = 4;
  MonarchMixer mixer(6, d, block, MixerActivation::Silu, 1e-5, torch::kFloat64);
  torch::Tensor p = torch::randn({6}, f64());
  torch::Tensor v = torch::randn({d}, f64());
  torch::Tensor out = mixer.forward(p, v);
  // Rebuild each block from the projections independently.
  torch::Tensor theta = torch::silu(mixer.thetaProj->forward(p)).view({2, 10});
  torch::Tensor alpha = torch::sigmoid(mixer.alphaProj->forward(p));
  torch::Tensor q = torch::zeros({d, d}, f64());
  for (int64_t c = 0; c < 2; ++c) {
    torch::Tensor l = torch::zeros({block, block}, f64());
    int64_t k = 0;
    for (int64_t i = 0; i < block; ++i)
      for (int64_t j = i; j < block; ++j)
        l[i][j] = theta[c][k++];
    torch::Tensor pc = torch::matmul(l, l.t());
    pc = pc / (pc.norm(2, {0}).max() + 1e-5);
    q.narrow(0, c * block, block).narrow(1, c * block, block) =
        torch::eye(block, f64()) - alpha[c] * pc;
  }
  EXPECT_LT(relativeError(out, torch::matmul(q, v)), 1e-12);
}

/// The upper-triangular m × m matrix filled row-major from `packed`, by
/// loops.
torch::Tensor upperTriangular(const torch::Tensor &packed, int64_t m) {
  torch::Tensor l = torch::zeros({m, m}, packed.options());
  int64_t k = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = i; j < m; ++j)
      l[i][j] = packed[k++];
  return l;
}

/// The dense m × m matrix of a one-token Householder product of `mixer`.
torch::Tensor denseHouseholder(HouseholderMixer &mixer, const torch::Tensor &p,
                               int64_t d) {
  auto [u, alpha] = mixer.parameters(p);
  torch::Tensor q = torch::eye(d, f64());
  for (int64_t i = 0; i < mixer.rank; ++i) {
    torch::Tensor ui = u[i].unsqueeze(1);
    q = torch::matmul(
        torch::eye(d, f64()) - 2 * alpha[i] * torch::matmul(ui, ui.t()), q);
  }
  return q;
}

/// The dense matrix I − 2 (Uᵀ ⊗ V) of a one-token Kronecker mixer.
torch::Tensor denseKronecker(KroneckerMixer &mixer, const torch::Tensor &p,
                             int64_t d) {
  auto [u, v] = mixer.factors(p);
  return torch::eye(d, f64()) - 2 * torch::kron(u.t().contiguous(), v);
}

TEST(Mixers, SelectiveDenseMatchesNormalisedDenseMatrix) {
  const int64_t d = 6;
  SelectiveDenseMixer mixer(5, d, MixerActivation::Silu, 1e-5, torch::kFloat64);
  torch::Tensor p = torch::randn({3, 5}, f64());
  torch::Tensor v = torch::randn({3, d}, f64());
  torch::Tensor out = mixer.forward(p, v);
  for (int64_t b = 0; b < 3; ++b) {
    torch::Tensor theta = torch::silu(mixer.thetaProj->forward(p[b]));
    ASSERT_EQ(theta.size(0), d * (d + 1) / 2);
    torch::Tensor l = upperTriangular(theta, d);
    torch::Tensor s = torch::matmul(l, l.t());
    // 32 steps of w ← S w, λ = ‖w‖, w ← w / (λ + ε) from 𝟙/√d.
    torch::Tensor w = torch::full({d}, 1 / std::sqrt(double(d)), f64());
    double lambda = 0, previous = 0;
    for (int step = 0; step < 32; ++step) {
      previous = lambda;
      w = torch::matmul(s, w);
      lambda = w.norm().item<double>();
      w = w / (lambda + 1e-5);
    }
    torch::Tensor expected = torch::matmul(s, v[b]) / (lambda + 1e-5);
    EXPECT_LT(relativeError(out[b], expected), 1e-12);
    // λ̂ = ‖S u‖ for a unit u estimates the dominant eigenvalue λ₁ from
    // below, so ‖Q‖₂ ≈ 1 (S is PSD). The last step's u is S³¹ 𝟙 normalised;
    // with start coefficients c_i on the eigenvectors and r = λ₂/λ₁,
    // ‖S u‖ ≥ λ₁ / √(1 + r⁶² Σ_{i>1} c_i² / c_1²), times the norm of the
    // last w, λ₃₁ / (λ₃₁ + ε). How close that is depends on the draw's
    // spectral gap.
    auto [values, vectors] = torch::linalg_eigh(s, "L");
    const double largest = values[d - 1].item<double>();
    const double ratio = values[d - 2].item<double>() / largest;
    const double first =
        torch::dot(vectors.select(1, d - 1),
                   torch::full({d}, 1 / std::sqrt(double(d)), f64()))
            .item<double>();
    const double rest = (1 - first * first) / (first * first);
    const double lowest = largest / std::sqrt(1 + std::pow(ratio, 62) * rest) *
                          (previous / (previous + 1e-5)) * (1 - 1e-9);
    EXPECT_LE(lambda, largest * (1 + 1e-12));
    EXPECT_GT(lambda, lowest) << "λ₁ " << largest << ", λ₂/λ₁ " << ratio;
  }
}

TEST(Mixers, MixtureIsTheProductOfAlternatingFactors) {
  const int64_t d = 12; // Kronecker factors 3 × 4
  MixtureMixer mixer(7, d, 4, MixerActivation::Silu, 1e-5, torch::kFloat64);
  ASSERT_EQ(mixer.factors.size(), 4u);
  std::vector<std::string> names;
  for (const auto &item : mixer.named_parameters())
    names.push_back(item.key());
  for (const char *name :
       {"m0.u_proj.weight_v", "m0.alpha_proj.bias", "m1.theta_proj.weight_g",
        "m1.gate_proj.bias", "m2.u_proj.weight_g", "m3.theta_proj.weight_v"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  torch::Tensor p = torch::randn({2, 7}, f64());
  torch::Tensor v = torch::randn({2, d}, f64());
  torch::Tensor out = mixer.forward(p, v);
  for (int64_t b = 0; b < 2; ++b) {
    torch::Tensor q = torch::eye(d, f64());
    for (size_t i = 0; i < 4; ++i) {
      torch::Tensor factor =
          i % 2 == 0
              ? denseHouseholder(
                    dynamic_cast<HouseholderMixer &>(*mixer.factors[i]), p[b],
                    d)
              : denseKronecker(
                    dynamic_cast<KroneckerMixer &>(*mixer.factors[i]), p[b], d);
      q = torch::matmul(factor, q); // M_3 M_2 M_1 M_0
    }
    EXPECT_LT(relativeError(out[b], torch::matmul(q, v[b])), 1e-12);
  }
  // Kronecker factors of a mixture are row-normalised, never spectral.
  EXPECT_EQ(dynamic_cast<KroneckerMixer &>(*mixer.factors[1]).norm,
            KroneckerNorm::Row);
}

TEST(Mixers, BlockHouseholderMatchesBlockDiagonalProducts) {
  const int64_t d = 12, rank = 2, blocks = 3, k = 4;
  BlockHouseholderMixer mixer(5, d, rank, blocks, MixerActivation::Silu, 1e-5,
                              torch::kFloat64);
  torch::Tensor p = torch::randn({4, 5}, f64());
  torch::Tensor v = torch::randn({4, d}, f64());
  torch::Tensor out = mixer.forward(p, v);
  for (int64_t b = 0; b < 4; ++b) {
    // u_{j,i} from slice [i·d + j·k, i·d + (j+1)·k) of silu(W_u p), α_{j,i}
    // from entry i·blocks + j of σ(W_α p + b_α).
    torch::Tensor us = torch::silu(mixer.uProj->forward(p[b]));
    torch::Tensor alpha = torch::sigmoid(mixer.alphaProj->forward(p[b]));
    torch::Tensor q = torch::zeros({d, d}, f64());
    for (int64_t j = 0; j < blocks; ++j) {
      torch::Tensor qj = torch::eye(k, f64());
      for (int64_t i = 0; i < rank; ++i) {
        torch::Tensor u = us.narrow(0, i * d + j * k, k);
        u = (u / u.norm()).unsqueeze(1);
        torch::Tensor h = torch::eye(k, f64()) -
                          2 * alpha[i * blocks + j] * torch::matmul(u, u.t());
        qj = torch::matmul(h, qj);
      }
      q.narrow(0, j * k, k).narrow(1, j * k, k) = qj;
    }
    EXPECT_LT(relativeError(out[b], torch::matmul(q, v[b])), 1e-12);
    EXPECT_LE(out[b].norm().item<double>(),
              v[b].norm().item<double>() * (1 + 1e-12));
  }
}

TEST(Mixers, OneBlockHouseholderIsTheHouseholderProduct) {
  const int64_t d = 10, rank = 3;
  BlockHouseholderMixer block(6, d, rank, 1, MixerActivation::Silu, 1e-5,
                              torch::kFloat64);
  HouseholderMixer plain(6, d, rank, /*sum=*/false, MixerActivation::Silu, 1e-5,
                         torch::kFloat64);
  {
    torch::NoGradGuard noGrad;
    for (auto &[from, to] : {std::pair{block.uProj, plain.uProj},
                             std::pair{block.alphaProj, plain.alphaProj}}) {
      to->weightV.copy_(from->weightV);
      to->weightG.copy_(from->weightG);
      if (from->bias.defined())
        to->bias.copy_(from->bias);
    }
  }
  torch::Tensor p = torch::randn({3, 5, 6}, f64());
  torch::Tensor v = torch::randn({3, 5, d}, f64());
  EXPECT_LT(relativeError(block.forward(p, v), plain.forward(p, v)), 1e-13);
}

TEST(Mixers, MakeMixerRejectsBadShapes) {
  auto make = [](const std::string &name, int64_t d, int64_t rank) {
    return makeMixer(name, 4, d, rank, KroneckerNorm::Row,
                     MixerActivation::Silu, 1e-5, torch::kFloat32);
  };
  EXPECT_THROW(make("monarch", 12, 4), std::invalid_argument);
  EXPECT_THROW(make("householder", 8, 0), std::invalid_argument);
  EXPECT_THROW(make("mixture", 8, 1), std::invalid_argument);
  EXPECT_THROW(makeMixer("block_householder", 4, 12, 1, KroneckerNorm::Row,
                         MixerActivation::Silu, 1e-5, torch::kFloat32, 5),
               std::invalid_argument);
  EXPECT_NE(makeMixer("block_householder", 4, 12, 2, KroneckerNorm::Row,
                      MixerActivation::Silu, 1e-5, torch::kFloat32, 3),
            nullptr);
  EXPECT_NE(make("selective_dense", 8, 1), nullptr);
  try {
    make("butterfly", 8, 1);
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument &error) {
    EXPECT_NE(std::string(error.what()).find("unknown mixer 'butterfly'"),
              std::string::npos);
  }
  EXPECT_NE(make("identity", 8, 1), nullptr);
}

} // namespace
