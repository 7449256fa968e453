//===- TaskImpl.h - Shared machinery of the tasks ---------------*- C++ -*-===//
//
// Private to lib/Tasks: the base class that holds a task's resolved options,
// option resolution and validation (every "impossible option" message comes
// from here), argument checks for batch requests, row-parallel batch
// filling, and the constructors of the concrete tasks that makeTask() calls.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_LIB_TASKS_TASKIMPL_H // NOLINT(llvm-header-guard)
#define FP_RUNTIME_LIB_TASKS_TASKIMPL_H

#include "fp/Runtime/Tasks/Task.h"

#include <ATen/Parallel.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fp::rt::detail {

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

/// A task's default lengths and the smallest lengths it can generate.
struct LengthDefaults {
  int64_t trainMax;
  /// 0: the resolved trainMax (fixed-length training sequences).
  int64_t trainMin;
  int64_t evalMin;
  int64_t evalMax;
  int64_t evalStep;
  /// Smallest length a training / evaluation sequence can have.
  int64_t smallestTrain;
  int64_t smallestEval;
};

/// Fills the length fields of `given` left at 0 from `defaults` and checks
/// them; contextLength and alphabetSize are copied as given. Throws
/// std::invalid_argument naming the task and the offending option.
TaskOptions resolveLengths(const std::string &task, const TaskOptions &given,
                           const LengthDefaults &defaults);

/// Throws std::invalid_argument when an option that `task` does not use was
/// set (non-zero).
void rejectOption(const std::string &task, const char *option, int64_t value);

/// [min, max] in steps of `step`, both ends inclusive when reached.
std::vector<int64_t> lengthRange(int64_t min, int64_t max, int64_t step);

/// Throws std::invalid_argument unless `count` >= 1 (`what` names it).
void checkCount(const std::string &task, const char *what, int64_t count);

/// Throws std::invalid_argument unless `length` >= `smallest`.
void checkEvalLength(const std::string &task, int64_t length, int64_t smallest);

//===----------------------------------------------------------------------===//
// Batches
//===----------------------------------------------------------------------===//

/// Rows per parallel chunk when generating a batch.
inline constexpr int64_t kRowGrain = 16;

/// Calls `fn(row)` for every row in [0, rows), in parallel chunks. `fn` must
/// only write its own row.
template <typename Fn> void forEachRow(int64_t rows, Fn &&fn) {
  at::parallel_for(0, rows, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row)
      fn(row);
  });
}

/// A [rows, cols] int64 CPU tensor filled with `value`.
torch::Tensor filledIds(int64_t rows, int64_t cols, int64_t value);

//===----------------------------------------------------------------------===//
// TaskBase
//===----------------------------------------------------------------------===//

/// Holds the name and resolved options shared by every task.
class TaskBase : public Task {
public:
  TaskBase(std::string name, TaskOptions resolved)
      : taskName(std::move(name)), resolved(std::move(resolved)) {}

  std::string name() const override { return taskName; }
  TaskOptions options() const override { return resolved; }
  std::vector<int64_t> evalLengths() const override {
    return lengthRange(resolved.evalMinLength, resolved.evalMaxLength,
                       resolved.evalStep);
  }

protected:
  std::string taskName;
  TaskOptions resolved;
};

//===----------------------------------------------------------------------===//
// Concrete tasks
//===----------------------------------------------------------------------===//

/// a5 (alternating = true) or s5 word problems (WordProblem.cpp).
std::unique_ptr<Task> makeWordProblemTask(bool alternating,
                                          const TaskOptions &options);
/// The copy task (Copy.cpp).
std::unique_ptr<Task> makeCopyTask(const TaskOptions &options);
/// Modular arithmetic with brackets (Arithmetic.cpp).
std::unique_ptr<Task> makeArithmeticTask(const TaskOptions &options);
/// Parity (Parity.cpp).
std::unique_ptr<Task> makeParityTask(const TaskOptions &options);
/// Language modelling on token data (Language.cpp).
std::unique_ptr<Task> makeLanguageTask(const TaskOptions &options);
/// catbAbI on the bAbI files the user supplies (CatBabi.cpp).
std::unique_ptr<Task> makeCatBabiTask(const TaskOptions &options);

} // namespace fp::rt::detail

#endif // FP_RUNTIME_LIB_TASKS_TASKIMPL_H
