// RUN: timeout 60 fp-translate --import-fp -split-input-file -verify-diagnostics %s

// Compile-time computations that could run away: each must finish quickly,
// with an error or a correct value (docs/dsl.md §7: the limits "bound what
// one input can make the frontend do"). `timeout` turns a hang into a
// failure.

// A trip count that overflows int64 is still a loop that is too long (not
// a loop of ~2^64 iterations).
layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{loop from -9223372036854775807 to 9223372036854775807 has more than 65536 iterations, the most that are unrolled}}
  for i in -9223372036854775807..9223372036854775807 {
  }
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

// Empty loop bodies elaborate no statement, but 2^32 iterations must still
// count against the unrolling budget.
layer l(u: [D]) -> [D] {
  config D = 4
  // expected-error @+1 {{program unrolls to more than}}
  for i in 0..65536 { for j in 0..65536 { } }
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

// isqrt near the top of int64: exact, and no overflow in its search.
layer l(u: [D]) -> [D] {
  config D = 4
  assert isqrt(9223372036854775807) == 3037000499, "isqrt(2^63 - 1)"
  assert isqrt(9223372030926249001) == 3037000499, "isqrt(3037000499^2)"
  assert isqrt(9223372030926249000) == 3037000498, "isqrt(3037000499^2 - 1)"
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

// divisor_le at its bound, for a prime n (the longest search).
layer l(u: [D]) -> [D] {
  config D = 4
  assert divisor_le(268435399, 268435398) == 1, "divisor_le of a prime"
  assert divisor_le(268435456, 1000) == 512, "divisor_le of 2^28"
  // expected-error @+1 {{divisor_le takes positive arguments (n at most 268435456)}}
  let n = divisor_le(268435457, 2)
  fn f(y: [D]) -> [D] {
    return y
  }
  return fixed_point(f, 0.0)
}

// -----

// Nested mixers four wide: 4^16 instances would never finish; the depth
// limit and the statement budget stop it.
mixer m(p: [M], v: [V]) -> [V] {
  param a: m
  param b: m
  param c: m
  param d: m
  // expected-error @+1 {{mixers nested deeper than 16 levels}}
  return a(p, b(p, c(p, d(p, v))))
}

layer l(u: [D]) -> [D] {
  config D = 4
  param mx: m
  fn f(y: [D]) -> [D] {
    return mx(u, y)
  }
  return fixed_point(f, 0.0)
}
