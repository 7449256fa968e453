// FP-Mamba with the Kronecker mixer (32×32 factors): the A5/S5
// word-problem configuration of docs/spec.md §1.10 (no short convolution).

import "lib/fp_mamba.fp"
import "lib/kronecker.fp"

model fp_mamba_kronecker {
  d_model = 512
  layer = fp_mamba(N = 16, mixer_type = kronecker())
}
