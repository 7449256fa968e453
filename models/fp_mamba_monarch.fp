// FP-Mamba with the block-diagonal ("monarch") mixer of docs/spec.md §2.4,
// blocks of 16 channels, in the A5/S5 configuration.

import "lib/fp_mamba.fp"
import "lib/monarch.fp"

model fp_mamba_monarch {
  d_model = 512
  layer = fp_mamba(N = 16, mixer_type = monarch(r = 16))
}
