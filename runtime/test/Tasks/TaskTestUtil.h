//===- TaskTestUtil.h - Helpers shared by the task tests --------*- C++ -*-===//
//
// The tests' seed (TestSeed.h; reported through SCOPED_TRACE as well),
// tensor-to-vector conversion, and an independent enumeration of S5 / A5
// with permutation composition, written without the library's Groups.h.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TEST_TASKS_TASKTESTUTIL_H // NOLINT(llvm-header-guard)
#define FP_RUNTIME_TEST_TASKS_TASKTESTUTIL_H

#include "TestSeed.h"
#include "fp/Runtime/Tasks/Task.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace fp::rt::test {

using fp::test::testSeed;

/// Rows of a [B, T] int64 tensor.
inline std::vector<std::vector<int64_t>> rowsOf(const torch::Tensor &ids) {
  EXPECT_EQ(ids.dim(), 2);
  EXPECT_EQ(ids.scalar_type(), torch::kLong);
  torch::Tensor contiguous = ids.contiguous();
  std::vector<std::vector<int64_t>> rows(contiguous.size(0));
  auto access = contiguous.accessor<int64_t, 2>();
  for (int64_t r = 0; r < contiguous.size(0); ++r)
    for (int64_t c = 0; c < contiguous.size(1); ++c)
      rows[r].push_back(access[r][c]);
  return rows;
}

/// Whether two batches hold identical tensors.
inline bool sameBatch(const Batch &a, const Batch &b) {
  return a.inputs.sizes() == b.inputs.sizes() &&
         a.targets.sizes() == b.targets.sizes() && a.inputs.equal(b.inputs) &&
         a.targets.equal(b.targets);
}

/// A permutation of {0..4} in one-line notation.
using Perm5 = std::array<int, 5>;

/// S5 (or A5, `evenOnly`) enumerated by scanning all 5^5 tuples in
/// lexicographic order and keeping the permutations; parity from the cycle
/// decomposition.
inline std::vector<Perm5> referenceGroup(bool evenOnly) {
  std::vector<Perm5> result;
  for (int code = 0; code < 3125; ++code) {
    Perm5 p;
    int rest = code;
    for (int i = 4; i >= 0; --i) {
      p[i] = rest % 5;
      rest /= 5;
    }
    bool seen[5] = {false, false, false, false, false};
    bool isPerm = true;
    for (int v : p) {
      if (seen[v])
        isPerm = false;
      seen[v] = true;
    }
    if (!isPerm)
      continue;
    // Sign = (−1)^(n − #cycles).
    bool visited[5] = {false, false, false, false, false};
    int cycles = 0;
    for (int i = 0; i < 5; ++i) {
      if (visited[i])
        continue;
      ++cycles;
      for (int j = i; !visited[j]; j = p[j])
        visited[j] = true;
    }
    bool even = (5 - cycles) % 2 == 0;
    if (!evenOnly || even)
      result.push_back(p);
  }
  return result;
}

/// a ∘ b: b acts first.
inline Perm5 compose(const Perm5 &a, const Perm5 &b) {
  Perm5 result;
  for (int i = 0; i < 5; ++i)
    result[i] = a[b[i]];
  return result;
}

/// Index of every element of `group`.
inline std::map<Perm5, int64_t> indexGroup(const std::vector<Perm5> &group) {
  std::map<Perm5, int64_t> index;
  for (size_t i = 0; i < group.size(); ++i)
    index[group[i]] = static_cast<int64_t>(i);
  return index;
}

} // namespace fp::rt::test

#endif // FP_RUNTIME_TEST_TASKS_TASKTESTUTIL_H
