//===- Fused/SelectiveScan.h - A selective scan's channel -------*- C++ -*-===//
//
// selectiveScanChannel: one channel of Mamba-1's selective scan as the
// selectiveScan kernels of Host/TimeCoupling.h and Device/TimeCoupling.cuh run
// it, outside fused kernels, and ScanLane, which splits a channel's states over
// lanes, with the steps of their laneTransposeSum.
//
// Include Fused.h rather than this file: Fused.h #undefs the element-loop
// macros of Fused/Team.h after its last part, which a part included alone
// leaves defined.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_FUSED_SELECTIVESCAN_H
#define FP_RUNTIME_KERNELS_FUSED_SELECTIVESCAN_H

#include "fp/Runtime/Kernels/Fused/Team.h"

namespace fp::fused {

/// Mamba-1's selective scan of one channel `c` of sample `b` (the operands
/// and output as fp::host::selectiveScan's), its at most kMaxState states
/// and its row of A in arrays of that size, which CUDA keeps in registers
/// (the loops over them are unrolled; `state` ≤ kMaxState). The Δ, u, B and
/// C of the next kAhead tokens wait in kAhead slots that the tokens use in
/// turn (a group of kAhead tokens, unrolled, so that each slot is registers
/// too); once token t has used its slot, token t + kAhead's load into it is
/// issued, and has the arithmetic of kAhead − 1 tokens to arrive (with one
/// slot, token t copies its operands out of it first, so that token t + 1's
/// load runs during token t's arithmetic). With more slots a thread waits
/// out the memory's latency once, not every token, where one token's
/// arithmetic is shorter than that latency and few threads share an SM.
/// The arithmetic is fp::host::selectiveScan's, in its order, whatever
/// kAhead.
template <int kMaxState, int kAhead = 1, typename Real>
FP_HOST_DEVICE inline void
selectiveScanChannel(const Real *u, const Real *delta, const Real *a,
                     const Real *bm, const Real *cm, const Real *skip,
                     int64_t b, int64_t c, int64_t length, int64_t channels,
                     int64_t state, Real *out) {
  static_assert(kAhead >= 1, "a token's operands load at least one ahead");
  using C = Compute<Real>;
  using fp::host::exp;
  C st[kMaxState], at[kMaxState];
  Real dNext[kAhead], uNext[kAhead], bNext[kAhead][kMaxState],
      cNext[kAhead][kMaxState];
  FP_UNROLL
  for (int n = 0; n < kMaxState; ++n) {
    st[n] = C(0);
    at[n] = n < state ? C(a[c * state + n]) : C(0);
  }
  const int64_t first = b * length;
  // Slot j holds token t's operands for every t ≡ j (mod kAhead).
  auto load = [&](int slot, int64_t t) {
    if (t >= length)
      return;
    const int64_t bt = first + t;
    dNext[slot] = delta[bt * channels + c];
    uNext[slot] = u[bt * channels + c];
    FP_UNROLL
    for (int n = 0; n < kMaxState; ++n) {
      bNext[slot][n] = n < state ? bm[bt * state + n] : Real(0);
      cNext[slot][n] = n < state ? cm[bt * state + n] : Real(0);
    }
  };
  FP_UNROLL
  for (int j = 0; j < kAhead; ++j)
    load(j, j);
  const C skipC = skip ? C(skip[c]) : C(0);
  for (int64_t group = 0; group < length; group += kAhead) {
    FP_UNROLL
    for (int j = 0; j < kAhead; ++j) {
      const int64_t t = group + j;
      if (t >= length)
        break;
      const C dt = C(dNext[j]), ut = C(uNext[j]);
      const C du = dt * ut;
      C y = 0;
      if constexpr (kAhead == 1) {
        // One slot: its operands move to registers of their own, so that
        // token t + 1's load is issued before token t's arithmetic.
        C bn[kMaxState], cn[kMaxState];
        FP_UNROLL
        for (int n = 0; n < kMaxState; ++n) {
          bn[n] = C(bNext[0][n]);
          cn[n] = C(cNext[0][n]);
        }
        load(0, t + 1);
        FP_UNROLL
        for (int n = 0; n < kMaxState; ++n)
          if (n < state) {
            st[n] = exp(dt * at[n]) * st[n] + du * bn[n];
            y += st[n] * cn[n];
          }
      } else {
        FP_UNROLL
        for (int n = 0; n < kMaxState; ++n)
          if (n < state) {
            st[n] = exp(dt * at[n]) * st[n] + du * C(bNext[j][n]);
            y += st[n] * C(cNext[j][n]);
          }
        // The slot is free: token t + kAhead's operands, which the next
        // kAhead − 1 tokens' arithmetic covers.
        load(j, t + kAhead);
      }
      out[(first + t) * channels + c] = Real(skip ? y + skipC * ut : y);
    }
  }
}

/// The selective scan of one channel `c` of sample `b` split over kLanes
/// lanes (kLanes consecutive threads of a warp on CUDA), for more threads
/// where one thread per channel leaves the device idle. Lane `lane` keeps
/// the kStates states [lane · kStates, (lane + 1) · kStates) of the channel
/// (those below `state`) and their row of A; the lanes take the channel's
/// tokens in groups of kLanes. For a group, each lane loads the operands of
/// all its tokens at once (Δ and u are the same for every lane, B and C its
/// states' own), advances its states through them and leaves its part of
/// every token's y in p[j] (lane 0 adds the skip term D · u); the lanes'
/// parts are then summed across the lanes (laneTransposeSum), which leaves
/// token j's y with lane j, and lane j stores it. A lane that is not
/// `active` (past the last channel, there so that a warp's shuffles have
/// every lane) loads nothing and contributes zeros.
template <typename Real, int kMaxState, int kLanes> struct ScanLane {
  static_assert(kLanes >= 1 && (kLanes & (kLanes - 1)) == 0 &&
                    kMaxState % kLanes == 0,
                "a power-of-two count of lanes that divides the states");
  static constexpr int kStates = kMaxState / kLanes;
  using C = Compute<Real>;

  int lane;
  bool active;
  int64_t b, c, state, channels;
  C st[kStates], at[kStates];
  C skipC;

  FP_HOST_DEVICE ScanLane(const Real *a, const Real *skip, int64_t b, int64_t c,
                          int64_t channels, int64_t state, int lane,
                          bool active)
      : lane(lane), active(active), b(b), c(c), state(state),
        channels(channels), skipC(active && skip ? C(skip[c]) : C(0)) {
    FP_UNROLL
    for (int k = 0; k < kStates; ++k) {
      st[k] = C(0);
      at[k] = active && hasState(k) ? C(a[c * state + firstState() + k]) : C(0);
    }
  }

  FP_HOST_DEVICE int64_t firstState() const { return int64_t(lane) * kStates; }
  FP_HOST_DEVICE bool hasState(int k) const { return firstState() + k < state; }

  /// Tokens [t0, t0 + kLanes) (those below `length`): p[j] is this lane's
  /// part of token t0 + j's y, zero past the end.
  FP_HOST_DEVICE void group(const Real *u, const Real *delta, const Real *bm,
                            const Real *cm, const Real *skip, int64_t t0,
                            int64_t length, C (&p)[kLanes]) {
    using fp::host::exp;
    Real dIn[kLanes], uIn[kLanes], bIn[kLanes][kStates], cIn[kLanes][kStates];
    FP_UNROLL
    for (int j = 0; j < kLanes; ++j) {
      const int64_t t = t0 + j;
      const bool here = active && t < length;
      const int64_t bt = b * length + t;
      dIn[j] = here ? delta[bt * channels + c] : Real(0);
      uIn[j] = here ? u[bt * channels + c] : Real(0);
      FP_UNROLL
      for (int k = 0; k < kStates; ++k) {
        const bool load = here && hasState(k);
        bIn[j][k] = load ? bm[bt * state + firstState() + k] : Real(0);
        cIn[j][k] = load ? cm[bt * state + firstState() + k] : Real(0);
      }
    }
    FP_UNROLL
    for (int j = 0; j < kLanes; ++j) {
      const C dt = C(dIn[j]), ut = C(uIn[j]);
      const C du = dt * ut;
      C y = 0;
      FP_UNROLL
      for (int k = 0; k < kStates; ++k)
        if (hasState(k)) {
          st[k] = exp(dt * at[k]) * st[k] + du * C(bIn[j][k]);
          y += st[k] * C(cIn[j][k]);
        }
      p[j] = lane == 0 && skip ? y + skipC * ut : y;
    }
  }

  /// Stores token t0 + lane's y, summed over the lanes, where it exists.
  FP_HOST_DEVICE void store(C y, int64_t t0, int64_t length, Real *out) const {
    const int64_t t = t0 + lane;
    if (active && t < length)
      out[(b * length + t) * channels + c] = Real(y);
  }
};

/// One step of laneTransposeSum, at distance kHalf: of each pair
/// (v[j], v[kHalf + j]), j < kHalf, a lane keeps the element that bit kHalf
/// of its index selects and sends the other to lane ^ kHalf, which adds it
/// to its own kept element: v[j] = kept + the partner's sent.
template <int kHalf, typename C>
FP_HOST_DEVICE inline C keptHalf(const C *v, int lane, int j) {
  return (lane & kHalf) ? v[kHalf + j] : v[j];
}
template <int kHalf, typename C>
FP_HOST_DEVICE inline C sentHalf(const C *v, int lane, int j) {
  return (lane & kHalf) ? v[j] : v[kHalf + j];
}
// laneTransposeSum (Device.cuh) runs the steps at kLanes / 2, …, 2, 1 with
// shuffles; after them lane l's v[0] is Σ over the kLanes lanes of v[l], in
// an order fixed by the steps (kLanes − 1 shuffles per lane where kLanes
// separate sums take kLanes · log2(kLanes)). Tests run the same steps over
// arrays of lanes on the host.

} // namespace fp::fused

#endif // FP_RUNTIME_KERNELS_FUSED_SELECTIVESCAN_H
