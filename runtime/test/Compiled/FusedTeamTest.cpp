//===- FusedTeamTest.cpp - Fused.h on a team of several threads -*- C++ -*-===//
//
// Generated host code runs Fused.h's functions with a team of one thread;
// CUDA runs them with a block whose warps are its groups. These tests run
// them with a team of host threads split into groups (ThreadTeam.h), so
// that the paths only a team of several threads takes are exercised here:
// rows given to groups (forEachRow), a matrix product that stages its
// transposed right operand, and row sums every member receives. Results are
// compared with the one-thread team's on random inputs (TestSeed.h's seed,
// printed): exactly where each output sums in the same order, to 1e-13 where a
// team's reduction reorders it.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Kernels/BFloat16.h"
#include "fp/Runtime/Kernels/Fused.h"
#include "fp/Runtime/Kernels/ThreadTeam.h"

#include "KernelTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <vector>

namespace {

using fp::test::randomValues;
using fp::test::relativeDifference;
using fp::test::testSeed;

using fp::fused::onThreadTeam;
using fp::fused::ThreadTeam;

constexpr int kTeam = 8, kGroup = 4;

TEST(FusedTeam, ForEachRowGivesEachRowToOneTeam) {
  // Which team computes a row: kTeam members, groups of kGroup. Rows at
  // least as many as the groups, or short (at most kShortRowPasses passes
  // of a group), go to groups; others to the whole team.
  struct Case {
    int64_t rows, width;
    bool byGroups;
  };
  const int64_t shortRow = fp::fused::kShortRowPasses * kGroup;
  for (Case c :
       {Case{1, shortRow + 1, false}, Case{1, shortRow, true},
        Case{2, 1000, true}, Case{5, 1000, true}, Case{32, 32, true}}) {
    SCOPED_TRACE("rows " + std::to_string(c.rows) + ", width " +
                 std::to_string(c.width));
    // calls[r][rank]: how often member `rank` computed row r, and with a
    // team of which size.
    std::vector<std::vector<int>> calls(c.rows, std::vector<int>(kTeam, 0));
    std::vector<std::vector<int>> sizes(c.rows, std::vector<int>(kTeam, 0));
    onThreadTeam(kTeam, kGroup, [&](ThreadTeam &team) {
      fp::fused::forEachRow(team, c.rows, c.width,
                            [&](ThreadTeam &rowTeam, int64_t r) {
                              ++calls[r][team.rank()];
                              sizes[r][team.rank()] = rowTeam.size();
                            });
    });
    for (int64_t r = 0; r < c.rows; ++r) {
      int members = 0;
      for (int rank = 0; rank < kTeam; ++rank) {
        EXPECT_LE(calls[r][rank], 1) << "row " << r << ", member " << rank;
        if (calls[r][rank] == 0)
          continue;
        ++members;
        EXPECT_EQ(sizes[r][rank], c.byGroups ? kGroup : kTeam)
            << "row " << r << ", member " << rank;
      }
      EXPECT_EQ(members, c.byGroups ? kGroup : kTeam) << "row " << r;
    }
  }

  // A team of one group (the host's) computes every row in order.
  std::vector<int64_t> order;
  fp::fused::SerialTeam serial;
  fp::fused::forEachRow(serial, 5, 3, [&](fp::fused::SerialTeam &, int64_t r) {
    order.push_back(r);
  });
  EXPECT_EQ(order, (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(FusedTeam, RowFunctionsOnATeamEqualTheSerialOnes) {
  std::mt19937_64 rng(testSeed());
  // One long row (the whole team), one short row, rows as many as the
  // groups and more (groups), rows many and short (the Kronecker mixer's).
  const std::pair<int64_t, int64_t> shapes[] = {
      {1, 100}, {1, 13}, {2, 100}, {5, 37}, {32, 32}};
  for (const auto &shape : shapes) {
    const int64_t rows = shape.first, width = shape.second;
    SCOPED_TRACE("rows " + std::to_string(rows) + ", width " +
                 std::to_string(width));
    const int64_t n = rows * width;
    std::vector<double> x = randomValues(rng, n), w = randomValues(rng, width),
                        b = randomValues(rng, width);
    fp::fused::SerialTeam serial;
    // Each function's output, serial and on the team.
    auto compare = [&](const char *name, int64_t outputs, auto fn) {
      std::vector<double> expected(outputs), actual(outputs, NAN);
      fn(serial, expected.data());
      onThreadTeam(kTeam, kGroup, [&](ThreadTeam &team) {
        fn(team, actual.data());
        team.sync();
      });
      EXPECT_LE(relativeDifference(actual, expected), 1e-13) << name;
    };
    compare("l2norm", n, [&](auto &team, double *out) {
      fp::fused::l2norm(team, x.data(), rows, width, 1e-12, out);
    });
    compare("layerNorm", n, [&](auto &team, double *out) {
      fp::fused::layerNorm(team, x.data(), w.data(), b.data(), rows, width,
                           1e-5, out);
    });
    compare("rmsNorm", n, [&](auto &team, double *out) {
      fp::fused::rmsNorm(team, x.data(), w.data(), rows, width, 1e-5, out);
    });
    compare("sumRows", rows, [&](auto &team, double *out) {
      fp::fused::sumRows(team, x.data(), rows, width, out);
    });
  }
}

/// A row sum into a scalar every member holds (rowSum), and a chain that
/// accumulates the row as it computes it (forEachElementInOrder, then
/// team.sum), as the kernel emitter writes both: on one thread each equals
/// sumRows's stored sum exactly (same order, same accumulator, same
/// rounding), in f32 as in f64; on a team, every member gets the same sum,
/// the chain's equals rowSum's exactly, and both are within rounding of the
/// serial sum.
TEST(FusedTeam, RowSumsGiveEveryMemberTheSum) {
  std::mt19937_64 rng(testSeed());
  for (int64_t width : {1, 13, 100, 1024}) {
    SCOPED_TRACE("width " + std::to_string(width));
    std::vector<double> x = randomValues(rng, width);
    std::vector<float> xf(x.begin(), x.end());
    fp::fused::SerialTeam serial;
    double stored = NAN;
    fp::fused::sumRows(serial, x.data(), 1, width, &stored);
    EXPECT_EQ(fp::fused::rowSum<double>(serial, x.data(), width), stored);
    float storedF = NAN;
    fp::fused::sumRows(serial, xf.data(), 1, width, &storedF);
    EXPECT_EQ(fp::fused::rowSum<float>(serial, xf.data(), width), storedF);
    // The chain's form: each element computed (here 2x - 1) and added.
    auto chainSum = [&](auto &team) {
      fp::fused::Wide<float> partial = 0;
      fp::fused::forEachElementInOrder(team, width, [&](int64_t i) {
        const float e = 2 * xf[i] - 1;
        partial += fp::fused::Wide<float>(e);
      });
      return float(team.sum(partial));
    };
    std::vector<float> doubled(width);
    for (int64_t i = 0; i < width; ++i)
      doubled[i] = 2 * xf[i] - 1;
    EXPECT_EQ(chainSum(serial),
              fp::fused::rowSum<float>(serial, doubled.data(), width));

    std::vector<double> sums(kTeam, NAN);
    std::vector<float> chains(kTeam, NAN), rowSums(kTeam, NAN);
    onThreadTeam(kTeam, kGroup, [&](ThreadTeam &team) {
      sums[team.rank()] = fp::fused::rowSum<double>(team, x.data(), width);
      chains[team.rank()] = chainSum(team);
      rowSums[team.rank()] =
          fp::fused::rowSum<float>(team, doubled.data(), width);
    });
    for (int member = 0; member < kTeam; ++member) {
      EXPECT_EQ(sums[member], sums[0]) << "member " << member;
      EXPECT_EQ(chains[member], rowSums[0]) << "member " << member;
    }
    EXPECT_LE(std::abs(sums[0] - stored), 1e-13 * (1 + std::abs(stored)));
  }
}

/// A product whose right operand is transposed, with its operand staged in
/// room for 0 (no staging), 1, 2 and all of its `batch` matrices: each
/// output sums over p in order either way, so every result equals the one
/// without staging exactly, on the one-thread team in Real and on a team of
/// threads with a bf16 output (whose host path is the device's: one output
/// per thread).
template <typename Real>
void checkStagedProducts(std::mt19937_64 &rng, int64_t batch, int64_t m,
                         int64_t n, int64_t k, bool transposeLhs) {
  SCOPED_TRACE("batch " + std::to_string(batch) + ", " + std::to_string(m) +
               "x" + std::to_string(k) + " by " + std::to_string(k) + "x" +
               std::to_string(n) + (transposeLhs ? ", lhs transposed" : ""));
  std::vector<double> l = randomValues(rng, batch * m * k),
                      r = randomValues(rng, batch * n * k);
  std::vector<Real> lhs(l.begin(), l.end()), rhs(r.begin(), r.end());
  const int64_t one = k * fp::fused::stagedRowStride(n);
  fp::fused::SerialTeam serial;

  std::vector<Real> expected(batch * m * n);
  fp::fused::matmul(serial, lhs.data(), rhs.data(), batch, m, n, k,
                    transposeLhs, true, expected.data());
  std::vector<fp::bf16> expectedBf16(batch * m * n);
  fp::fused::matmul(serial, lhs.data(), rhs.data(), batch, m, n, k,
                    transposeLhs, true, expectedBf16.data());

  for (int64_t room : {int64_t(0), one, 2 * one, batch * one}) {
    EXPECT_EQ(fp::fused::stagingSize(batch, n, k, room),
              std::min(room / one, batch) * one);
    std::vector<Real> staging(room + 1), out(batch * m * n);
    fp::fused::matmul(serial, lhs.data(), rhs.data(), batch, m, n, k,
                      transposeLhs, true, out.data(), staging.data(), room);
    EXPECT_EQ(out, expected) << "one thread, staging for " << room / one;

    std::vector<float> teamStaging(room + 1);
    std::vector<fp::bf16> outBf16(batch * m * n);
    onThreadTeam(kTeam, kGroup, [&](ThreadTeam &team) {
      fp::fused::matmul(team, lhs.data(), rhs.data(), batch, m, n, k,
                        transposeLhs, true, outBf16.data(), teamStaging.data(),
                        room);
    });
    for (int64_t e = 0; e < batch * m * n; ++e)
      ASSERT_EQ(float(outBf16[e]), float(expectedBf16[e]))
          << "team, staging for " << room / one << ", output " << e;
  }
}

TEST(FusedTeam, StagedTransposedProductsEqualTheUnstagedOnes) {
  std::mt19937_64 rng(testSeed());
  // The Kronecker mixer's 32 × 32 products, the Monarch mixer's 64 blocks of
  // 16 × 16, an odd n (staged at stride n) and a batch staged 2 at a time
  // with a short last stage.
  checkStagedProducts<float>(rng, 1, 32, 32, 32, false);
  checkStagedProducts<float>(rng, 1, 32, 32, 32, true);
  checkStagedProducts<float>(rng, 64, 16, 16, 16, false);
  checkStagedProducts<double>(rng, 3, 5, 7, 6, false);
  checkStagedProducts<double>(rng, 5, 4, 6, 3, true);
}

} // namespace
