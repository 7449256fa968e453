//===- Task.cpp - Task scoring, loss, options and the factory ---*- C++ -*-===//
//
// What every task shares: the default score() and loss() (mean cross-entropy
// over supervised positions, over all padded classes; argmax accuracies),
// option resolution and validation, and makeTask() / taskNames().
//
//===----------------------------------------------------------------------===//

#include "TaskImpl.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

using namespace fp::rt;
using namespace fp::rt::detail;

namespace {

/// The names makeTask() accepts, in the order taskNames() lists them.
const char *const kTaskNames[] = {"a5", "s5", "copy", "arith", "parity"};

std::string joinedTaskNames() {
  std::string joined;
  for (const char *name : kTaskNames) {
    if (!joined.empty())
      joined += ", ";
    joined += name;
  }
  return joined + ", lm, catbabi";
}

[[noreturn]] void fail(const std::string &message) {
  throw std::invalid_argument(message);
}

/// Throws std::invalid_argument when an option of the lm task's data is set
/// for a generated task.
void rejectDataOptions(const std::string &task, const TaskOptions &options) {
  const char *given = !options.dataPaths.empty()        ? "dataPaths"
                      : !options.validationPath.empty() ? "validationPath"
                      : options.validationFraction != 0 ? "validationFraction"
                      : options.vocabSize != 0          ? "vocabSize"
                      : options.tokenBytes != 0         ? "tokenBytes"
                      : !options.documentSeparator.empty() ? "documentSeparator"
                      : !options.tokenizer.empty()         ? "tokenizer"
                      : options.trainTokens != 0           ? "trainTokens"
                      : options.validationTokens != 0      ? "validationTokens"
                                                           : nullptr;
  if (given)
    fail("task '" + task + "': option " + given +
         " does not apply (it is used by 'lm' only; '" + task +
         "' generates its data)");
}

std::string shapeOf(const torch::Tensor &tensor) {
  std::ostringstream os;
  os << tensor.sizes();
  return os.str();
}

/// Checks that `logits` [B, T, V] matches `batch.targets` [B, T] and has at
/// least `vocabSize` classes; returns V.
int64_t checkLogits(const std::string &task, int64_t vocabSize,
                    const torch::Tensor &logits, const Batch &batch) {
  if (!logits.defined() || !batch.targets.defined())
    fail("task '" + task + "': logits and targets must be defined");
  if (logits.dim() != 3)
    fail("task '" + task + "': logits must be [B, T, V], got " +
         shapeOf(logits));
  if (!logits.is_floating_point())
    fail("task '" + task + "': logits must be floating point");
  if (batch.targets.dim() != 2 || batch.targets.size(0) != logits.size(0) ||
      batch.targets.size(1) != logits.size(1))
    fail("task '" + task + "': logits " + shapeOf(logits) +
         " do not match targets " + shapeOf(batch.targets));
  int64_t classes = logits.size(2);
  if (classes < vocabSize)
    fail("task '" + task + "': logits have " + std::to_string(classes) +
         " classes, fewer than the vocabulary (" + std::to_string(vocabSize) +
         ")");
  return classes;
}

/// Half and bfloat16 logits as float (losses and softmax in float); float
/// and double as they are.
torch::Tensor widened(const torch::Tensor &logits) {
  if (logits.scalar_type() == torch::kHalf ||
      logits.scalar_type() == torch::kBFloat16)
    return logits.to(torch::kFloat);
  return logits;
}

} // namespace

//===----------------------------------------------------------------------===//
// Task
//===----------------------------------------------------------------------===//

Scores Task::score(const torch::Tensor &logits, const Batch &batch) const {
  int64_t classes = checkLogits(name(), vocabSize(), logits, batch);
  torch::NoGradGuard noGrad;
  int64_t rows = logits.size(0), cols = logits.size(1);

  torch::Tensor flatLogits =
      widened(logits.detach().reshape({rows * cols, classes}));
  torch::Tensor targets =
      batch.targets.to(logits.device(), torch::kLong).reshape({rows * cols});
  torch::Tensor supervised = targets.ne(kIgnoreIndex);
  torch::Tensor outOfRange = supervised & (targets.lt(0) | targets.ge(classes));

  // Out-of-range targets are reported after the single host synchronisation
  // below; cross_entropy would fail on them first, so hide them from it.
  // Ignored positions carry zero loss.
  namespace F = torch::nn::functional;
  torch::Tensor crossEntropy = F::cross_entropy(
      flatLogits, targets.masked_fill(outOfRange, kIgnoreIndex),
      F::CrossEntropyFuncOptions()
          .ignore_index(kIgnoreIndex)
          .reduction(torch::kNone));
  torch::Tensor correct = flatLogits.argmax(1).eq(targets) & supervised;
  torch::Tensor rowSupervised = supervised.view({rows, cols}).any(1);
  torch::Tensor rowWrong =
      (supervised & correct.logical_not()).view({rows, cols}).any(1);
  torch::Tensor stats = torch::stack(
      {crossEntropy.to(torch::kDouble).sum(),
       supervised.sum().to(torch::kDouble), correct.sum().to(torch::kDouble),
       rowSupervised.sum().to(torch::kDouble),
       (rowSupervised & rowWrong.logical_not()).sum().to(torch::kDouble),
       outOfRange.sum().to(torch::kDouble)});
  // Per group: supervised positions, then right ones, read with the rest.
  const auto groupCount = static_cast<int64_t>(groupNames().size());
  const bool grouped = groupCount > 0 && batch.groups.defined();
  if (grouped) {
    if (!batch.groups.sizes().equals(batch.targets.sizes()))
      fail("task '" + name() + "': groups " + shapeOf(batch.groups) +
           " do not match targets " + shapeOf(batch.targets));
    torch::Tensor groups =
        batch.groups.to(logits.device(), torch::kLong).reshape({rows * cols});
    auto perGroup = [&](const torch::Tensor &mask) {
      return torch::bincount(groups.masked_select(mask), /*weights=*/{},
                             groupCount)
          .narrow(0, 0, groupCount)
          .to(torch::kDouble);
    };
    stats = torch::cat({stats, perGroup(supervised), perGroup(correct)});
  }
  stats = stats.cpu();
  auto values = stats.accessor<double, 1>();
  if (values[5] > 0)
    fail("task '" + name() + "': targets outside [0, " +
         std::to_string(classes) + ") besides the ignore index");

  Scores scores;
  scores.tokens = static_cast<int64_t>(values[1]);
  scores.sequences = static_cast<int64_t>(values[3]);
  if (scores.tokens > 0) {
    scores.loss = values[0] / values[1];
    scores.tokenAccuracy = values[2] / values[1];
  }
  if (scores.sequences > 0)
    scores.sequenceAccuracy = values[4] / values[3];
  if (grouped)
    for (int64_t g = 0; g < groupCount; ++g) {
      scores.groupTokens.push_back(static_cast<int64_t>(values[6 + g]));
      scores.groupHits.push_back(
          static_cast<int64_t>(values[6 + groupCount + g]));
    }
  return scores;
}

torch::Tensor Task::loss(const torch::Tensor &logits,
                         const Batch &batch) const {
  int64_t classes = checkLogits(name(), vocabSize(), logits, batch);
  torch::Tensor flatLogits = widened(logits.reshape({-1, classes}));
  torch::Tensor targets =
      batch.targets.to(logits.device(), torch::kLong).reshape({-1});

  namespace F = torch::nn::functional;
  torch::Tensor total = F::cross_entropy(flatLogits, targets,
                                         F::CrossEntropyFuncOptions()
                                             .ignore_index(kIgnoreIndex)
                                             .reduction(torch::kSum));
  torch::Tensor count = targets.ne(kIgnoreIndex).sum().clamp_min(1);
  return total / count.to(total.scalar_type());
}

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

TaskOptions fp::rt::detail::resolveLengths(const std::string &task,
                                           const TaskOptions &given,
                                           const LengthDefaults &defaults) {
  auto prefix = "task '" + task + "': ";
  auto nonNegative = [&](const char *option, int64_t value) {
    if (value < 0)
      fail(prefix + option + " must be positive (0: default), got " +
           std::to_string(value));
  };
  nonNegative("trainLength", given.trainLength);
  nonNegative("trainMinLength", given.trainMinLength);
  nonNegative("evalMinLength", given.evalMinLength);
  nonNegative("evalMaxLength", given.evalMaxLength);
  nonNegative("evalStep", given.evalStep);

  auto orDefault = [](int64_t value, int64_t fallback) {
    return value != 0 ? value : fallback;
  };
  TaskOptions resolved = given;
  resolved.trainLength = orDefault(given.trainLength, defaults.trainMax);
  resolved.trainMinLength = orDefault(
      given.trainMinLength,
      defaults.trainMin != 0 ? defaults.trainMin : resolved.trainLength);
  resolved.evalMinLength = orDefault(given.evalMinLength, defaults.evalMin);
  resolved.evalMaxLength = orDefault(given.evalMaxLength, defaults.evalMax);
  resolved.evalStep = orDefault(given.evalStep, defaults.evalStep);

  auto atLeast = [&](const char *option, int64_t value, int64_t smallest) {
    if (value < smallest)
      fail(prefix + option + " must be at least " + std::to_string(smallest) +
           ", got " + std::to_string(value));
  };
  atLeast("trainMinLength", resolved.trainMinLength, defaults.smallestTrain);
  atLeast("evalMinLength", resolved.evalMinLength, defaults.smallestEval);
  if (resolved.trainLength < resolved.trainMinLength)
    fail(prefix + "trainLength (" + std::to_string(resolved.trainLength) +
         ") is smaller than trainMinLength (" +
         std::to_string(resolved.trainMinLength) + ")");
  if (resolved.evalMaxLength < resolved.evalMinLength)
    fail(prefix + "evalMaxLength (" + std::to_string(resolved.evalMaxLength) +
         ") is smaller than evalMinLength (" +
         std::to_string(resolved.evalMinLength) + ")");
  return resolved;
}

void fp::rt::detail::rejectOption(const std::string &task, const char *option,
                                  int64_t value) {
  if (value != 0)
    fail("task '" + task + "': option " + option +
         " does not apply (it is used by " +
         (std::string(option) == "contextLength" ? "'copy' and 'lm'"
                                                 : "'copy'") +
         " only)");
}

std::vector<int64_t> fp::rt::detail::lengthRange(int64_t min, int64_t max,
                                                 int64_t step) {
  std::vector<int64_t> lengths;
  for (int64_t length = min; length <= max; length += step)
    lengths.push_back(length);
  return lengths;
}

void fp::rt::detail::checkCount(const std::string &task, const char *what,
                                int64_t count) {
  if (count < 1)
    fail("task '" + task + "': " + what + " must be at least 1, got " +
         std::to_string(count));
}

void fp::rt::detail::checkEvalLength(const std::string &task, int64_t length,
                                     int64_t smallest) {
  if (length < smallest)
    fail("task '" + task + "': evaluation length must be at least " +
         std::to_string(smallest) + ", got " + std::to_string(length));
}

torch::Tensor fp::rt::detail::filledIds(int64_t rows, int64_t cols,
                                        int64_t value) {
  return torch::full({rows, cols}, value, torch::kLong);
}

//===----------------------------------------------------------------------===//
// Factory
//===----------------------------------------------------------------------===//

std::unique_ptr<Task> fp::rt::makeTask(const std::string &name,
                                       const TaskOptions &options) {
  if (name == "lm")
    return makeLanguageTask(options);
  if (name == "catbabi")
    return makeCatBabiTask(options);
  if (std::find(std::begin(kTaskNames), std::end(kTaskNames), name) !=
      std::end(kTaskNames))
    rejectDataOptions(name, options);
  if (name == "a5")
    return makeWordProblemTask(/*alternating=*/true, options);
  if (name == "s5")
    return makeWordProblemTask(/*alternating=*/false, options);
  if (name == "copy")
    return makeCopyTask(options);
  if (name == "arith")
    return makeArithmeticTask(options);
  if (name == "parity")
    return makeParityTask(options);
  fail("unknown task '" + name + "'; valid tasks: " + joinedTaskNames());
}

std::vector<std::string> fp::rt::taskNames() {
  return {std::begin(kTaskNames), std::end(kTaskNames)};
}
