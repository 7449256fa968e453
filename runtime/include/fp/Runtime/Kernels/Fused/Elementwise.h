//===- Fused/Elementwise.h - Elementwise blocks -----------------*- C++ -*-===//
//
// forEachElement and forEachElementInOrder (the loops the emitter writes chains
// of elementwise ops in), and unary, binary, copy, fill and shifted.
//
// Include Fused.h rather than this file: Fused.h #undefs the element-loop
// macros of Fused/Team.h after its last part, which a part included alone
// leaves defined.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_FUSED_ELEMENTWISE_H
#define FP_RUNTIME_KERNELS_FUSED_ELEMENTWISE_H

#include "fp/Runtime/Kernels/Fused/Team.h"

namespace fp::fused {

/// body(i) for each of n elements, by the member that owns element i in
/// every loop of this file over n elements (`i = rank; i < n; i += size`):
/// a run of elementwise ops of one length, emitted as one such loop, needs
/// no barrier between its ops.
template <typename Team, typename Body>
FP_HOST_DEVICE inline void forEachElement(Team &team, int64_t n,
                                          const Body &body) {
  FP_TEAM_FOR(i, n) body(i);
}

/// forEachElement whose calls run in order of i on each member (no SIMD on
/// the host): for a body that also accumulates into a variable of the
/// member, as a chain ending in a row sum does (fp::fused::rowSum's order).
template <typename Team, typename Body>
FP_HOST_DEVICE inline void forEachElementInOrder(Team &team, int64_t n,
                                                 const Body &body) {
  FP_TEAM_ACCUMULATE(i, n) body(i);
}

/// out[i] = op(x[i]).
template <typename Team, typename Op, typename X, typename Out>
FP_HOST_DEVICE inline void unary(Team &team, Op op, int64_t n, const X *x,
                                 Out *out) {
  using C = fp::Compute<Out>;
  FP_TEAM_FOR(i, n) out[i] = Out(op(C(x[i])));
}

/// out[i] = op(x[i], y[i]).
template <typename Team, typename Op, typename X, typename Y, typename Out>
FP_HOST_DEVICE inline void binary(Team &team, Op op, int64_t n, const X *x,
                                  const Y *y, Out *out) {
  using C = fp::Compute<Out>;
  FP_TEAM_FOR(i, n) out[i] = Out(op(C(x[i]), C(y[i])));
}

template <typename Team, typename X, typename Out>
FP_HOST_DEVICE inline void copy(Team &team, int64_t n, const X *x, Out *out) {
  using C = fp::Compute<Out>;
  FP_TEAM_FOR(i, n) out[i] = Out(C(x[i]));
}

/// out[i] = value.
template <typename Team, typename Out>
FP_HOST_DEVICE inline void fill(Team &team, int64_t n, fp::Compute<Out> value,
                                Out *out) {
  const Out stored(value);
  FP_TEAM_FOR(i, n) out[i] = stored;
}

/// out = the token `offset` steps earlier in its sample of a per-token input
/// with `n` elements per token (an fp.shift read inside a kernel): `in` is
/// the input's start, `row` the token's row and `t` its time index in a
/// sample of `length` tokens; zeros where t − offset is outside the sample.
template <typename Team, typename X, typename Out>
FP_HOST_DEVICE inline void shifted(Team &team, const X *in, int64_t row,
                                   int64_t t, int64_t length, int64_t offset,
                                   int64_t n, Out *out) {
  if (t - offset >= 0 && t - offset < length)
    copy(team, n, in + (row - offset) * n, out);
  else
    fill(team, n, fp::Compute<Out>(0), out);
}

} // namespace fp::fused

#endif // FP_RUNTIME_KERNELS_FUSED_ELEMENTWISE_H
