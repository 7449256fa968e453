// Selective dense mixer (docs/spec.md §2.4, FP-RNN only): a full symmetric PSD
// matrix per token, S = L Lᵀ from d(d+1)/2 projected entries, divided by its
// dominant eigenvalue: Q = S / (λ̂ + ε), output Q v (no I −). λ̂ comes from
// 32 steps of the power iteration w ← S w, λ = ‖w‖, w ← w / (λ + ε); the
// spec does not give the start vector, which here is 1/√d · 𝟙 as in the
// Kronecker mixer.

mixer selective_dense(p: [m], v: [d]) -> [d] {
  config eps = 1.0e-5
  config steps = 32

  param theta_proj: wn_linear(m, d * (d + 1) / 2)

  let L = triu(silu(theta_proj(p)))
  let S = matmul(L, t(L))
  let w = fill(1.0 / sqrt(d), v)
  let lambda = sum(w)
  for j in 0..steps {
    w = matvec(S, w)
    lambda = sqrt(sum(w * w))
    w = w / (lambda + eps)
  }
  return matvec(S, v) / (lambda + eps)
}
