// Imported by from_include.fp, next to it.

mixer nested_mix(p: [m], v: [d]) -> [d] {
  return v
}
