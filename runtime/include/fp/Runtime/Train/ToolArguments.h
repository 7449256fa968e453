//===- ToolArguments.h - The command lines of the small tools ---*- C++ -*-===//
//
// fp-generate and fp-tokenize take a few flags each (fp-train's many go
// through CommandLine.h): positional arguments and "--name value" or
// "--name" switches, read in order. They end the same way: a UsageError or
// a DataError is the user's mistake (exit 2), any other exception a failure
// while running (exit 1), one line on stderr naming the tool.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TRAIN_TOOLARGUMENTS_H
#define FP_RUNTIME_TRAIN_TOOLARGUMENTS_H

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace fp::rt {

/// A tool's arguments, read in order.
class ToolArguments {
public:
  explicit ToolArguments(std::vector<std::string> args)
      : args(std::move(args)) {}

  /// Steps to the next argument; false after the last.
  bool next();
  /// The argument is "-h" or "--help".
  bool isHelp() const;
  /// The flag's name without "--"; empty for a positional argument.
  const std::string &flag() const { return name; }
  /// The argument as given.
  const std::string &argument() const { return args[index]; }

  /// The flag's value: the next argument. Throws UsageError when there is
  /// none.
  std::string value();
  /// The value as an integer of at least `smallest`. Throws UsageError
  /// naming the flag.
  int64_t integer(int64_t smallest) {
    return parseInteger(name, value(), smallest);
  }
  /// `text`, a part of flag `flag`'s value, as an integer of at least
  /// `smallest`. Throws UsageError naming the flag.
  static int64_t parseInteger(const std::string &flag, const std::string &text,
                              int64_t smallest);
  /// The value as a finite number for which `accept` holds. Throws
  /// UsageError: "--FLAG expects a number EXPECTED, got 'TEXT'".
  double number(const std::function<bool(double)> &accept,
                const char *expected);

private:
  std::vector<std::string> args;
  size_t index = 0;
  bool started = false;
  std::string name;
};

/// The parts of a flag's value between commas, empty ones kept ("a,,b":
/// "a", "", "b"; "": one empty part), for the caller to check.
std::vector<std::string> splitAtCommas(const std::string &text);

/// Runs `body` as the main function of tool `name`: its exit status, or,
/// after "NAME: error: MESSAGE" on stderr, 2 for a UsageError or DataError
/// and 1 for any other exception.
int runTool(const char *name, const std::function<int()> &body);

} // namespace fp::rt

#endif // FP_RUNTIME_TRAIN_TOOLARGUMENTS_H
