// The layer of backward-modes.test, in two forms sharing one map f:
//
//   probe(u):             y* = fixed_point(f), output E(f(y*))
//   probe_unrolled([u; c]): [E(f^k(c)) ; f(c)], c held as an input
//
// with E(h) = out_proj(silu(h) ⊙ x). Both declare the same parameters in the
// same order, so one parameter set drives both. The map is a contraction
// (a scan with coefficients in (0, 1) over (1 − a) ⊙ (x + 0.8 tanh(·))), so
// the solve converges in f64 to rounding. backward-modes.test substitutes
// the other backward modes for `one_step`.

layer probe(u: [D]) -> [D] {
  config D = 4

  param in_proj: linear(D, D)
  param gate_proj: linear(D, D, bias = true)
  param mix: wn_linear(2 * D, D)
  param out_proj: linear(D, D)

  let x = in_proj(u)
  let a = sigmoid(gate_proj(u))
  fn f(h: [D]) -> [D] {
    let z = x + 0.8 * tanh(mix(concat(h, shift(h))))
    return scan(a, (1.0 - a) * z)
  }
  let hstar = fixed_point(f, 0.0, tolerance = 1.0e-3, quantile = 1.0,
                          relax_start = 1.0, relax_decay = 1.0,
                          backward = one_step)
  return out_proj(silu(f(hstar)) * x)
}

layer probe_unrolled(v: [W]) -> [W] {
  config W = 8
  config k = 1
  let D = W / 2

  param in_proj: linear(D, D)
  param gate_proj: linear(D, D, bias = true)
  param mix: wn_linear(2 * D, D)
  param out_proj: linear(D, D)

  let u = v[0 : D]
  let c = v[D : W]
  let x = in_proj(u)
  let a = sigmoid(gate_proj(u))
  fn f(h: [D]) -> [D] {
    let z = x + 0.8 * tanh(mix(concat(h, shift(h))))
    return scan(a, (1.0 - a) * z)
  }
  // One step from c with no relaxation: f(c).
  let once = fixed_point(f, c, max_iter_train = 1, max_iter_eval = 1,
                         relax_start = 1.0)
  let h = c
  for i in 0..k {
    h = f(h)
  }
  return concat(out_proj(silu(h) * x), once)
}
