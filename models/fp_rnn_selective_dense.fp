// The vector-state FP-RNN (docs/spec.md §5.2) with the selective dense mixer of
// docs/spec.md §2.4, which the reference forces to d = 256 (d_model 128).

import "lib/fp_rnn.fp"
import "lib/selective_dense.fp"

model fp_rnn_selective_dense {
  d_model = 128
  layer = fp_rnn(mixer_type = selective_dense())
}
