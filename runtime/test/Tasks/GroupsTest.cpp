//===- GroupsTest.cpp - Tests of the A5 / S5 Cayley tables ------*- C++ -*-===//
//
// Group axioms on the full tables, the element order against an independent
// enumeration, A5 as exactly the even permutations, and products against an
// independent permutation composition on random pairs.
//
//===----------------------------------------------------------------------===//

#include "TaskTestUtil.h"

#include "fp/Runtime/Tasks/Groups.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <stdexcept>

using namespace fp::rt;
using namespace fp::rt::test;

namespace {

Perm5 asPerm5(const Permutation &perm) {
  EXPECT_EQ(perm.size(), 5u);
  Perm5 result;
  for (int i = 0; i < 5; ++i)
    result[i] = perm[i];
  return result;
}

class GroupTest : public ::testing::TestWithParam<bool> {
protected:
  bool alternating() const { return GetParam(); }
  PermutationGroup group() const {
    return alternating() ? PermutationGroup::alternating(5)
                         : PermutationGroup::symmetric(5);
  }
};

TEST_P(GroupTest, SizeAndIdentity) {
  PermutationGroup g = group();
  EXPECT_EQ(g.size(), alternating() ? 60 : 120);
  EXPECT_EQ(g.degree(), 5);
  EXPECT_EQ(g.identity(), 0);
  EXPECT_EQ(g.element(0), (Permutation{0, 1, 2, 3, 4}));
  for (int64_t a = 0; a < g.size(); ++a) {
    EXPECT_EQ(g.multiply(0, a), a);
    EXPECT_EQ(g.multiply(a, 0), a);
  }
}

TEST_P(GroupTest, ElementsMatchIndependentLexicographicEnumeration) {
  PermutationGroup g = group();
  std::vector<Perm5> expected = referenceGroup(/*evenOnly=*/alternating());
  ASSERT_EQ(static_cast<int64_t>(expected.size()), g.size());
  for (int64_t i = 0; i < g.size(); ++i) {
    EXPECT_EQ(asPerm5(g.element(i)), expected[i]) << "element " << i;
    EXPECT_EQ(g.indexOf(g.element(i)), i);
  }
}

TEST_P(GroupTest, ClosureAndInverses) {
  PermutationGroup g = group();
  for (int64_t a = 0; a < g.size(); ++a) {
    for (int64_t b = 0; b < g.size(); ++b) {
      int64_t ab = g.multiply(a, b);
      ASSERT_GE(ab, 0);
      ASSERT_LT(ab, g.size());
    }
    int64_t inv = g.inverse(a);
    ASSERT_GE(inv, 0);
    ASSERT_LT(inv, g.size());
    EXPECT_EQ(g.multiply(a, inv), 0);
    EXPECT_EQ(g.multiply(inv, a), 0);
  }
}

TEST_P(GroupTest, AssociativeOnAllTriples) {
  PermutationGroup g = group();
  int64_t n = g.size();
  int64_t failures = 0;
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < n; ++b) {
      int64_t ab = g.multiply(a, b);
      for (int64_t c = 0; c < n; ++c)
        failures += g.multiply(ab, c) != g.multiply(a, g.multiply(b, c));
    }
  EXPECT_EQ(failures, 0);
}

TEST_P(GroupTest, EveryRowOfTheTableIsAPermutation) {
  // Latin square: left and right multiplication are bijections.
  PermutationGroup g = group();
  for (int64_t a = 0; a < g.size(); ++a) {
    std::set<int64_t> row, column;
    for (int64_t b = 0; b < g.size(); ++b) {
      row.insert(g.multiply(a, b));
      column.insert(g.multiply(b, a));
    }
    EXPECT_EQ(static_cast<int64_t>(row.size()), g.size());
    EXPECT_EQ(static_cast<int64_t>(column.size()), g.size());
  }
}

TEST_P(GroupTest, ProductIsCompositionOnRandomPairs) {
  PermutationGroup g = group();
  std::vector<Perm5> elements = referenceGroup(alternating());
  std::map<Perm5, int64_t> index = indexGroup(elements);
  uint64_t seed = testSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, g.size() - 1);
  for (int trial = 0; trial < 2000; ++trial) {
    int64_t a = pick(rng), b = pick(rng);
    Perm5 product = compose(elements[a], elements[b]);
    ASSERT_TRUE(index.count(product));
    EXPECT_EQ(g.multiply(a, b), index.at(product)) << a << " * " << b;
  }
}

TEST_P(GroupTest, NonAbelian) {
  PermutationGroup g = group();
  bool found = false;
  for (int64_t a = 0; a < g.size() && !found; ++a)
    for (int64_t b = 0; b < g.size() && !found; ++b)
      found = g.multiply(a, b) != g.multiply(b, a);
  EXPECT_TRUE(found);
}

INSTANTIATE_TEST_SUITE_P(A5AndS5, GroupTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &info) {
                           return info.param ? "A5" : "S5";
                         });

TEST(Groups, A5IsTheEvenSubgroupOfS5) {
  PermutationGroup s5 = PermutationGroup::symmetric(5);
  PermutationGroup a5 = PermutationGroup::alternating(5);
  int64_t even = 0;
  for (int64_t i = 0; i < s5.size(); ++i) {
    const Permutation &perm = s5.element(i);
    bool isEven = PermutationGroup::isEven(perm);
    even += isEven;
    EXPECT_EQ(a5.indexOf(perm) >= 0, isEven) << "S5 element " << i;
  }
  EXPECT_EQ(even, 60);
  // Same relative order, and products agree with S5's table.
  int64_t previous = -1;
  for (int64_t i = 0; i < a5.size(); ++i) {
    int64_t inS5 = s5.indexOf(a5.element(i));
    EXPECT_GT(inS5, previous);
    previous = inS5;
  }
  for (int64_t a = 0; a < a5.size(); ++a)
    for (int64_t b = 0; b < a5.size(); ++b)
      EXPECT_EQ(
          s5.indexOf(a5.element(a5.multiply(a, b))),
          s5.multiply(s5.indexOf(a5.element(a)), s5.indexOf(a5.element(b))));
}

TEST(Groups, IndexOfRejectsNonMembers) {
  PermutationGroup a5 = PermutationGroup::alternating(5);
  EXPECT_EQ(a5.indexOf({1, 0, 2, 3, 4}), -1); // a transposition is odd
  EXPECT_EQ(a5.indexOf({0, 0, 2, 3, 4}), -1);
  EXPECT_EQ(a5.indexOf({0, 1, 2, 3}), -1);
  EXPECT_EQ(a5.indexOf({0, 1, 2, 3, 5}), -1);
}

TEST(Groups, SmallGroupsAndDegreeLimits) {
  EXPECT_EQ(PermutationGroup::symmetric(1).size(), 1);
  EXPECT_EQ(PermutationGroup::symmetric(3).size(), 6);
  EXPECT_EQ(PermutationGroup::alternating(3).size(), 3);
  EXPECT_EQ(PermutationGroup::alternating(4).size(), 12);
  EXPECT_THROW(PermutationGroup::symmetric(0), std::invalid_argument);
  EXPECT_THROW(PermutationGroup::symmetric(7), std::invalid_argument);
}

} // namespace
