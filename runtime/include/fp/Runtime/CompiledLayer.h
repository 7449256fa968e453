//===- CompiledLayer.h - LibTorch modules over a model.so -------*- C++ -*-===//
//
// CompiledLayer is a torch::nn::Module for one instance of one layer of a
// loaded model library: it owns the layer's parameters (created from the
// manifest's initialisers) and its forward calls the library's entry point
// through the C ABI of ModelABI.h. CompiledModel assembles the manifest's
// model stack around such layers the way the reference LanguageModel does
// (docs/spec.md §6): embedding, pre-norm residual blocks, final norm, tied
// head.
//
// Compiled layers train: when autograd must differentiate a forward (grad
// mode on and the input or a parameter requiring grad), the forward also
// fills the ABI's saved buffer and the output's grad_fn is a node that calls
// the library's derived backward (docs/backward.md) for the input's and
// every parameter's gradient. That needs a library compiled with
// `fpc --backward` for the input's target; a forward-only library refuses
// such a forward with an error instead of returning an output without a
// gradient.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_COMPILEDLAYER_H
#define FP_RUNTIME_COMPILEDLAYER_H

#include "fp/Runtime/ModelLibrary.h"
#include "fp/Runtime/Reference/Layers.h"

#include <torch/torch.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fp::rt {

/// Opens the model library at `path` (ModelLibrary::open, which throws
/// LoadError) for sharing between the layers and models built on it.
std::shared_ptr<const ModelLibrary> loadModelLibrary(const std::string &path);

/// The element type of the ABI for a tensor dtype; throws
/// std::invalid_argument for a dtype the ABI has none for.
fp_dtype toAbiDType(torch::Dtype dtype);

/// Per-call solver overrides that leave every compiled default in place.
fp_solver_overrides keepCompiledSolver();

/// One instance of one layer of a model library, as a module. Its
/// parameters are registered under the manifest's names, the dots becoming
/// submodules ("mixer.u_proj.weight_v" is parameter "weight_v" of submodule
/// "u_proj" of submodule "mixer"), so named_parameters() lists exactly the
/// manifest's names, but for frozen parameters, which are buffers of the
/// same names (named_buffers()).
class CompiledLayer : public ref::BlockMixer {
public:
  /// The layer called `layerName` of `library`, its parameters drawn from
  /// `generator` by their manifest initialisers in `dtype` on the CPU. Throws
  /// std::invalid_argument for an unknown layer, ParamInitError for an
  /// initialiser the runtime cannot apply.
  CompiledLayer(std::shared_ptr<const ModelLibrary> library,
                const std::string &layerName, at::Generator &generator,
                torch::Dtype dtype = torch::kFloat32);
  /// As above with a fresh generator seeded with `seed`.
  CompiledLayer(std::shared_ptr<const ModelLibrary> library,
                const std::string &layerName, uint64_t seed = 0,
                torch::Dtype dtype = torch::kFloat32);

  /// Calls the library's forward on `input` [B, T, D]: on the CPU target, or
  /// on CUDA when the input lives there and the library was compiled for it.
  /// Differentiable (see above) when grad mode is on and the input or a
  /// parameter requires grad; the backward holds the input and parameters
  /// and fails if they are modified in place before it runs.
  /// The call's dtype is the input's, or computeDtype; every parameter must
  /// have the call's dtype and the input's device (convert the module with
  /// to()) unless computeDtype casts them. Training mode
  /// (is_training()) selects the training quantile and cap. Fills
  /// lastIterations, lastResiduals and lastSteps(). Throws std::runtime_error
  /// with the library's message when it reports a failure, and
  /// std::invalid_argument for an input or parameters it cannot pass.
  torch::Tensor forward(const torch::Tensor &input) override;

  /// The library's chunked forward (docs/streaming.md) on the chunk `input`
  /// [B, T, D] of sequences whose earlier tokens `state.carried` summarises
  /// (empty: the chunk starts them), which it updates in place: one tensor
  /// per state of the manifest's `chunk.states`, [B, shape...], in the
  /// call's dtype on the input's device. Without gradient; statistics as
  /// forward(). Throws std::logic_error for a library compiled with
  /// `fpc --no-chunked`.
  torch::Tensor forwardChunk(const torch::Tensor &input,
                             ref::ChunkState &state) override;

  /// The library and this layer's manifest entry.
  const ModelLibrary &library() const { return *lib; }
  const std::shared_ptr<const ModelLibrary> &sharedLibrary() const {
    return lib;
  }
  const LayerInfo &info() const { return *layerInfo; }

  /// The parameters in manifest order (the order of the ABI's `params`).
  const std::vector<torch::Tensor> &orderedParameters() const { return params; }
  /// The parameter with manifest name `name`; throws std::out_of_range
  /// naming it when the layer has none.
  torch::Tensor &parameter(const std::string &name);
  const torch::Tensor &parameter(const std::string &name) const;
  /// Whether the layer has a parameter with manifest name `name`.
  bool hasParameter(const std::string &name) const;

  /// Solver steps the whole batch took in the last forward (after a CUDA
  /// call, this waits for the device).
  int64_t lastSteps() const {
    return lastStepsTensor.defined() ? lastStepsTensor.item<int64_t>() : 0;
  }
  /// Times the last forward's solver loop waited for the device to publish
  /// its progress (fp_solver_stats::host_waits; 0 on the CPU).
  int64_t lastHostWaits = 0;
  /// Adjoint solver steps of the last backward that ran (implicit mode; 0
  /// in the other modes).
  int32_t lastBackwardSteps() const { return backwardSteps->load(); }

  /// Solver overrides passed to every call (keepCompiledSolver() by
  /// default). A training cap set with setTrainIterationCap() applies in
  /// training mode, and one set with setEvalIterationCap() in evaluation
  /// mode, unless `max_iter` is set here.
  fp_solver_overrides solverOverrides = keepCompiledSolver();

  /// The element type calls compute in. Unset, a call runs in the input's
  /// dtype. Set to another one (torch::kBFloat16 for an f32 layer), a call
  /// casts its input and the parameters to it, differentiably, so that
  /// gradients reach the parameters in their own dtype, and returns the
  /// output in the input's dtype: what autocast does for an op it runs in
  /// lower precision. LibTorch's autocast state does not reach compiled
  /// layers; this does.
  std::optional<torch::Dtype> computeDtype;

  /// The iteration cap in evaluation mode; < 0 keeps the compiled one.
  void setEvalIterationCap(int64_t cap) { evalCap = cap; }
  /// The quantile of the stop rule in training mode (evaluation always
  /// uses 1), unless `quantile` is set in solverOverrides; NaN keeps the
  /// compiled one.
  void setTrainQuantile(double quantile) { trainQuantile = quantile; }

private:
  void registerParameters(std::vector<torch::Tensor> values);
  /// One call of the library's forward on `input` with parameters
  /// `values` (manifest order), all of the call's dtype; with `states`, of
  /// its chunked forward, updating them.
  torch::Tensor call(const torch::Tensor &input,
                     const std::vector<torch::Tensor> &values,
                     std::vector<torch::Tensor> *states = nullptr);
  size_t indexOf(const std::string &name) const;

  std::shared_ptr<const ModelLibrary> lib;
  const LayerInfo *layerInfo = nullptr;
  LayerEntryPoints entry;
  std::vector<torch::Tensor> params;
  int64_t evalCap = -1;
  double trainQuantile = std::numeric_limits<double>::quiet_NaN();
  /// lastSteps() as a 0-d int64 tensor on the last call's device.
  torch::Tensor lastStepsTensor;
  /// Shared with the backward nodes, which may outlive the module.
  std::shared_ptr<std::atomic<int32_t>> backwardSteps =
      std::make_shared<std::atomic<int32_t>>(0);
};

/// Options of a CompiledModel.
struct CompiledModelOptions {
  /// The vocabulary size before padding; 0 takes the manifest's
  /// `model.vocab`.
  int64_t vocabSize = 0;
  uint64_t seed = 0;
  torch::Dtype dtype = torch::kFloat32;
};

/// The language model of a library's manifest (`model`, docs/spec.md §6): token
/// embedding [V_pad, D] ~ N(0, 0.02²), one pre-norm residual block per
/// `model.stack` entry, r ← r + Layer(RMSNorm(r)) with the manifest's
/// `norm_eps`, the final norm, and a head tied to the embedding (or its own
/// [V_pad, D] weight, U(±1/√D), when `tied_head` is false). As the reference
/// wrapper does, every `out_proj.weight` is divided by √(number of blocks)
/// after its own initialisation.
class CompiledModel : public SequenceModel {
public:
  /// Throws std::invalid_argument when the manifest has no model or neither
  /// it nor `options` gives a vocabulary size.
  CompiledModel(std::shared_ptr<const ModelLibrary> library,
                const CompiledModelOptions &options = {});

  /// Logits [B, T, V_pad] for tokens [B, T].
  torch::Tensor forward(const torch::Tensor &tokens) override;
  /// The logits of the chunk `tokens` [B, T] of sequences whose earlier
  /// tokens `state` summarises (one ChunkState per layer; empty at the
  /// start), which it updates: CompiledLayer::forwardChunk through the
  /// stack. Without gradient.
  torch::Tensor forwardChunk(const torch::Tensor &tokens,
                             std::vector<ref::ChunkState> &state);
  void setTrainIterationCap(int64_t cap) override;

  int64_t vocabSize, paddedVocab;
  torch::Tensor embedding, head;
  std::vector<std::shared_ptr<CompiledLayer>> layers;
  std::vector<std::shared_ptr<ref::RMSNorm>> norms;
  /// Null when the manifest's final norm is "none"; otherwise a
  /// ref::RMSNorm or ref::LayerNorm.
  std::shared_ptr<torch::nn::Module> finalNorm;

private:
  std::shared_ptr<const ModelLibrary> lib;
  std::function<torch::Tensor(const torch::Tensor &)> applyFinalNorm;
};

/// The training configuration of a library's model: `base` with kind
/// "compiled" and what the manifest fixes (d_model, the number of layers,
/// the vocabulary padding, the norms' epsilon, and the solver settings of
/// the stack's first layer) in place of the reference's architecture fields.
/// Throws std::invalid_argument when the manifest describes no model.
ModelConfig compiledModelConfig(const Manifest &manifest, ModelConfig base);

/// The model of the library at `path` for the training configuration
/// `config` (as compiledModelConfig() made it, possibly with its solver
/// changed): vocabulary config.vocabSize, config.dtype, parameters drawn
/// with `seed`. Solver settings of config.solver that differ from a layer's
/// compiled ones become its per-call overrides (max_iter_train a training
/// cap, max_iter_eval an evaluation cap, tolerance, train_quantile). Throws
/// LoadError for a library that cannot be opened and std::invalid_argument
/// for a relaxation setting or a fixed step count that differs from the
/// compiled solver, which calls cannot override.
std::shared_ptr<CompiledModel> makeCompiledModel(const std::string &path,
                                                 const ModelConfig &config,
                                                 uint64_t seed);

} // namespace fp::rt

#endif // FP_RUNTIME_COMPILEDLAYER_H
