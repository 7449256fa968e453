//===- CommandLine.h - fp-train's flags -------------------------*- C++ -*-===//
//
// The command line of fp-train: one table of flags (name, value, default,
// help, section) from which the parser, the --help text and docs/training.md
// all follow; the construction of a fresh run's TrainConfig (task defaults,
// then the model kind's solver defaults, then the flags); and the checks of a
// resumed run's flags against its stored configuration. Every problem is a
// UsageError with a one-line message naming the flag.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TRAIN_COMMANDLINE_H
#define FP_RUNTIME_TRAIN_COMMANDLINE_H

#include "fp/Runtime/Train/Progress.h"
#include "fp/Runtime/Train/TrainConfig.h"

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fp::rt {

/// A command-line mistake; fp-train prints the message and exits with 2.
class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// One flag of fp-train.
struct FlagInfo {
  /// Without the leading "--", e.g. "d-model".
  const char *name;
  /// Placeholder of the value in --help ("N", "X", "NAME"); nullptr for a
  /// switch, which takes no value.
  const char *valueName;
  /// The default as --help shows it.
  const char *defaultText;
  const char *help;
  /// The --help section.
  const char *section;
};

/// Every flag fp-train accepts, in --help order.
const std::vector<FlagInfo> &trainFlags();

/// The flags of one invocation, syntactically checked against trainFlags().
class CommandLine {
public:
  /// Parses `args` (without the program name): "--name value",
  /// "--name=value", switches as "--name", "-h"/"--help". Throws UsageError
  /// for an unknown flag (suggesting a near one), a missing value, a value
  /// given to a switch, a repeated flag or a positional argument.
  static CommandLine parse(const std::vector<std::string> &args);

  bool helpRequested() const { return help; }
  bool has(const std::string &name) const;
  /// The value of `name`, "" for a given switch, nullopt when not given.
  std::optional<std::string> value(const std::string &name) const;
  /// The flags in the order given, as (name, value).
  const std::vector<std::pair<std::string, std::string>> &flags() const {
    return given;
  }

private:
  bool help = false;
  std::vector<std::pair<std::string, std::string>> given;
};

/// The --help text: usage, every flag with its default, exit codes.
std::string trainHelpText();

/// The task named by --task; UsageError when missing.
std::string taskNameFromFlags(const CommandLine &commandLine);
/// The task options the flags set (0 where not given).
TaskOptions taskOptionsFromFlags(const CommandLine &commandLine);
/// The progress mode of --progress (default auto).
ProgressMode progressModeFromFlags(const CommandLine &commandLine);

/// A fresh run's configuration: `defaults` (the task's) fill the optimiser,
/// batch, steps, vocabulary padding and norm eps; the model kind fixes the
/// solver defaults (docs/spec.md §3.4); then every flag applies. Validated.
TrainConfig makeTrainConfig(const CommandLine &commandLine,
                            const TaskDefaults &defaults, int64_t vocabSize);

/// A resumed run's configuration: `stored` (from DIR/config.json) with
/// --steps applied. A flag that would change anything else is a UsageError
/// naming the flag and the stored value; --epochs is refused (use --steps).
TrainConfig resumeTrainConfig(const CommandLine &commandLine,
                              const TrainConfig &stored);

/// Checks every value's range; UsageError naming the flag.
void validateTrainConfig(const TrainConfig &config);

/// Checks that a fresh run may use `directory`: missing or an empty
/// directory. A previous run there (config.json) or any other content is a
/// UsageError suggesting --resume or a fresh directory.
void checkFreshOutputDirectory(const std::filesystem::path &directory);

} // namespace fp::rt

#endif // FP_RUNTIME_TRAIN_COMMANDLINE_H
