//===- MemoryEstimate.cpp - Memory a run needs, before it runs --*- C++ -*-===//
//
// The activation bound counts only tensors every model of the runtime keeps
// for its backward: the input and output of every layer ([B, T, d_model]
// each, with the gradient of one at a time), and the logits with their
// log-softmax and gradient ([B, T, V_pad] each). Models keep more (scan
// states, gates), so the true peak is higher; a refusal is therefore never
// wrong, and a run that passes may still be short of memory.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Train/MemoryEstimate.h"

#include "fp/Runtime/Reference/SequenceModel.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>

namespace fp::rt {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double elementBytes(torch::Dtype dtype) {
  return double(c10::elementSize(dtype));
}

int64_t countParameters(const torch::nn::Module &model) {
  int64_t count = 0;
  for (const torch::Tensor &parameter : model.parameters())
    count += parameter.numel();
  return count;
}

/// The length of the task's sequences: of a training batch, and the longest
/// evaluated one.
int64_t sequenceLength(const Batch &batch) { return batch.inputs.size(-1); }

/// Bytes of a compiled model's layer calls for a batch of `batch` sequences
/// of `length` tokens: per layer its saved buffer and workspaces when
/// training, its forward workspace otherwise.
double compiledCallBytes(const CompiledModel &model, int64_t batch,
                         int64_t length, bool training, torch::Dtype dtype) {
  double total = 0;
  const fp_dtype abiType = dtype == torch::kFloat64    ? FP_DTYPE_F64
                           : dtype == torch::kBFloat16 ? FP_DTYPE_BF16
                                                       : FP_DTYPE_F32;
  for (const auto &layer : model.layers) {
    const LayerEntryPoints &entry =
        layer->library().entryPoints(std::string_view(layer->info().name));
    fp_buffer_sizes sizes{};
    if (entry.bufferSizes(FP_TARGET_CPU, abiType, batch, length, &sizes) !=
        FP_OK)
      continue; // the call itself reports the problem
    total += training ? double(sizes.saved_bytes) +
                            double(std::max(sizes.forward_workspace_bytes,
                                            sizes.backward_workspace_bytes))
                      : double(sizes.forward_workspace_bytes);
  }
  return total;
}

} // namespace

int64_t referenceParameterCount(const ModelConfig &config) {
  ModelConfig one = config, two = config;
  one.nLayers = 1;
  two.nLayers = 2;
  const int64_t first = countParameters(*makeReferenceModel(one));
  const int64_t perLayer = countParameters(*makeReferenceModel(two)) - first;
  return first + (config.nLayers - 1) * perLayer;
}

MemoryEstimate estimateTrainingMemory(const TrainConfig &config,
                                      const Task &task, int64_t parameterCount,
                                      const CompiledModel *compiled) {
  const ModelConfig &model = config.model;
  const double bytes = elementBytes(model.dtype);
  MemoryEstimate estimate;
  estimate.parameters = 4.0 * double(parameterCount) * bytes;

  const int64_t trainLength =
      sequenceLength(task.trainBatch(1, config.seed, /*step=*/0));
  int64_t evalLength = 0;
  for (int64_t length : task.evalLengths())
    evalLength = std::max(evalLength, length);
  if (evalLength > 0)
    evalLength = sequenceLength(task.evalBatch(evalLength, 1, config.seed));

  const double width = double(model.dModel),
               vocab = double(model.paddedVocab());
  const double layers = double(model.nLayers);
  auto tokens = [](int64_t batch, int64_t length) {
    return double(batch) * double(length);
  };
  // A step holds the activations of one micro-batch at a time.
  const int64_t microBatch =
      config.batchSize / std::max<int64_t>(config.gradAccum, 1);
  const double trainTokens = tokens(microBatch, trainLength);
  double training =
      trainTokens * bytes * (width * (2.0 * layers + 1.0) + 3.0 * vocab);
  const double evalTokens = tokens(config.evalBatch, evalLength);
  double evaluation = evalTokens * bytes * (2.0 * width + 2.0 * vocab);
  if (compiled) {
    training += compiledCallBytes(*compiled, microBatch, trainLength,
                                  /*training=*/true, model.dtype);
    evaluation += compiledCallBytes(*compiled, config.evalBatch, evalLength,
                                    /*training=*/false, model.dtype);
  }
  estimate.activations = std::max(training, evaluation);
  return estimate;
}

std::optional<double> availableHostMemory() {
  std::optional<double> available;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") {
      available = kib * 1024.0;
      break;
    }
  // A cgroup v2 limit (containers, batch schedulers) lowers it.
  std::ifstream maxFile("/sys/fs/cgroup/memory.max"),
      currentFile("/sys/fs/cgroup/memory.current");
  std::string limit;
  double current = 0;
  if (maxFile >> limit && limit != "max" && currentFile >> current) {
    double left = std::max(0.0, std::stod(limit) - current);
    available = available ? std::min(*available, left) : left;
  }
  return available;
}

void requireMemoryFor(const TrainConfig &config, const MemoryEstimate &need) {
  if (config.device.rfind("cuda", 0) == 0)
    return;
  std::optional<double> available = availableHostMemory();
  if (!available || need.total() <= *available)
    return;
  throw std::invalid_argument(fmt::format(
      "this run needs at least {:.1f} GiB of memory (parameters with their "
      "gradients and AdamW state {:.1f} GiB, activations of a micro-batch "
      "of {} sequences (--batch {} / --grad-accum {}) or an evaluation "
      "chunk of --eval-batch {}: {:.1f} GiB), but {:.1f} GiB are "
      "available; raise --grad-accum, lower --batch, --eval-batch or the "
      "model's size",
      need.total() / kGiB, need.parameters / kGiB,
      config.batchSize / std::max<int64_t>(config.gradAccum, 1),
      config.batchSize, config.gradAccum, config.evalBatch,
      need.activations / kGiB, *available / kGiB));
}

} // namespace fp::rt
