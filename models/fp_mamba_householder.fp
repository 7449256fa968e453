// FP-Mamba with a Householder mixer of one reflection, the A5/S5
// configuration of spec §1.10 at a small width.

import "lib/fp_mamba.fp"

model fp_mamba_householder {
  d_model = 64
  layer = fp_mamba(mixer_type = householder(r = 1))
}
