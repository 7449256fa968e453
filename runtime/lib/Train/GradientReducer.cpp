//===- GradientReducer.cpp - Gradients summed over a job's processes -----===//
//
// Part of fpc. See GradientReducer.h.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Train/GradientReducer.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <limits>
#include <stdexcept>

using namespace fp::rt;

namespace {
constexpr size_t kNoBucket = std::numeric_limits<size_t>::max();
} // namespace

GradientReducer::GradientReducer(std::shared_ptr<Collectives> collectives,
                                 const std::vector<torch::Tensor> &parameters,
                                 int64_t bucketBytes, bool overlap)
    : collectives(std::move(collectives)), parameters(parameters),
      bucketOf(parameters.size(), kNoBucket) {
  if (bucketBytes <= 0)
    throw std::invalid_argument("the gradient buckets' size must be positive");
  // Reverse order: the backward reaches the last layers first.
  int64_t bytes = 0;
  for (size_t i = parameters.size(); i-- > 0;) {
    const torch::Tensor &parameter = parameters[i];
    if (!parameter.requires_grad())
      continue;
    const int64_t size = parameter.numel() * parameter.element_size();
    const bool fits =
        !buckets.empty() && bytes + size <= bucketBytes &&
        parameters[buckets.back().members.front()].scalar_type() ==
            parameter.scalar_type() &&
        parameters[buckets.back().members.front()].device() ==
            parameter.device();
    if (!fits) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().members.push_back(i);
    bucketOf[i] = buckets.size() - 1;
    bytes += size;
  }
  if (!overlap)
    return;
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (bucketOf[i] == kNoBucket)
      continue;
    NodeRef accumulator =
        torch::autograd::impl::grad_accumulator(parameters[i]);
    if (!accumulator)
      throw std::invalid_argument(
          "a parameter that requires a gradient is not a leaf tensor");
    const uintptr_t key = accumulator->add_post_hook(
        std::make_unique<torch::autograd::utils::LambdaPostHook>(
            [this, i](const torch::autograd::variable_list &outputs,
                      const torch::autograd::variable_list &) {
              gradientReady(i);
              return outputs;
            }));
    hooks.emplace_back(std::move(accumulator), key);
  }
}

GradientReducer::~GradientReducer() {
  // The hooks point at this reducer: take them off the accumulators, which
  // may outlive it (the parameters keep using them).
  for (auto &[accumulator, key] : hooks)
    accumulator->del_post_hook(key);
}

void GradientReducer::arm() {
  armed = !hooks.empty();
  for (Bucket &bucket : buckets)
    bucket.waiting = bucket.members.size();
}

void GradientReducer::gradientReady(size_t parameter) {
  if (!armed || hookFailure)
    return;
  try {
    Bucket &bucket = buckets[bucketOf[parameter]];
    if (bucket.waiting > 0)
      --bucket.waiting;
    startCompleteBuckets();
  } catch (...) {
    // An exception would leave the backward through the autograd engine;
    // finish() reports it on the training loop's thread instead.
    hookFailure = std::current_exception();
  }
}

void GradientReducer::startCompleteBuckets() {
  while (nextToStart < buckets.size() && buckets[nextToStart].waiting == 0)
    start(buckets[nextToStart++]);
}

void GradientReducer::start(Bucket &bucket) {
  std::vector<torch::Tensor> flats;
  for (size_t member : bucket.members) {
    const torch::Tensor &grad = parameters[member].grad();
    if (grad.defined())
      flats.push_back(grad.reshape(-1));
  }
  if (flats.empty())
    return;
  bucket.flat = flats.size() == 1 ? flats.front().clone() : torch::cat(flats);
  bucket.pending = collectives->startSum(bucket.flat);
}

void GradientReducer::finish() {
  // Only an armed backward's hooks start buckets.
  lastStartedEarly = static_cast<int64_t>(nextToStart);
  armed = false;
  if (hookFailure)
    std::rethrow_exception(std::exchange(hookFailure, nullptr));
  while (nextToStart < buckets.size())
    start(buckets[nextToStart++]);
  for (Bucket &bucket : buckets) {
    if (!bucket.pending)
      continue;
    bucket.pending->wait();
    bucket.pending.reset();
    int64_t offset = 0;
    for (size_t member : bucket.members) {
      torch::Tensor grad = parameters[member].mutable_grad();
      if (!grad.defined())
        continue;
      grad.copy_(bucket.flat.narrow(0, offset, grad.numel()).view_as(grad));
      offset += grad.numel();
    }
    bucket.flat = torch::Tensor();
  }
  nextToStart = 0;
}

std::vector<std::vector<size_t>> GradientReducer::bucketMembers() const {
  std::vector<std::vector<size_t>> members;
  for (const Bucket &bucket : buckets)
    members.push_back(bucket.members);
  return members;
}
