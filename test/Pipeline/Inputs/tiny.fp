layer tiny(u: [D]) -> [D] {
  config D = 4
  param w: linear(D, D)
  let x = w(u)
  fn f(y: [D]) -> [D] {
    return x + shift(y)
  }
  return fixed_point(f, 0.0)
}

model tiny_model {
  d_model = 4
  layer = tiny
}
