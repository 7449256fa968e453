// The bottom of the import diamond of ../imports.fp: imported by left.fp and
// right.fp, loaded once (a second load would be a redefinition of 'base_mix').

mixer base_mix(p: [m], v: [d]) -> [d] {
  param g: linear(m, d)
  return sigmoid(g(p)) * v
}
