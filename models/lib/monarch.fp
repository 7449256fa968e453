// Block-diagonal ("monarch") mixer (docs/spec.md §2.4): d / r blocks of size r,
// each v_c − α_c P_c v_c with P_c = L_c L_cᵀ divided by its largest column
// norm (+ ε). No factor 2.

mixer monarch(p: [m], v: [d]) -> [d] {
  config r = 4            // block size
  config eps = 1.0e-5
  assert is_pow2(d) && is_pow2(r) && r <= d,
         "monarch needs the width and the block size to be powers of two"

  let nc = d / r
  let packed = r * (r + 1) / 2
  param theta_proj: wn_linear(m, nc * packed)
  param alpha_proj: wn_linear(m, nc, bias = true)

  let L = triu(reshape(silu(theta_proj(p)), [nc, packed]))
  let P = matmul(L, t(L))
  // P is symmetric, so its column norms are its row norms.
  let largest = max(sqrt(sum(P * P)))
  P = P / (largest + eps)
  let alpha = sigmoid(alpha_proj(p))
  let vb = reshape(v, [nc, r])
  return reshape(vb - alpha * matvec(P, vb), [d])
}
