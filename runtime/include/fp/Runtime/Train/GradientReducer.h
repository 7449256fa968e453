//===- GradientReducer.h - Gradients summed over the processes --*- C++ -*-===//
//
// Each process of a job computes the gradients of its rows of the batch;
// the step needs their sum. A GradientReducer sums them in buckets, as
// PyTorch's DistributedDataParallel does: consecutive parameters, taken in
// the reverse of the model's order (roughly the order the backward produces
// their gradients), of one element type and device, at most a set size
// each. With overlap on, a hook on each parameter's gradient accumulator
// counts the gradients as the backward writes them, and a bucket whose
// gradients are all there starts its sum at once, while the backward goes
// on with the layers below; finish() starts what is left, waits, and writes
// the sums back. Buckets start strictly in order, so every rank starts the
// same collectives in the same order whatever order its backward ran in.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TRAIN_GRADIENTREDUCER_H
#define FP_RUNTIME_TRAIN_GRADIENTREDUCER_H

#include "fp/Runtime/AutogradNode.h"
#include "fp/Runtime/Train/Distributed.h"

#include <torch/torch.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

namespace torch::autograd {
struct Node;
} // namespace torch::autograd

namespace fp::rt {

class GradientReducer {
public:
  /// Sums the gradients of `parameters` (those that require one) over the
  /// processes of `collectives`, in buckets of at most `bucketBytes`.
  /// With `overlap`, registers the hooks that start buckets during the
  /// backward; they act only in a backward that arm() announced.
  GradientReducer(std::shared_ptr<Collectives> collectives,
                  const std::vector<torch::Tensor> &parameters,
                  int64_t bucketBytes, bool overlap);
  ~GradientReducer();
  GradientReducer(const GradientReducer &) = delete;
  GradientReducer &operator=(const GradientReducer &) = delete;

  /// The next backward is the step's last (its gradients are the ones to
  /// sum): with overlap, its hooks start the buckets as they fill.
  void arm();
  /// Starts every bucket not started yet, waits for all, and overwrites
  /// each gradient with its sum over the processes. A parameter without a
  /// gradient in this step is left out of its bucket. Throws
  /// DistributedError when a collective failed, here or in a hook.
  void finish();

  /// The buckets, as indices into the parameters given (tests, docs).
  std::vector<std::vector<size_t>> bucketMembers() const;
  /// Buckets started by the hooks during the last finished backward.
  int64_t startedEarly() const { return lastStartedEarly; }

private:
  struct Bucket {
    std::vector<size_t> members;
    /// Gradients still to come in the armed backward.
    size_t waiting = 0;
    torch::Tensor flat;
    std::unique_ptr<PendingCollective> pending;
  };

  void gradientReady(size_t parameter);
  /// Starts the buckets from `nextToStart` on while they are complete.
  void startCompleteBuckets();
  void start(Bucket &bucket);

  std::shared_ptr<Collectives> collectives;
  std::vector<torch::Tensor> parameters;
  std::vector<Bucket> buckets;
  /// The bucket of each parameter (SIZE_MAX: none, no gradient).
  std::vector<size_t> bucketOf;
  /// The accumulators the hooks hang on, with each hook's key: a parameter
  /// holds its accumulator only weakly, so the reducer keeps them alive.
  std::vector<std::pair<NodeRef, uintptr_t>> hooks;
  bool armed = false;
  /// The first bucket not started yet in this step.
  size_t nextToStart = 0;
  int64_t lastStartedEarly = 0;
  /// A failure inside a hook, rethrown by finish().
  std::exception_ptr hookFailure;
};

} // namespace fp::rt

#endif // FP_RUNTIME_TRAIN_GRADIENTREDUCER_H
