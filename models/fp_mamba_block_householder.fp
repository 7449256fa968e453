// FP-Mamba with the block Householder mixer of models/lib/block_householder.fp
// (docs/dsl.md §8): 8 blocks of 128 channels, 2 reflections per block, in
// the A5/S5 word-problem configuration of docs/spec.md §1.10.

import "lib/fp_mamba.fp"
import "lib/block_householder.fp"

model fp_mamba_block_householder {
  d_model = 512
  layer = fp_mamba(N = 16, mixer_type = block_householder(r = 2, blocks = 8))
}
