// FP-Mamba with a DPLR mixer of rank 2: the A5/S5 word-problem
// configuration of docs/spec.md §1.10 (no short convolution).

import "lib/fp_mamba.fp"
import "lib/dplr.fp"

model fp_mamba_dplr {
  d_model = 512
  layer = fp_mamba(N = 16, mixer_type = dplr(r = 2))
}
