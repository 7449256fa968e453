//===- Fused/Chunks.h - Chunked execution of fused kernels ------*- C++ -*-===//
//
// Chunked execution: a sample's tokens split into chunks that run in parallel
// (the summary steps, and saving and loading the carries).
//
// A scan is linear in its state: over a chunk of tokens, h_end = P ⊙ h_start
// + h_end⁰, where h_end⁰ is the chunk's final state started from zero and P
// the product of its decays (Π_t coeff_t for fp.scan; exp(A[c, n] · Σ_t Δ_t,c)
// for a selective scan). The launchers run a kernel whose scans allow it
// (Kernel::kChunkable) in two passes: the first runs every chunk but the last
// from zero with the summary steps below, which compute only what the scans
// need and store each chunk's *carry* (h_end⁰ and what gives P); the second
// runs every chunk in full, its state first folded from the carries of the
// chunks before it, h = P_j ⊙ h + h_end⁰_j in chunk order. Results differ from
// the sequential scan by rounding only.
//
// A selective scan's state in memory is [S | Aᵀ | Σ Δ] (2·N·channels +
// channels), its carry [S | Σ Δ] (N·channels + channels); an fp.scan's state
// and carry are [h | P] (2·n).
//
// Include Fused.h rather than this file: Fused.h #undefs the element-loop
// macros of Fused/Team.h after its last part, which a part included alone
// leaves defined.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_FUSED_CHUNKS_H
#define FP_RUNTIME_KERNELS_FUSED_CHUNKS_H

#include "fp/Runtime/Kernels/Fused/Scans.h"
#include "fp/Runtime/Kernels/Fused/Team.h"

namespace fp::fused {

/// The summary step of selectiveScanStep (state in memory): S and Σ Δ, no
/// output. The launcher zeroes the state before a chunk's first token
/// (`first`), which copies Aᵀ.
template <bool ATransposed = false, typename Team, typename S, typename U,
          typename D, typename A, typename Bm>
FP_HOST_DEVICE inline void
selectiveScanSummaryStep(Team &team, bool first, S *state, const U *u,
                         const D *delta, const A *a, const Bm *bm,
                         int64_t channels, int64_t stateSize) {
  using fp::host::exp;
  S *at = state + stateSize * channels;
  S *sumDelta = at + stateSize * channels;
  if (first) {
    FP_TEAM_FOR(e, stateSize * channels) {
      int64_t n = e / channels, c = e % channels;
      at[e] = S(scanMatrixEntry<ATransposed>(a, c, n, channels, stateSize));
    }
    team.sync();
  }
  FP_TEAM_FOR_ROLLED(c, channels) {
    const S dc = S(delta[c]), du = dc * S(u[c]);
    for (int64_t n = 0; n < stateSize; ++n) {
      S &sn = state[n * channels + c];
      sn = exp(dc * at[n * channels + c]) * sn + du * S(bm[n]);
    }
    sumDelta[c] += dc;
  }
}

/// The summary step of selectiveScanStep with the state in registers.
template <bool ATransposed = false, typename Team, typename S, int64_t Channels,
          int64_t N, int Threads, typename U, typename D, typename A,
          typename Bm>
FP_HOST_DEVICE inline void
selectiveScanSummaryStep(Team &team, bool first,
                         ScanRegisters<S, Channels, N, Threads> &registers,
                         const U *u, const D *delta, const A *a, const Bm *bm) {
  constexpr int64_t perThread =
      ScanRegisters<S, Channels, N, Threads>::kPerThread;
  const auto exp = [](S x) { return registerScanExp<perThread * N>(x); };
  FP_UNROLL
  for (int64_t k = 0; k < perThread; ++k) {
    const int64_t c = team.rank() + k * Threads;
    if (c >= Channels)
      continue;
    S *sc = registers.s[k];
    if (first) {
      FP_UNROLL
      for (int64_t n = 0; n < N; ++n)
        sc[n] = S(0);
      registers.sumDelta[k] = S(0);
    }
    const S dc = S(delta[c]), du = dc * S(u[c]);
    FP_UNROLL
    for (int64_t n = 0; n < N; ++n)
      sc[n] = exp(dc * S(scanMatrixEntry<ATransposed>(a, c, n, Channels, N))) *
                  sc[n] +
              du * S(bm[n]);
    registers.sumDelta[k] += dc;
  }
}

/// Stores a selective scan's carry [S | Σ Δ] from its state in memory.
template <typename Team, typename S>
FP_HOST_DEVICE inline void saveSelectiveScanCarry(Team &team, const S *state,
                                                  int64_t channels,
                                                  int64_t stateSize, S *carry) {
  const S *sumDelta = state + 2 * stateSize * channels;
  FP_TEAM_FOR_ROLLED(c, channels) {
    for (int64_t n = 0; n < stateSize; ++n)
      carry[n * channels + c] = state[n * channels + c];
    carry[stateSize * channels + c] = sumDelta[c];
  }
}

/// Stores a selective scan's carry from its state in registers.
template <typename Team, typename S, int64_t Channels, int64_t N, int Threads>
FP_HOST_DEVICE inline void
saveSelectiveScanCarry(Team &team,
                       const ScanRegisters<S, Channels, N, Threads> &registers,
                       S *carry) {
  constexpr int64_t perThread =
      ScanRegisters<S, Channels, N, Threads>::kPerThread;
  FP_UNROLL
  for (int64_t k = 0; k < perThread; ++k) {
    const int64_t c = team.rank() + k * Threads;
    if (c >= Channels)
      continue;
    FP_UNROLL
    for (int64_t n = 0; n < N; ++n)
      carry[n * Channels + c] = registers.s[k][n];
    carry[N * Channels + c] = registers.sumDelta[k];
  }
}

/// Starts a selective scan (state in memory) at a chunk boundary: Aᵀ from
/// `a`, and S folded from the `count` carries at `carries` (one every
/// `stride` elements, in chunk order), S = exp(Σ Δ · A) ⊙ S + S⁰ per chunk.
/// The chunk's tokens then run with `first` false.
template <bool ATransposed = false, typename Team, typename S, typename A>
FP_HOST_DEVICE inline void
loadSelectiveScanCarry(Team &team, S *state, const A *a, int64_t channels,
                       int64_t stateSize, const S *carries, int64_t stride,
                       int64_t count) {
  using fp::host::exp;
  S *at = state + stateSize * channels;
  FP_TEAM_FOR_ROLLED(c, channels) {
    for (int64_t n = 0; n < stateSize; ++n) {
      const S an =
          S(scanMatrixEntry<ATransposed>(a, c, n, channels, stateSize));
      S h = 0;
      for (int64_t j = 0; j < count; ++j) {
        const S *carry = carries + j * stride;
        h = exp(carry[stateSize * channels + c] * an) * h +
            carry[n * channels + c];
      }
      state[n * channels + c] = h;
      at[n * channels + c] = an;
    }
  }
}

/// Starts a selective scan whose state is in registers at a chunk boundary:
/// the fold runs in `memory` (the scan's N · Channels state slots, which a
/// chunked launch allocates) and the registers are then loaded from it, so
/// that they are not live across the fold (which otherwise costs the
/// per-sample kernel about 40 registers per thread).
template <bool ATransposed = false, typename Team, typename S, int64_t Channels,
          int64_t N, int Threads, typename A>
FP_HOST_DEVICE inline void loadSelectiveScanCarry(
    Team &team, ScanRegisters<S, Channels, N, Threads> &registers, S *memory,
    const A *a, const S *carries, int64_t stride, int64_t count) {
  using fp::host::exp;
  FP_TEAM_ACCUMULATE_ROLLED(c, Channels) {
    for (int64_t n = 0; n < N; ++n) {
      const S an = S(scanMatrixEntry<ATransposed>(a, c, n, Channels, N));
      S h = 0;
      for (int64_t j = 0; j < count; ++j) {
        const S *carry = carries + j * stride;
        h = exp(carry[N * Channels + c] * an) * h + carry[n * Channels + c];
      }
      memory[n * Channels + c] = h;
    }
  }
  constexpr int64_t perThread =
      ScanRegisters<S, Channels, N, Threads>::kPerThread;
  FP_UNROLL
  for (int64_t k = 0; k < perThread; ++k) {
    const int64_t c = team.rank() + k * Threads; // as above: no sync needed
    if (c >= Channels)
      continue;
    FP_UNROLL
    for (int64_t n = 0; n < N; ++n)
      registers.s[k][n] = memory[n * Channels + c];
  }
}

/// The summary step of scanStep: h and P = Π coeff, no output.
template <typename Team, typename S, typename K, typename X>
FP_HOST_DEVICE inline void scanSummaryStep(Team &team, bool first, S *state,
                                           const K *coeff, const X *x,
                                           int64_t n) {
  S *product = state + n;
  FP_TEAM_FOR(i, n) {
    state[i] = S(coeff[i]) * state[i] + S(x[i]);
    product[i] = first ? S(coeff[i]) : product[i] * S(coeff[i]);
  }
}

/// Stores an fp.scan's carry [h | P].
template <typename Team, typename S>
FP_HOST_DEVICE inline void saveScanCarry(Team &team, const S *state, int64_t n,
                                         S *carry) {
  FP_TEAM_FOR(i, 2 * n) carry[i] = state[i];
}

/// Starts an fp.scan at a chunk boundary: h folded from `count` carries,
/// h = P ⊙ h + h⁰ per chunk.
template <typename Team, typename S>
FP_HOST_DEVICE inline void loadScanCarry(Team &team, S *state, int64_t n,
                                         const S *carries, int64_t stride,
                                         int64_t count) {
  FP_TEAM_FOR_ROLLED(i, n) {
    S h = 0;
    for (int64_t j = 0; j < count; ++j)
      h = carries[j * stride + n + i] * h + carries[j * stride + i];
    state[i] = h;
  }
}

} // namespace fp::fused

#endif // FP_RUNTIME_KERNELS_FUSED_CHUNKS_H
