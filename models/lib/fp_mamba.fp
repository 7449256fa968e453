// The FP-Mamba layer (docs/spec.md §1): a Mamba-1 block whose input is mixed
// across channels by Q(p) and iterated to its fixed point.

import "householder.fp"

layer fp_mamba(u: [D]) -> [D] {
  config D = 64               // d_model
  config E = 2                // expand
  config N = 16               // d_state
  config R = ceil_div(D, 16)  // dt_rank
  config K = 4                // d_conv
  config mixer_type = householder(r = 1)
  config use_short_conv = false
  config bc_norm = true
  config glu_in_loop = false
  config symm_mixer = false
  config mixer_h_dep = true
  config eps = 1.0e-5
  config tolerance = 0.1
  config max_iter = 100

  let d = E * D

  param in_proj: linear(D, 2 * d)
  param x_proj: linear(d, R + 2 * N)
  param dt_proj: linear(R, d, weight = uniform(-1.0 / sqrt(R), 1.0 / sqrt(R)),
                        bias = dt_bias(0.001, 0.1, 0.0001))
  param A_log: [d, N] = s4d_real
  param D_skip: [d] = ones
  param bc_y_proj: wn_linear(d, 2 * N)
  param mixer: mixer_type
  param out_norm: layer_norm(d, eps = eps)
  param out_proj: linear(d, D)

  // Iteration-invariant precomputation (docs/spec.md §1.3).
  let xz = in_proj(u)
  let x = xz[0 : d]
  let z = xz[d : 2 * d]
  if use_short_conv {
    param conv1d: causal_conv(d, K)
    x = silu(conv1d(x))
  }
  let xdbl = x_proj(x)
  let delta = softplus(dt_proj(xdbl[0 : R]))
  let bx = xdbl[R : R + N]
  let cx = xdbl[R + N : R + 2 * N]
  let A = -exp(A_log)

  // The fixed-point map f (docs/spec.md §1.4).
  fn f(y: [d]) -> [d] {
    let ybar = shift(y)
    let p = x
    if mixer_h_dep && !symm_mixer {
      p = concat(x, ybar)
    } else if mixer_h_dep {
      p = x + ybar
    }
    let xm = mixer(p, x - y) + y
    let bcy = bc_y_proj(ybar)
    let b = bx + bcy[0 : N]
    let c = cx + bcy[N : 2 * N]
    if bc_norm {
      b = l2norm(b, eps)
      c = l2norm(c, eps)
    }
    let s = selective_scan(xm, delta, A, b, c, D_skip)
    if glu_in_loop {
      s = s * silu(z)
    }
    return out_norm(s)
  }

  let ystar = fixed_point(f, 0.0, tolerance = tolerance, max_iter_train = max_iter)
  let yhat = f(ystar)

  // Output head (docs/spec.md §1.5).
  let gated = yhat
  if glu_in_loop {
    gated = yhat
  } else {
    param z_y_proj: wn_linear(d, d)
    gated = silu(z + z_y_proj(shift(yhat))) * yhat
  }
  return out_proj(gated)
}
