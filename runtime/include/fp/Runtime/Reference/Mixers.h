//===- Mixers.h - Channel mixers of FP-RNNs ---------------------*- C++ -*-===//
//
// The channel mixers Q(p) of docs/spec.md §2, applied as Q(p)·v per token:
// Householder products, DPLR, Kronecker (row or spectral normalisation),
// block-diagonal "Monarch", selective dense, the Householder/Kronecker
// mixture, block Householder and identity. Parameter projections from the
// mixer input p are weight-normalised linears, as in the reference. Where
// the spec leaves a choice open (selective dense, mixture) the mixers follow
// the DSL versions in models/lib/, which state it; block Householder is the
// DSL's own mixer (models/lib/block_householder.fp).
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_REFERENCE_MIXERS_H
#define FP_RUNTIME_REFERENCE_MIXERS_H

#include "fp/Runtime/Reference/Primitives.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fp::rt::ref {

/// Q(p)·v for p [..., mIn] and v [..., d].
class Mixer : public torch::nn::Module {
public:
  virtual torch::Tensor forward(const torch::Tensor &p,
                                const torch::Tensor &v) = 0;
};

/// Elementwise activation applied to the mixer's vector parameters.
enum class MixerActivation { Silu, Identity };

/// Householder product (docs/spec.md §2.1) or, with `sum`, DPLR (§2.2), rank r:
/// u_i = nrm(act(W_u p)_i), α_i = σ(W_α p + b_α)_i;
/// product: v ← v − 2 α_i u_i (u_iᵀ v) for i = 0..r−1;
/// sum:     Q v = v − 2 Σ_i α_i u_i (u_iᵀ v).
class HouseholderMixer : public Mixer {
public:
  HouseholderMixer(int64_t mIn, int64_t d, int64_t rank, bool sum,
                   MixerActivation activation, double eps, torch::Dtype dtype);
  torch::Tensor forward(const torch::Tensor &p,
                        const torch::Tensor &v) override;

  /// The unit vectors [..., r, d] and strengths [..., r] for input p.
  std::pair<torch::Tensor, torch::Tensor> parameters(const torch::Tensor &p);

  int64_t d, rank;
  bool sum;
  MixerActivation activation;
  double eps;
  std::shared_ptr<WNLinear> uProj, alphaProj;
};

/// How Kronecker factors are normalised (docs/spec.md §2.3, §10.1).
enum class KroneckerNorm { Row, Spectral };

/// Kronecker mixer (docs/spec.md §2.3): Q = I − 2 (Uᵀ ⊗ V) with
/// U = diag(γ₁) S₁, V = diag(γ₂) S₂, S_k = L_k L_kᵀ normalised by rows or
/// spectrally.
class KroneckerMixer : public Mixer {
public:
  KroneckerMixer(int64_t mIn, int64_t d, KroneckerNorm norm,
                 MixerActivation activation, double eps, torch::Dtype dtype);
  torch::Tensor forward(const torch::Tensor &p,
                        const torch::Tensor &v) override;

  /// The factors U [..., m1, m1] and V [..., m2, m2] for input p.
  std::pair<torch::Tensor, torch::Tensor> factors(const torch::Tensor &p);

  /// d = m1 · m2 with m1 the largest divisor of d not above ⌊√d⌋.
  static std::pair<int64_t, int64_t> factorize(int64_t d);

  int64_t d, m1, m2;
  KroneckerNorm norm;
  MixerActivation activation;
  double eps;
  std::shared_ptr<WNLinear> thetaProj, gateProj;
};

/// The reference's power-iteration estimate of the dominant eigenvalue of
/// each matrix in `matrix` [..., m, m] (16 steps from 𝟙/√d, docs/spec.md §2.3).
torch::Tensor powerIterationEigenvalue(const torch::Tensor &matrix, int64_t d);

/// Block-diagonal mixer ("monarch", docs/spec.md §2.4): blocks of size r,
/// out_c = v_c − α_c P_c v_c with P_c = L_c L_cᵀ / (max column norm + eps).
class MonarchMixer : public Mixer {
public:
  MonarchMixer(int64_t mIn, int64_t d, int64_t blockSize,
               MixerActivation activation, double eps, torch::Dtype dtype);
  torch::Tensor forward(const torch::Tensor &p,
                        const torch::Tensor &v) override;

  int64_t d, blockSize, numBlocks;
  MixerActivation activation;
  double eps;
  std::shared_ptr<WNLinear> thetaProj, alphaProj;
};

/// Selective dense mixer (docs/spec.md §2.4, FP-RNN only): S = L Lᵀ from
/// d(d+1)/2 projected entries (upper triangle, row-major), Q = S / (λ̂ + eps)
/// with λ̂ from `steps` power-iteration steps w ← S w, λ̂ = ‖w‖,
/// w ← w / (λ̂ + eps) started at 𝟙/√d (models/lib/selective_dense.fp);
/// output Q v, no I −.
class SelectiveDenseMixer : public Mixer {
public:
  SelectiveDenseMixer(int64_t mIn, int64_t d, MixerActivation activation,
                      double eps, torch::Dtype dtype, int64_t steps = 32);
  torch::Tensor forward(const torch::Tensor &p,
                        const torch::Tensor &v) override;

  /// The matrices S [..., d, d] and the eigenvalue estimates λ̂ [...].
  std::pair<torch::Tensor, torch::Tensor> matrix(const torch::Tensor &p);

  int64_t d, steps;
  MixerActivation activation;
  double eps;
  std::shared_ptr<WNLinear> thetaProj;
};

/// Mixture mixer (docs/spec.md §2.4, FP-RNN only): the product of `factorCount`
/// mixers alternating between a one-reflection Householder mixer (even index)
/// and a row-normalised Kronecker mixer (odd index), applied in index order,
/// Q = M_{r−1} ⋯ M_0, all reading the same p. The factors are submodules
/// "m0", "m1", ... (models/lib/mixture.fp).
class MixtureMixer : public Mixer {
public:
  MixtureMixer(int64_t mIn, int64_t d, int64_t factorCount,
               MixerActivation activation, double eps, torch::Dtype dtype);
  torch::Tensor forward(const torch::Tensor &p,
                        const torch::Tensor &v) override;

  std::vector<std::shared_ptr<Mixer>> factors;
};

/// Block Householder mixer (models/lib/block_householder.fp): the d channels
/// split into `blocks` blocks of k = d / blocks, each with its own product of
/// r reflections, Q = diag(Q_0, …, Q_{blocks−1}), Q_j = H_{j,r−1} ⋯ H_{j,0},
/// H_{j,i} = I − 2 α_{j,i} u_{j,i} u_{j,i}ᵀ with
/// u_{j,i} = nrm(act(W_u p)[i·d + j·k : i·d + (j+1)·k]) and
/// α_{j,i} = σ(W_α p + b_α)[i·blocks + j]. One block is the Householder
/// mixer of docs/spec.md §2.1.
class BlockHouseholderMixer : public Mixer {
public:
  BlockHouseholderMixer(int64_t mIn, int64_t d, int64_t rank, int64_t blocks,
                        MixerActivation activation, double eps,
                        torch::Dtype dtype);
  torch::Tensor forward(const torch::Tensor &p,
                        const torch::Tensor &v) override;

  /// The unit vectors [..., r, blocks, k] and strengths [..., r, blocks].
  std::pair<torch::Tensor, torch::Tensor> parameters(const torch::Tensor &p);

  int64_t d, rank, blocks;
  MixerActivation activation;
  double eps;
  std::shared_ptr<WNLinear> uProj, alphaProj;
};

/// nonselective (docs/spec.md §2.4): Q = W, one orthogonal d × d matrix for
/// every token, under PyTorch's orthogonal parametrisation (the matrix
/// exponential with trivialisation): W = base · exp(L − Lᵀ), L the lower
/// triangle (diagonal included) of the trained `original`. At
/// initialisation `original` = −I, so the exponent is 0 and W = base, the
/// Q factor (signs fixed by R's diagonal) of a default Linear weight.
/// Parameters `weight.original` [d, d] and buffer `weight.base` [d, d].
class NonselectiveMixer : public Mixer {
public:
  NonselectiveMixer(int64_t d, torch::Dtype dtype);
  torch::Tensor forward(const torch::Tensor &p,
                        const torch::Tensor &v) override;
  /// W, with autograd's graph when gradients are recorded; without, the
  /// matrix computed once per version of `original` and `base` (the solver's
  /// iterations share it).
  torch::Tensor matrix();

  torch::Tensor original, base;

private:
  torch::Tensor compute() const;
  torch::Tensor cached;
  int64_t originalVersion = -1, baseVersion = -1;
  const void *originalData = nullptr, *baseData = nullptr;
};

/// Q = I.
class IdentityMixer : public Mixer {
public:
  torch::Tensor forward(const torch::Tensor &p,
                        const torch::Tensor &v) override;
};

/// Builds a mixer by name: householder | dplr | kronecker | monarch |
/// selective_dense | mixture | block_householder | nonselective | identity.
/// `rank` is the number of reflections (householder, dplr, block_householder),
/// the block size (monarch) or the number of factors (mixture); `blocks` is
/// block_householder's number of channel blocks. Throws
/// std::invalid_argument for an unknown name or a shape it cannot take.
std::shared_ptr<Mixer> makeMixer(const std::string &name, int64_t mIn,
                                 int64_t d, int64_t rank, KroneckerNorm norm,
                                 MixerActivation activation, double eps,
                                 torch::Dtype dtype, int64_t blocks = 1);

} // namespace fp::rt::ref

#endif // FP_RUNTIME_REFERENCE_MIXERS_H
