//===- CompiledLayer.cpp - Model.so layers as LibTorch modules --*- C++ -*-===//
//
// Registers a layer's manifest parameters as nested modules and calls the
// library's forward through the C ABI: checks the input and parameters,
// sizes and aligns the workspace, passes the solver overrides and collects
// the per-sample statistics. A forward that autograd must differentiate also
// fills the ABI's saved buffer and records a CompiledLayerBackward node,
// which calls the library's backward.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/CompiledLayer.h"
#include "fp/Runtime/AutogradNode.h"
#include "fp/Runtime/ParamInit.h"

#include <ATen/Context.h>
#include <c10/core/DeviceGuard.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>
#if FP_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

using namespace fp::rt;

namespace {

const char *statusName(fp_status status) {
  switch (status) {
  case FP_OK:
    return "FP_OK";
  case FP_ERROR_INVALID_ARGUMENT:
    return "FP_ERROR_INVALID_ARGUMENT";
  case FP_ERROR_UNSUPPORTED:
    return "FP_ERROR_UNSUPPORTED";
  case FP_ERROR_WORKSPACE:
    return "FP_ERROR_WORKSPACE";
  case FP_ERROR_DEVICE:
    return "FP_ERROR_DEVICE";
  }
  return "unknown status";
}

std::string describe(const torch::Tensor &tensor) {
  std::ostringstream text;
  text << tensor.scalar_type() << " on " << tensor.device();
  return text.str();
}

/// The stream a call on `device` enqueues on: LibTorch's current CUDA
/// stream, or null (the CPU, or a LibTorch built without CUDA).
void *streamFor(const torch::Device &device) {
#if FP_TORCH_CUDA
  if (device.is_cuda())
    return c10::cuda::getCurrentCUDAStream(device.index()).stream();
#else
  (void)device;
#endif
  return nullptr;
}

/// A call's `allow_tf32`: PyTorch's switch for its own f32 cuBLAS products
/// (`torch.backends.cuda.matmul.allow_tf32`, which `--tf32` sets), read at
/// every call as PyTorch's matmuls read it, so that a compiled layer and
/// the eager reference round alike.
int32_t allowTF32(fp_target target) {
  return target == FP_TARGET_CUDA && at::globalContext().allowTF32CuBLAS() ? 1
                                                                           : 0;
}

/// Memory of at least `bytes` bytes on `device`, aligned as the ABI
/// promises its buffers (256 bytes); the tensor owns it.
struct AlignedBytes {
  torch::Tensor storage;
  void *data = nullptr;
};

AlignedBytes alignedBytes(size_t bytes, const torch::Device &device) {
  constexpr size_t alignment = 256;
  AlignedBytes result;
  if (bytes == 0)
    return result;
  result.storage =
      torch::empty({static_cast<int64_t>(bytes + alignment - 1)},
                   torch::TensorOptions().dtype(torch::kUInt8).device(device));
  auto raw = reinterpret_cast<uintptr_t>(result.storage.data_ptr());
  result.data = reinterpret_cast<void *>((raw + alignment - 1) &
                                         ~uintptr_t(alignment - 1));
  return result;
}

/// What every call of one layer shares: the library (kept open while a
/// backward node may still call it), the entry points and the call's target
/// and element type.
struct LayerCall {
  std::shared_ptr<const ModelLibrary> library;
  LayerEntryPoints entry;
  std::string where; ///< "layer 'x' of 'path'", for messages.
  fp_target target = FP_TARGET_CPU;
  fp_dtype dtype = FP_DTYPE_F32;

  /// Throws std::runtime_error with the library's message unless `status`
  /// is FP_OK.
  void check(fp_status status, const char *what) const {
    if (status == FP_OK)
      return;
    std::string message = library->lastError();
    throw std::runtime_error(where + ": " + what + " failed with " +
                             statusName(status) +
                             (message.empty() ? "" : ": " + message));
  }

  fp_buffer_sizes sizes(int64_t batch, int64_t length) const {
    fp_buffer_sizes result{};
    check(entry.bufferSizes(target, dtype, batch, length, &result),
          "buffer_sizes");
    return result;
  }
};

/// The gradient of one differentiable CompiledLayer forward: calls the
/// library's backward with the forward's input, parameters and saved buffer.
/// Its next edges are the input's and then every parameter's, in manifest
/// order, which is the order of the gradients apply() returns.
class CompiledLayerBackward : public torch::autograd::Node {
public:
  CompiledLayerBackward(LayerCall call,
                        std::shared_ptr<std::atomic<int32_t>> backwardSteps)
      : call(std::move(call)), backwardSteps(std::move(backwardSteps)) {}

  std::string name() const override { return "CompiledLayerBackward"; }

  void save(const torch::Tensor &input,
            const std::vector<torch::Tensor> &params,
            AlignedBytes savedBuffer) {
    savedInput = torch::autograd::SavedVariable(input, /*is_output=*/false);
    for (const torch::Tensor &param : params)
      savedParams.emplace_back(param, /*is_output=*/false);
    saved = std::move(savedBuffer);
  }

  torch::autograd::variable_list
  apply(torch::autograd::variable_list &&grads) override {
    torch::autograd::variable_list result(1 + savedParams.size());
    if (!grads[0].defined())
      return result;
    // Saved as inputs, not outputs: unpacking needs no reference to this
    // node.
    torch::Tensor input = savedInput.unpack();
    std::vector<torch::Tensor> params;
    std::vector<const void *> paramPointers;
    std::vector<void *> gradPointers;
    params.reserve(savedParams.size());
    for (size_t i = 0; i < savedParams.size(); ++i) {
      params.push_back(savedParams[i].unpack());
      paramPointers.push_back(params.back().data_ptr());
      result[1 + i] = torch::zeros_like(params.back());
      gradPointers.push_back(result[1 + i].data_ptr());
    }
    torch::Tensor gradOutput = grads[0].to(input.scalar_type()).contiguous();
    result[0] = torch::empty_like(input);

    c10::OptionalDeviceGuard deviceGuard(input.device());
    const int64_t batch = input.size(0), length = input.size(1);
    AlignedBytes workspace = alignedBytes(
        call.sizes(batch, length).backward_workspace_bytes, input.device());
    fp_solver_stats stats{};
    fp_backward_args args{};
    args.struct_size = sizeof(fp_backward_args);
    args.target = call.target;
    args.dtype = call.dtype;
    args.allow_tf32 = allowTF32(call.target);
    args.stream = streamFor(input.device());
    args.batch = batch;
    args.seq_len = length;
    args.num_params = static_cast<int32_t>(params.size());
    args.params = paramPointers.data();
    args.input = input.data_ptr();
    args.saved = saved.data;
    args.grad_output = gradOutput.data_ptr();
    args.grad_input = result[0].data_ptr();
    args.grad_params = gradPointers.data();
    args.workspace = workspace.data;
    args.workspace_bytes = workspace.storage.defined()
                               ? static_cast<size_t>(workspace.storage.numel())
                               : 0;
    args.stats = &stats;
    call.check(call.entry.backward(&args), "backward");
    backwardSteps->store(stats.backward_steps);
    return result;
  }

  void release_variables() override {
    savedInput.reset_data();
    for (torch::autograd::SavedVariable &param : savedParams)
      param.reset_data();
    saved = {};
  }

private:
  LayerCall call;
  std::shared_ptr<std::atomic<int32_t>> backwardSteps;
  torch::autograd::SavedVariable savedInput;
  std::vector<torch::autograd::SavedVariable> savedParams;
  AlignedBytes saved;
};

const LayerInfo &findLayer(const ModelLibrary &library,
                           const std::string &name) {
  if (const LayerInfo *layer = library.manifest().findLayer(name))
    return *layer;
  std::string known;
  for (const LayerInfo &layer : library.manifest().layers)
    known += (known.empty() ? "'" : ", '") + layer.name + "'";
  throw std::invalid_argument("model library '" + library.path() +
                              "' has no layer '" + name + "'; it has " + known);
}

} // namespace

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::shared_ptr<const ModelLibrary>
fp::rt::loadModelLibrary(const std::string &path) {
  return std::make_shared<const ModelLibrary>(ModelLibrary::open(path));
}

fp_dtype fp::rt::toAbiDType(torch::Dtype dtype) {
  switch (dtype) {
  case torch::kFloat32:
    return FP_DTYPE_F32;
  case torch::kFloat64:
    return FP_DTYPE_F64;
  case torch::kBFloat16:
    return FP_DTYPE_BF16;
  default: {
    std::ostringstream message;
    message << "the model ABI has no element type for " << dtype
            << "; use float32, float64 or bfloat16";
    throw std::invalid_argument(message.str());
  }
  }
}

fp_solver_overrides fp::rt::keepCompiledSolver() {
  fp_solver_overrides overrides;
  overrides.max_iter = -1;
  overrides.fixed_iters = 0;
  overrides.tolerance = std::numeric_limits<double>::quiet_NaN();
  overrides.quantile = std::numeric_limits<double>::quiet_NaN();
  return overrides;
}

//===----------------------------------------------------------------------===//
// CompiledLayer
//===----------------------------------------------------------------------===//

CompiledLayer::CompiledLayer(std::shared_ptr<const ModelLibrary> library,
                             const std::string &layerName,
                             at::Generator &generator, torch::Dtype dtype)
    : lib(std::move(library)) {
  if (!lib)
    throw std::invalid_argument("CompiledLayer needs a model library");
  layerInfo = &findLayer(*lib, layerName);
  entry = lib->entryPoints(layerName);
  registerParameters(initLayerParams(*layerInfo, generator, dtype));
}

CompiledLayer::CompiledLayer(std::shared_ptr<const ModelLibrary> library,
                             const std::string &layerName, uint64_t seed,
                             torch::Dtype dtype)
    : lib(std::move(library)) {
  if (!lib)
    throw std::invalid_argument("CompiledLayer needs a model library");
  layerInfo = &findLayer(*lib, layerName);
  entry = lib->entryPoints(layerName);
  at::Generator generator = makeGenerator(seed);
  registerParameters(initLayerParams(*layerInfo, generator, dtype));
}

void CompiledLayer::registerParameters(std::vector<torch::Tensor> values) {
  const std::vector<ParamInfo> &infos = layerInfo->params;
  std::set<std::string> leaves;
  for (const ParamInfo &param : infos)
    leaves.insert(param.name);
  // Submodules by their dotted path.
  std::map<std::string, std::shared_ptr<torch::nn::Module>> holders;
  for (size_t i = 0; i < infos.size(); ++i) {
    const std::string &name = infos[i].name;
    auto fail = [&](const std::string &why) {
      throw std::invalid_argument("layer '" + layerInfo->name +
                                  "': cannot register parameter '" + name +
                                  "': " + why);
    };
    std::vector<std::string> parts;
    size_t start = 0;
    while (true) {
      size_t dot = name.find('.', start);
      parts.push_back(name.substr(start, dot - start));
      if (parts.back().empty())
        fail("empty component in the name");
      if (dot == std::string::npos)
        break;
      start = dot + 1;
    }
    torch::nn::Module *owner = this;
    std::string path;
    for (size_t p = 0; p + 1 < parts.size(); ++p) {
      path += (path.empty() ? "" : ".") + parts[p];
      if (leaves.count(path))
        fail("'" + path + "' is both a parameter and a prefix of one");
      auto it = holders.find(path);
      if (it == holders.end())
        it = holders
                 .emplace(path,
                          owner->register_module(
                              parts[p], std::make_shared<torch::nn::Module>()))
                 .first;
      owner = it->second.get();
    }
    params.push_back(infos[i].frozen
                         ? owner->register_buffer(parts.back(), values[i])
                         : owner->register_parameter(parts.back(), values[i]));
  }
}

size_t CompiledLayer::indexOf(const std::string &name) const {
  for (size_t i = 0; i < layerInfo->params.size(); ++i)
    if (layerInfo->params[i].name == name)
      return i;
  throw std::out_of_range("layer '" + layerInfo->name + "' has no parameter '" +
                          name + "'");
}

torch::Tensor &CompiledLayer::parameter(const std::string &name) {
  return params[indexOf(name)];
}

const torch::Tensor &CompiledLayer::parameter(const std::string &name) const {
  return params[indexOf(name)];
}

bool CompiledLayer::hasParameter(const std::string &name) const {
  return std::any_of(
      layerInfo->params.begin(), layerInfo->params.end(),
      [&](const ParamInfo &param) { return param.name == name; });
}

torch::Tensor CompiledLayer::forward(const torch::Tensor &input) {
  if (!computeDtype || !input.defined() || input.scalar_type() == *computeDtype)
    return call(input, params);
  std::vector<torch::Tensor> cast;
  cast.reserve(params.size());
  for (const torch::Tensor &param : params)
    cast.push_back(param.to(*computeDtype));
  return call(input.to(*computeDtype), cast).to(input.scalar_type());
}

torch::Tensor CompiledLayer::forwardChunk(const torch::Tensor &input,
                                          ref::ChunkState &state) {
  torch::NoGradGuard noGrad;
  if (!entry.forwardChunk)
    throw std::logic_error(
        "layer '" + layerInfo->name + "' of '" + lib->path() +
        "' has no chunked forward (compiled with `fpc --no-chunked`)");
  if (!computeDtype || !input.defined() || input.scalar_type() == *computeDtype)
    return call(input, params, &state.carried);
  std::vector<torch::Tensor> cast;
  cast.reserve(params.size());
  for (const torch::Tensor &param : params)
    cast.push_back(param.to(*computeDtype));
  return call(input.to(*computeDtype), cast, &state.carried)
      .to(input.scalar_type());
}

torch::Tensor CompiledLayer::call(const torch::Tensor &input,
                                  const std::vector<torch::Tensor> &values,
                                  std::vector<torch::Tensor> *states) {
  const Manifest &manifest = lib->manifest();
  const std::string where =
      "layer '" + layerInfo->name + "' of '" + lib->path() + "'";
  auto invalid = [&](const std::string &what) {
    throw std::invalid_argument(where + ": " + what);
  };

  if (!input.defined() || input.dim() != 3 ||
      input.size(2) != layerInfo->dModel || input.size(0) < 1 ||
      input.size(1) < 1) {
    std::ostringstream shape;
    if (input.defined())
      shape << input.sizes();
    else
      shape << "undefined";
    invalid("expects an input [B, T, " + std::to_string(layerInfo->dModel) +
            "] with B, T >= 1, got " + shape.str());
  }
  fp_dtype dtype = toAbiDType(input.scalar_type());
  if (!manifest.hasDType(dtype))
    invalid(std::string("was not compiled for dtype ") + toString(dtype));
  if (!input.device().is_cpu() && !input.device().is_cuda())
    invalid("cannot run on device " + input.device().str());
  fp_target target = input.device().is_cuda() ? FP_TARGET_CUDA : FP_TARGET_CPU;
  if (!manifest.hasTarget(target))
    invalid(std::string("was not compiled for target ") + toString(target) +
            " (the input is on " + input.device().str() + ")");

  bool differentiable = false;
  if (torch::GradMode::is_enabled() && !states) {
    differentiable = input.requires_grad();
    for (const torch::Tensor &param : values)
      differentiable = differentiable || param.requires_grad();
  }
  if (differentiable && !layerInfo->hasBackward(target))
    throw std::runtime_error(
        where + ": the library has no compiled backward for target " +
        toString(target) +
        ", so this forward cannot be differentiated; compile the model with "
        "`fpc --backward`, or run it under torch::NoGradGuard");

  std::vector<torch::Tensor> contiguous;
  std::vector<const void *> pointers;
  contiguous.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const torch::Tensor &param = values[i];
    if (param.scalar_type() != input.scalar_type() ||
        param.device() != input.device())
      invalid("parameter '" + layerInfo->params[i].name + "' is " +
              describe(param) + " but the input is " + describe(input) +
              "; convert the layer with to(), or set computeDtype");
    contiguous.push_back(param.contiguous());
    pointers.push_back(contiguous.back().data_ptr());
  }

  c10::OptionalDeviceGuard deviceGuard(input.device());
  const int64_t batch = input.size(0), length = input.size(1);
  LayerCall call{lib, entry, where, target, dtype};
  fp_buffer_sizes sizes = call.sizes(batch, length);
  AlignedBytes workspace = alignedBytes(states ? sizes.chunk_workspace_bytes
                                               : sizes.forward_workspace_bytes,
                                        input.device());
  AlignedBytes saved;
  if (differentiable)
    saved = alignedBytes(sizes.saved_bytes, input.device());

  torch::Tensor in = input.contiguous();
  torch::Tensor out = torch::empty_like(in);
  // A CUDA call leaves its solver's statistics on the device, so that it
  // returns without waiting for the device; a CPU call, or one without a
  // solver, reports them here.
  const bool statsOnDevice =
      target == FP_TARGET_CUDA && layerInfo->solver && batch > 0;
  std::vector<int32_t> iterations(statsOnDevice ? 0 : batch, 0);
  std::vector<float> residuals(statsOnDevice ? 0 : batch,
                               std::numeric_limits<float>::quiet_NaN());
  fp_solver_stats stats{};
  fp_device_stats deviceStats{};
  torch::Tensor deviceIterations, deviceResiduals, deviceSteps;
  if (statsOnDevice) {
    auto on = torch::TensorOptions().device(input.device());
    deviceIterations = torch::empty({batch}, on.dtype(torch::kLong));
    deviceResiduals = torch::empty({batch}, on.dtype(torch::kFloat32));
    deviceSteps = torch::empty({}, on.dtype(torch::kLong));
    deviceStats.iterations = deviceIterations.data_ptr<int64_t>();
    deviceStats.residuals = deviceResiduals.data_ptr<float>();
    deviceStats.steps = deviceSteps.data_ptr<int64_t>();
  } else {
    stats.iterations = iterations.data();
    stats.residuals = residuals.data();
  }

  fp_solver_overrides overrides = solverOverrides;
  if (overrides.max_iter < 0) {
    int64_t cap = is_training() ? trainCap : evalCap;
    if (cap >= 0)
      overrides.max_iter = static_cast<int32_t>(cap);
  }
  if (is_training() && std::isnan(overrides.quantile))
    overrides.quantile = trainQuantile;

  // The fields fp_forward_args and fp_chunk_args share.
  auto fillShared = [&](auto &args) {
    args.struct_size = sizeof(args);
    args.target = target;
    args.dtype = dtype;
    args.allow_tf32 = allowTF32(target);
    args.stream = streamFor(input.device());
    args.batch = batch;
    args.seq_len = length;
    args.training = is_training() ? 1 : 0;
    args.num_params = static_cast<int32_t>(pointers.size());
    args.params = pointers.data();
    args.input = in.data_ptr();
    args.output = out.data_ptr();
    args.solver = &overrides;
    args.stats = &stats;
    args.device_stats = statsOnDevice ? &deviceStats : nullptr;
  };
  if (states) {
    // A fresh sequence starts from zeros; a carried state must match the
    // manifest's shapes and the call's dtype and device.
    const std::vector<ChunkStateInfo> &infos = layerInfo->chunkStates;
    const bool fresh = states->empty();
    if (fresh)
      states->resize(infos.size());
    if (states->size() != infos.size())
      invalid("expects " + std::to_string(infos.size()) +
              " chunk states, got " + std::to_string(states->size()));
    std::vector<const void *> stateIn;
    std::vector<void *> stateOut;
    for (size_t i = 0; i < infos.size(); ++i) {
      torch::Tensor &carried = (*states)[i];
      std::vector<int64_t> shape = {batch};
      shape.insert(shape.end(), infos[i].shape.begin(), infos[i].shape.end());
      if (fresh)
        carried = torch::zeros(shape, in.options());
      if (!carried.defined() || carried.sizes() != at::IntArrayRef(shape))
        invalid("chunk state '" + infos[i].name + "' must be " +
                c10::str(at::IntArrayRef(shape)) + ", got " +
                (carried.defined() ? c10::str(carried.sizes())
                                   : std::string("undefined")));
      carried = carried.to(in.options()).contiguous();
      stateIn.push_back(carried.data_ptr());
      stateOut.push_back(carried.data_ptr());
    }
    fp_chunk_args args{};
    fillShared(args);
    args.num_states = static_cast<int32_t>(infos.size());
    args.state_in = stateIn.data();
    args.state_out = stateOut.data();
    args.workspace = workspace.data;
    args.workspace_bytes = sizes.chunk_workspace_bytes;
    call.check(entry.forwardChunk(&args), "forward_chunk");
  } else {
    fp_forward_args args{};
    fillShared(args);
    args.saved = saved.data;
    args.workspace = workspace.data;
    args.workspace_bytes = sizes.forward_workspace_bytes;
    call.check(entry.forward(&args), "forward");
  }

  if (differentiable) {
    auto node =
        makeAutogradNode<CompiledLayerBackward>(std::move(call), backwardSteps);
    node->save(in, contiguous, std::move(saved));
    torch::autograd::edge_list edges;
    edges.push_back(torch::autograd::impl::gradient_edge(in));
    for (const torch::Tensor &param : contiguous)
      edges.push_back(torch::autograd::impl::gradient_edge(param));
    node->set_next_edges(std::move(edges));
    torch::autograd::set_history(out, node);
  }

  if (statsOnDevice) {
    lastIterations = deviceIterations;
    lastResiduals = deviceResiduals;
    lastStepsTensor = deviceSteps;
  } else {
    lastIterations = torch::tensor(
        std::vector<int64_t>(iterations.begin(), iterations.end()),
        torch::TensorOptions().dtype(torch::kLong));
    lastResiduals = torch::tensor(residuals, torch::kFloat32);
    lastStepsTensor = torch::tensor(int64_t(stats.steps));
  }
  lastHostWaits = stats.host_waits;
  return out;
}

//===----------------------------------------------------------------------===//
// CompiledModel
//===----------------------------------------------------------------------===//

CompiledModel::CompiledModel(std::shared_ptr<const ModelLibrary> library,
                             const CompiledModelOptions &options)
    : lib(std::move(library)) {
  if (!lib)
    throw std::invalid_argument("CompiledModel needs a model library");
  const Manifest &manifest = lib->manifest();
  if (!manifest.model)
    throw std::invalid_argument("model library '" + lib->path() +
                                "' describes no model (its manifest has no "
                                "'model'); use its layers with CompiledLayer");
  const ModelInfo &model = *manifest.model;
  vocabSize = options.vocabSize > 0 ? options.vocabSize : model.vocab;
  if (vocabSize <= 0)
    throw std::invalid_argument(
        "model library '" + lib->path() +
        "' names no vocabulary size; pass one (CompiledModelOptions::"
        "vocabSize)");
  int64_t multiple = model.padVocabMultiple;
  paddedVocab = (vocabSize + multiple - 1) / multiple * multiple;

  at::Generator generator = makeGenerator(options.seed);
  auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  auto holder =
      register_module("embedding", std::make_shared<torch::nn::Module>());
  embedding = holder->register_parameter(
      "weight", torch::empty({paddedVocab, model.dModel}, f64)
                    .normal_(0.0, 0.02, generator)
                    .to(options.dtype));

  auto layerList = register_module("layers", torch::nn::ModuleList());
  for (const std::string &name : model.stack) {
    auto block = std::make_shared<torch::nn::Module>();
    layers.push_back(block->register_module(
        "mixer",
        std::make_shared<CompiledLayer>(lib, name, generator, options.dtype)));
    norms.push_back(block->register_module(
        "norm", std::make_shared<ref::RMSNorm>(model.dModel, model.normEps,
                                               options.dtype)));
    layerList->push_back(block);
  }
  switch (model.finalNorm) {
  case FinalNorm::None:
    break;
  case FinalNorm::RmsNorm: {
    auto norm = register_module(
        "norm_f", std::make_shared<ref::RMSNorm>(model.dModel, model.normEps,
                                                 options.dtype));
    finalNorm = norm;
    applyFinalNorm = [norm](const torch::Tensor &x) {
      return norm->forward(x);
    };
    break;
  }
  case FinalNorm::LayerNorm: {
    auto norm = register_module(
        "norm_f", std::make_shared<ref::LayerNorm>(model.dModel, model.normEps,
                                                   options.dtype));
    finalNorm = norm;
    applyFinalNorm = [norm](const torch::Tensor &x) {
      return norm->forward(x);
    };
    break;
  }
  }
  if (model.tiedHead) {
    head = embedding;
  } else {
    double bound = 1.0 / std::sqrt(static_cast<double>(model.dModel));
    auto headHolder =
        register_module("lm_head", std::make_shared<torch::nn::Module>());
    head = headHolder->register_parameter(
        "weight", torch::empty({paddedVocab, model.dModel}, f64)
                      .uniform_(-bound, bound, generator)
                      .to(options.dtype));
  }

  // The reference wrapper's output-projection scaling (docs/spec.md §6).
  torch::NoGradGuard noGrad;
  double scale = std::sqrt(static_cast<double>(layers.size()));
  for (const auto &layer : layers)
    if (layer->hasParameter("out_proj.weight"))
      layer->parameter("out_proj.weight").div_(scale);
}

torch::Tensor CompiledModel::forward(const torch::Tensor &tokens) {
  torch::Tensor residual = torch::embedding(embedding, tokens);
  stats = ForwardStats{};
  for (size_t i = 0; i < layers.size(); ++i) {
    residual = residual + layers[i]->forward(norms[i]->forward(residual));
    if (layers[i]->lastIterations.defined())
      stats.add(layers[i]->lastIterations, layers[i]->lastResiduals);
  }
  torch::Tensor out = applyFinalNorm ? applyFinalNorm(residual) : residual;
  return torch::matmul(out, head.t());
}

torch::Tensor CompiledModel::forwardChunk(const torch::Tensor &tokens,
                                          std::vector<ref::ChunkState> &state) {
  torch::NoGradGuard noGrad;
  if (state.empty())
    state.resize(layers.size());
  if (state.size() != layers.size())
    throw std::invalid_argument(
        "CompiledModel::forwardChunk: expected one state per layer (" +
        std::to_string(layers.size()) + "), got " +
        std::to_string(state.size()));
  torch::Tensor residual = torch::embedding(embedding, tokens);
  stats = ForwardStats{};
  for (size_t i = 0; i < layers.size(); ++i) {
    residual = residual +
               layers[i]->forwardChunk(norms[i]->forward(residual), state[i]);
    if (layers[i]->lastIterations.defined())
      stats.add(layers[i]->lastIterations, layers[i]->lastResiduals);
  }
  torch::Tensor out = applyFinalNorm ? applyFinalNorm(residual) : residual;
  return torch::matmul(out, head.t());
}

void CompiledModel::setTrainIterationCap(int64_t cap) {
  for (const auto &layer : layers)
    layer->setTrainIterationCap(cap);
}

//===----------------------------------------------------------------------===//
// Training configurations
//===----------------------------------------------------------------------===//

ModelConfig fp::rt::compiledModelConfig(const Manifest &manifest,
                                        ModelConfig base) {
  if (!manifest.model)
    throw std::invalid_argument(
        "the library describes no model (its manifest has no 'model'), so "
        "there is nothing to train; compile a file with a `model` block");
  const ModelInfo &model = *manifest.model;
  base.kind = "compiled";
  base.dModel = model.dModel;
  base.nLayers = static_cast<int64_t>(model.stack.size());
  base.padVocabMultiple = model.padVocabMultiple;
  base.normEps = model.normEps;
  base.mixer = "";
  const LayerInfo *layer = manifest.findLayer(model.stack.front());
  if (layer && layer->solver) {
    const SolverDefaults &solver = *layer->solver;
    base.solver.tolerance = solver.tolerance;
    base.solver.trainQuantile = solver.trainQuantile;
    base.solver.maxIterTrain = solver.maxIterTrain;
    base.solver.maxIterEval = solver.maxIterEval;
    base.solver.relaxStart = solver.relaxStart;
    base.solver.relaxDecay = solver.relaxDecay;
    base.solver.relaxPatience = solver.relaxPatience;
    base.solver.fixedIters = 0;
  }
  return base;
}

std::shared_ptr<CompiledModel>
fp::rt::makeCompiledModel(const std::string &path, const ModelConfig &config,
                          uint64_t seed) {
  CompiledModelOptions options;
  options.vocabSize = config.vocabSize;
  options.seed = seed;
  options.dtype = config.dtype;
  auto model = std::make_shared<CompiledModel>(loadModelLibrary(path), options);
  const SolverConfig &wanted = config.solver;
  for (const auto &layer : model->layers) {
    if (!layer->info().solver)
      continue;
    const SolverDefaults &compiled = *layer->info().solver;
    if (wanted.relaxStart != compiled.relaxStart ||
        wanted.relaxDecay != compiled.relaxDecay ||
        wanted.relaxPatience != compiled.relaxPatience ||
        wanted.fixedIters != 0)
      throw std::invalid_argument(
          "layer '" + layer->info().name + "' of '" + path +
          "' was compiled with other relaxation settings than the "
          "configuration's; a compiled model's relaxation is fixed by its "
          "source");
    if (wanted.maxIterTrain != compiled.maxIterTrain)
      layer->setTrainIterationCap(wanted.maxIterTrain);
    if (wanted.maxIterEval != compiled.maxIterEval)
      layer->setEvalIterationCap(wanted.maxIterEval);
    if (wanted.tolerance != compiled.tolerance)
      layer->solverOverrides.tolerance = wanted.tolerance;
    if (wanted.trainQuantile != compiled.trainQuantile)
      layer->setTrainQuantile(wanted.trainQuantile);
  }
  return model;
}
