// RUN: fp-translate --import-fp -split-input-file -verify-diagnostics %s

// docs/dsl.md §3.6: a name is looked up in the scopes, then among the mixers
// and layers of all loaded files; "an unknown name is reported with the
// closest visible name". Mixers and layers are visible names too, so a
// misspelt one gets a suggestion.

layer fp_mamba(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 4
  // expected-error @+1 {{undefined name 'fp_mambo'; did you mean 'fp_mamba'?}}
  layer = fp_mambo
}

// -----

mixer householder(p: [m], v: [d]) -> [d] {
  return v
}

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{undefined name 'househlder'; did you mean 'householder'?}}
  config mixer_type = househlder
  param mix: mixer_type
  fn f(y: [D]) -> [D] {
    return mix(u, y)
  }
  return fixed_point(f, 0.0)
}

// -----

// Maps cannot call themselves (§4.2); a map that does is told so, rather
// than that its own name is an unknown function.
layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    // expected-error @+1 {{map 'f' calls itself}}
    return f(y)
  }
  return fixed_point(f, 0.0)
}
