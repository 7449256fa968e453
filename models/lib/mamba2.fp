// Mamba-2 (docs/spec.md §5.4, mamba_ssm's Mamba2 block with one group) as
// the one-iteration case of a fixed point, as models/lib/mamba.fp writes
// Mamba-1: the identity mixer and a solver that stops after one undamped
// step, so y* = f(0) and the output uses f(y*) = f(0).

import "identity.fp"

layer mamba2(u: [D]) -> [D] {
  config D = 64
  config E = 2
  config N = 128
  config P = divisor_le(E * D, 64)
  config K = 4
  config eps = 1.0e-5

  let d = E * D
  let H = d / P

  param in_proj: linear(D, 2 * d + 2 * N + H)
  param conv1d: causal_conv(d + 2 * N, K)
  param dt_bias: [H] = dt_bias(0.001, 0.1, 0.0001)
  param A_log: [H] = log_uniform(1.0, 16.0)
  param D_skip: [H] = ones
  param mixer: identity
  param norm: rms_norm(d, eps = eps)
  param out_proj: linear(d, D)

  let proj = in_proj(u)
  let z = proj[0 : d]
  let xbc = silu(conv1d(proj[d : 2 * d + 2 * N]))
  let x = xbc[0 : d]
  let dt = softplus(proj[2 * d + 2 * N : 2 * d + 2 * N + H] + dt_bias)
  let A = -exp(A_log)

  fn f(y: [d]) -> [d] {
    let xm = mixer(x, x - y) + y
    let s = ssd_scan(xm, dt, A, xbc[d : d + N], xbc[d + N : d + 2 * N], D_skip)
    // The gated RMSNorm, norm after gate.
    return norm(s * silu(z))
  }

  let ystar = fixed_point(f, 0.0, max_iter_train = 1, max_iter_eval = 1,
                          relax_start = 1.0)
  return out_proj(f(ystar))
}
