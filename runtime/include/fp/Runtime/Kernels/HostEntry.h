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

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <stdexcept>
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

/// One function per element type; null where the element type (or the
/// whole target) is not compiled.
template <typename Fn> struct PerDType {
  Fn f32 = nullptr;
  Fn f64 = nullptr;
  Fn bf16 = nullptr;

  /// The function for `dtype`, or null.
  Fn get(fp_dtype dtype) const {
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

/// A layer's forwards or backwards on one target.
template <typename Args> using TargetFunctions = PerDType<EntryFn<Args>>;
using TargetForwards = TargetFunctions<fp_forward_args>;
using TargetBackwards = TargetFunctions<fp_backward_args>;

/// The chunks of each sample's tokens a CUDA schedule's sample kernels need
/// to fill the device at a call shape (the emitted `sampleChunks<Real>`;
/// fp::cuda::sampleChunks).
using ChunksFn = int64_t (*)(int64_t batch, int64_t length);

/// A layer's second CUDA schedule, the split one: the layer compiled with
/// its scans out of the fused kernels (`fpc --no-fuse-scans`), the per-token
/// work in kernels parallel over tokens and each scan in a kernel parallel
/// over samples and channels. A CUDA call takes it where one block per
/// sample would leave the device's blocks idle; there the fused schedule
/// runs each sample's tokens in chunks and repeats each chunk's token work
/// to carry its scans into the next (Fused.h, "Chunked execution"), or,
/// with a kernel that cannot run in chunks, leaves the blocks idle.
/// FP_CUDA_SCHEDULE=fused or split forces one schedule for every call.
struct SplitSchedule {
  const BufferSpec *buffers = nullptr;
  int numBuffers = 0;
  const BufferSpec *saved = nullptr;
  int numSaved = 0;
  const BufferSpec *backwardBuffers = nullptr;
  int numBackwardBuffers = 0;
  TargetForwards forwards = {};
  TargetBackwards backwards = {};
  /// The fused schedule's chunks per sample at a call shape.
  PerDType<ChunksFn> fusedChunks = {};
};

/// A layer's chunked forward (fp-derive-chunked, docs/streaming.md): its
/// workspace, functions and states (per-sample sizes; perBatch set). It
/// runs the layer's own schedule; on CUDA the fused one where it has one.
using ChunkForwards = TargetFunctions<fp_chunk_args>;
struct ChunkSchedule {
  const BufferSpec *buffers = nullptr;
  int numBuffers = 0;
  ChunkForwards cpu = {};
  ChunkForwards cuda = {};
  int numStates = 0;
  const BufferSpec *states = nullptr;
};

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
  /// What the functions above run on the device: "fused" (scans inside the
  /// fused kernels), "split" (`fpc --no-fuse-scans`) or "unfused" (`fpc
  /// --no-fuse`).
  const char *schedule = "fused";
  /// The CUDA split schedule, where the library holds one next to the fused.
  const SplitSchedule *split = nullptr;
  /// The chunked forward, where the library holds one.
  const ChunkSchedule *chunk = nullptr;
};

/// The buffers and functions one call of a layer runs.
struct CallSchedule {
  const char *name = "fused";
  const BufferSpec *buffers = nullptr;
  int numBuffers = 0;
  const BufferSpec *saved = nullptr;
  int numSaved = 0;
  const BufferSpec *backwardBuffers = nullptr;
  int numBackwardBuffers = 0;
  EntryFn<fp_forward_args> forward = nullptr;
  EntryFn<fp_backward_args> backward = nullptr;
};

/// The layer's own schedule on `target`.
inline CallSchedule ownSchedule(const LayerDescriptor &layer, fp_target target,
                                fp_dtype dtype) {
  const bool cuda = target == FP_TARGET_CUDA;
  CallSchedule own;
  own.name = layer.schedule;
  own.buffers = layer.buffers;
  own.numBuffers = layer.numBuffers;
  own.saved = layer.saved;
  own.numSaved = layer.numSaved;
  own.backwardBuffers = layer.backwardBuffers;
  own.numBackwardBuffers = layer.numBackwardBuffers;
  own.forward = (cuda ? layer.cuda : layer.cpu).get(dtype);
  own.backward = (cuda ? layer.cudaBackward : layer.cpuBackward).get(dtype);
  return own;
}

/// The layer's CUDA split schedule; layer.split must be set.
inline CallSchedule splitSchedule(const LayerDescriptor &layer,
                                  fp_dtype dtype) {
  const SplitSchedule *split = layer.split;
  CallSchedule other;
  other.name = "split";
  other.buffers = split->buffers;
  other.numBuffers = split->numBuffers;
  other.saved = split->saved;
  other.numSaved = split->numSaved;
  other.backwardBuffers = split->backwardBuffers;
  other.numBackwardBuffers = split->numBackwardBuffers;
  other.forward = split->forwards.get(dtype);
  other.backward = split->backwards.get(dtype);
  return other;
}

/// The schedule a call takes. On the CPU, and on CUDA for a library with
/// one schedule, the layer's own; on CUDA with a split schedule as well,
/// the split one where one block per sample would leave the device's
/// blocks idle (where the fused one runs samples in chunks), unless
/// FP_CUDA_SCHEDULE names one. The choice depends on the call shape and the
/// current device only, so buffer_sizes, forward and backward of one shape
/// agree. Throws std::invalid_argument for a FP_CUDA_SCHEDULE the library
/// cannot follow and DeviceError where the device cannot be queried.
inline CallSchedule chooseSchedule(const LayerDescriptor &layer,
                                   fp_target target, fp_dtype dtype,
                                   int64_t batch, int64_t length) {
  CallSchedule own = ownSchedule(layer, target, dtype);
  if (target != FP_TARGET_CUDA)
    return own;
  const SplitSchedule *split = layer.split;
  std::string forced;
  if (const char *value = std::getenv("FP_CUDA_SCHEDULE"))
    forced = value;
  if (!forced.empty() && forced != "fused" && forced != "split")
    throw std::invalid_argument("FP_CUDA_SCHEDULE=" + forced +
                                ": expected fused or split");
  if (!split) {
    if (!forced.empty() && forced != own.name)
      throw std::invalid_argument(
          "FP_CUDA_SCHEDULE=" + forced + ", but this library holds only the " +
          own.name + " schedule (fpc " +
          (forced == "split" ? "--no-split-schedule or --no-fuse"
                             : "--no-fuse-scans or --no-fuse") +
          ")");
    return own;
  }
  bool takeSplit = forced == "split";
  if (forced.empty()) {
    ChunksFn chunks = split->fusedChunks.get(dtype);
    takeSplit = chunks && chunks(batch, length) > 1;
  }
  return takeSplit ? splitSchedule(layer, dtype) : own;
}

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

/// Runs `body`, turning what it throws into the entry points' status and
/// message.
template <typename Body>
fp_status guarded(const std::string &where, Body &&body) {
  try {
    body();
  } catch (const DeviceError &e) {
    return fail(FP_ERROR_DEVICE, where + e.what());
  } catch (const std::exception &e) {
    return fail(FP_ERROR_INVALID_ARGUMENT, where + e.what());
  }
  return FP_OK;
}

inline fp_status bufferSizes(const LayerDescriptor &layer, fp_target target,
                             fp_dtype dtype, int64_t batch, int64_t length,
                             fp_buffer_sizes *sizes) {
  if (fp_status status =
          checkCall("buffer_sizes", layer, target, dtype, batch, length))
    return status;
  std::string where = std::string(layer.name) + " buffer_sizes: ";
  if (!sizes)
    return fail(FP_ERROR_INVALID_ARGUMENT, where + "sizes is NULL");
  auto sizesOf = [&](const CallSchedule &schedule) {
    fp_buffer_sizes scheduled = {};
    scheduled.forward_workspace_bytes =
        layoutBuffers(schedule.buffers, schedule.numBuffers, batch, length,
                      scalarSize(dtype), nullptr);
    scheduled.saved_bytes =
        layoutBuffers(schedule.saved, schedule.numSaved, batch, length,
                      scalarSize(dtype), nullptr);
    scheduled.backward_workspace_bytes =
        layoutBuffers(schedule.backwardBuffers, schedule.numBackwardBuffers,
                      batch, length, scalarSize(dtype), nullptr);
    return scheduled;
  };
  sizes->chunk_workspace_bytes =
      layer.chunk ? layoutBuffers(layer.chunk->buffers, layer.chunk->numBuffers,
                                  batch, length, scalarSize(dtype), nullptr)
                  : 0;
  CallSchedule schedule;
  try {
    schedule = chooseSchedule(layer, target, dtype, batch, length);
  } catch (const DeviceError &e) {
    // No device to ask: sizes that fit either schedule, so that the calls
    // can choose once there is one.
    if (!layer.split || target != FP_TARGET_CUDA)
      return fail(FP_ERROR_DEVICE, where + e.what());
    fp_buffer_sizes fused = sizesOf(ownSchedule(layer, target, dtype));
    fp_buffer_sizes split = sizesOf(splitSchedule(layer, dtype));
    sizes->forward_workspace_bytes =
        std::max(fused.forward_workspace_bytes, split.forward_workspace_bytes);
    sizes->saved_bytes = std::max(fused.saved_bytes, split.saved_bytes);
    sizes->backward_workspace_bytes = std::max(fused.backward_workspace_bytes,
                                               split.backward_workspace_bytes);
    return FP_OK;
  } catch (const std::exception &e) {
    return fail(FP_ERROR_INVALID_ARGUMENT, where + e.what());
  }
  const size_t chunkBytes = sizes->chunk_workspace_bytes;
  *sizes = sizesOf(schedule);
  sizes->chunk_workspace_bytes = chunkBytes;
  return FP_OK;
}

/// The name of the schedule a call of this shape takes ("fused", "split"
/// or "unfused"), or null with the error recorded.
inline const char *scheduleName(const LayerDescriptor &layer, fp_target target,
                                fp_dtype dtype, int64_t batch, int64_t length) {
  if (checkCall("schedule", layer, target, dtype, batch, length) != FP_OK)
    return nullptr;
  CallSchedule schedule;
  if (guarded(std::string(layer.name) + " schedule: ", [&] {
        schedule = chooseSchedule(layer, target, dtype, batch, length);
      }) != FP_OK)
    return nullptr;
  return schedule.name;
}

/// The checks every entry point's argument struct starts with: it is there,
/// and it is the size this library was compiled with (`typeName`).
template <typename Args>
fp_status checkArgsStruct(const std::string &where, const Args *args,
                          const char *typeName) {
  if (!args)
    return fail(FP_ERROR_INVALID_ARGUMENT, where + "args is NULL");
  if (args->struct_size != sizeof(Args))
    return fail(FP_ERROR_INVALID_ARGUMENT,
                where + "struct_size " + std::to_string(args->struct_size) +
                    " does not match this library's " + typeName + " (" +
                    std::to_string(sizeof(Args)) + " bytes)");
  return FP_OK;
}

/// Lays the call's buffers out in its workspace (their offsets into
/// `offsets`), failing where the workspace is missing or too small;
/// `sizeField` names the fp_buffer_sizes field that gives its size, where
/// that is not the call's own.
template <typename Args>
fp_status layoutWorkspace(const std::string &where, const Args &args,
                          const BufferSpec *buffers, int count,
                          std::vector<size_t> &offsets,
                          const char *sizeField = nullptr) {
  offsets.resize(count);
  size_t needed = layoutBuffers(buffers, count, args.batch, args.seq_len,
                                scalarSize(args.dtype), offsets.data());
  if (needed > 0 && (!args.workspace || args.workspace_bytes < needed))
    return fail(FP_ERROR_WORKSPACE,
                where + "the workspace has " +
                    std::to_string(args.workspace ? args.workspace_bytes : 0) +
                    " bytes; buffer_sizes() asks for " +
                    std::to_string(needed) +
                    (sizeField ? std::string(" (") + sizeField + ")" : ""));
  return FP_OK;
}

/// The checks a forward's and a chunked forward's arguments share.
template <typename Args>
fp_status checkForwardArgs(const std::string &where,
                           const LayerDescriptor &layer, const Args &args) {
  if (args.num_params != layer.numParams)
    return fail(FP_ERROR_INVALID_ARGUMENT,
                where + "expected " + std::to_string(layer.numParams) +
                    " parameters, got " + std::to_string(args.num_params));
  if (layer.numParams > 0 && !args.params)
    return fail(FP_ERROR_INVALID_ARGUMENT, where + "params is NULL");
  for (int32_t i = 0; i < layer.numParams; ++i)
    if (!args.params[i])
      return fail(FP_ERROR_INVALID_ARGUMENT,
                  where + "parameter " + std::to_string(i) + " is NULL");
  if (!args.input || !args.output)
    return fail(FP_ERROR_INVALID_ARGUMENT, where + "input or output is NULL");
  if (args.device_stats && args.target != FP_TARGET_CUDA)
    return fail(FP_ERROR_INVALID_ARGUMENT,
                where + "device_stats is set on a CPU call; a CPU call "
                        "reports its statistics in stats");
  return FP_OK;
}

inline fp_status forward(const fp_forward_args *args,
                         const LayerDescriptor &layer) {
  std::string where = std::string(layer.name) + " forward: ";
  if (fp_status status = checkArgsStruct(where, args, "fp_forward_args"))
    return status;
  if (fp_status status = checkCall("forward", layer, args->target, args->dtype,
                                   args->batch, args->seq_len))
    return status;
  if (fp_status status = checkForwardArgs(where, layer, *args))
    return status;
  CallSchedule schedule;
  if (fp_status status = guarded(where, [&] {
        schedule = chooseSchedule(layer, args->target, args->dtype, args->batch,
                                  args->seq_len);
      }))
    return status;
  std::vector<size_t> offsets;
  if (fp_status status = layoutWorkspace(where, *args, schedule.buffers,
                                         schedule.numBuffers, offsets))
    return status;
  return guarded(where, [&] {
    schedule.forward(*args, static_cast<char *>(args->workspace),
                     offsets.data());
  });
}

inline fp_status backward(const fp_backward_args *args,
                          const LayerDescriptor &layer) {
  std::string where = std::string(layer.name) + " backward: ";
  if (fp_status status = checkArgsStruct(where, args, "fp_backward_args"))
    return status;
  if (fp_status status = checkCall("backward", layer, args->target, args->dtype,
                                   args->batch, args->seq_len))
    return status;
  CallSchedule schedule;
  if (fp_status status = guarded(where, [&] {
        schedule = chooseSchedule(layer, args->target, args->dtype, args->batch,
                                  args->seq_len);
      }))
    return status;
  if (!schedule.backward)
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
  if (schedule.numSaved > 0 && !args->saved)
    return fail(FP_ERROR_INVALID_ARGUMENT,
                where + "saved is NULL; run a training forward (with saved) "
                        "first");
  std::vector<size_t> offsets;
  if (fp_status status = layoutWorkspace(where, *args, schedule.backwardBuffers,
                                         schedule.numBackwardBuffers, offsets))
    return status;
  return guarded(where, [&] {
    schedule.backward(*args, static_cast<char *>(args->workspace),
                      offsets.data());
  });
}

inline fp_status forwardChunk(const fp_chunk_args *args,
                              const LayerDescriptor &layer) {
  std::string where = std::string(layer.name) + " forward_chunk: ";
  if (fp_status status = checkArgsStruct(where, args, "fp_chunk_args"))
    return status;
  const ChunkSchedule *chunk = layer.chunk;
  if (!chunk)
    return fail(FP_ERROR_UNSUPPORTED,
                where + "this library has no chunked forward (fpc "
                        "--no-chunked)");
  if (fp_status status = checkCall("forward_chunk", layer, args->target,
                                   args->dtype, args->batch, args->seq_len))
    return status;
  if (fp_status status = checkForwardArgs(where, layer, *args))
    return status;
  if (args->num_states != chunk->numStates)
    return fail(FP_ERROR_INVALID_ARGUMENT,
                where + "expected " + std::to_string(chunk->numStates) +
                    " states, got " + std::to_string(args->num_states));
  if (chunk->numStates > 0 && (!args->state_in || !args->state_out))
    return fail(FP_ERROR_INVALID_ARGUMENT,
                where + "state_in or state_out is NULL");
  for (int32_t i = 0; i < chunk->numStates; ++i)
    if (!args->state_in[i] || !args->state_out[i])
      return fail(FP_ERROR_INVALID_ARGUMENT,
                  where + "state " + std::to_string(i) + " is NULL");
  EntryFn<fp_chunk_args> fn =
      (args->target == FP_TARGET_CUDA ? chunk->cuda : chunk->cpu)
          .get(args->dtype);
  if (!fn)
    return fail(FP_ERROR_UNSUPPORTED,
                where + "the chunked forward is not compiled for this target "
                        "and dtype");
  std::vector<size_t> offsets;
  if (fp_status status =
          layoutWorkspace(where, *args, chunk->buffers, chunk->numBuffers,
                          offsets, "chunk_workspace_bytes"))
    return status;
  return guarded(where, [&] {
    fn(*args, static_cast<char *>(args->workspace), offsets.data());
  });
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
