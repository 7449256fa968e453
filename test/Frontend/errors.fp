// RUN: fp-translate --import-fp -split-input-file -verify-diagnostics %s

// Elaboration errors in layer bodies: names, shapes, builtins, arithmetic on
// configuration values, statements. A file without models elaborates each
// of its layers with their configuration defaults, so each split is one
// layer with D = 4 whose body holds one mistake.

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{undefined name 'uu'; did you mean 'u'?}}
  let a = silu(uu)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{undefined name 'DD'; did you mean 'D'?}}
  let n = DD * 2
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  let hidden = u
  fn f(y: [D]) -> [D] {
    // A map sees the layer's names.
    // expected-error @+1 {{undefined name 'hiden'; did you mean 'hidden'?}}
    return y + hiden
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{undefined name 'completely_unknown'}}
  let a = silu(completely_unknown)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  for i in 0..2 {
    let inner = u
  }
  // Names defined in a loop body are not visible after it.
  // expected-error @+1 {{undefined name 'inner'}}
  let a = inner
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-note @+1 {{previous definition here}}
  let a = u
  // expected-error @+1 {{'a' is already defined}}
  let a = silu(u)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  // expected-note @+1 {{previous definition here}}
  config D = 4
  // expected-error @+1 {{'D' is already defined}}
  let D = 8
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

// expected-note @+1 {{previous definition here}}
layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{'u' is already defined}}
  let u = 1
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-note @+1 {{previous definition here}}
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{'f' is already defined}}
  fn f(y: [D]) -> [D] {
    return y + y
  }
  return fixed_point(f, 0.0)
}

//===----------------------------------------------------------------------===//
// Shapes in arithmetic
//===----------------------------------------------------------------------===//

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{shape mismatch in '+': [2] vs [3]}}
  let a = u[0 : 2] + u[0 : 3]
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{shape mismatch in '-': [4] vs [2]}}
  let a = u - u[1 : 3]
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{shape mismatch in '*': [1] vs [4]}}
  let a = u[0 : 1] * u
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{shape mismatch in '/': [3] vs [4]}}
  let a = silu(u[0 : 3]) / u
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  param w: [3] = ones
  // expected-error @+1 {{cannot broadcast a tensor of shape [3] over an activation of shape [4] (its shape must end the activation's)}}
  let a = u * w
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  param w: [4] = ones
  param v: [2] = ones
  // expected-error @+1 {{shape mismatch in '+': [4] vs [2]}}
  let a = w + v
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{'+' cannot combine an activation of shape [4] and a boolean}}
  let a = u + true
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{'<' cannot combine an activation of shape [4] and the integer 1}}
  if u < 1 {
  }
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{'-' expects a number or a tensor, got a boolean}}
  let a = -true
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{'!' expects a boolean, got the integer 4}}
  if !D {
  }
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

//===----------------------------------------------------------------------===//
// Configuration arithmetic
//===----------------------------------------------------------------------===//

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{4 / 3 is not an integer; use floor_div or ceil_div, or a float operand}}
  let n = D / 3
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{division by zero}}
  let n = D / (D - 4)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{division by zero}}
  let x = 1.0 / 0.0
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{division by zero}}
  let n = D % 0
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{'%' expects integers}}
  let n = 2.5 % 2
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{integer overflow in '*'}}
  let n = 9223372036854775807 * D
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{integer overflow in '+'}}
  let n = 9223372036854775807 + 1
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{integer overflow in '-'}}
  let n = -9223372036854775807 - 2
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{'ceil_div' takes a non-negative dividend and a positive divisor}}
  let n = ceil_div(D, 0)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{isqrt of a negative number}}
  let n = isqrt(-D)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{sqrt of a negative number}}
  let x = sqrt(-1.0)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{log of a non-positive number}}
  let x = log(D - 4)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

//===----------------------------------------------------------------------===//
// Builtins: arity, named arguments, operand kinds and shapes
//===----------------------------------------------------------------------===//

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{'silu' takes at most 1 argument(s)}}
  let a = silu(u, u)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{'dot' needs argument 'b'}}
  let a = dot(u)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{'selective_scan' needs argument 'u'}}
  let a = selective_scan()
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  param A: [2] = ones
  // expected-error @+1 {{dt has 3 heads, which do not divide x's 4 channels}}
  let a = ssd_scan(u, u[0 : 3], A, u, u)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  param A: [2] = ones
  param W: [4] = ones
  // expected-error @+1 {{the decay A must have shape [2], got [4]}}
  let a = ssd_scan(u, u[0 : 2], W, u, u)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  param A: [2] = ones
  // expected-error @+1 {{3 groups do not divide the 2 heads}}
  let a = ssd_scan(u, u[0 : 2], A, u, u, groups = 3)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  param A: [2] = ones
  // expected-error @+1 {{B and C must have shape [G * N] for the 2 groups, got [3] and [3]}}
  let a = ssd_scan(u, u[0 : 2], A, u[0 : 3], u[0 : 3], groups = 2)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{'l2norm' has no argument 'epsilon'; it takes: x eps}}
  let a = l2norm(u, epsilon = 1.0e-6)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{argument 'x' of 'l2norm' given twice}}
  let a = l2norm(u, x = u)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{unknown function 'softmax'}}
  let a = softmax(u)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{'D' is the integer 4, which cannot be called}}
  let a = D(u)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{'silu' expects a tensor, got a boolean}}
  let a = silu(true)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  param w: [D] = ones
  // expected-error @+1 {{expected an activation for the shifted activation, got a tensor of shape [4]}}
  let a = shift(w)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{dot of shapes [4] and [2]}}
  let a = dot(u, u[0 : 2])
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{scan coefficient [4] and input [2] must have the same shape}}
  let a = scan(sigmoid(u), u[0 : 2])
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{a list '[...]' is only allowed as the shape of reshape}}
  let a = [D, D]
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{cannot reshape [4] (4 elements) to [3] (3)}}
  let a = reshape(u, [3])
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{reshape's shape is a list: [a, b]}}
  let a = reshape(u, D)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{concat joins at least two activations}}
  let a = concat(u)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  let m = reshape(u, [2, 2])
  let n = reshape(u, [4, 1])
  // expected-error @+1 {{matmul of 2x2 by 4x1}}
  let p = matmul(m, n)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{matmul takes per-token matrices, got shape [4]}}
  let p = matmul(t(u), u)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{'t(x)' is only allowed as an operand of matmul}}
  let a = t(u)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{triu needs m(m+1)/2 entries for some m; 4 is not such a number}}
  let a = triu(u)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{'min' of one argument reduces the last dimension of an activation ('max' only)}}
  let a = min(u)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

//===----------------------------------------------------------------------===//
// Indexing and slicing
//===----------------------------------------------------------------------===//

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{index 4 out of range [0, 4)}}
  let a = u[D]
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{index -1 out of range [0, 4)}}
  let a = u[-1]
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{expected an integer for an index, got a number}}
  let a = u[1.0]
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  param w: [D] = ones
  // expected-error @+1 {{indexing 'x[i]' takes a per-token vector, got a tensor of shape [4]; slice with 'x[a : b]' instead}}
  let a = w[0]
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{slice [2 : 6] out of range for a last dimension of 4}}
  let a = u[2 : 6]
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{slice [3 : 3] out of range for a last dimension of 4}}
  let a = u[3 : 3]
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{slicing 'x[a : b]' takes a tensor with at least one feature dimension, got the integer 4}}
  let a = D[0 : 1]
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{assertion failed in 'l': D must be odd}}
  assert D % 2 == 1, "D must be odd"
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{expected a boolean for an assertion, got the integer 4}}
  assert D, "D"
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{expected a boolean for an 'if' condition, got the integer 4}}
  if D {
  }
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    return y
  }
  // expected-error @+1 {{'return' must be the last statement of a mixer, layer or map}}
  return fixed_point(f, 0.0)
  let after = u
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    if true {
      // expected-error @+1 {{'return' must be the last statement of a mixer, layer or map}}
      return y
    }
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{assignment to undefined name 'a'; define it with 'let'}}
  a = u
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{cannot assign to 'D': only 'let' names can change}}
  D = 8
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  for i in 0..2 {
    // expected-error @+1 {{cannot assign to 'i': only 'let' names can change}}
    i = 3
  }
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  param w: [D] = ones
  // expected-error @+1 {{cannot assign to 'w': only 'let' names can change}}
  w = u
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  let x = u
  fn f(y: [D]) -> [D] {
    // expected-error @+1 {{cannot assign to 'x' here: a map reads the layer's names but does not change them}}
    x = y
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  let a = u
  // expected-error @+1 {{'a' holds an activation of shape [4]; cannot assign the integer 1}}
  a = 1
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  let a = true
  // expected-error @+1 {{'a' holds a boolean; cannot assign an activation of shape [4]}}
  a = u
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  let x = u
  // expected-error @+1 {{'config' must come before other statements}}
  config K = 3
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  if true {
    // expected-error @+1 {{'config' belongs at the top of a mixer or layer}}
    config K = 3
  }
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  fn f(y: [D]) -> [D] {
    // expected-error @+1 {{'config' belongs at the top of a mixer or layer}}
    config K = 3
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  if true {
    // expected-error @+1 {{maps ('fn') are declared at the top level of a layer}}
    fn g(y: [D]) -> [D] {
      return y
    }
  }
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

//===----------------------------------------------------------------------===//
// Loops and size limits
//===----------------------------------------------------------------------===//

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{loop from 0 to 100000 has more than 65536 iterations, the most that are unrolled}}
  for i in 0..100000 {
  }
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{expected an integer for a loop bound, got a number}}
  for i in 0..2.5 {
  }
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  for i in 0..1024 {
    // Every statement and every loop iteration counts.
    // expected-error @+1 {{program unrolls to more than 1048576 statements}}
    for j in 0..1024 {
      let k = i * j
    }
  }
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{a parameter dimension must lie in [1, 16777216], got 0}}
  param w: [D - 4] = zeros
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{a parameter dimension must lie in [1, 16777216], got 100000000}}
  param w: [100000000] = zeros
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{shape [16777216, 16777216] has more than 268435456 elements}}
  param w: [16777216, 16777216] = zeros
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{a dimension must lie in [1, 16777216], got 0}}
  let a = reshape(u, [0, 4])
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

// expected-error @+1 {{a dimension must lie in [1, 16777216], got 100000000}}
layer l(u: [D]) -> [D] {
  config D = 100000000
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  param w: [D, 3] = zeros
  // expected-error @+1 {{tril takes a square matrix, got shape [4, 3]}}
  let a = tril(w)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{expected a parameter tensor for matrix_exp, got an activation of shape [4]}}
  let a = matrix_exp(u)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  param w: [D, 3] = zeros
  // expected-error @+1 {{matrix_exp takes a square matrix, got shape [4, 3]}}
  let a = matrix_exp(w)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  param w: [D, D] = zeros
  // expected-error @+1 {{matmul multiplies two activations or two parameter tensors, got a tensor of shape [4, 4] and an activation of shape [2, 2]}}
  let a = matmul(w, reshape(u, [2, 2]))
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

layer l(u: [D]) -> [D] {
  config D = 4
  param w: [D] = zeros
  // expected-error @+1 {{'t' transposes matrices, got a tensor of shape [4]}}
  let a = t(w)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}
