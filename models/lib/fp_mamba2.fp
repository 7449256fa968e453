// The FP-Mamba2 layer (docs/spec.md §5.1): Mamba-2's multi-head SSD scan in
// the fixed-point map, to the intended design of the reference
// (docs/reference.md, "FP-Mamba2 and Mamba-2").

import "householder.fp"

layer fp_mamba2(u: [D]) -> [D] {
  config D = 64               // d_model
  config E = 2                // expand
  config N = 128              // d_state
  config P = divisor_le(E * D, 64)  // head_dim: 64, or less where d is small
  config G = 1                // n_groups: heads sharing one B and C
  config K = 4                // d_conv
  config mixer_type = householder(r = 1)
  config use_short_conv = false
  config glu_in_loop = false
  config symm_mixer = false
  config mixer_h_dep = true
  config eps = 1.0e-5
  config tolerance = 0.1
  config max_iter = 100

  let d = E * D
  let H = d / P
  let GN = G * N

  // One projection to [z; x; B; C; dt].
  param in_proj: linear(D, 2 * d + 2 * GN + H)
  param dt_bias: [H] = dt_bias(0.001, 0.1, 0.0001)
  param A_log: [H] = log_uniform(1.0, 16.0)
  param D_skip: [H] = ones
  param bc_y_proj: wn_linear(d, 2 * GN)
  param mixer: mixer_type
  param norm: rms_norm(d, eps = eps)
  param out_proj: linear(d, D)

  // Iteration-invariant precomputation.
  let proj = in_proj(u)
  let z = proj[0 : d]
  let xbc = proj[d : 2 * d + 2 * GN]
  if use_short_conv {
    // Over [x; B; C], with SiLU; without it there is no activation.
    param conv1d: causal_conv(d + 2 * GN, K)
    xbc = silu(conv1d(xbc))
  }
  let x = xbc[0 : d]
  let bx = xbc[d : d + GN]
  let cx = xbc[d + GN : d + 2 * GN]
  let dt = softplus(proj[2 * d + 2 * GN : 2 * d + 2 * GN + H] + dt_bias)
  let A = -exp(A_log)

  // The fixed-point map f.
  fn f(y: [d]) -> [d] {
    let ybar = shift(y)
    let p = x
    if mixer_h_dep && !symm_mixer {
      p = concat(x, ybar)
    } else if mixer_h_dep {
      p = x + ybar
    }
    let xm = mixer(p, x - y) + y
    // B and C are always normalised, each group on its own.
    let bcy = bc_y_proj(ybar)
    let b = reshape(l2norm(reshape(bx + bcy[0 : GN], [G, N]), eps), [GN])
    let c = reshape(l2norm(reshape(cx + bcy[GN : 2 * GN], [G, N]), eps), [GN])
    let s = ssd_scan(xm, dt, A, b, c, D_skip, groups = G)
    // The gated RMSNorm, norm after gate.
    return norm(s * silu(z))
  }

  let ystar = fixed_point(f, 0.0, tolerance = tolerance, quantile = 0.9,
                          max_iter_train = max_iter)
  let yhat = f(ystar)

  // Output head (docs/spec.md §1.5, as FP-Mamba's).
  let gated = yhat
  if !glu_in_loop {
    param z_y_proj: wn_linear(d, d)
    gated = silu(z + z_y_proj(shift(yhat))) * yhat
  }
  return out_proj(gated)
}
