// Block Householder mixer (docs/dsl.md §8): the d channels are split into
// `blocks` blocks of k = d / blocks channels, and every block gets its own
// product of r reflections,
//
//   Q(p) = diag(Q_0, …, Q_{blocks−1}),   Q_j = H_{j,r−1} ⋯ H_{j,1} H_{j,0},
//   H_{j,i} = I_k − 2 α_{j,i} u_{j,i} u_{j,i}ᵀ,
//   u_{j,i} = nrm(silu(W_u p)[i·d + j·k : i·d + (j+1)·k]),
//   α_{j,i} = σ(W_α p + b_α)[i·blocks + j].
//
// Each H_{j,i} is symmetric with eigenvalue 1 − 2 α_{j,i} ‖u_{j,i}‖² ∈ (−1, 1]
// along u_{j,i} and 1 elsewhere, so ‖Q(p)‖₂ = max_j ‖Q_j‖₂ ≤ 1 for every p.
// With blocks = 1 it is the Householder mixer of docs/spec.md §2.1.

mixer block_householder(p: [m], v: [d]) -> [d] {
  config r = 1            // reflections per block
  config blocks = 4       // number of channel blocks
  config eps = 1.0e-5     // norm_eps of the reference
  assert r >= 1, "block_householder needs at least one reflection"
  assert blocks >= 1 && d % blocks == 0,
         "block_householder needs a number of blocks that divides the width"

  let k = d / blocks
  param u_proj: wn_linear(m, r * d)
  param alpha_proj: wn_linear(m, r * blocks, bias = true)

  let us = silu(u_proj(p))
  let alpha = sigmoid(alpha_proj(p))
  let out = reshape(v, [blocks, k])
  for i in 0..r {
    let u = l2norm(reshape(us[i * d : (i + 1) * d], [blocks, k]), eps)
    let a = alpha[i * blocks : (i + 1) * blocks]
    out = out - 2.0 * a * sum(u * out) * u
  }
  return reshape(out, [d])
}
