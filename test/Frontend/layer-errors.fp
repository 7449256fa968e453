// RUN: fp-translate --import-fp -split-input-file -verify-diagnostics %s

// Errors in the structure of layers, mixers and maps: signatures,
// fixed_point and its solver settings, parameters and initialisers. A file
// without models elaborates each of its layers with their configuration
// defaults.

//===----------------------------------------------------------------------===//
// Declarations (checked before any elaboration)
//===----------------------------------------------------------------------===//

// expected-note @+1 {{previous definition here}}
layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// expected-error @+1 {{redefinition of 'l'}}
layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

// expected-note @+1 {{previous definition here}}
mixer m(p: [M], v: [V]) -> [V] {
  return v
}

// Mixers and layers share one namespace.
// expected-error @+1 {{redefinition of 'm'}}
layer m(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

// expected-error @+1 {{'linear' is a built-in parameter module}}
mixer linear(p: [M], v: [V]) -> [V] {
  return v
}

// -----

// expected-error @+1 {{'causal_conv' is a built-in parameter module}}
layer causal_conv(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

// expected-error @+1 {{a layer takes one argument, the activation of width d_model ('(u: [D])')}}
layer l(u: [D], v: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

// expected-error @+1 {{a layer takes one argument, the activation of width d_model ('(u: [D])')}}
layer l(u: [D, D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

// expected-error @+1 {{a layer returns an activation of width d_model ('-> [D]')}}
layer l(u: [D]) -> [D, 2] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

// expected-error @+2 {{a layer takes one argument, the activation of width d_model ('(u: [D])')}}
// expected-error @+1 {{argument 'u' needs at least one dimension}}
layer l(u: []) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

// expected-error @+1 {{a mixer takes two arguments, its parameter input and the vector it mixes ('(p: [m], v: [d])'), got 1}}
mixer m(v: [V]) -> [V] {
  return v
}

// -----

// expected-error @+1 {{a mixer takes two arguments, its parameter input and the vector it mixes ('(p: [m], v: [d])'), got 3}}
mixer m(p: [M], v: [V], w: [V]) -> [V] {
  return v
}

// -----

// expected-error @+1 {{a mixer maps a vector to a vector of the same width ('(p: [m], v: [d]) -> [d]')}}
mixer m(p: [M], v: [V]) -> [V, V] {
  return v
}

// -----

// expected-error @+1 {{a mixer maps a vector to a vector of the same width ('(p: [m], v: [d]) -> [d]')}}
mixer m(p: [M], v: [A, B]) -> [A] {
  return v
}

//===----------------------------------------------------------------------===//
// Layer bodies
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{a layer returns an activation of its input's width [4], got [8]}}
layer l(u: [D]) -> [2 * D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

// expected-error @+1 {{'l' needs a value for configuration 'D'}}
layer l(u: [D]) -> [D] {
  config D
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

// expected-error @+1 {{layer 'l' must contain exactly one fixed_point, found 0}}
layer l(u: [D]) -> [D] {
  config D = 4
  return silu(u)
}

// -----

// expected-error @+1 {{layer 'l' must contain exactly one fixed_point, found 2}}
layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  let a = fixed_point(f, 0.0)
  return fixed_point(f, a)
}

// -----

// The count is over the statements elaborated: one per loop iteration.
// expected-error @+1 {{layer 'l' must contain exactly one fixed_point, found 3}}
layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  let a = u
  for i in 0..3 {
    a = fixed_point(f, a)
  }
  return a
}

// -----

// expected-error @+1 {{layer 'l' does not return a value}}
layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  let a = fixed_point(f, 0.0)
}

// -----

// expected-error @+1 {{layer 'l' returns the integer 4, declared [4]}}
layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  let a = fixed_point(f, 0.0)
  return D
}

// -----

// expected-error @+1 {{layer 'l' returns an activation of shape [2], declared [4]}}
layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  let a = fixed_point(f, 0.0)
  return a[0 : 2]
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{map 'f' returns an activation of shape [2], declared [4]}}
  fn f(y: [D]) -> [D] {
    return y[0 : 2]
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{map 'f' does not return a value}}
  fn f(y: [D]) -> [D] {
    let z = y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{map 'f' takes 1 argument(s), got 2}}
  let a = f(u, u)
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{argument 'y' of map 'f' is declared [4] (an activation), got an activation of shape [2]}}
  let a = f(u[0 : 2])
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{maps take no named arguments}}
  let a = f(y = u)
  return fixed_point(f, 0.0)
}

//===----------------------------------------------------------------------===//
// fixed_point
//===----------------------------------------------------------------------===//

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{fixed_point iterates a map ('fn'), got an activation of shape [4]}}
  return fixed_point(u, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn g(a: [D], b: [D]) -> [D] {
    return a + b
  }
  // expected-error @+1 {{fixed_point needs a map of one argument; 'g' takes 2}}
  return fixed_point(g, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{the initial iterate must be a number or an activation of shape [4], got an activation of shape [2]}}
  return fixed_point(f, u[0 : 2])
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{'fixed_point' needs argument 'init'}}
  return fixed_point(f)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{'fixed_point' has no argument 'tol'; it takes: map init tolerance quantile max_iter_train max_iter_eval relax_start relax_decay relax_patience backward}}
  return fixed_point(f, 0.0, tol = 0.1)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    // expected-error @+1 {{fixed_point belongs in a layer's body, not in a mixer or map}}
    let z = fixed_point(f, 0.0)
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

mixer m(p: [M], v: [V]) -> [V] {
  // expected-error @+1 {{maps ('fn') are declared at the top level of a layer}}
  fn f(y: [V]) -> [V] {
    return y
  }
  return v
}

layer l(u: [D]) -> [D] {
  config D = 4
  param mx: m
  fn f(y: [D]) -> [D] {
    return mx(u, y)
  }
  return fixed_point(f, 0.0)
}

// -----

mixer m(p: [M], v: [V]) -> [V] {
  // expected-error @+1 {{fixed_point belongs in a layer's body, not in a mixer or map}}
  return fixed_point(v, 0.0)
}

layer l(u: [D]) -> [D] {
  config D = 4
  param mx: m
  fn f(y: [D]) -> [D] {
    return mx(u, y)
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{solver tolerance must be positive, got 0.000000e+00}}
  return fixed_point(f, 0.0, tolerance = 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{solver tolerance must be positive, got -5.000000e-01}}
  return fixed_point(f, 0.0, tolerance = -0.5)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{solver quantile must lie in [0, 1], got 1.500000e+00}}
  return fixed_point(f, 0.0, quantile = 1.5)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{solver max_iter_train must be at least 1, got 0}}
  return fixed_point(f, 0.0, max_iter_train = 0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{solver max_iter_eval must be at least 1, got -3}}
  return fixed_point(f, 0.0, max_iter_eval = -3)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{solver relax_start must lie in (0, 1], got 1.500000e+00}}
  return fixed_point(f, 0.0, relax_start = 1.5)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{solver relax_decay must lie in (0, 1], got 0.000000e+00}}
  return fixed_point(f, 0.0, relax_decay = 0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{solver relax_patience must be at least 1, got 0}}
  return fixed_point(f, 0.0, relax_patience = 0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{expected a number for a solver setting, got a boolean}}
  return fixed_point(f, 0.0, tolerance = true)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{expected an integer for a solver setting, got a number}}
  return fixed_point(f, 0.0, max_iter_train = 10.5)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{unknown backward mode; expected one_step, truncated(k), neumann(k) or implicit(tol)}}
  return fixed_point(f, 0.0, backward = jacobian_free)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{unknown backward mode; expected one_step, truncated(k), neumann(k) or implicit(tol)}}
  return fixed_point(f, 0.0, backward = 3)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{backward mode 'truncated' takes a step count: truncated(k)}}
  return fixed_point(f, 0.0, backward = truncated)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{backward mode 'implicit' takes a tolerance: implicit(tol)}}
  return fixed_point(f, 0.0, backward = implicit(0.1, 2))
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{backward mode 'one_step' takes no argument}}
  return fixed_point(f, 0.0, backward = one_step(1))
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{backward mode 'neumann' needs steps >= 1, got 0}}
  return fixed_point(f, 0.0, backward = neumann(0))
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{backward mode 'implicit' needs a positive tolerance, got -1.000000e+00}}
  return fixed_point(f, 0.0, backward = implicit(-1.0))
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{expected an integer for a step count, got a number}}
  return fixed_point(f, 0.0, backward = truncated(2.0))
}

//===----------------------------------------------------------------------===//
// Parameters and initialisers
//===----------------------------------------------------------------------===//

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{unknown initialiser 'zeroes'; expected zeros, ones, constant, uniform, normal, fan_in_uniform, s4d_real, dt_bias, log_uniform, eye or orthogonal}}
  param w: [D] = zeroes
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{initialiser 'constant' takes 1 argument(s), got 0}}
  param w: [D] = constant
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{initialiser 'uniform' needs lo < hi}}
  param w: [D] = uniform(1.0, -1.0)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{initialiser 'normal' needs a positive std}}
  param w: [D] = normal(0.0, 0.0)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{initialiser 'dt_bias' needs 0 < dt_min < dt_max and floor > 0}}
  param w: [D] = dt_bias(0.1, 0.001, 0.0001)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{initialiser arguments are positional}}
  param w: [D] = constant(c = 1.0)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{expected an initialiser (zeros, ones, constant(c), uniform(lo, hi), normal(mean, std), fan_in_uniform, s4d_real, dt_bias(min, max, floor), log_uniform(lo, hi), eye(c), orthogonal)}}
  param w: [D] = 1.0
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{a parameter needs at least one dimension}}
  param w: [] = zeros
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-note @+1 {{previous declaration here}}
  param w: [D] = zeros
  if true {
    // expected-error @+1 {{parameter 'w' is already declared}}
    param w: [D] = ones
  }
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  for i in 0..2 {
    // expected-error @+2 {{parameter 'w' is already declared}}
    // expected-note @+1 {{previous declaration here}}
    param w: [D] = zeros
  }
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-note @+1 {{previous declaration here}}
  param p: linear(D, D)
  fn f(y: [D]) -> [D] {
    // Maps declare parameters of the layer.
    // expected-error @+1 {{parameter 'p.weight' is already declared}}
    param p: linear(D, D)
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{unknown parameter type 'dense'}}
  param p: dense(D, D)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{expected a parameter type: '[shape] = init', linear(in, out), wn_linear(in, out), layer_norm(d), rms_norm(d), causal_conv(d, k), orthogonal(n) or a mixer}}
  param p: 3
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  config k = 3
  // expected-error @+1 {{a parameter module must be linear, wn_linear, layer_norm, rms_norm, causal_conv, orthogonal or a mixer; got the integer 3}}
  param p: k
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{'linear' needs its sizes: linear(in, out)}}
  param p: linear
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{'wn_linear' needs argument 'out'}}
  param p: wn_linear(D)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{'linear' has no argument 'bais'; it takes: in out bias weight}}
  param p: linear(D, D, bais = true)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{an output width must lie in [1, 16777216], got 0}}
  param p: linear(D, D - 4)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{eps must be positive}}
  param n: layer_norm(D, eps = 0.0)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  param p: linear(3, D)
  // expected-error @+1 {{'p' maps vectors of width 3, got an activation of shape [4]}}
  let a = p(u)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  param p: linear(D, D)
  // expected-error @+1 {{'p' takes 1 argument, got 2}}
  let a = p(u, u)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  param p: rms_norm(D)
  // expected-error @+1 {{'p' takes no named arguments}}
  let a = p(x = u)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

//===----------------------------------------------------------------------===//
// Mixers
//===----------------------------------------------------------------------===//

// -----

mixer m(p: [M], v: [V]) -> [V] {
  return v
}

layer l(u: [D]) -> [D] {
  config D = 4
  param mx: m
  fn f(y: [D]) -> [D] {
    // expected-error @+1 {{mixer 'mx' takes 2 arguments (p, v), got 1}}
    return mx(y)
  }
  return fixed_point(f, 0.0)
}

// -----

mixer m(p: [M], v: [V]) -> [V] {
  return v
}

layer l(u: [D]) -> [D] {
  config D = 4
  param mx: m
  fn f(y: [D]) -> [D] {
    // expected-error @+1 {{mixer 'mx' takes two per-token vectors, got a number}}
    return mx(y, 1.0)
  }
  return fixed_point(f, 0.0)
}

// -----

// expected-error @+1 {{mixer 'm' must return the width of 'v' [4], declared [8]}}
mixer m(p: [M], v: [V]) -> [2 * V] {
  return concat(v, v)
}

layer l(u: [D]) -> [D] {
  config D = 4
  param mx: m
  fn f(y: [D]) -> [D] {
    return mx(u, y)
  }
  return fixed_point(f, 0.0)
}

// -----

// expected-error @+1 {{mixer 'm' returns an activation of shape [8], declared [4]}}
mixer m(p: [M], v: [V]) -> [V] {
  return p
}

layer l(u: [D]) -> [D] {
  config D = 4
  param mx: m
  fn f(y: [D]) -> [D] {
    return mx(concat(u, y), y)
  }
  return fixed_point(f, 0.0)
}

// -----

// expected-error @+1 {{mixer 'm' does not return a value}}
mixer m(p: [M], v: [V]) -> [V] {
  let w = v
}

layer l(u: [D]) -> [D] {
  config D = 4
  param mx: m
  fn f(y: [D]) -> [D] {
    return mx(u, y)
  }
  return fixed_point(f, 0.0)
}

// -----

mixer m(p: [N], v: [N]) -> [N] {
  return p * v
}

layer l(u: [D]) -> [D] {
  config D = 4
  param mx: m
  fn f(y: [D]) -> [D] {
    // expected-error @+1 {{'m' needs 'N' to agree between its arguments: 8 vs 4}}
    return mx(concat(u, y), y)
  }
  return fixed_point(f, 0.0)
}

// -----

mixer m(p: [3], v: [V]) -> [V] {
  return v
}

layer l(u: [D]) -> [D] {
  config D = 4
  param mx: m
  fn f(y: [D]) -> [D] {
    // expected-error @+1 {{argument 'p' of 'm' has shape [3] but is given [4]}}
    return mx(u, y)
  }
  return fixed_point(f, 0.0)
}

// -----

mixer m(p: [M], v: [V]) -> [V] {
  config r
  return v
}

layer l(u: [D]) -> [D] {
  config D = 4
  param mx: m
  fn f(y: [D]) -> [D] {
    // expected-error @+1 {{'m' needs a value for configuration 'r'}}
    return mx(u, y)
  }
  return fixed_point(f, 0.0)
}

// -----

mixer m(p: [M], v: [V]) -> [V] {
  config r = 1
  // expected-error @+1 {{assertion failed in 'm': r must be even}}
  assert r % 2 == 0, "r must be even"
  return v
}

layer l(u: [D]) -> [D] {
  config D = 4
  param mx: m(r = 3)
  fn f(y: [D]) -> [D] {
    return mx(u, y)
  }
  return fixed_point(f, 0.0)
}

// -----

mixer m(p: [M], v: [V]) -> [V] {
  return v
}

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{'m' has no configuration 'r' (it has none)}}
  param mx: m(r = 2)
  let a = mx(u, u)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

mixer m(p: [M], v: [V]) -> [V] {
  return v
}

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{a mixer's parameters set their own weight decay}}
  param mx: m decay
  // A parameter that failed keeps its name, as an invalid value: its uses
  // stay quiet.
  let a = mx(u, u)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer inner(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{a parameter module must be linear, wn_linear, layer_norm, rms_norm, causal_conv, orthogonal or a mixer; got the layer 'inner'}}
  param mx: inner
  let a = mx(u, u)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

// A mixer that contains itself: bounded, not a stack overflow.
mixer m(p: [M], v: [V]) -> [V] {
  param again: m
  // expected-error @+1 {{mixers nested deeper than 16 levels}}
  return again(p, v)
}

layer l(u: [D]) -> [D] {
  config D = 4
  param mx: m
  fn f(y: [D]) -> [D] {
    return mx(u, y)
  }
  return fixed_point(f, 0.0)
}

// -----

mixer m(p: [M], v: [V]) -> [V] {
  param g: linear(M, V)
  return g(p) * v
}

layer l(u: [D]) -> [D] {
  config D = 4
  param mx: m
  fn f(y: [D]) -> [D] {
    let a = mx(u, y)
    // The mixer's parameters fit one pair of widths.
    // expected-error @+1 {{mixer 'mx' already serves inputs of shapes [4][4]; its parameters fit one input width, got [8][4]}}
    return mx(concat(u, u), a)
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-note @+1 {{previous declaration here}}
  config k = 1
  // expected-error @+1 {{configuration 'k' is declared twice}}
  config k = 2
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-warning @+1 {{parameter 'w' is never used; the layer will not have it}}
  param w: [D] = ones
  // expected-warning @+1 {{parameter 'p.weight' is never used; the layer will not have it}}
  param p: linear(D, D)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // A failed assertion stops the elaboration of the body: the errors after
  // it are not reported.
  // expected-error @+1 {{assertion failed in 'l': D is not 8}}
  assert D == 8, "D is not 8"
  let x = u[D]
  return undefined_name
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{initialiser 'eye' needs a square matrix, got shape [4, 3]}}
  param w: [D, 3] = eye(1.0)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{'frozen' applies to tensor parameters ('param name: [shape] = init frozen')}}
  param w: linear(D, D) frozen
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{'orthogonal' needs its size: orthogonal(n)}}
  param w: orthogonal
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{an orthogonal map's parameters are not in the weight-decay group}}
  param w: orthogonal(D) decay
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}
