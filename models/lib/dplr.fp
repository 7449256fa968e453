// DPLR mixer (docs/spec.md §2.2): Q = I − 2 Σ_i α_i u_i u_iᵀ, the same
// parameters as the Householder mixer but one sum instead of a product of
// reflections. Not contractive for r ≥ 2 in general.

mixer dplr(p: [m], v: [d]) -> [d] {
  config r = 1
  config eps = 1.0e-5
  assert r >= 1, "dplr needs a rank of at least 1"

  param u_proj: wn_linear(m, r * d)
  param alpha_proj: wn_linear(m, r, bias = true)

  let us = silu(u_proj(p))
  let alpha = sigmoid(alpha_proj(p))
  let out = v
  for i in 0..r {
    let u = l2norm(us[i * d : (i + 1) * d], eps)
    out = out - 2.0 * alpha[i] * dot(u, v) * u
  }
  return out
}
