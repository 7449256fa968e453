//===- Primitives.h - Eager building blocks of the reference ----*- C++ -*-===//
//
// The tensor operations the reference models are written with, each a direct
// transcription of the spec's math (docs/spec.md §0, §1): time shift, L2
// normalisation with a clamp, Mamba's softplus, depthwise causal convolution,
// the selective scan and the first-order linear recurrence, and the
// weight-normalised linear layer. Everything is differentiable with autograd
// and works in any floating dtype.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_REFERENCE_PRIMITIVES_H
#define FP_RUNTIME_REFERENCE_PRIMITIVES_H

#include <torch/torch.h>

namespace fp::rt::ref {

/// `result[:, t] = x[:, t − offset]` inside [0, T), zero elsewhere: the
/// causal shift along dimension 1 (time) for offset = 1.
torch::Tensor shiftTime(const torch::Tensor &x, int64_t offset = 1);

/// `x / max(‖x‖₂, eps)` over the last dimension (F.normalize semantics).
torch::Tensor l2Normalize(const torch::Tensor &x, double eps);

/// softplus with Mamba's threshold: x itself for x > 20.
torch::Tensor mambaSoftplus(const torch::Tensor &x);

/// Depthwise causal convolution of x [B, T, C] with weight [C, K] and an
/// optional bias [C]; weight[:, K−1] multiplies the current token.
torch::Tensor causalConv(const torch::Tensor &x, const torch::Tensor &weight,
                         const torch::Tensor &bias);

/// Mamba-1's selective scan (docs/spec.md §1.4) with S_{−1} = 0:
///   S_t = exp(Δ_t ⊗ A) ⊙ S_{t−1} + (Δ_t ⊙ u_t) ⊗ B_t
///   y_t = S_t C_t + D ⊙ u_t
/// u, delta: [B, T, d]; A: [d, N]; Bm, Cm: [B, T, N]; D: [d] or undefined.
/// On CUDA tensors, where the build has the CUDA kernels
/// (haveCudaScanKernels()), selectiveScanKernels; elsewhere
/// selectiveScanLoop.
torch::Tensor selectiveScan(const torch::Tensor &u, const torch::Tensor &delta,
                            const torch::Tensor &A, const torch::Tensor &Bm,
                            const torch::Tensor &Cm, const torch::Tensor &D);

/// selectiveScan as a loop over time in LibTorch ops, on any device: the
/// numeric oracle, with autograd's gradients. A chunk of a longer sequence
/// starts from `initial` S_{−1} [B, d, N] (undefined: zeros), and `final`,
/// when given, receives S_{T−1}.
torch::Tensor selectiveScanLoop(const torch::Tensor &u,
                                const torch::Tensor &delta,
                                const torch::Tensor &A, const torch::Tensor &Bm,
                                const torch::Tensor &Cm, const torch::Tensor &D,
                                const torch::Tensor &initial = {},
                                torch::Tensor *final = nullptr);

/// selectiveScan as the reference code runs it on CUDA (mamba_ssm's
/// selective_scan_cuda): one scan kernel forward and one backward pass under
/// an autograd function, here the runtime's kernels of fp.selective_scan
/// (fp::host's on CPU tensors, fp::cuda's on CUDA tensors), with the D ⊙ u
/// term in LibTorch ops. bf16 and f16 operands compute in f32, as that
/// kernel does, and the result has u's dtype. Throws std::runtime_error for
/// CUDA tensors where !haveCudaScanKernels().
torch::Tensor
selectiveScanKernels(const torch::Tensor &u, const torch::Tensor &delta,
                     const torch::Tensor &A, const torch::Tensor &Bm,
                     const torch::Tensor &Cm, const torch::Tensor &D);

/// Whether this build runs selectiveScanKernels on CUDA tensors: LibTorch
/// with CUDA and nvcc at build time.
bool haveCudaScanKernels();

/// Mamba-2's SSD scan (docs/spec.md §5.1) per head h of group g(h) =
/// h / (H / G), with a scalar decay per head:
///   S_t[h] = exp(Δ_t[h] a_h) S_{t−1}[h] + Δ_t[h] · x_t[h] ⊗ B_t[g(h)]
///   y_t[h] = S_t[h] C_t[g(h)] + D_h x_t[h]
/// x: [B, T, H, P]; dt (Δ, after the softplus): [B, T, H]; a: [H];
/// Bm, Cm: [B, T, G, N]; D: [H] or undefined; the state S [B, H, P, N]
/// starts from `initial` (undefined: zeros) and `final`, when given,
/// receives S_{T−1}. Computed in chunks of `chunk` tokens, each by its
/// quadratic (attention-like) form plus the state passed between chunks,
/// in LibTorch ops with autograd's gradients; equal to ssdScanLoop up to
/// rounding.
torch::Tensor ssdScan(const torch::Tensor &x, const torch::Tensor &dt,
                      const torch::Tensor &a, const torch::Tensor &Bm,
                      const torch::Tensor &Cm, const torch::Tensor &D,
                      const torch::Tensor &initial = {},
                      torch::Tensor *final = nullptr, int64_t chunk = 64);

/// ssdScan as a loop over time: the numeric oracle of the tests.
torch::Tensor ssdScanLoop(const torch::Tensor &x, const torch::Tensor &dt,
                          const torch::Tensor &a, const torch::Tensor &Bm,
                          const torch::Tensor &Cm, const torch::Tensor &D,
                          const torch::Tensor &initial = {},
                          torch::Tensor *final = nullptr);

/// h_t = a_t ⊙ h_{t−1} + b_t along dimension 1 from h_{−1} = `initial`
/// [B, ...] (undefined: 0).
torch::Tensor linearRecurrence(const torch::Tensor &a, const torch::Tensor &b,
                               const torch::Tensor &initial = {});

/// `previous` [B, ...] followed by x's rows but the last: shiftTime(x, 1)
/// for a chunk whose sequence had `previous` before it (undefined: zeros).
torch::Tensor shiftTimeAfter(const torch::Tensor &x,
                             const torch::Tensor &previous);

/// causalConv of a chunk x [B, T, C] whose sequence had `tail` [B, K−1, C]
/// before it (undefined: zeros, as at a sequence's start).
torch::Tensor causalConvAfter(const torch::Tensor &x,
                              const torch::Tensor &weight,
                              const torch::Tensor &bias,
                              const torch::Tensor &tail);

/// The last `rows` rows of `tail` (undefined: zeros) followed by x [B, T, C]:
/// what a chunk leaves for causalConvAfter of the next.
torch::Tensor lastRows(const torch::Tensor &tail, const torch::Tensor &x,
                       int64_t rows);

/// PyTorch's default Linear initialisation: U(±1/√fanIn).
void initFanInUniform(torch::Tensor &tensor, int64_t fanIn);

/// A weight-normalised linear map (docs/spec.md §0): W_i = g_i · V_i / ‖V_i‖₂,
/// with trainable `weight_g` [out] and `weight_v` [out, in] and an optional
/// `bias` [out]. Initialised as PyTorch's weight_norm of a default Linear.
class WNLinear : public torch::nn::Module {
public:
  WNLinear(int64_t inFeatures, int64_t outFeatures, bool withBias,
           torch::Dtype dtype);

  /// The effective weight [out, in].
  torch::Tensor weight() const;
  torch::Tensor forward(const torch::Tensor &x) const;

  torch::Tensor weightG, weightV, bias;
};

/// A bias-free linear map with the default initialisation, parameter
/// `weight` [out, in].
class Linear : public torch::nn::Module {
public:
  Linear(int64_t inFeatures, int64_t outFeatures, torch::Dtype dtype,
         bool withBias = false);
  torch::Tensor forward(const torch::Tensor &x) const;

  torch::Tensor weight, bias;
  /// Keeps its bias when the LM wrapper zeroes Linear biases (Mamba's dt
  /// bias, docs/spec.md §1.2).
  bool keepBiasInit = false;
};

/// RMSNorm over the last dimension with a `weight` parameter (ones).
class RMSNorm : public torch::nn::Module {
public:
  RMSNorm(int64_t features, double eps, torch::Dtype dtype);
  torch::Tensor forward(const torch::Tensor &x) const;

  torch::Tensor weight;
  double eps;
};

/// LayerNorm over the last dimension with `weight` (ones) and `bias` (zeros).
class LayerNorm : public torch::nn::Module {
public:
  LayerNorm(int64_t features, double eps, torch::Dtype dtype);
  torch::Tensor forward(const torch::Tensor &x) const;

  torch::Tensor weight, bias;
  double eps;
};

/// Registers `weight` [C, K] and `bias` [C] of a depthwise causal
/// convolution on a fresh submodule `name` of `owner`, with PyTorch's Conv1d
/// initialisation U(±1/√K).
std::pair<torch::Tensor, torch::Tensor>
registerCausalConv(torch::nn::Module &owner, const std::string &name,
                   int64_t channels, int64_t kernel, torch::Dtype dtype);

/// Mamba's dt bias initialisation (docs/spec.md §1.2): softplus⁻¹ of
/// clamp(exp(U(log dtMin, log dtMax)), floor).
torch::Tensor initDtBias(int64_t channels, double dtMin, double dtMax,
                         double floor, torch::Dtype dtype);

/// Mamba's step-size projection `dt_proj` (rank → channels), registered on
/// `owner`: weight U(±rank^−1/2), and the dt bias of initDtBias with
/// dt ∈ [1e-3, 1e-1], floor 1e-4, kept by the LM wrapper's bias reset.
std::shared_ptr<Linear> registerDtProjection(torch::nn::Module &owner,
                                             int64_t rank, int64_t channels,
                                             torch::Dtype dtype);

/// S4D-real `A_log` [channels, states]: log(n + 1), so A = −(1..N).
torch::Tensor initALog(int64_t channels, int64_t states, torch::Dtype dtype);

} // namespace fp::rt::ref

#endif // FP_RUNTIME_REFERENCE_PRIMITIVES_H
