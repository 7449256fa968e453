// The nonselective mixer (docs/spec.md §2.4): an input-independent
// orthogonal matrix, Q v = W v, with W from PyTorch's orthogonal
// parametrisation of a square Linear, as the reference builds it:
// W = base · exp(L − Lᵀ), L the lower triangle of the trained `original`
// (initialised to −I, so that W = base at first) and `base` a frozen
// orthogonal matrix. The mixer ignores its parameter input p; W is
// computed once per call, outside the fixed-point loop.

mixer nonselective(p: [m], v: [d]) -> [d] {
  param weight: orthogonal(d)
  return weight(v)
}
