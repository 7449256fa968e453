//===- TestSeed.h - The seed of a randomised test ---------------*- C++ -*-===//
//
// Every randomised test, in ctest and in the lit suite, takes its seed from
// testSeed(), so that a run gives the same answer twice:
//
// * by default a fixed seed, kDefaultTestSeed;
// * FP_TEST_SEED=N replays seed N (a failure prints the seed it ran with);
// * FP_TEST_SEED=random draws a fresh seed at every call: the opt-in soak
//   runs of scripts/soak.sh (docs/testing.md), never run by CI.
//
// Header-only and free of LibTorch and GoogleTest, so that the lit suite's
// checker programs share it.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TEST_TESTSEED_H // NOLINT(llvm-header-guard)
#define FP_RUNTIME_TEST_TESTSEED_H

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

namespace fp::test {

/// The seed of every randomised test unless FP_TEST_SEED says otherwise.
constexpr uint64_t kDefaultTestSeed = 1;

/// The seed a randomised test draws its data from, printed as
/// "[   seed   ] N (FP_TEST_SEED=N reproduces)" on stdout. An FP_TEST_SEED
/// that is neither a number nor "random" ends the program with exit code 2.
inline uint64_t testSeed() {
  uint64_t seed = kDefaultTestSeed;
  const char *text = std::getenv("FP_TEST_SEED");
  if (text && *text) {
    if (std::strcmp(text, "random") == 0) {
      std::random_device device;
      // 31 bits: a seed any consumer takes (torch::manual_seed, an int64,
      // a 32-bit engine) and that is short to type.
      seed = (uint64_t(device()) << 32 ^ device()) % 2147483647u;
    } else {
      char *end = nullptr;
      errno = 0;
      unsigned long long value = std::strtoull(text, &end, 10);
      if (errno != 0 || end == text || *end != '\0' || *text == '-') {
        std::fprintf(stderr,
                     "FP_TEST_SEED=%s: expected a non-negative integer or "
                     "'random'\n",
                     text);
        std::exit(2);
      }
      seed = value;
    }
  }
  std::printf("[   seed   ] %llu (FP_TEST_SEED=%llu reproduces)\n",
              static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  return seed;
}

} // namespace fp::test

#endif // FP_RUNTIME_TEST_TESTSEED_H
