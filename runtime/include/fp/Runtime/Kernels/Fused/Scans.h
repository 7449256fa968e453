//===- Fused/Scans.h - Scan steps of fused kernels --------------*- C++ -*-===//
//
// One time step of a recurrence whose state lives in `state`: scanStep
// (fp.scan) and selectiveScanStep, with the state in memory or, on CUDA, in
// registers (ScanRegisters).
//
// Include Fused.h rather than this file: Fused.h #undefs the element-loop
// macros of Fused/Team.h after its last part, which a part included alone
// leaves defined.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_FUSED_SCANS_H
#define FP_RUNTIME_KERNELS_FUSED_SCANS_H

#include "fp/Runtime/Kernels/Fused/Team.h"

namespace fp::fused {

/// h = coeff ⊙ h + x, out = h (fp.scan; the state starts at zero).
template <typename Team, typename S, typename K, typename X, typename Out>
FP_HOST_DEVICE inline void scanStep(Team &team, S *state, const K *coeff,
                                    const X *x, int64_t n, Out *out) {
  FP_TEAM_FOR(i, n) {
    const S h = S(coeff[i]) * state[i] + S(x[i]);
    state[i] = h;
    out[i] = Out(h);
  }
}

/// A[c, n] of a selective scan's state matrix, given as A (channels × N)
/// or, with ATransposed, as Aᵀ (N × channels: fp-transpose-scan-a), which
/// threads running along channels read contiguously. Every selective-scan
/// function below takes its `a` in the layout its ATransposed says.
template <bool ATransposed, typename A>
FP_HOST_DEVICE inline const A &scanMatrixEntry(const A *a, int64_t c, int64_t n,
                                               int64_t channels,
                                               int64_t stateSize) {
  return ATransposed ? a[n * channels + c] : a[c * stateSize + n];
}

/// One step of fp.selective_scan for the token: S[n, c] = exp(Δ_c A[c, n])
/// S[n, c] + Δ_c u_c B_n, out_c = Σ_n S[n, c] C_n + D_c u_c (`skip` = D
/// may be nullptr). `state` holds 2·N·channels elements of the arithmetic
/// type: S, and Aᵀ, which the first step of a sample (`first`) copies from
/// A, both laid out [N, channels] so that threads (and SIMD lanes) run along
/// channels. Each output sums over n in order: on the device in a register
/// of its thread; on the host in the output row, with the loop over
/// channels innermost so that it vectorises (a bf16 output sums in a
/// register there too).
template <bool ATransposed = false, typename Team, typename S, typename U,
          typename D, typename A, typename Bm, typename Cm, typename Skip,
          typename Out>
FP_HOST_DEVICE inline void
selectiveScanStep(Team &team, bool first, S *state, const U *u, const D *delta,
                  const A *a, const Bm *bm, const Cm *cm, Skip skip,
                  int64_t channels, int64_t stateSize, Out *out) {
  using fp::host::exp;
  constexpr bool hasSkip = !std::is_null_pointer_v<Skip>;
  S *at = state + stateSize * channels;
  if (first) {
    FP_TEAM_FOR(e, stateSize * channels) {
      int64_t n = e / channels, c = e % channels;
      at[e] = S(scanMatrixEntry<ATransposed>(a, c, n, channels, stateSize));
    }
    team.sync();
  }
#ifndef __CUDA_ARCH__
  if constexpr (std::is_same_v<Out, S>) {
    FP_TEAM_FOR(c, channels) out[c] = S(0);
    for (int64_t n = 0; n < stateSize; ++n) {
      const S bn = S(bm[n]), cn = S(cm[n]);
      S *sn = state + n * channels;
      const S *an = at + n * channels;
      FP_TEAM_FOR(c, channels) {
        const S du = S(delta[c]) * S(u[c]);
        sn[c] = exp(S(delta[c]) * an[c]) * sn[c] + du * bn;
        out[c] += sn[c] * cn;
      }
    }
    if constexpr (hasSkip) {
      if (skip) {
        FP_TEAM_FOR(c, channels) out[c] = out[c] + S(skip[c]) * S(u[c]);
      }
    }
    return;
  }
#endif
  FP_TEAM_FOR_ROLLED(c, channels) {
    const S dc = S(delta[c]), uc = S(u[c]), du = dc * uc;
    S y = 0;
    for (int64_t n = 0; n < stateSize; ++n) {
      S &sn = state[n * channels + c];
      sn = exp(dc * at[n * channels + c]) * sn + du * S(bm[n]);
      y += sn * S(cm[n]);
    }
    if constexpr (hasSkip)
      out[c] = Out(skip ? y + S(skip[c]) * uc : y);
    else
      out[c] = Out(y);
  }
}

/// The selective-scan state that one thread of a team of `Threads` keeps in
/// registers across a sample's tokens on the device: S[n, c] of the
/// channels c = rank + k · Threads, k < kPerThread. Every index into it is
/// a compile-time constant once selectiveScanStep below is unrolled, so that
/// it stays in registers.
template <typename S, int64_t Channels, int64_t N, int Threads>
struct ScanRegisters {
  static constexpr int64_t kPerThread = (Channels + Threads - 1) / Threads;
  S s[kPerThread][N];
  /// Σ Δ_c over the tokens of a chunk (chunked execution, below).
  S sumDelta[kPerThread];
};

/// Values of scan state a thread may keep in registers while its scan's
/// decays e^(Δ A) are CUDA's expf (Common.h); above, they are the host's
/// polynomial on the device too. expf is 12 instructions where the
/// polynomial is one dependent chain of 40, and ptxas overlaps more of the
/// short ones: at config LM's 96 values (6 channels of 16 states) the
/// kernel of the step after the solve spilled 96 bytes a thread with expf
/// (16 with exp2f), none with the polynomial, under its 128-register bound.
inline constexpr int64_t kMaxExpfScanRegisters = 64;

/// e^x in a scan step whose state is `Values` registers per thread.
template <int64_t Values, typename S>
FP_HOST_DEVICE inline S registerScanExp(S x) {
  if constexpr (Values > kMaxExpfScanRegisters && std::is_same_v<S, float>)
    return fp::host::polynomialExp(x);
  else
    return fp::host::exp(x);
}

/// selectiveScanStep with the state in `registers` (team.size() must be
/// Threads): the first step of a sample (`first`) starts it at zero; A is
/// read from `a` at every step. Each output sums over n in order in a
/// register, with the same arithmetic as the device path above, so the two
/// give equal results.
template <bool ATransposed = false, typename Team, typename S, int64_t Channels,
          int64_t N, int Threads, typename U, typename D, typename A,
          typename Bm, typename Cm, typename Skip, typename Out>
FP_HOST_DEVICE inline void
selectiveScanStep(Team &team, bool first,
                  ScanRegisters<S, Channels, N, Threads> &registers, const U *u,
                  const D *delta, const A *a, const Bm *bm, const Cm *cm,
                  Skip skip, Out *out) {
  constexpr bool hasSkip = !std::is_null_pointer_v<Skip>;
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
    }
    const S dc = S(delta[c]), uc = S(u[c]), du = dc * uc;
    S y = 0;
    FP_UNROLL
    for (int64_t n = 0; n < N; ++n) {
      sc[n] = exp(dc * S(scanMatrixEntry<ATransposed>(a, c, n, Channels, N))) *
                  sc[n] +
              du * S(bm[n]);
      y += sc[n] * S(cm[n]);
    }
    if constexpr (hasSkip)
      out[c] = Out(skip ? y + S(skip[c]) * uc : y);
    else
      out[c] = Out(y);
  }
}

} // namespace fp::fused

#endif // FP_RUNTIME_KERNELS_FUSED_SCANS_H
