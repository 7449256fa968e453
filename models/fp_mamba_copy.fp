// FP-Mamba for the copy task (docs/spec.md §1.10, §7.2, §10.11): D = 1024,
// N = 32, short convolution, Householder mixer on the symmetric input
// x + ȳ, training cap of 10 iterations.

import "lib/fp_mamba.fp"
import "lib/householder.fp"

model fp_mamba_copy {
  d_model = 1024
  layer = fp_mamba(N = 32, use_short_conv = true, symm_mixer = true,
                   mixer_type = householder(r = 1), max_iter = 10)
}
