//===- Optimizer.h - AdamW, decay groups, schedules, clipping ---*- C++ -*-===//
//
// The optimisation recipe of docs/spec.md §7 as plain functions: the learning
// rate of a step, which parameters are weight-decayed, AdamW with one parameter
// group for decayed and one for undecayed parameters, and the gradient norm
// with optional clipping.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TRAIN_OPTIMIZER_H
#define FP_RUNTIME_TRAIN_OPTIMIZER_H

#include "fp/Runtime/Train/TrainConfig.h"

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace fp::rt {

/// The learning rate of optimiser step `step` (0-based) under `schedule`:
///
///   warmup (every kind): lr · step / warmupSteps for step < warmupSteps;
///   then, with p = (step − W) / (totalSteps − W) clamped to [0, 1] and
///   lr_min = minLrRatio · lr:
///     constant:              lr
///     cosine, warmup-cosine: lr_min + (lr − lr_min) · (1 + cos(π p)) / 2
///     linear:                lr_min + (lr − lr_min) · (1 − p)
///
/// cosine is the reference's CosineAnnealingLR (word problems, warmup 0),
/// warmup-cosine its warmup + cosine (arithmetic, language modelling), linear
/// Hugging Face's linear schedule with warmup (copy).
double learningRate(const ScheduleConfig &schedule, int64_t step);

/// Whether the parameter called `name` (a named_parameters() key such as
/// "layers.0.mixer.A_log") is weight-decayed under `rule` (docs/spec.md §7):
///   no-bias-no-norm-no-ssm: the name contains neither "bias" nor "norm"
///     (case-insensitively) and its leaf is neither "A_log" nor "D";
///   all-but-ssm: the leaf is neither "A_log" nor "D";
///   all: always.
bool isDecayed(const std::string &name, DecayRule rule);

/// Parameter names split by isDecayed(), each in named_parameters() order.
struct DecayGroups {
  std::vector<std::string> decayed;
  std::vector<std::string> undecayed;
};
DecayGroups decayGroups(torch::nn::Module &module, DecayRule rule);

/// AdamW over `module`'s parameters with config's betas, eps and lr:
/// group 0 holds the decayed parameters (weight decay config.weightDecay),
/// group 1 the others (weight decay 0). Empty groups are left out.
std::unique_ptr<torch::optim::AdamW> makeAdamW(torch::nn::Module &module,
                                               const OptimizerConfig &config);

/// Sets the learning rate of every parameter group.
void setLearningRate(torch::optim::Optimizer &optimizer, double lr);

/// The global 2-norm of the gradients of `parameters` (those with one),
/// then, when maxNorm > 0, scales the gradients so that it is at most
/// maxNorm (torch.nn.utils.clip_grad_norm_). Returns the norm before
/// clipping.
double clipGradients(const std::vector<torch::Tensor> &parameters,
                     double maxNorm);

} // namespace fp::rt

#endif // FP_RUNTIME_TRAIN_OPTIMIZER_H
