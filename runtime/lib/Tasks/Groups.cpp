//===- Groups.cpp - Permutation groups of the word problems -----*- C++ -*-===//
//
// Builds S_n and A_n as lexicographically ordered lists of permutations with
// their Cayley tables (product a ∘ b, b acting first) and inverse tables.
// Membership is looked up through the permutation's lexicographic rank
// (Lehmer code), so building a table is O(|G|² · n).
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Tasks/Groups.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

using namespace fp::rt;

namespace {

/// Largest supported degree: the Cayley table of S_6 has 720² entries.
constexpr int kMaxDegree = 6;

int64_t factorial(int n) {
  int64_t result = 1;
  for (int i = 2; i <= n; ++i)
    result *= i;
  return result;
}

/// Lexicographic rank of `perm` among all permutations of its degree, or −1
/// when it is not a permutation of {0, ..., n−1}.
int64_t lexicographicRank(const Permutation &perm) {
  int n = static_cast<int>(perm.size());
  std::vector<bool> used(n, false);
  int64_t rank = 0;
  for (int i = 0; i < n; ++i) {
    int value = perm[i];
    if (value < 0 || value >= n || used[value])
      return -1;
    // Digits of the Lehmer code: unused values smaller than perm[i].
    int smaller = 0;
    for (int v = 0; v < value; ++v)
      smaller += used[v] ? 0 : 1;
    used[value] = true;
    rank = rank * (n - i) + smaller;
  }
  return rank;
}

std::vector<Permutation> allPermutations(int degree) {
  if (degree < 1 || degree > kMaxDegree)
    throw std::invalid_argument("permutation group degree must be in 1.." +
                                std::to_string(kMaxDegree) + ", got " +
                                std::to_string(degree));
  std::vector<Permutation> result;
  result.reserve(factorial(degree));
  Permutation perm(degree);
  std::iota(perm.begin(), perm.end(), 0);
  do {
    result.push_back(perm);
  } while (std::next_permutation(perm.begin(), perm.end()));
  return result;
}

} // namespace

//===----------------------------------------------------------------------===//
// PermutationGroup
//===----------------------------------------------------------------------===//

PermutationGroup PermutationGroup::symmetric(int degree) {
  return PermutationGroup(degree, allPermutations(degree));
}

PermutationGroup PermutationGroup::alternating(int degree) {
  std::vector<Permutation> even;
  for (Permutation &perm : allPermutations(degree))
    if (isEven(perm))
      even.push_back(std::move(perm));
  return PermutationGroup(degree, std::move(even));
}

bool PermutationGroup::isEven(const Permutation &perm) {
  int inversions = 0;
  for (size_t i = 0; i < perm.size(); ++i)
    for (size_t j = i + 1; j < perm.size(); ++j)
      inversions += perm[i] > perm[j] ? 1 : 0;
  return inversions % 2 == 0;
}

PermutationGroup::PermutationGroup(int degree, std::vector<Permutation> members)
    : permDegree(degree), elements(std::move(members)),
      rankToIndex(factorial(degree), -1) {
  int64_t n = size();
  for (int64_t i = 0; i < n; ++i)
    rankToIndex[lexicographicRank(elements[i])] = static_cast<int32_t>(i);

  table.assign(n * n, -1);
  inverses.assign(n, -1);
  Permutation product(degree);
  for (int64_t a = 0; a < n; ++a) {
    for (int64_t b = 0; b < n; ++b) {
      for (int i = 0; i < degree; ++i)
        product[i] = elements[a][elements[b][i]];
      int64_t index = indexOf(product);
      if (index < 0)
        throw std::logic_error("permutation group is not closed");
      table[a * n + b] = static_cast<int32_t>(index);
      if (index == 0)
        inverses[a] = static_cast<int32_t>(b);
    }
  }
}

int64_t PermutationGroup::indexOf(const Permutation &perm) const {
  if (static_cast<int>(perm.size()) != permDegree)
    return -1;
  int64_t rank = lexicographicRank(perm);
  return rank < 0 ? -1 : rankToIndex[rank];
}
