//===- ThreadTeam.h - A team of host threads for fused kernels --*- C++ -*-===//
//
// Generated host code runs Fused.h's functions with a team of one thread
// (SerialTeam); CUDA runs them with a block whose warps are its groups. A
// ThreadTeam is a CUDA block in miniature on the host: `size` threads in
// groups of `groupSize`, each member on a thread of its own, synchronised by
// a barrier. Running a fused kernel on it exercises what only a team of
// several members does (elements split over members, rows given to groups,
// reductions every member receives) and, under ThreadSanitizer, turns a
// missing team.sync() of the kernel into a reported data race.
//
// Two uses: the tests of Fused.h's functions (FusedTeamTest), and the
// launchers of Host.h in a library compiled with FP_HOST_TEAM_SIZE (the
// kernels' barrier check, docs/testing.md). Nothing else includes it.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_THREADTEAM_H
#define FP_RUNTIME_KERNELS_THREADTEAM_H

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace fp::fused {

/// A barrier for `count` threads, reusable.
class Barrier {
public:
  explicit Barrier(int count) : count(count) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    const int64_t generation = passed;
    if (++waiting == count) {
      waiting = 0;
      ++passed;
      released.notify_all();
      return;
    }
    released.wait(lock, [&] { return passed != generation; });
  }

private:
  std::mutex mutex;
  std::condition_variable released;
  const int count;
  int waiting = 0;
  int64_t passed = 0;
};

/// What the members of a team (or of one of its groups) share: their
/// barrier and one slot per member for reductions.
struct TeamShared {
  explicit TeamShared(int size) : barrier(size), slots(size) {}
  Barrier barrier;
  std::vector<long double> slots;
};

/// One member of a team of host threads, as Fused.h's functions see a team
/// (rank, size, sync, sum, max, groups). Reductions combine the members'
/// partial results in rank order; every member gets the result, and, as on
/// CUDA, a reduction synchronises the members that take part in it.
class ThreadTeam {
public:
  static constexpr int kUnrollPasses = 1;

  ThreadTeam(TeamShared &shared, std::deque<TeamShared> *groupShared, int rank,
             int size, int groupSize)
      : shared(&shared), groupShared(groupShared), memberRank(rank),
        memberCount(size), groupSize(groupSize) {}

  int rank() const { return memberRank; }
  int size() const { return memberCount; }
  void sync() const { shared->barrier.wait(); }
  template <typename Real> Real sum(Real partial) const {
    return combine(partial, [](Real a, Real b) { return a + b; });
  }
  template <typename Real> Real max(Real partial) const {
    return combine(partial, [](Real a, Real b) { return a < b ? b : a; });
  }
  int groups() const { return groupShared ? memberCount / groupSize : 1; }
  int groupIndex() const { return groupShared ? memberRank / groupSize : 0; }
  ThreadTeam group() const {
    if (!groupShared)
      return *this;
    return ThreadTeam((*groupShared)[groupIndex()], nullptr,
                      memberRank % groupSize, groupSize, groupSize);
  }

private:
  template <typename Real, typename Combine>
  Real combine(Real partial, Combine op) const {
    shared->slots[memberRank] = static_cast<long double>(partial);
    sync();
    Real result = static_cast<Real>(shared->slots[0]);
    for (int i = 1; i < memberCount; ++i)
      result = op(result, static_cast<Real>(shared->slots[i]));
    sync(); // every member has read the slots before they are reused
    return result;
  }

  TeamShared *shared;
  std::deque<TeamShared> *groupShared;
  int memberRank, memberCount, groupSize;
};

/// Runs `work(team)` on every member of a team of `size` threads in groups
/// of `groupSize` (which divides `size`), each member on a thread of its own,
/// and returns when all have.
template <typename Work> void onThreadTeam(int size, int groupSize, Work work) {
  TeamShared shared(size);
  std::deque<TeamShared> groupShared;
  for (int g = 0; g < size / groupSize; ++g)
    groupShared.emplace_back(groupSize);
  std::vector<std::thread> threads;
  threads.reserve(size);
  for (int rank = 0; rank < size; ++rank)
    threads.emplace_back([&, rank] {
      ThreadTeam team(shared, &groupShared, rank, size, groupSize);
      work(team);
    });
  for (std::thread &thread : threads)
    thread.join();
}

} // namespace fp::fused

#endif // FP_RUNTIME_KERNELS_THREADTEAM_H
