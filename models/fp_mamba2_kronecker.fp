// FP-Mamba2 with the Kronecker mixer: the A5/S5 word-problem configuration
// of FP-Mamba (docs/spec.md §1.10) with Mamba-2's SSD scan (§5.1).

import "lib/fp_mamba2.fp"
import "lib/kronecker.fp"

model fp_mamba2_kronecker {
  d_model = 512
  layer = fp_mamba2(N = 16, mixer_type = kronecker())
}
