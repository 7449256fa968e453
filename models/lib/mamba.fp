// Mamba-1 (docs/spec.md §5.4) as the one-iteration case of FP-Mamba: the
// identity mixer, no dependence of B and C on the iterate, no LayerNorm, and a
// solver that stops after one undamped step, so y* = f(0) and the output
// uses f(y*) = f(0).

import "identity.fp"

layer mamba(u: [D]) -> [D] {
  config D = 64
  config E = 2
  config N = 16
  config R = ceil_div(D, 16)
  config K = 4

  let d = E * D

  param in_proj: linear(D, 2 * d)
  param conv1d: causal_conv(d, K)
  param x_proj: linear(d, R + 2 * N)
  param dt_proj: linear(R, d, weight = uniform(-1.0 / sqrt(R), 1.0 / sqrt(R)),
                        bias = dt_bias(0.001, 0.1, 0.0001))
  param A_log: [d, N] = s4d_real
  param D_skip: [d] = ones
  param mixer: identity
  param out_proj: linear(d, D)

  let xz = in_proj(u)
  let x = silu(conv1d(xz[0 : d]))
  let z = xz[d : 2 * d]
  let xdbl = x_proj(x)
  let delta = softplus(dt_proj(xdbl[0 : R]))
  let A = -exp(A_log)

  fn f(y: [d]) -> [d] {
    let xm = mixer(x, x - y) + y
    let s = selective_scan(xm, delta, A, xdbl[R : R + N], xdbl[R + N : R + 2 * N],
                           D_skip)
    return s * silu(z)
  }

  let ystar = fixed_point(f, 0.0, max_iter_train = 1, max_iter_eval = 1,
                          relax_start = 1.0)
  return out_proj(f(ystar))
}
