// Kronecker mixer (docs/spec.md §2.3): Q = I − 2 (Uᵀ ⊗ V) with d = m1·m2,
// U = diag(γ₁) S1, V = diag(γ₂) S2, and S_k = L_k L_kᵀ from packed
// upper-triangular factors, normalised by rows (FP-Mamba) and, with
// `spectral`, also by their largest eigenvalue (FP-RNN; docs/spec.md §10.1).

mixer kronecker(p: [m], v: [d]) -> [d] {
  config spectral = false
  config eps = 1.0e-5
  config m1 = divisor_le(d, isqrt(d))
  config m2 = d / m1

  let P1 = m1 * (m1 + 1) / 2
  let P2 = m2 * (m2 + 1) / 2
  param theta_proj: wn_linear(m, P1 + P2)
  param gate_proj: wn_linear(m, m1 + m2, bias = true)

  let theta = silu(theta_proj(p))
  let gamma = sigmoid(gate_proj(p))
  let L1 = triu(theta[0 : P1])
  let L2 = triu(theta[P1 : P1 + P2])
  // Row normalisation (the reference's mode 'column-wise').
  let S1 = l2norm(matmul(L1, t(L1)), eps)
  let S2 = l2norm(matmul(L2, t(L2)), eps)
  if spectral {
    let w1 = fill(1.0 / sqrt(d), gamma[0 : m1])
    let a1 = w1
    let w2 = fill(1.0 / sqrt(d), gamma[m1 : m1 + m2])
    let a2 = w2
    for j in 0..16 {
      if j % 2 == 0 {
        a1 = l2norm(matvec(S1, w1), 1.0e-12)
        a2 = l2norm(matvec(S2, w2), 1.0e-12)
      } else {
        w1 = l2norm(matvec(S1, a1), 1.0e-12)
        w2 = l2norm(matvec(S2, a2), 1.0e-12)
      }
    }
    S1 = S1 / (dot(a1, matvec(S1, w1)) + eps)
    S2 = S2 / (dot(a2, matvec(S2, w2)) + eps)
  }
  let U = gamma[0 : m1] * S1
  let V = gamma[m1 : m1 + m2] * S2
  // Q v = v − 2 vec(Uᵀ X Vᵀ) with X = reshape(v, [m1, m2]) row-major.
  let X = reshape(v, [m1, m2])
  let mixed = matmul(matmul(t(U), X), t(V))
  return v - 2.0 * reshape(mixed, [d])
}
