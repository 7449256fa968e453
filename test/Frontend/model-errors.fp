// RUN: fp-translate --import-fp -split-input-file -verify-diagnostics %s

// Errors in models and in the configuration overrides of instances. A file
// with models elaborates the layer of each model (and no standalone layer),
// with the model's d_model and overrides: errors that only a configuration
// triggers appear here.

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 4
  layer = l
  // expected-error @+1 {{unknown model field 'depth'; expected d_model, n_layers, layer, norm, norm_eps, vocab, pad_vocab_multiple or tie_embeddings}}
  depth = 3
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// expected-error @+1 {{model 'm' needs 'd_model'}}
model m {
  layer = l
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// expected-error @+1 {{model 'm' needs 'layer = <layer>(...)'}}
model m {
  d_model = 4
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// expected-error @+2 {{model 'm' needs 'd_model'}}
// expected-error @+1 {{model 'm' needs 'layer = <layer>(...)'}}
model m {
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 4
  layer = l
  // expected-error @+1 {{model field 'd_model' given twice}}
  d_model = 8
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  // expected-error @+1 {{d_model must lie in [1, 16777216], got 0}}
  d_model = 0
  layer = l
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  // expected-error @+1 {{d_model must lie in [1, 16777216], got 100000000}}
  d_model = 100000000
  layer = l
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 4
  // expected-error @+1 {{expected an integer for n_layers, got a boolean}}
  n_layers = true
  layer = l
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 4
  // expected-error @+1 {{norm_eps must be positive}}
  norm_eps = 0.0
  layer = l
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 4
  // expected-error @+1 {{norm is rms_norm or layer_norm}}
  norm = batch_norm
  layer = l
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 4
  // expected-error @+1 {{expected a boolean for tie_embeddings, got the integer 1}}
  tie_embeddings = 1
  layer = l
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 4
  // expected-error @+1 {{vocab must lie in [1, 16777216], got -2}}
  vocab = -2
  layer = l
}

// -----

mixer mx(p: [M], v: [V]) -> [V] {
  return v
}

model m {
  d_model = 4
  // expected-error @+1 {{model layer must be a layer, got the mixer 'mx'}}
  layer = mx
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 4
  // expected-error @+1 {{model layer must be a layer, got the integer 3}}
  layer = 3
}

// -----

layer fp_mamba(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 4
  // expected-error @+1 {{undefined name 'fp_mambo'}}
  layer = fp_mambo
}

//===----------------------------------------------------------------------===//
// Configuration overrides
//===----------------------------------------------------------------------===//

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  config flag = true
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 4
  // expected-error @+1 {{'l' has no configuration 'X'; it has: D, flag}}
  layer = l(X = 3)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  config flag = true
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 4
  // expected-error @+1 {{configuration 'flag' of 'l' expects a boolean or alike, got the integer 3}}
  layer = l(flag = 3)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  config n = 2
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 4
  // An integer default takes no float.
  // expected-error @+1 {{configuration 'n' of 'l' expects the integer 2 or alike, got a number}}
  layer = l(n = 2.0)
}

// -----

mixer mx(p: [M], v: [V]) -> [V] {
  return v
}

layer other(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

layer l(u: [D]) -> [D] {
  config D = 4
  config mixer_type = mx
  param mixer: mixer_type
  fn f(y: [D]) -> [D] {
    return mixer(u, y)
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 4
  // expected-error @+1 {{configuration 'mixer_type' of 'l' expects the mixer 'mx' or alike, got the layer 'other'}}
  layer = l(mixer_type = other)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 4
  // expected-error @+1 {{configuration 'D' given twice}}
  layer = l(D = 4, D = 4)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 4
  // expected-error @+1 {{configuration of 'l' is passed by name ('name = value')}}
  layer = l(4)
}

// -----

mixer mx(p: [M], v: [V]) -> [V] {
  config r = 1
  return v
}

layer l(u: [D]) -> [D] {
  config D = 4
  config mixer_type = mx
  param mixer: mixer_type
  fn f(y: [D]) -> [D] {
    return mixer(u, y)
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 4
  // Overrides of a nested instance are checked too.
  // expected-error @+1 {{'mx' has no configuration 'rank'; it has: r}}
  layer = l(mixer_type = mx(rank = 2))
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  config need
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 4
  // expected-error @+1 {{'l' needs a value for configuration 'need'}}
  layer = l
}

//===----------------------------------------------------------------------===//
// d_model and the layer's signature
//===----------------------------------------------------------------------===//

// -----

layer l(u: [8]) -> [8] {
  fn f(y: [8]) -> [8] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 4
  // expected-error @+1 {{argument 'u' of 'l' has shape [8] but is given [4]}}
  layer = l
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 4
  // An explicit override must agree with d_model.
  // expected-error @+1 {{argument 'u' of 'l' has shape [8] but is given [4]}}
  layer = l(D = 8)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{assertion failed in 'l': D must be even}}
  assert D % 2 == 0, "D must be even"
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// The defaults are fine; d_model = 5 is not.
model m {
  d_model = 5
  layer = l
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  config E = 2
  // expected-error @+1 {{index 8 out of range [0, 8)}}
  let a = u[E * D]
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 8
  layer = l(E = 1)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  config E = 2
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model ok {
  d_model = 4
  layer = l
}

// Each model elaborates its own instance; only the second one fails.
model bad {
  d_model = 4
  // expected-error @+1 {{'l' has no configuration 'e'; it has: D, E}}
  layer = l(e = 1)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{a parameter dimension must lie in [1, 16777216], got 0}}
  param w: [D - 4] = ones
  // A parameter that failed keeps its name: its uses stay quiet.
  let a = u * w
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

model m {
  d_model = 4
  layer = l
}

// -----
// expected-error @-1 {{declares no model or layer: nothing to compile (a mixer is compiled where a layer uses it)}}
mixer mx(p: [M], v: [V]) -> [V] {
  return v
}
