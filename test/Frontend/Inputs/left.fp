// One side of the import diamond of ../imports.fp.

import "base.fp"

layer left_layer(u: [D]) -> [D] {
  config D = 4
  config mixer_type = base_mix
  param mix: mixer_type
  fn f(y: [D]) -> [D] {
    return mix(u, y)
  }
  return fixed_point(f, 0.0)
}

// Models of imported files are not compiled.
model left_model {
  d_model = 4
  layer = left_layer
}
