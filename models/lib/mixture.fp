// Mixture mixer (docs/spec.md §2.4, FP-RNN only): the product of r mixers that
// alternate between a one-reflection Householder mixer (even index) and a
// row-normalised Kronecker mixer (odd index), applied in index order:
// Q = M_{r−1} ⋯ M_1 M_0, every M_i reading the same input p.

import "householder.fp"
import "kronecker.fp"

mixer mixture(p: [m], v: [d]) -> [d] {
  config r = 2
  assert r >= 2 && r <= 4, "mixture takes 2 to 4 factors"

  param m0: householder(r = 1)
  param m1: kronecker()
  let out = m1(p, m0(p, v))
  if r >= 3 {
    param m2: householder(r = 1)
    out = m2(p, out)
  }
  if r >= 4 {
    param m3: kronecker()
    out = m3(p, out)
  }
  return out
}
