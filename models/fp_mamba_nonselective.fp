// FP-Mamba with the nonselective mixer (docs/spec.md §2.4): one orthogonal
// channel mixer shared by every token, at the word problems' sizes of
// docs/spec.md §1.10 (no short convolution).

import "lib/fp_mamba.fp"
import "lib/nonselective.fp"

model fp_mamba_nonselective {
  d_model = 512
  layer = fp_mamba(N = 16, mixer_type = nonselective)
}
