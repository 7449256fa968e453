// FP-Mamba for catbAbI (docs/spec.md §1.10, §7.4): D = 512, N = 16, short
// convolution, Householder mixer with 4 reflections.

import "lib/fp_mamba.fp"
import "lib/householder.fp"

model fp_mamba_catbabi {
  d_model = 512
  layer = fp_mamba(N = 16, use_short_conv = true,
                   mixer_type = householder(r = 4))
}
