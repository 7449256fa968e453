//===- RealText.h - English text that a Debian package ships ----*- C++ -*-===//
//
// The language-model tests read real text rather than generated mocks: the
// fortune files of Debian's `fortunes` package (one fortune per document,
// "%" lines between them), which scripts/install-deps.sh installs.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TEST_REALTEXT_H // NOLINT(llvm-header-guard)
#define FP_RUNTIME_TEST_REALTEXT_H

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace fp::test {

/// The document separator of fortune files.
inline constexpr const char *kFortuneSeparator = "%";

/// /usr/share/games/fortunes/NAME; a test failure says how to install it
/// when it is missing.
inline std::filesystem::path fortuneFile(const std::string &name = "fortunes") {
  std::filesystem::path path =
      std::filesystem::path("/usr/share/games/fortunes") / name;
  if (!std::filesystem::exists(path))
    ADD_FAILURE() << path << " is missing: install Debian's `fortunes` "
                  << "package (scripts/install-deps.sh does)";
  return path;
}

} // namespace fp::test

#endif // FP_RUNTIME_TEST_REALTEXT_H
