// The other side of the import diamond of ../imports.fp. It names base.fp
// by another path to the same file, which is still loaded once.

import "../Inputs/base.fp"

mixer right_mix(p: [m], v: [d]) -> [d] {
  param inner: base_mix
  return inner(p, v) + v
}
