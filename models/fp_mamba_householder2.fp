// FP-Mamba with a Householder mixer of 2 reflection(s): the A5/S5
// word-problem configuration of docs/spec.md §1.10 (no short convolution).

import "lib/fp_mamba.fp"
import "lib/householder.fp"

model fp_mamba_householder2 {
  d_model = 512
  layer = fp_mamba(N = 16, mixer_type = householder(r = 2))
}
