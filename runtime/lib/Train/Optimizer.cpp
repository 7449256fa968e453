//===- Optimizer.cpp - AdamW, decay groups, schedules, clipping -*- C++ -*-===//
//
// Implements the optimisation recipe declared in Optimizer.h. Names are
// matched the way the reference's Python does on its module names, with the
// case folded so that C++ names such as "outNorm" count as norms too.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Train/Optimizer.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace fp::rt {

static constexpr double kPi = 3.14159265358979323846;

double learningRate(const ScheduleConfig &schedule, int64_t step) {
  const double lr = schedule.lr;
  const int64_t warmup = std::max<int64_t>(schedule.warmupSteps, 0);
  if (step < warmup)
    return lr * static_cast<double>(std::max<int64_t>(step, 0)) /
           static_cast<double>(warmup);
  if (schedule.kind == Schedule::Constant)
    return lr;

  const double minLr = schedule.minLrRatio * lr;
  const int64_t span = std::max<int64_t>(schedule.totalSteps - warmup, 1);
  double progress =
      static_cast<double>(step - warmup) / static_cast<double>(span);
  progress = std::clamp(progress, 0.0, 1.0);
  switch (schedule.kind) {
  case Schedule::Cosine:
  case Schedule::WarmupCosine:
    return minLr + (lr - minLr) * 0.5 * (1.0 + std::cos(kPi * progress));
  case Schedule::Linear:
    return minLr + (lr - minLr) * (1.0 - progress);
  case Schedule::Constant:
    break;
  }
  return lr;
}

bool isDecayed(const std::string &name, DecayRule rule) {
  if (rule == DecayRule::All)
    return true;
  std::string leaf = name.substr(name.find_last_of('.') + 1);
  if (leaf == "A_log" || leaf == "D")
    return false;
  if (rule == DecayRule::AllButSsm)
    return true;
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return lower.find("bias") == std::string::npos &&
         lower.find("norm") == std::string::npos;
}

DecayGroups decayGroups(torch::nn::Module &module, DecayRule rule) {
  DecayGroups groups;
  for (const auto &item : module.named_parameters(/*recurse=*/true))
    (isDecayed(item.key(), rule) ? groups.decayed : groups.undecayed)
        .push_back(item.key());
  return groups;
}

std::unique_ptr<torch::optim::AdamW> makeAdamW(torch::nn::Module &module,
                                               const OptimizerConfig &config) {
  auto options = [&](double weightDecay) {
    return torch::optim::AdamWOptions(config.lr)
        .betas({config.beta1, config.beta2})
        .eps(config.eps)
        .weight_decay(weightDecay);
  };
  std::vector<torch::Tensor> decayed, undecayed;
  for (const auto &item : module.named_parameters(/*recurse=*/true))
    (isDecayed(item.key(), config.decay) ? decayed : undecayed)
        .push_back(item.value());

  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (!decayed.empty())
    groups.emplace_back(decayed, std::make_unique<torch::optim::AdamWOptions>(
                                     options(config.weightDecay)));
  if (!undecayed.empty())
    groups.emplace_back(
        undecayed, std::make_unique<torch::optim::AdamWOptions>(options(0.0)));
  return std::make_unique<torch::optim::AdamW>(std::move(groups),
                                               options(config.weightDecay));
}

void setLearningRate(torch::optim::Optimizer &optimizer, double lr) {
  for (auto &group : optimizer.param_groups())
    static_cast<torch::optim::AdamWOptions &>(group.options()).lr(lr);
}

double clipGradients(const std::vector<torch::Tensor> &parameters,
                     double maxNorm) {
  std::vector<torch::Tensor> norms;
  std::vector<torch::Tensor> grads;
  for (const torch::Tensor &parameter : parameters) {
    const torch::Tensor &grad = parameter.grad();
    if (!grad.defined())
      continue;
    grads.push_back(grad);
    norms.push_back(grad.detach().norm(2).to(torch::kFloat64));
  }
  if (grads.empty())
    return 0.0;
  torch::Tensor total = torch::stack(norms).norm(2);
  if (maxNorm > 0) {
    // As clip_grad_norm_: scale by min(1, maxNorm / (norm + 1e-6)).
    torch::Tensor scale = torch::clamp_max(maxNorm / (total + 1e-6), 1.0);
    torch::NoGradGuard noGrad;
    for (torch::Tensor &grad : grads)
      grad.mul_(scale.to(grad.scalar_type()));
  }
  return total.item<double>();
}

} // namespace fp::rt
