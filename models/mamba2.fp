// Mamba-2 (docs/spec.md §5.4), the two-layer diagonal baseline FP-Mamba2 is
// compared with, written as one undamped step with the identity mixer.

import "lib/mamba2.fp"

model mamba2 {
  d_model = 512
  n_layers = 2
  layer = mamba2(N = 16)
}
