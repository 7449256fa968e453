//===- KernelTestUtil.h - Helpers shared by the kernel tests ----*- C++ -*-===//
//
// Random inputs (from TestSeed.h's seeds), and the relative difference and
// distance in ulps the kernel tests compare with.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TEST_COMPILED_KERNELTESTUTIL_H // NOLINT(llvm-header-guard)
#define FP_RUNTIME_TEST_COMPILED_KERNELTESTUTIL_H

#include "TestSeed.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>
#include <vector>

namespace fp::test {

/// Fresh inputs in [-2, 2).
inline std::vector<double> randomValues(std::mt19937_64 &rng, int64_t n) {
  std::uniform_real_distribution<double> uniform(-2.0, 2.0);
  std::vector<double> values(n);
  for (double &v : values)
    v = uniform(rng);
  return values;
}

/// The largest |x − y| relative to the largest |y|.
inline double relativeDifference(const std::vector<double> &x,
                                 const std::vector<double> &y) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    diff = std::max(diff, std::fabs(x[i] - y[i]));
    scale = std::max(scale, std::fabs(y[i]));
  }
  return diff / scale;
}

/// The distance from `value` to `exact`, in units of the float spacing at
/// `exact` rounded to float.
inline double ulpsFrom(float value, double exact) {
  float rounded = static_cast<float>(exact);
  double spacing = std::nextafter(std::fabs(rounded),
                                  std::numeric_limits<float>::infinity()) -
                   std::fabs(rounded);
  return std::fabs(static_cast<double>(value) - exact) / spacing;
}

} // namespace fp::test

#endif // FP_RUNTIME_TEST_COMPILED_KERNELTESTUTIL_H
