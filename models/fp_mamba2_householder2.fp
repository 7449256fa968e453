// FP-Mamba2 with a Householder mixer of 2 reflections: the A5/S5
// word-problem configuration of FP-Mamba (docs/spec.md §1.10) with Mamba-2's
// SSD scan (§5.1).

import "lib/fp_mamba2.fp"
import "lib/householder.fp"

model fp_mamba2_householder2 {
  d_model = 512
  layer = fp_mamba2(N = 16, mixer_type = householder(r = 2))
}
