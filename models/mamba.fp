// Mamba-1 (docs/spec.md §5.4), the two-layer diagonal baseline of the word
// problems, written as one-iteration FP-Mamba with the identity mixer.

import "lib/mamba.fp"

model mamba {
  d_model = 512
  n_layers = 2
  layer = mamba(N = 16)
}
