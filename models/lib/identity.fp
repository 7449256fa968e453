// The identity mixer: Q = I. With it, FP-Mamba's map no longer mixes
// channels (Mamba-1 is the one-iteration case, models/mamba.fp).

mixer identity(p: [m], v: [d]) -> [d] {
  return v
}
