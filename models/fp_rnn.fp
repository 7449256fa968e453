// The vector-state FP-RNN (docs/spec.md §5.2) with the spectrally normalised
// Kronecker mixer.

import "lib/fp_rnn.fp"
import "lib/kronecker.fp"

model fp_rnn {
  d_model = 128
  layer = fp_rnn(mixer_type = kronecker(spectral = true))
}
