//===- ToolArguments.cpp - The command lines of the small tools -*- C++ -*-===//

#include "fp/Runtime/Train/ToolArguments.h"

#include "fp/Runtime/Tasks/TokenCorpus.h"
#include "fp/Runtime/Train/CommandLine.h"

#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace fp::rt;

bool ToolArguments::next() {
  if (started)
    ++index;
  started = true;
  if (index >= args.size())
    return false;
  const std::string &arg = args[index];
  name = arg.rfind("--", 0) == 0 ? arg.substr(2) : std::string();
  return true;
}

bool ToolArguments::isHelp() const {
  return argument() == "-h" || argument() == "--help";
}

std::string ToolArguments::value() {
  if (index + 1 >= args.size())
    throw UsageError(fmt::format("--{} needs a value", name));
  return args[++index];
}

int64_t ToolArguments::parseInteger(const std::string &flag,
                                    const std::string &text, int64_t smallest) {
  int64_t parsed = 0;
  auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), parsed);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    throw UsageError(
        fmt::format("--{} expects an integer, got '{}'", flag, text));
  if (parsed < smallest)
    throw UsageError(fmt::format("--{} must be at least {}, got {}", flag,
                                 smallest, parsed));
  return parsed;
}

double ToolArguments::number(const std::function<bool(double)> &accept,
                             const char *expected) {
  const std::string text = value();
  char *end = nullptr;
  const double parsed = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(parsed) || !accept(parsed))
    throw UsageError(fmt::format("--{} expects a number {}, got '{}'", name,
                                 expected, text));
  return parsed;
}

std::vector<std::string> fp::rt::splitAtCommas(const std::string &text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = std::min(text.find(',', start), text.size());
    parts.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return parts;
}

int fp::rt::runTool(const char *name, const std::function<int()> &body) {
  try {
    return body();
  } catch (const UsageError &error) {
    fmt::print(stderr, "{}: error: {}\n", name, error.what());
    return 2;
  } catch (const DataError &error) {
    fmt::print(stderr, "{}: error: {}\n", name, error.what());
    return 2;
  } catch (const c10::Error &error) {
    fmt::print(stderr, "{}: error: {}\n", name, error.what_without_backtrace());
    return 1;
  } catch (const std::exception &error) {
    fmt::print(stderr, "{}: error: {}\n", name, error.what());
    return 1;
  }
}
