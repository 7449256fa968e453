//===- Fused/Staging.h - Staged inputs of fused kernels ---------*- C++ -*-===//
//
// Staged inputs: a token's input rows copied to scratch ahead of the token
// (stageRow, stageShifted, stageWait, runTokens).
//
// A kernel that runs a sample's tokens in time order reads each token's rows
// of its per-token inputs in several of its operations, and on CUDA each
// such operation waits for memory. A kernel with kStage > 0 copies them
// instead, all at once, into one of two buffers in its scratch
// (Kernel::stage into Kernel::stageBuffer(scratch, t), alternating with the
// token's parity), and its body reads them there. runTokens copies the
// rows of token t + 1 while token t is computed: on CUDA asynchronously
// (cp.async, sm_80 on), so that the copy's latency hides behind a token's
// work; on the host as plain copies, which keeps one code path for both.
//
// Include Fused.h rather than this file: Fused.h #undefs the element-loop
// macros of Fused/Team.h after its last part, which a part included alone
// leaves defined.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_FUSED_STAGING_H
#define FP_RUNTIME_KERNELS_FUSED_STAGING_H

#include "fp/Runtime/Kernels/Fused/Elementwise.h"
#include "fp/Runtime/Kernels/Fused/Team.h"

namespace fp::fused {

/// Copies n elements of `from` to `to`, the team's share each: on CUDA
/// asynchronously where `to` is in shared memory and the elements are 4 or 8
/// bytes (or 2-byte pairs, both rows 4-byte aligned and n even); completed
/// by stageWait.
template <typename Team, typename Real>
FP_HOST_DEVICE inline void stageRow(Team &team, const Real *from, int64_t n,
                                    Real *to) {
#ifdef __CUDA_ARCH__
  if (__isShared(to)) {
    // 16 bytes a copy where both rows allow it.
    constexpr int64_t kPerCopy = 16 / int64_t(sizeof(Real));
    if (n % kPerCopy == 0 && reinterpret_cast<uintptr_t>(from) % 16 == 0 &&
        reinterpret_cast<uintptr_t>(to) % 16 == 0) {
      FP_TEAM_ACCUMULATE(i, n / kPerCopy)
      __pipeline_memcpy_async(to + kPerCopy * i, from + kPerCopy * i, 16);
      __pipeline_commit();
      return;
    }
    if constexpr (sizeof(Real) == 4 || sizeof(Real) == 8) {
      FP_TEAM_ACCUMULATE(i, n)
      __pipeline_memcpy_async(to + i, from + i, sizeof(Real));
      __pipeline_commit();
      return;
    } else if constexpr (sizeof(Real) == 2) {
      if (n % 2 == 0 && reinterpret_cast<uintptr_t>(from) % 4 == 0 &&
          reinterpret_cast<uintptr_t>(to) % 4 == 0) {
        FP_TEAM_ACCUMULATE(i, n / 2)
        __pipeline_memcpy_async(to + 2 * i, from + 2 * i, 4);
        __pipeline_commit();
        return;
      }
    }
  }
#endif
  FP_TEAM_FOR(i, n) to[i] = from[i];
}

/// Stages what shifted() reads for the token at `row`, time index t of a
/// sample of `length` tokens: row t − offset of `in` (rows of n elements),
/// or zeros where that is outside the sample. The zeros are plain stores,
/// seen by every member after the team's next synchronisation.
template <typename Team, typename Real>
FP_HOST_DEVICE inline void stageShifted(Team &team, const Real *in, int64_t row,
                                        int64_t t, int64_t length,
                                        int64_t offset, int64_t n, Real *to) {
  if (t - offset >= 0 && t - offset < length)
    stageRow(team, in + (row - offset) * n, n, to);
  else
    fill(team, n, fp::Compute<Real>(0), to);
}

/// Waits until the calling member's staged copies have landed; the team
/// synchronises after, so that every member sees all of them.
FP_HOST_DEVICE inline void stageWait() {
#ifdef __CUDA_ARCH__
  __pipeline_wait_prior(0);
#endif
}

/// Runs kernel(team, firstRow + t, t, scratch, state, registers) for the
/// tokens t in [begin, end) in order, the team synchronised after each.
/// With Kernel::kStage > 0, stages each token's input rows first: token
/// `begin`'s before the loop, token t + 1's while token t is computed.
template <typename Team, typename Kernel, typename C, typename Registers>
FP_HOST_DEVICE inline void
runTokens(Team &team, const Kernel &kernel, int64_t firstRow, int64_t begin,
          int64_t end, C *scratch, C *state, Registers &registers) {
  if constexpr (Kernel::kStage > 0) {
    if (begin < end)
      kernel.stage(team, firstRow + begin, begin,
                   Kernel::stageBuffer(scratch, begin));
    for (int64_t t = begin; t < end; ++t) {
      // Token t's rows have landed, and token t − 1, which read the other
      // buffer, is done with it.
      stageWait();
      team.sync();
      if (t + 1 < end)
        kernel.stage(team, firstRow + t + 1, t + 1,
                     Kernel::stageBuffer(scratch, t + 1));
      kernel(team, firstRow + t, t, scratch, state, registers);
    }
    team.sync();
  } else {
    for (int64_t t = begin; t < end; ++t) {
      kernel(team, firstRow + t, t, scratch, state, registers);
      team.sync(); // the next token reuses the scratch
    }
  }
}

} // namespace fp::fused

#endif // FP_RUNTIME_KERNELS_FUSED_STAGING_H
