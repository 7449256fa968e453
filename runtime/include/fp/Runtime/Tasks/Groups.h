//===- Groups.h - Permutation groups of the word problems -------*- C++ -*-===//
//
// The finite groups behind the A5 / S5 word problems (docs/spec.md §7.1) as
// explicit Cayley tables. Elements are permutations of {0, ..., n−1} in
// one-line notation (element[i] is the image of i), numbered in lexicographic
// order of that notation, so index 0 is the identity. The alternating group
// keeps the even permutations in the same relative order.
//
// Product convention: a · b = a ∘ b, i.e. (a · b)(i) = a(b(i)); b acts
// first. A word x_1 · x_2 ⋯ x_k therefore maps i to x_1(x_2(⋯ x_k(i))). The
// opposite convention gives an isomorphic task (relabel every element by its
// inverse), so the choice does not change what a model can learn.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TASKS_GROUPS_H
#define FP_RUNTIME_TASKS_GROUPS_H

#include <cstdint>
#include <vector>

namespace fp::rt {

/// A permutation in one-line notation: perm[i] is the image of i.
using Permutation = std::vector<int>;

/// A finite permutation group with a precomputed Cayley table.
class PermutationGroup {
public:
  /// S_n: all n! permutations in lexicographic order (n in 1..6).
  static PermutationGroup symmetric(int degree);
  /// A_n: the even permutations of S_n, in S_n's relative order (n in 1..6).
  static PermutationGroup alternating(int degree);

  int degree() const { return permDegree; }
  int64_t size() const { return static_cast<int64_t>(elements.size()); }
  /// Index of the identity (always 0).
  int64_t identity() const { return 0; }

  /// The permutation with index `index`.
  const Permutation &element(int64_t index) const { return elements[index]; }
  /// Index of `perm`, or −1 when it is not in the group.
  int64_t indexOf(const Permutation &perm) const;

  /// Index of a · b = a ∘ b (b acts first).
  int64_t multiply(int64_t a, int64_t b) const { return table[a * size() + b]; }
  /// Index of a⁻¹.
  int64_t inverse(int64_t a) const { return inverses[a]; }

  /// Whether `perm` is an even permutation.
  static bool isEven(const Permutation &perm);

private:
  PermutationGroup(int degree, std::vector<Permutation> members);

  int permDegree;
  std::vector<Permutation> elements;
  /// Row-major size × size Cayley table.
  std::vector<int32_t> table;
  std::vector<int32_t> inverses;
  /// Lexicographic rank in S_n → index in this group (−1: not a member).
  std::vector<int32_t> rankToIndex;
};

} // namespace fp::rt

#endif // FP_RUNTIME_TASKS_GROUPS_H
