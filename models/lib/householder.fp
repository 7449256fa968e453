// Householder product mixer (docs/spec.md §2.1): Q = H_{r-1} ⋯ H_0 with
// H_i = I − 2 α_i u_i u_iᵀ, u_i = nrm(silu(W_u p)_i), α_i = σ(W_α p + b)_i.
// ‖Q‖₂ ≤ 1 for every input.

mixer householder(p: [m], v: [d]) -> [d] {
  config r = 1            // number of reflections
  config eps = 1.0e-5     // norm_eps of the reference
  assert r >= 1, "householder needs at least one reflection"

  param u_proj: wn_linear(m, r * d)
  param alpha_proj: wn_linear(m, r, bias = true)

  let us = silu(u_proj(p))
  let alpha = sigmoid(alpha_proj(p))
  let out = v
  for i in 0..r {
    let u = l2norm(us[i * d : (i + 1) * d], eps)
    out = out - 2.0 * alpha[i] * dot(u, out) * u
  }
  return out
}
