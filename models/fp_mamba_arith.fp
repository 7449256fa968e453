// FP-Mamba for modular arithmetic with brackets (docs/spec.md §1.10, §7.3):
// D = 128, N = 16, short convolution, Kronecker mixer (16×16 factors), two
// layers, vocabulary padded to a multiple of 4.

import "lib/fp_mamba.fp"
import "lib/kronecker.fp"

model fp_mamba_arith {
  d_model = 128
  n_layers = 2
  pad_vocab_multiple = 4
  layer = fp_mamba(N = 16, use_short_conv = true, mixer_type = kronecker())
}
