//===- Layers.h - Reference sequence-mixing layers --------------*- C++ -*-===//
//
// The block mixers of the residual stack, written from the spec: FP-Mamba
// (docs/spec.md §1, with the solver of §3 and the one-step gradient of §4),
// Mamba-1 (one pass, as mamba_ssm computes it) and the vector-state FP-RNN
// (§5.2). Each maps [B, T, D] to [B, T, D].
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_REFERENCE_LAYERS_H
#define FP_RUNTIME_REFERENCE_LAYERS_H

#include "fp/Runtime/Reference/FixedPointSolver.h"
#include "fp/Runtime/Reference/Mixers.h"
#include "fp/Runtime/Reference/SequenceModel.h"

namespace fp::rt::ref {

/// A sequence-mixing layer of the residual stack.
class BlockMixer : public torch::nn::Module {
public:
  virtual torch::Tensor forward(const torch::Tensor &u) = 0;

  /// Per-sample iterations of the last forward ([B] int64); undefined for a
  /// layer without a fixed point. On the CPU, except a compiled layer's after
  /// a CUDA call: on its device, written by the call's queued work.
  torch::Tensor lastIterations;
  /// Per-sample best relative residual ρ* of the last forward ([B]), where
  /// lastIterations is: NaN for a sample whose solve met a non-finite value
  /// (it diverged; docs/spec.md §3.3). A compiled layer's are float32.
  torch::Tensor lastResiduals;

  /// Overrides the training iteration cap (< 0: the configured one).
  void setTrainIterationCap(int64_t cap) { trainCap = cap; }

protected:
  /// Solves y = f(y) from y0 without gradient (recording lastIterations and
  /// lastResiduals),
  /// then applies f to the detached fixed point config.nBackwards times with
  /// autograd: the gradient flows through those applications only, never
  /// into y* (docs/spec.md §4).
  torch::Tensor
  solveThenApply(const std::function<torch::Tensor(const torch::Tensor &)> &f,
                 const torch::Tensor &y0, const ModelConfig &config);

  int64_t trainCap = -1;
};

/// The iteration-invariant part of an FP-Mamba layer (docs/spec.md §1.3).
struct FPMambaInvariants {
  /// x, z: [B, T, d]; delta = softplus(W_dt δ + b_dt): [B, T, d];
  /// bx, cx: [B, T, N]; A = −exp(A_log): [d, N].
  torch::Tensor x, z, delta, bx, cx, A;
};

/// FP-Mamba (Mamba-1 based), docs/spec.md §1.
class FPMambaLayer : public BlockMixer {
public:
  explicit FPMambaLayer(const ModelConfig &config);

  /// precompute → solve without gradient → ŷ = f(y*) (nBackwards times) →
  /// output head. Gradients flow through ŷ only, never into y*
  /// (docs/spec.md §4).
  torch::Tensor forward(const torch::Tensor &u) override;

  FPMambaInvariants precompute(const torch::Tensor &u);
  /// The fixed-point map f(y) of docs/spec.md §1.4.
  torch::Tensor applyMap(const torch::Tensor &y, const FPMambaInvariants &inv);
  /// The output head of docs/spec.md §1.5 applied to ŷ.
  torch::Tensor head(const torch::Tensor &yhat, const FPMambaInvariants &inv);

  ModelConfig config;
  int64_t d, dtRank;
  std::shared_ptr<Linear> inProj, xProj, dtProj, outProj;
  torch::Tensor convWeight, convBias, aLog, dSkip;
  std::shared_ptr<WNLinear> bcYProj, zYProj;
  std::shared_ptr<Mixer> mixer;
  std::shared_ptr<LayerNorm> outNorm;
};

/// Mamba-1 (docs/spec.md §5.4): one pass, short convolution, gate inside.
class MambaLayer : public BlockMixer {
public:
  explicit MambaLayer(const ModelConfig &config);
  torch::Tensor forward(const torch::Tensor &u) override;

  int64_t d, dtRank, dState;
  std::shared_ptr<Linear> inProj, xProj, dtProj, outProj;
  torch::Tensor convWeight, convBias, aLog, dSkip;
};

/// The iteration-invariant part of an FP-RNN layer.
struct FPRNNInvariants {
  torch::Tensor x, z, xMix, bx, lambda;
};

/// The vector-state FP-RNN (docs/spec.md §5.2):
/// f(h)_t = λ_t ⊙ f(h)_{t−1} + (1 − λ_t) ⊙ (Q(p)(b ⊙ x − h) + h).
class FPRNNLayer : public BlockMixer {
public:
  explicit FPRNNLayer(const ModelConfig &config);
  torch::Tensor forward(const torch::Tensor &u) override;

  FPRNNInvariants precompute(const torch::Tensor &u);
  torch::Tensor applyMap(const torch::Tensor &h, const FPRNNInvariants &inv);

  ModelConfig config;
  int64_t d;
  std::shared_ptr<Linear> ioProj, bProj, lambdaProj, cProj, outProj;
  /// [4, d, K] and [4, d]: the mix, b, λ and x convolutions.
  torch::Tensor convWeight, convBias, readoutConvWeight, readoutConvBias;
  std::shared_ptr<Mixer> mixer;
  std::shared_ptr<RMSNorm> outNorm;
};

/// Builds the block mixer `config.kind` names: fp_mamba, mamba or fp_rnn.
/// Throws std::invalid_argument for any other kind.
std::shared_ptr<BlockMixer> makeBlockMixer(const ModelConfig &config);

/// The solver settings of the reference for a model kind (docs/spec.md §3.4):
/// FP-Mamba's for "fp_mamba", FP-RNN's (η₀ = 1, no decay, q = 0.9) for
/// "fp_rnn".
SolverConfig referenceSolverConfig(const std::string &kind);

} // namespace fp::rt::ref

#endif // FP_RUNTIME_REFERENCE_LAYERS_H
