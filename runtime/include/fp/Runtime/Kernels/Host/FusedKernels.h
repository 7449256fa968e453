//===- Host/FusedKernels.h - Launchers of fused kernels ---------*- C++ -*-===//
//
// The launchers of fused kernels (fp.kernel): forEachToken and forEachSample
// run a kernel's per-token function object, built of the blocks of Fused.h,
// over every token, on a SerialTeam per OpenMP thread or, in a library compiled
// with FP_HOST_TEAM_SIZE, on a ThreadTeam.
//
// Counterpart: Device/FusedKernels.cuh.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_HOST_FUSEDKERNELS_H
#define FP_RUNTIME_KERNELS_HOST_FUSEDKERNELS_H

#include "fp/Runtime/Kernels/Host/Context.h"

namespace fp::host {

/// Runs work(team, i, buffer) for each item i in [0, n), where `buffer`
/// holds `size` elements of C that the team's members share (a CUDA
/// block's scratch): on OpenMP threads when `parallel`, each with a
/// SerialTeam and a buffer of its own. In a library compiled with
/// FP_HOST_TEAM_SIZE defined (the fused kernels' barrier check,
/// docs/testing.md) the items run in order on one ThreadTeam of that many
/// host threads in groups of FP_HOST_TEAM_GROUP, as a CUDA block runs its
/// rows. The team synchronises after each item, whose successor reuses the
/// buffer.
template <typename C, typename Work>
inline void forEachTeamItem(int64_t n, bool parallel, int64_t size,
                            const Work &work) {
#ifdef FP_HOST_TEAM_SIZE
  (void)parallel;
  std::vector<C> buffer(std::max<int64_t>(size, 1));
  fused::onThreadTeam(FP_HOST_TEAM_SIZE, FP_HOST_TEAM_GROUP,
                      [&](fused::ThreadTeam &team) {
                        for (int64_t i = 0; i < n; ++i) {
                          work(team, i, buffer.data());
                          team.sync();
                        }
                      });
#else
#pragma omp parallel if (parallel)
  {
    std::vector<C> buffer(std::max<int64_t>(size, 1));
    fused::SerialTeam team;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; ++i)
      work(team, i, buffer.data());
  }
#endif
}

/// Runs `kernel(team, row, t, scratch, nullptr, registers)` for every token
/// (row = b · length + t) of `batch` samples of `length` tokens, in any
/// order, in parallel when the tokens' cost is large, with `scratch`
/// elements of Compute<Real> per team. (`registers` is the kernel's
/// Registers, which only CUDA fills.)
template <typename Real, typename Kernel>
FP_KERNEL void forEachToken(int64_t batch, int64_t length, int64_t scratch,
                            int64_t cost, const Kernel &kernel) {
  using C = Compute<Real>;
  const int64_t rows = batch * length;
  forEachTeamItem<C>(rows, rows * cost >= kParallelGrain && rows > 1, scratch,
                     [&](auto &team, int64_t r, C *buffer) {
                       typename Kernel::Registers registers;
                       kernel(team, r, r % length, buffer,
                              static_cast<C *>(nullptr), registers);
                     });
}

/// Runs a kernel whose body holds scans: `kernel(team, row, t, scratch,
/// state, registers)` for every sample's tokens in time order t, with
/// `state` elements of scan state per sample, zero at t = 0 (all of it: on
/// the host no scan keeps its state in `registers`). Scratch and state are
/// Compute<Real>. When there are fewer samples than threads and the kernel
/// is Kernel::kChunkable, each sample's tokens run in chunks on threads of
/// their own (timeChunks; Fused.h, "Chunked execution"). The steps of each
/// sample or chunk are those of Device.cuh's sampleKernel and
/// chunkCarryKernel.
template <typename Real, typename Kernel>
FP_KERNEL void forEachSample(int64_t batch, int64_t length, int64_t scratch,
                             int64_t state, int64_t cost,
                             const Kernel &kernel) {
  using C = Compute<Real>;
  const bool parallel = batch * length * cost >= kParallelGrain;
  int64_t chunks = 1;
  if constexpr (Kernel::kChunkable)
    chunks = timeChunks(batch, length, parallel ? maxThreads() : 1);
  // The sample's (or chunk's) state after its scratch, zeroed.
  auto zeroState = [&](auto &team, C *buffer) {
    C *own = buffer + scratch;
    fused::fill(team, state, C(0), own);
    team.sync();
    return own;
  };
  if (chunks == 1) {
    forEachTeamItem<C>(batch, parallel && batch > 1, scratch + state,
                       [&](auto &team, int64_t b, C *buffer) {
                         C *own = zeroState(team, buffer);
                         typename Kernel::Registers registers;
                         fused::runTokens(team, kernel, b * length, 0, length,
                                          buffer, own, registers);
                       });
    return;
  }
  if constexpr (Kernel::kChunkable) {
    const int64_t span = (length + chunks - 1) / chunks;
    chunks = (length + span - 1) / span;
    // Pass 1: the carry of every chunk but each sample's last.
    std::vector<C> carries(size_t(batch * chunks * Kernel::kCarry));
    forEachTeamItem<C>(
        batch * (chunks - 1), parallel, scratch + state,
        [&](auto &team, int64_t i, C *buffer) {
          const int64_t b = i / (chunks - 1), k = i % (chunks - 1);
          C *own = zeroState(team, buffer);
          typename Kernel::Registers registers;
          for (int64_t t = k * span; t < (k + 1) * span; ++t)
            kernel.summarize(team, b * length + t, t, t == k * span, buffer,
                             own, registers); // ends with a team sync
          kernel.saveCarry(team, own, registers,
                           carries.data() + (b * chunks + k) * Kernel::kCarry);
        });
    // Pass 2: every chunk, its scans started from the carries before it.
    forEachTeamItem<C>(batch * chunks, parallel, scratch + state,
                       [&](auto &team, int64_t i, C *buffer) {
                         const int64_t b = i / chunks, k = i % chunks;
                         C *own = zeroState(team, buffer);
                         typename Kernel::Registers registers;
                         if (k > 0) {
                           kernel.loadCarry(
                               team, own, registers,
                               carries.data() + b * chunks * Kernel::kCarry, k);
                           team.sync();
                         }
                         fused::runTokens(team, kernel, b * length, k * span,
                                          std::min(length, (k + 1) * span),
                                          buffer, own, registers);
                       });
  }
}

} // namespace fp::host

#endif // FP_RUNTIME_KERNELS_HOST_FUSEDKERNELS_H
