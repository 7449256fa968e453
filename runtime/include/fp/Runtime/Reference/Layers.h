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

/// What a layer carries from one chunk of a sequence to the next
/// (docs/streaming.md). Undefined tensors stand for the start of a sequence,
/// where each is zero.
struct ChunkState {
  /// The scan's state after the chunk's last token: [B, d, N] (FP-Mamba,
  /// Mamba), [B, H, P, N] (FP-Mamba2, Mamba-2); FP-RNN's recurrence state
  /// is `lastOutput`.
  torch::Tensor scan;
  /// The last row [B, d] of the map's output at the fixed point (ŷ): the
  /// next chunk's shifted iterate at its first token.
  torch::Tensor lastOutput;
  /// The last K − 1 inputs [B, K − 1, C] of the short convolution(s), and
  /// FP-RNN's readout convolution's.
  torch::Tensor convTail;
  torch::Tensor readoutTail;
  /// A compiled layer's states, in the order of its manifest's
  /// `chunk.states` (CompiledLayer::forwardChunk).
  std::vector<torch::Tensor> carried;
};

/// A sequence-mixing layer of the residual stack.
class BlockMixer : public torch::nn::Module {
public:
  virtual torch::Tensor forward(const torch::Tensor &u) = 0;

  /// The layer on the chunk u [B, T, D] of a sequence whose earlier tokens
  /// `state` summarises (a fresh state: the chunk starts the sequence);
  /// updates `state` to summarise the chunk too. Without gradient. Chunks of
  /// any lengths give forward()'s output on the whole sequence, to within
  /// what the solver's tolerance allows (a fixed point at token t depends on
  /// tokens ≤ t only); one token per chunk is the sequential solver.
  /// lastIterations are the chunk's. Throws std::logic_error for a layer
  /// that has no chunked form.
  virtual torch::Tensor forwardChunk(const torch::Tensor &u, ChunkState &state);

  /// The solver settings of a fixed-point layer; null for a layer without
  /// a fixed point.
  virtual SolverConfig *solverConfig() { return nullptr; }
  /// The layer's fixed-point map applied once to y [B, T, d] on the whole
  /// sequence u, without gradient: y = f(y) at the fixed point, so
  /// ‖f(y) − y‖ measures how far y is from it. Throws std::logic_error for a
  /// layer without a fixed point.
  virtual torch::Tensor applyMapOnce(const torch::Tensor &u,
                                     const torch::Tensor &y);

  /// Per-sample iterations of the last forward ([B] int64); undefined for a
  /// layer without a fixed point. On the CPU, except a compiled layer's after
  /// a CUDA call: on its device, written by the call's queued work.
  torch::Tensor lastIterations;
  /// Per-sample best relative residual ρ* of the last forward ([B]), where
  /// lastIterations is: NaN for a sample whose solve met a non-finite value
  /// (it diverged; docs/spec.md §3.3). A compiled layer's are float32.
  torch::Tensor lastResiduals;

  /// The map's output ŷ = f(y*) [B, T, d] of the last forwardChunk (before
  /// the layer's head); undefined for a layer without a fixed point.
  torch::Tensor lastSolution;

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
  /// bx, cx: [B, T, N]; A = −exp(A_log): [d, N]; xRaw: x before the short
  /// convolution.
  torch::Tensor x, z, delta, bx, cx, A, xRaw;
};

/// FP-Mamba (Mamba-1 based), docs/spec.md §1.
class FPMambaLayer : public BlockMixer {
public:
  explicit FPMambaLayer(const ModelConfig &config);

  /// precompute → solve without gradient → ŷ = f(y*) (nBackwards times) →
  /// output head. Gradients flow through ŷ only, never into y*
  /// (docs/spec.md §4).
  torch::Tensor forward(const torch::Tensor &u) override;

  torch::Tensor forwardChunk(const torch::Tensor &u,
                             ChunkState &state) override;
  SolverConfig *solverConfig() override { return &config.solver; }
  torch::Tensor applyMapOnce(const torch::Tensor &u,
                             const torch::Tensor &y) override;

  /// `carry`: the chunk's ChunkState (its convolution tail), or null for a
  /// whole sequence.
  FPMambaInvariants precompute(const torch::Tensor &u,
                               const ChunkState *carry = nullptr);
  /// The fixed-point map f(y) of docs/spec.md §1.4; on a chunk, from the
  /// state `carry`, writing the scan's final state to `finalScan`.
  torch::Tensor applyMap(const torch::Tensor &y, const FPMambaInvariants &inv,
                         const ChunkState *carry = nullptr,
                         torch::Tensor *finalScan = nullptr);
  /// The output head of docs/spec.md §1.5 applied to ŷ.
  torch::Tensor head(const torch::Tensor &yhat, const FPMambaInvariants &inv,
                     const ChunkState *carry = nullptr);

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
  torch::Tensor forwardChunk(const torch::Tensor &u,
                             ChunkState &state) override;

  int64_t d, dtRank, dState;
  std::shared_ptr<Linear> inProj, xProj, dtProj, outProj;
  torch::Tensor convWeight, convBias, aLog, dSkip;

private:
  /// forward() (`carry` null) or forwardChunk() from `carry`, updating it.
  torch::Tensor run(const torch::Tensor &u, ChunkState *carry);
};

/// The iteration-invariant part of an FP-Mamba2 layer.
struct FPMamba2Invariants {
  /// x, z: [B, T, d]; dt = softplus(dt_raw + dt_bias): [B, T, H];
  /// bx, cx: [B, T, G, N]; A = −exp(A_log): [H]; xbcRaw: [x; B; C] before
  /// the short convolution.
  torch::Tensor x, z, dt, bx, cx, A, xbcRaw;
};

/// The mixer's parameter input p (docs/spec.md §1.4): [x; ȳ] (mixerHDep),
/// x + ȳ (mixerHDep and symmMixer) or x.
torch::Tensor mixerParameterInput(const torch::Tensor &x,
                                  const torch::Tensor &yBar,
                                  const ModelConfig &config);

/// FP-Mamba's output head (docs/spec.md §1.5) on ŷ:
/// W_out(silu(z_t + W_zy ŷ_{t−1}) ⊙ ŷ_t), or W_out ŷ without `zYProj`
/// (gluInLoop). On a chunk, ŷ_{−1} is `carry`'s last output.
torch::Tensor gatedOutputHead(const torch::Tensor &yhat, const torch::Tensor &z,
                              WNLinear *zYProj, Linear &outProj,
                              const ChunkState *carry);

/// Mamba-2's input side, shared by FP-Mamba2 and Mamba-2 (docs/spec.md
/// §5.1): in_proj to [z; x; B; C; dt], the optional short convolution with
/// SiLU over [x; B; C], and the per-head dt_bias, A_log and D.
class SsdBlock : public BlockMixer {
public:
  /// What in_proj and the convolution give: z, x [B, T, d]; xbcRaw, [x; B;
  /// C] before the convolution; B, C [B, T, G, N]; dt = softplus(dt_raw +
  /// dt_bias) [B, T, H].
  struct Inputs {
    torch::Tensor z, xbcRaw, x, b, c, dt;
  };

  SsdBlock(const ModelConfig &config, bool shortConv);
  /// The inputs of u; the convolution continues `convTail` (undefined: a
  /// sequence's start).
  Inputs project(const torch::Tensor &u, const torch::Tensor &convTail);

  int64_t d, heads, groups, dState;
  bool shortConv;
  std::shared_ptr<Linear> inProj;
  torch::Tensor convWeight, convBias, dtBias, aLog, dSkip;
};

/// FP-Mamba2 (docs/spec.md §5.1, the intended design; decisions in
/// docs/reference.md): Mamba-2's multi-head SSD scan in the fixed-point map,
/// its input mixed by Q(p), B and C normalised per group, and the gated
/// RMSNorm (norm after gate) on each iterate.
class FPMamba2Layer : public SsdBlock {
public:
  explicit FPMamba2Layer(const ModelConfig &config);
  torch::Tensor forward(const torch::Tensor &u) override;
  torch::Tensor forwardChunk(const torch::Tensor &u,
                             ChunkState &state) override;
  SolverConfig *solverConfig() override { return &config.solver; }
  torch::Tensor applyMapOnce(const torch::Tensor &u,
                             const torch::Tensor &y) override;
  FPMamba2Invariants precompute(const torch::Tensor &u,
                                const ChunkState *carry = nullptr);
  torch::Tensor applyMap(const torch::Tensor &y, const FPMamba2Invariants &inv,
                         const ChunkState *carry = nullptr,
                         torch::Tensor *finalScan = nullptr);
  torch::Tensor head(const torch::Tensor &yhat, const FPMamba2Invariants &inv,
                     const ChunkState *carry = nullptr);
  ModelConfig config;
  std::shared_ptr<Linear> outProj;
  std::shared_ptr<WNLinear> bcYProj, zYProj;
  std::shared_ptr<Mixer> mixer;
  std::shared_ptr<RMSNorm> norm;
};

/// Mamba-2 (docs/spec.md §5.4), as mamba_ssm's Mamba2 block computes it:
/// in_proj to [z; x; B; C; dt], the short convolution with SiLU over
/// [x; B; C], the SSD scan with skip D, the gated RMSNorm (norm after
/// gate, per group of d / G channels) and out_proj.
class Mamba2Layer : public SsdBlock {
public:
  explicit Mamba2Layer(const ModelConfig &config);
  torch::Tensor forward(const torch::Tensor &u) override;
  torch::Tensor forwardChunk(const torch::Tensor &u,
                             ChunkState &state) override;
  double eps;
  std::shared_ptr<Linear> outProj;
  std::shared_ptr<RMSNorm> norm;

private:
  torch::Tensor run(const torch::Tensor &u, ChunkState *carry);
};

/// The iteration-invariant part of an FP-RNN layer.
struct FPRNNInvariants {
  /// xRaw: the projection before the short convolutions.
  torch::Tensor x, z, xMix, bx, lambda, xRaw;
};

/// The vector-state FP-RNN (docs/spec.md §5.2):
/// f(h)_t = λ_t ⊙ f(h)_{t−1} + (1 − λ_t) ⊙ (Q(p)(b ⊙ x − h) + h).
class FPRNNLayer : public BlockMixer {
public:
  explicit FPRNNLayer(const ModelConfig &config);
  torch::Tensor forward(const torch::Tensor &u) override;
  torch::Tensor forwardChunk(const torch::Tensor &u,
                             ChunkState &state) override;
  SolverConfig *solverConfig() override { return &config.solver; }
  torch::Tensor applyMapOnce(const torch::Tensor &u,
                             const torch::Tensor &y) override;

  FPRNNInvariants precompute(const torch::Tensor &u,
                             const ChunkState *carry = nullptr);
  torch::Tensor applyMap(const torch::Tensor &h, const FPRNNInvariants &inv,
                         const ChunkState *carry = nullptr);
  /// The gated readout of ŷ.
  torch::Tensor readout(const torch::Tensor &yhat, const FPRNNInvariants &inv,
                        const ChunkState *carry = nullptr);

  ModelConfig config;
  int64_t d;
  std::shared_ptr<Linear> ioProj, bProj, lambdaProj, cProj, outProj;
  /// [4, d, K] and [4, d]: the mix, b, λ and x convolutions.
  torch::Tensor convWeight, convBias, readoutConvWeight, readoutConvBias;
  std::shared_ptr<Mixer> mixer;
  std::shared_ptr<RMSNorm> outNorm;
};

/// config.kroneckerNorm ("row" or "spectral"), or `kindDefault` when it is
/// empty; throws std::invalid_argument for another value.
KroneckerNorm resolveKroneckerNorm(const ModelConfig &config,
                                   KroneckerNorm kindDefault);

/// Builds the block mixer `config.kind` names: fp_mamba, mamba, fp_mamba2,
/// mamba2 or fp_rnn.
/// Throws std::invalid_argument for any other kind.
std::shared_ptr<BlockMixer> makeBlockMixer(const ModelConfig &config);

/// The solver settings of the reference for a model kind (docs/spec.md §3.4):
/// FP-Mamba's for "fp_mamba", FP-Mamba2's (FP-Mamba's with q = 0.9) for
/// "fp_mamba2", FP-RNN's (η₀ = 1, no decay, q = 0.9) for "fp_rnn".
SolverConfig referenceSolverConfig(const std::string &kind);

} // namespace fp::rt::ref

#endif // FP_RUNTIME_REFERENCE_LAYERS_H
