//===- Mixers.cpp - Channel mixers of FP-RNNs -------------------*- C++ -*-===//
//
// docs/spec.md §2. Every mixer computes its per-token parameters from p with
// weight-normalised projections, then applies Q(p) to v without forming a
// d × d matrix (except the r × r blocks and m × m Kronecker factors).
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Reference/Mixers.h"

#include <cmath>
#include <stdexcept>

using namespace fp::rt::ref;

static torch::Tensor activate(const torch::Tensor &x,
                              MixerActivation activation) {
  return activation == MixerActivation::Silu ? torch::silu(x) : x;
}

/// Fills upper-triangular m × m matrices, row-major over the upper triangle,
/// from the last dimension of `packed` (m(m+1)/2 entries).
static torch::Tensor unpackUpperTriangular(const torch::Tensor &packed,
                                           int64_t m) {
  torch::Tensor indices = torch::triu_indices(
      m, m, 0, torch::TensorOptions(torch::kLong).device(packed.device()));
  torch::Tensor flat = indices[0] * m + indices[1];
  auto shape = packed.sizes().vec();
  shape.back() = m * m;
  torch::Tensor full =
      torch::zeros(shape, packed.options()).index_copy(-1, flat, packed);
  shape.back() = m;
  shape.push_back(m);
  return full.view(shape);
}

//===----------------------------------------------------------------------===//
// Householder / DPLR
//===----------------------------------------------------------------------===//

HouseholderMixer::HouseholderMixer(int64_t mIn, int64_t d, int64_t rank,
                                   bool sum, MixerActivation activation,
                                   double eps, torch::Dtype dtype)
    : d(d), rank(rank), sum(sum), activation(activation), eps(eps) {
  uProj = register_module(
      "u_proj", std::make_shared<WNLinear>(mIn, rank * d, false, dtype));
  alphaProj = register_module(
      "alpha_proj", std::make_shared<WNLinear>(mIn, rank, true, dtype));
}

std::pair<torch::Tensor, torch::Tensor>
HouseholderMixer::parameters(const torch::Tensor &p) {
  auto shape = p.sizes().vec();
  shape.back() = rank;
  shape.push_back(d);
  torch::Tensor u =
      l2Normalize(activate(uProj->forward(p), activation).view(shape), eps);
  torch::Tensor alpha = torch::sigmoid(alphaProj->forward(p));
  return {u, alpha};
}

torch::Tensor HouseholderMixer::forward(const torch::Tensor &p,
                                        const torch::Tensor &v) {
  auto [u, alpha] = parameters(p);
  torch::Tensor out = v;
  for (int64_t i = 0; i < rank; ++i) {
    torch::Tensor ui = u.select(-2, i);
    torch::Tensor ai = alpha.select(-1, i).unsqueeze(-1);
    // Householder: reflections apply in sequence to the running vector;
    // DPLR: every term projects the original v.
    const torch::Tensor &base = sum ? v : out;
    torch::Tensor dot = (ui * base).sum(-1, true);
    out = out - 2 * ai * dot * ui;
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Kronecker
//===----------------------------------------------------------------------===//

std::pair<int64_t, int64_t> KroneckerMixer::factorize(int64_t d) {
  int64_t root = static_cast<int64_t>(std::sqrt(static_cast<double>(d)));
  while ((root + 1) * (root + 1) <= d)
    ++root;
  while (root * root > d)
    --root;
  for (int64_t m1 = root; m1 >= 1; --m1)
    if (d % m1 == 0)
      return {m1, d / m1};
  return {1, d};
}

KroneckerMixer::KroneckerMixer(int64_t mIn, int64_t d, KroneckerNorm norm,
                               MixerActivation activation, double eps,
                               torch::Dtype dtype)
    : d(d), norm(norm), activation(activation), eps(eps) {
  std::tie(m1, m2) = factorize(d);
  int64_t packed = m1 * (m1 + 1) / 2 + m2 * (m2 + 1) / 2;
  thetaProj = register_module(
      "theta_proj", std::make_shared<WNLinear>(mIn, packed, false, dtype));
  gateProj = register_module(
      "gate_proj", std::make_shared<WNLinear>(mIn, m1 + m2, true, dtype));
}

torch::Tensor fp::rt::ref::powerIterationEigenvalue(const torch::Tensor &matrix,
                                                    int64_t d) {
  auto shape = matrix.sizes().vec();
  shape.pop_back();
  torch::Tensor w = torch::full(shape, 1.0 / std::sqrt(static_cast<double>(d)),
                                matrix.options());
  torch::Tensor a;
  auto apply = [&](const torch::Tensor &x) {
    return l2Normalize(torch::matmul(matrix, x.unsqueeze(-1)).squeeze(-1),
                       1e-12);
  };
  for (int step = 0; step < 16; ++step) {
    if (step % 2 == 0)
      a = apply(w);
    else
      w = apply(a);
  }
  return (a * torch::matmul(matrix, w.unsqueeze(-1)).squeeze(-1)).sum(-1);
}

std::pair<torch::Tensor, torch::Tensor>
KroneckerMixer::factors(const torch::Tensor &p) {
  int64_t p1 = m1 * (m1 + 1) / 2;
  torch::Tensor theta = activate(thetaProj->forward(p), activation);
  torch::Tensor gate = torch::sigmoid(gateProj->forward(p));
  auto factor = [&](const torch::Tensor &packed, int64_t m,
                    const torch::Tensor &scale) {
    torch::Tensor l = unpackUpperTriangular(packed, m);
    torch::Tensor s = torch::matmul(l, l.transpose(-1, -2));
    // Mode 'column-wise' of the reference normalises rows.
    s = s / s.norm(2, {-1}, true).clamp_min(eps);
    if (norm == KroneckerNorm::Spectral)
      s = s /
          (powerIterationEigenvalue(s, d) + eps).unsqueeze(-1).unsqueeze(-1);
    return scale.unsqueeze(-1) * s;
  };
  torch::Tensor u = factor(theta.narrow(-1, 0, p1), m1, gate.narrow(-1, 0, m1));
  torch::Tensor v = factor(theta.narrow(-1, p1, theta.size(-1) - p1), m2,
                           gate.narrow(-1, m1, m2));
  return {u, v};
}

torch::Tensor KroneckerMixer::forward(const torch::Tensor &p,
                                      const torch::Tensor &v) {
  auto [u, vf] = factors(p);
  auto shape = v.sizes().vec();
  shape.back() = m1;
  shape.push_back(m2);
  torch::Tensor x = v.reshape(shape);
  torch::Tensor mixed = torch::matmul(torch::matmul(u.transpose(-1, -2), x),
                                      vf.transpose(-1, -2));
  return v - 2 * mixed.reshape(v.sizes());
}

//===----------------------------------------------------------------------===//
// Monarch (block diagonal)
//===----------------------------------------------------------------------===//

static bool isPowerOfTwo(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

MonarchMixer::MonarchMixer(int64_t mIn, int64_t d, int64_t blockSize,
                           MixerActivation activation, double eps,
                           torch::Dtype dtype)
    : d(d), blockSize(blockSize), numBlocks(d / blockSize),
      activation(activation), eps(eps) {
  int64_t packed = numBlocks * blockSize * (blockSize + 1) / 2;
  thetaProj = register_module(
      "theta_proj", std::make_shared<WNLinear>(mIn, packed, false, dtype));
  alphaProj = register_module(
      "alpha_proj", std::make_shared<WNLinear>(mIn, numBlocks, true, dtype));
}

torch::Tensor MonarchMixer::forward(const torch::Tensor &p,
                                    const torch::Tensor &v) {
  auto shape = p.sizes().vec();
  shape.back() = numBlocks;
  shape.push_back(blockSize * (blockSize + 1) / 2);
  torch::Tensor theta = activate(thetaProj->forward(p), activation).view(shape);
  torch::Tensor l = unpackUpperTriangular(theta, blockSize);
  torch::Tensor blocks = torch::matmul(l, l.transpose(-1, -2));
  // Divide each block by its largest column norm (+ eps).
  torch::Tensor maxColumn = std::get<0>(blocks.norm(2, {-2}).max(-1));
  blocks = blocks / (maxColumn + eps).unsqueeze(-1).unsqueeze(-1);
  torch::Tensor alpha = torch::sigmoid(alphaProj->forward(p));
  auto vShape = v.sizes().vec();
  vShape.back() = numBlocks;
  vShape.push_back(blockSize);
  torch::Tensor vb = v.reshape(vShape);
  torch::Tensor pv = torch::matmul(blocks, vb.unsqueeze(-1)).squeeze(-1);
  return (vb - alpha.unsqueeze(-1) * pv).reshape(v.sizes());
}

//===----------------------------------------------------------------------===//
// Selective dense
//===----------------------------------------------------------------------===//

SelectiveDenseMixer::SelectiveDenseMixer(int64_t mIn, int64_t d,
                                         MixerActivation activation, double eps,
                                         torch::Dtype dtype, int64_t steps)
    : d(d), steps(steps), activation(activation), eps(eps) {
  thetaProj = register_module(
      "theta_proj",
      std::make_shared<WNLinear>(mIn, d * (d + 1) / 2, false, dtype));
}

std::pair<torch::Tensor, torch::Tensor>
SelectiveDenseMixer::matrix(const torch::Tensor &p) {
  torch::Tensor l =
      unpackUpperTriangular(activate(thetaProj->forward(p), activation), d);
  torch::Tensor s = torch::matmul(l, l.transpose(-1, -2));
  auto shape = s.sizes().vec();
  shape.pop_back();
  torch::Tensor w =
      torch::full(shape, 1.0 / std::sqrt(static_cast<double>(d)), s.options());
  torch::Tensor lambda;
  for (int64_t step = 0; step < steps; ++step) {
    w = torch::matmul(s, w.unsqueeze(-1)).squeeze(-1);
    lambda = w.norm(2, {-1}, /*keepdim=*/true);
    w = w / (lambda + eps);
  }
  return {s, lambda.squeeze(-1)};
}

torch::Tensor SelectiveDenseMixer::forward(const torch::Tensor &p,
                                           const torch::Tensor &v) {
  auto [s, lambda] = matrix(p);
  return torch::matmul(s, v.unsqueeze(-1)).squeeze(-1) /
         (lambda + eps).unsqueeze(-1);
}

//===----------------------------------------------------------------------===//
// Mixture
//===----------------------------------------------------------------------===//

MixtureMixer::MixtureMixer(int64_t mIn, int64_t d, int64_t factorCount,
                           MixerActivation activation, double eps,
                           torch::Dtype dtype) {
  for (int64_t i = 0; i < factorCount; ++i) {
    std::shared_ptr<Mixer> factor;
    if (i % 2 == 0)
      factor = std::make_shared<HouseholderMixer>(mIn, d, 1, /*sum=*/false,
                                                  activation, eps, dtype);
    else
      factor = std::make_shared<KroneckerMixer>(mIn, d, KroneckerNorm::Row,
                                                activation, eps, dtype);
    factors.push_back(register_module("m" + std::to_string(i), factor));
  }
}

torch::Tensor MixtureMixer::forward(const torch::Tensor &p,
                                    const torch::Tensor &v) {
  torch::Tensor out = v;
  for (const std::shared_ptr<Mixer> &factor : factors)
    out = factor->forward(p, out);
  return out;
}

//===----------------------------------------------------------------------===//
// Block Householder
//===----------------------------------------------------------------------===//

BlockHouseholderMixer::BlockHouseholderMixer(int64_t mIn, int64_t d,
                                             int64_t rank, int64_t blocks,
                                             MixerActivation activation,
                                             double eps, torch::Dtype dtype)
    : d(d), rank(rank), blocks(blocks), activation(activation), eps(eps) {
  uProj = register_module(
      "u_proj", std::make_shared<WNLinear>(mIn, rank * d, false, dtype));
  alphaProj = register_module(
      "alpha_proj",
      std::make_shared<WNLinear>(mIn, rank * blocks, true, dtype));
}

std::pair<torch::Tensor, torch::Tensor>
BlockHouseholderMixer::parameters(const torch::Tensor &p) {
  auto uShape = p.sizes().vec();
  uShape.back() = rank;
  uShape.push_back(blocks);
  uShape.push_back(d / blocks);
  torch::Tensor u =
      l2Normalize(activate(uProj->forward(p), activation).view(uShape), eps);
  auto alphaShape = p.sizes().vec();
  alphaShape.back() = rank;
  alphaShape.push_back(blocks);
  torch::Tensor alpha = torch::sigmoid(alphaProj->forward(p)).view(alphaShape);
  return {u, alpha};
}

torch::Tensor BlockHouseholderMixer::forward(const torch::Tensor &p,
                                             const torch::Tensor &v) {
  auto [u, alpha] = parameters(p);
  auto shape = v.sizes().vec();
  shape.back() = blocks;
  shape.push_back(d / blocks);
  torch::Tensor out = v.reshape(shape);
  for (int64_t i = 0; i < rank; ++i) {
    torch::Tensor ui = u.select(-3, i);
    torch::Tensor ai = alpha.select(-2, i).unsqueeze(-1);
    out = out - 2 * ai * (ui * out).sum(-1, true) * ui;
  }
  return out.reshape(v.sizes());
}

NonselectiveMixer::NonselectiveMixer(int64_t d, torch::Dtype dtype) {
  auto options = torch::TensorOptions().dtype(dtype);
  torch::Tensor weight = torch::empty({d, d}, options);
  initFanInUniform(weight, d);
  // PyTorch's right_inverse: base is the Q factor of the initial weight
  // with R's diagonal made positive, original is −I. The factorisation runs
  // in f64 (LAPACK has none in bf16).
  auto [q, r] = torch::linalg_qr(weight.to(torch::kFloat64));
  torch::Tensor signs = torch::sign(r.diagonal());
  signs.masked_fill_(signs.eq(0), 1);
  auto holder =
      register_module("weight", std::make_shared<torch::nn::Module>());
  base = holder->register_buffer("base", (q * signs.unsqueeze(0)).to(dtype));
  original = holder->register_parameter(
      "original", -torch::eye(d, torch::kFloat64).to(dtype));
}

torch::Tensor NonselectiveMixer::compute() const {
  torch::Tensor lower = original.tril();
  return torch::matmul(base, torch::matrix_exp(lower - lower.t()));
}

torch::Tensor NonselectiveMixer::matrix() {
  if (torch::GradMode::is_enabled())
    return compute();
  if (!cached.defined() || originalVersion != original._version() ||
      baseVersion != base._version() || originalData != original.data_ptr() ||
      baseData != base.data_ptr()) {
    cached = compute();
    originalVersion = original._version();
    baseVersion = base._version();
    originalData = original.data_ptr();
    baseData = base.data_ptr();
  }
  return cached;
}

torch::Tensor NonselectiveMixer::forward(const torch::Tensor &,
                                         const torch::Tensor &v) {
  return torch::matmul(v, matrix().t());
}

torch::Tensor IdentityMixer::forward(const torch::Tensor &,
                                     const torch::Tensor &v) {
  return v;
}

std::shared_ptr<Mixer> fp::rt::ref::makeMixer(const std::string &name,
                                              int64_t mIn, int64_t d,
                                              int64_t rank, KroneckerNorm norm,
                                              MixerActivation activation,
                                              double eps, torch::Dtype dtype,
                                              int64_t blocks) {
  if (name == "householder" || name == "dplr") {
    if (rank < 1)
      throw std::invalid_argument("mixer '" + name +
                                  "' needs a rank >= 1, got " +
                                  std::to_string(rank));
    return std::make_shared<HouseholderMixer>(mIn, d, rank, name == "dplr",
                                              activation, eps, dtype);
  }
  if (name == "kronecker")
    return std::make_shared<KroneckerMixer>(mIn, d, norm, activation, eps,
                                            dtype);
  if (name == "monarch") {
    if (!isPowerOfTwo(d) || !isPowerOfTwo(rank) || rank > d)
      throw std::invalid_argument(
          "mixer 'monarch' needs the channel width (" + std::to_string(d) +
          ") and the block size (rank " + std::to_string(rank) +
          ") to be powers of two with rank <= width");
    return std::make_shared<MonarchMixer>(mIn, d, rank, activation, eps, dtype);
  }
  if (name == "selective_dense")
    return std::make_shared<SelectiveDenseMixer>(mIn, d, activation, eps,
                                                 dtype);
  if (name == "mixture") {
    if (rank < 2)
      throw std::invalid_argument(
          "mixer 'mixture' needs at least 2 factors (rank), got " +
          std::to_string(rank));
    return std::make_shared<MixtureMixer>(mIn, d, rank, activation, eps, dtype);
  }
  if (name == "block_householder") {
    if (rank < 1)
      throw std::invalid_argument(
          "mixer 'block_householder' needs a rank >= 1, got " +
          std::to_string(rank));
    if (blocks < 1 || d % blocks != 0)
      throw std::invalid_argument(
          "mixer 'block_householder' needs a number of blocks that divides "
          "the channel width (" +
          std::to_string(d) + "), got " + std::to_string(blocks));
    return std::make_shared<BlockHouseholderMixer>(mIn, d, rank, blocks,
                                                   activation, eps, dtype);
  }
  if (name == "nonselective")
    return std::make_shared<NonselectiveMixer>(d, dtype);
  if (name == "identity")
    return std::make_shared<IdentityMixer>();
  throw std::invalid_argument(
      "unknown mixer '" + name +
      "'; expected householder, dplr, kronecker, monarch, selective_dense, "
      "mixture, block_householder, nonselective or identity");
}
