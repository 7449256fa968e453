// A mixer whose body has an error that only elaboration finds
// (../import-errors.test, ../fpc.test).
mixer bad_mix(p: [m], v: [d]) -> [d] {
  return v + undefined_thing
}
