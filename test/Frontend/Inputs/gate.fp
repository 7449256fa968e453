// A small mixer, imported by ../locations.fp and ../imports.fp.

mixer gate(p: [m], v: [d]) -> [d] {
  param g: linear(m, d)
  let s = sigmoid(g(p))
  return s * v
}
