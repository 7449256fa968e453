// Found only through --fp-include (fp-translate) or -I (fpc); see
// ../../imports.fp. Its own imports are searched next to it first.

import "nested_include.fp"

mixer include_mix(p: [m], v: [d]) -> [d] {
  param inner: nested_mix
  return inner(p, v)
}
