// A layer without a scan: its fused and split schedules are the same code
// (schedules.test).

layer noscan(u: [D]) -> [D] {
  config D = 4

  param proj: linear(D, D)
  param mix: linear(D, D)

  let x = proj(u)
  fn f(h: [D]) -> [D] {
    return x + 0.5 * tanh(mix(h))
  }
  return fixed_point(f, 0.0)
}
