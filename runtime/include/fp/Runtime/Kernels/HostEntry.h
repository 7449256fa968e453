//===- HostEntry.h - ABI entry points of model libraries -------*- C++ -*-===//
//
// The argument checking, workspace layout, dtype dispatch and error protocol
// shared by every entry point fpc emits (docs/abi.md). A generated library
// describes each layer with a LayerDescriptor and forwards its C entry
// points to the functions here, so this logic is written and tested once.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_HOSTENTRY_H
#define FP_RUNTIME_KERNELS_HOSTENTRY_H

#include "fp/Runtime/Kernels/Host.h"
#include "fp/Runtime/ModelABI.h"

#include <exception>
#include <string>
#include <vector>

/// Marks the symbols a model library exports (it is built with
/// -fvisibility=hidden).
#define FP_MODEL_EXPORT extern "C" __attribute__((visibility("default")))

namespace fp::host {

/// The calling thread's last error message (fp_model_last_error).
inline thread_local std::string lastError;

inline fp_status fail(fp_status status, std::string message) {
  lastError = std::move(message);
  return status;
}

/// The forward or backward of one layer for one element type.
template <typename Args>
using EntryFn = void (*)(const Args &args, char *workspace,
                         const size_t *offsets);

/// A layer's functions on one target, one per element type; null where the
/// element type (or the whole target) is not compiled.
template <typename Args> struct TargetFunctions {
  EntryFn<Args> f32 = nullptr;
  EntryFn<Args> f64 = nullptr;
  EntryFn<Args> bf16 = nullptr;

  /// The function for `dtype`, or null.
  EntryFn<Args> get(fp_dtype dtype) const {
    switch (dtype) {
    case FP_DTYPE_F32:
      return f32;
    case FP_DTYPE_F64:
      return f64;
    case FP_DTYPE_BF16:
      return bf16;
    }
    return nullptr;
  }
  bool any() const { return f32 || f64 || bf16; }
};

using TargetForwards = TargetFunctions<fp_forward_args>;
using TargetBackwards = TargetFunctions<fp_backward_args>;

/// What the entry points need to know about one layer.
struct LayerDescriptor {
  const char *name;
  int32_t numParams;
  const BufferSpec *buffers;
  int numBuffers;
  TargetForwards cpu;
  TargetForwards cuda;
  /// The values a training forward saves for the backward, in order.
  const BufferSpec *saved = nullptr;
  int numSaved = 0;
  /// The backward's workspace and functions.
  const BufferSpec *backwardBuffers = nullptr;
  int numBackwardBuffers = 0;
  TargetBackwards cpuBackward = {};
  TargetBackwards cudaBackward = {};
};

inline size_t scalarSize(fp_dtype dtype) {
  switch (dtype) {
  case FP_DTYPE_F64:
    return sizeof(double);
  case FP_DTYPE_BF16:
    return sizeof(fp::bf16);
  case FP_DTYPE_F32:
    break;
  }
  return sizeof(float);
}

/// The manifest's spelling of `dtype`.
inline const char *dtypeName(fp_dtype dtype) {
  switch (dtype) {
  case FP_DTYPE_F32:
    return "f32";
  case FP_DTYPE_F64:
    return "f64";
  case FP_DTYPE_BF16:
    return "bf16";
  }
  return "?";
}

inline fp_status checkCall(const char *what, const LayerDescriptor &layer,
                           fp_target target, fp_dtype dtype, int64_t batch,
                           int64_t length) {
  std::string where = std::string(layer.name) + " " + what + ": ";
  if (target != FP_TARGET_CPU && target != FP_TARGET_CUDA)
    return fail(FP_ERROR_INVALID_ARGUMENT,
                where + "unknown target " + std::to_string(int(target)));
  const TargetForwards &forwards =
      target == FP_TARGET_CUDA ? layer.cuda : layer.cpu;
  if (!forwards.any())
    return fail(FP_ERROR_UNSUPPORTED,
                where + "this library was compiled without the " +
                    (target == FP_TARGET_CUDA ? "cuda" : "cpu") + " target");
  if (dtype != FP_DTYPE_F32 && dtype != FP_DTYPE_F64 && dtype != FP_DTYPE_BF16)
    return fail(FP_ERROR_INVALID_ARGUMENT,
                where + "unknown dtype " + std::to_string(int(dtype)));
  if (!forwards.get(dtype))
    return fail(FP_ERROR_UNSUPPORTED,
                where + dtypeName(dtype) +
                    " is not compiled into this library (fpc --dtypes)");
  if (batch < 1 || length < 1)
    return fail(FP_ERROR_INVALID_ARGUMENT,
                where + "batch and seq_len must be >= 1, got " +
                    std::to_string(batch) + " and " + std::to_string(length));
  return FP_OK;
}

inline fp_status bufferSizes(const LayerDescriptor &layer, fp_target target,
                             fp_dtype dtype, int64_t batch, int64_t length,
                             fp_buffer_sizes *sizes) {
  if (fp_status status =
          checkCall("buffer_sizes", layer, target, dtype, batch, length))
    return status;
  if (!sizes)
    return fail(FP_ERROR_INVALID_ARGUMENT,
                std::string(layer.name) + " buffer_sizes: sizes is NULL");
  sizes->forward_workspace_bytes =
      layoutBuffers(layer.buffers, layer.numBuffers, batch, length,
                    scalarSize(dtype), nullptr);
  sizes->saved_bytes = layoutBuffers(layer.saved, layer.numSaved, batch, length,
                                     scalarSize(dtype), nullptr);
  sizes->backward_workspace_bytes =
      layoutBuffers(layer.backwardBuffers, layer.numBackwardBuffers, batch,
                    length, scalarSize(dtype), nullptr);
  return FP_OK;
}

inline fp_status forward(const fp_forward_args *args,
                         const LayerDescriptor &layer) {
  std::string where = std::string(layer.name) + " forward: ";
  if (!args)
    return fail(FP_ERROR_INVALID_ARGUMENT, where + "args is NULL");
  if (args->struct_size != sizeof(fp_forward_args))
    return fail(FP_ERROR_INVALID_ARGUMENT,
                where + "struct_size " + std::to_string(args->struct_size) +
                    " does not match this library's fp_forward_args (" +
                    std::to_string(sizeof(fp_forward_args)) + " bytes)");
  if (fp_status status = checkCall("forward", layer, args->target, args->dtype,
                                   args->batch, args->seq_len))
    return status;
  if (args->num_params != layer.numParams)
    return fail(FP_ERROR_INVALID_ARGUMENT,
                where + "expected " + std::to_string(layer.numParams) +
                    " parameters, got " + std::to_string(args->num_params));
  if (layer.numParams > 0 && !args->params)
    return fail(FP_ERROR_INVALID_ARGUMENT, where + "params is NULL");
  for (int32_t i = 0; i < layer.numParams; ++i)
    if (!args->params[i])
      return fail(FP_ERROR_INVALID_ARGUMENT,
                  where + "parameter " + std::to_string(i) + " is NULL");
  if (!args->input || !args->output)
    return fail(FP_ERROR_INVALID_ARGUMENT, where + "input or output is NULL");
  std::vector<size_t> offsets(layer.numBuffers);
  size_t needed =
      layoutBuffers(layer.buffers, layer.numBuffers, args->batch, args->seq_len,
                    scalarSize(args->dtype), offsets.data());
  if (needed > 0 && (!args->workspace || args->workspace_bytes < needed))
    return fail(
        FP_ERROR_WORKSPACE,
        where + "the workspace has " +
            std::to_string(args->workspace ? args->workspace_bytes : 0) +
            " bytes; buffer_sizes() asks for " + std::to_string(needed));
  const TargetForwards &forwards =
      args->target == FP_TARGET_CUDA ? layer.cuda : layer.cpu;
  try {
    forwards.get(args->dtype)(*args, static_cast<char *>(args->workspace),
                              offsets.data());
  } catch (const DeviceError &e) {
    return fail(FP_ERROR_DEVICE, where + e.what());
  } catch (const std::exception &e) {
    return fail(FP_ERROR_INVALID_ARGUMENT, where + e.what());
  }
  return FP_OK;
}

inline fp_status backward(const fp_backward_args *args,
                          const LayerDescriptor &layer) {
  std::string where = std::string(layer.name) + " backward: ";
  if (!args)
    return fail(FP_ERROR_INVALID_ARGUMENT, where + "args is NULL");
  if (args->struct_size != sizeof(fp_backward_args))
    return fail(FP_ERROR_INVALID_ARGUMENT,
                where + "struct_size " + std::to_string(args->struct_size) +
                    " does not match this library's fp_backward_args (" +
                    std::to_string(sizeof(fp_backward_args)) + " bytes)");
  if (fp_status status = checkCall("backward", layer, args->target, args->dtype,
                                   args->batch, args->seq_len))
    return status;
  const TargetBackwards &backwards =
      args->target == FP_TARGET_CUDA ? layer.cudaBackward : layer.cpuBackward;
  if (!backwards.get(args->dtype))
    return fail(FP_ERROR_UNSUPPORTED,
                where + "this library has no compiled backward for the " +
                    (args->target == FP_TARGET_CUDA ? "cuda" : "cpu") +
                    " target");
  if (args->num_params != layer.numParams)
    return fail(FP_ERROR_INVALID_ARGUMENT,
                where + "expected " + std::to_string(layer.numParams) +
                    " parameters, got " + std::to_string(args->num_params));
  if (layer.numParams > 0 && (!args->params || !args->grad_params))
    return fail(FP_ERROR_INVALID_ARGUMENT,
                where + "params or grad_params is NULL");
  for (int32_t i = 0; i < layer.numParams; ++i)
    if (!args->params[i] || !args->grad_params[i])
      return fail(FP_ERROR_INVALID_ARGUMENT, where + "parameter " +
                                                 std::to_string(i) +
                                                 " or its gradient is NULL");
  if (!args->input || !args->grad_output || !args->grad_input)
    return fail(FP_ERROR_INVALID_ARGUMENT,
                where + "input, grad_output or grad_input is NULL");
  if (layer.numSaved > 0 && !args->saved)
    return fail(FP_ERROR_INVALID_ARGUMENT,
                where + "saved is NULL; run a training forward (with saved) "
                        "first");
  std::vector<size_t> offsets(layer.numBackwardBuffers);
  size_t needed = layoutBuffers(layer.backwardBuffers, layer.numBackwardBuffers,
                                args->batch, args->seq_len,
                                scalarSize(args->dtype), offsets.data());
  if (needed > 0 && (!args->workspace || args->workspace_bytes < needed))
    return fail(
        FP_ERROR_WORKSPACE,
        where + "the workspace has " +
            std::to_string(args->workspace ? args->workspace_bytes : 0) +
            " bytes; buffer_sizes() asks for " + std::to_string(needed));
  try {
    backwards.get(args->dtype)(*args, static_cast<char *>(args->workspace),
                               offsets.data());
  } catch (const DeviceError &e) {
    return fail(FP_ERROR_DEVICE, where + e.what());
  } catch (const std::exception &e) {
    return fail(FP_ERROR_INVALID_ARGUMENT, where + e.what());
  }
  return FP_OK;
}

inline fp_status backwardNotCompiled(const fp_backward_args *args,
                                     const LayerDescriptor &layer) {
  (void)args;
  return fail(FP_ERROR_UNSUPPORTED,
              std::string(layer.name) +
                  " backward: this library has no compiled backward; use "
                  "the forward without gradients");
}

} // namespace fp::host

#endif // FP_RUNTIME_KERNELS_HOSTENTRY_H
