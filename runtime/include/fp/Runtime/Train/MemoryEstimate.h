//===- MemoryEstimate.h - Memory a run needs, before it runs ----*- C++ -*-===//
//
// A lower bound of the host memory a training run holds at once, from its
// configuration, taken before the model's parameters and the first batch are
// allocated: fp-train refuses a --batch or --layers that cannot fit with the
// estimate, rather than being killed by the kernel part-way through.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TRAIN_MEMORYESTIMATE_H
#define FP_RUNTIME_TRAIN_MEMORYESTIMATE_H

#include "fp/Runtime/CompiledLayer.h"
#include "fp/Runtime/Tasks/Task.h"
#include "fp/Runtime/Train/TrainConfig.h"

#include <cstdint>
#include <optional>
#include <string>

namespace fp::rt {

/// Bytes a run holds at once, each part a lower bound.
struct MemoryEstimate {
  /// Parameters, their gradients and AdamW's two moments.
  double parameters = 0;
  /// What one training step keeps for its backward (the residual stream of
  /// every layer, the logits and their gradient; a compiled layer's saved
  /// buffer and workspaces, as its library sizes them), or one evaluation
  /// chunk's forward, whichever is larger.
  double activations = 0;

  double total() const { return parameters + activations; }
};

/// The number of parameters of the model `config` describes, for a
/// reference or baseline model: counted on models of one and two layers
/// (parameters grow linearly in the layers), so that a large --layers is
/// never allocated.
int64_t referenceParameterCount(const ModelConfig &config);

/// The estimate for `config` on `task`, with `parameterCount` parameters;
/// `compiled` is the model when it is a compiled library's (its layers'
/// buffer sizes are exact), else null.
MemoryEstimate estimateTrainingMemory(const TrainConfig &config,
                                      const Task &task, int64_t parameterCount,
                                      const CompiledModel *compiled);

/// Host memory this process may still use: MemAvailable of /proc/meminfo,
/// lowered to what is left of a cgroup (v2) memory.max. Empty when neither
/// can be read.
std::optional<double> availableHostMemory();

/// Throws std::invalid_argument, naming the estimate and what is available,
/// when a CPU run's estimate exceeds the host memory available. Runs on
/// CUDA are left to the device allocator's own error.
void requireMemoryFor(const TrainConfig &config, const MemoryEstimate &need);

} // namespace fp::rt

#endif // FP_RUNTIME_TRAIN_MEMORYESTIMATE_H
