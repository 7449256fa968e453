// The vector-state FP-RNN (docs/spec.md §5.2) with the mixture mixer of
// docs/spec.md §2.4: Householder, Kronecker, Householder, Kronecker.

import "lib/fp_rnn.fp"
import "lib/mixture.fp"

model fp_rnn_mixture {
  d_model = 128
  layer = fp_rnn(mixer_type = mixture(r = 4))
}
