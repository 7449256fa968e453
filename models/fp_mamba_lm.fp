// FP-Mamba language model (docs/spec.md §1.10, §6, §9.3): 12 layers,
// D = 768, N = 16, short convolution, Householder mixer with 2 reflections,
// the output gate inside the loop and no normalisation of B and C.

import "lib/fp_mamba.fp"
import "lib/householder.fp"

model fp_mamba_lm {
  d_model = 768
  n_layers = 12
  layer = fp_mamba(N = 16, use_short_conv = true, glu_in_loop = true,
                   bc_norm = false, mixer_type = householder(r = 2))
}
