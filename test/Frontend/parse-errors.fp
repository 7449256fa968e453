// RUN: fp-translate --import-fp -split-input-file -verify-diagnostics %s

// Lexer and parser errors of the .fp frontend, one per split. A file with a
// syntax error is not elaborated, so each split reports exactly the errors
// the lexer and the parser find.

//===----------------------------------------------------------------------===//
// Lexer
//===----------------------------------------------------------------------===//

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{unexpected character '$'}}
  let x = u $ u
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{unexpected character '#'}}
  # a comment is written with //
}

// -----

// Non-ASCII bytes are fine in comments: ‖Q‖₂ ≤ 1, α_i, σ.
layer l(u: [D]) -> [D] {
  // expected-error @+1 {{unexpected byte 0xC3 (.fp source is ASCII outside comments and strings)}}
  let x = u × u
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{unexpected byte 0xCE (.fp source is ASCII outside comments and strings)}}
  let α = u
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{unterminated string}}
  assert true, "no closing quote
}

// -----

// expected-error @+1 {{unterminated string}}
import "householder.fp

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{escape sequences are not supported in strings}}
  assert true, "a \"quoted\" word"
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{a number must start with a digit (write 0.5, not .5)}}
  let x = .5
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{unexpected '.'; ranges are written 'a..b'}}
  let x = u.weight
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{malformed exponent in number}}
  let x = 1e+
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{malformed exponent in number}}
  let x = 2.5e
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{unexpected character after number}}
  let x = 12abc
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{unexpected '&'; did you mean '&&'?}}
  assert true & false, "and"
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{unexpected '|'; did you mean '||'?}}
  assert true | false, "or"
}

//===----------------------------------------------------------------------===//
// Declarations
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{expected a declaration ('import', 'mixer', 'layer' or 'model'), found 'let'}}
let x = 1

// -----

// expected-error @+1 {{expected a declaration ('import', 'mixer', 'layer' or 'model'), found 'fn'}}
fn f(y: [4]) -> [4] {
  return y
}

// -----

// expected-error @+1 {{expected a name, found '3'}}
layer 3(u: [D]) -> [D] {
}

// -----

// expected-error @+1 {{expected '(' to start the arguments, found '->'}}
layer l -> [D] {
}

// -----

// expected-error @+1 {{expected an argument name, found '['}}
layer l([D]) -> [D] {
}

// -----

// expected-error @+1 {{expected ':' after the argument name, found '['}}
layer l(u [D]) -> [D] {
}

// -----

// expected-error @+1 {{expected '[' to start a shape, found 'D'}}
layer l(u: D) -> [D] {
}

// -----

// expected-error @+1 {{expected ']' to end the shape, found ')'}}
layer l(u: [D) -> [D] {
}

// -----

// expected-error @+1 {{expected ')' to end the arguments, found '->'}}
mixer m(p: [M], v: [V] -> [V] {
}

// -----

// expected-error @+1 {{expected '->' before the result shape, found '['}}
layer l(u: [D]) [D] {
}

// -----

// expected-error @+2 {{expected '{' to start a block, found 'let'}}
layer l(u: [D]) -> [D]
let x = u

// -----

// expected-error @+1 {{expected a quoted file name after 'import', found 'householder'}}
import householder

// -----

// expected-error @+1 {{empty file name in import}}
import ""

// -----

// The loader still looks for the file a bad import line names.
// expected-error @+2 {{expected end of statement (a line break or ';'), found 'layer'}}
// expected-error @+1 {{cannot find imported file 'a.fp'}}
import "a.fp" layer

// -----

// expected-error @+1 {{expected a model name, found '{'}}
model {
  d_model = 4
}

// -----

// expected-error @+1 {{expected '{' to start the model, found 'd_model'}}
model m d_model = 4

// -----

model m {
  // expected-error @+1 {{expected '=' after the field name, found '4'}}
  d_model 4
}

// -----

model m {
  // expected-error @+1 {{expected a model field, found '3'}}
  3 = 4
}

// -----

model m {
  // expected-error @+1 {{expected end of statement (a line break or ';'), found 'layer'}}
  d_model = 4 layer = l
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{expected end of statement (a line break or ';'), found 'let'}}
  let a = u let b = u
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{expected '=' after the name, found '1'}}
  let x 1
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{expected a name after 'let', found '='}}
  let = 1
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{expected a statement; to define 'x' write 'let x = ...'}}
  x 3
}

// -----

layer l(u: [D]) -> [D] {
  let a = u
  // An operator that starts a line starts a new statement.
  // expected-error @+1 {{expected a statement, found '+'}}
    + u
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{expected a configuration name, found '='}}
  config = 3
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{expected a parameter name, found ':'}}
  param : [4] = zeros
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{expected ':' after the parameter name, found '['}}
  param w [4] = zeros
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{expected '=' before the initialiser, found 'zeros'}}
  param w: [4] zeros
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{expected 'decay', 'no_decay', 'frozen' or the end of the statement, found 'decays'}}
  param w: [4] = zeros decays
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{expected a map name, found '('}}
  fn (y: [D]) -> [D] {
    return y
  }
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{expected a loop variable, found '0'}}
  for 0..4 {
  }
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{expected 'in' after the loop variable, found '0'}}
  for i 0..4 {
  }
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{expected '..' in the loop range 'lo..hi', found '4'}}
  for i in 0 4 {
  }
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{expected '{' to start a block, found 'let'}}
  if true let x = u
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{expected ',' before the assertion message, found '"message"'}}
  assert true "message"
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{expected a quoted message, found '5'}}
  assert true, 5
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{expected an expression, found ')'}}
  let x = )
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+2 {{expected an expression, found '}'}}
  let x =
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{positional argument after a named argument}}
  let x = l2norm(x = u, 1.0e-5)
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{comparisons do not chain; use '&&'}}
  assert 1 < 2 < 3, "chained"
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{comparisons do not chain; use '&&'}}
  assert 1 == 1 != false, "chained"
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{only names can be called}}
  let x = u[0](1)
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{expected ')' to close '(', found 'let'}}
  let x = (u + u let y = u
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{expected ']' to end the index, found ')'}}
  let x = silu(u[0 : 2)
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{expected ']' to end the list, found ')'}}
  let x = reshape(u, [2, 2)
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+2 {{expected ')' to end the arguments, found 'let'}}
  let x = silu(u
  let y = u
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{integer literal too large}}
  let x = 99999999999999999999
}

// -----

layer l(u: [D]) -> [D] {
  // expected-error @+1 {{number out of range}}
  let x = 1.0e999
}

//===----------------------------------------------------------------------===//
// Recovery: the parser reports one error per bad statement (and gives up
// after 20, see too-many-errors.fp).
//===----------------------------------------------------------------------===//

// -----

layer l(u: [D]) -> [D] {
  let a = ) // expected-error {{expected an expression, found ')'}}
  let b = u
  let c = ] // expected-error {{expected an expression, found ']'}}
  let d = u
}
// expected-error @+1 {{expected a declaration ('import', 'mixer', 'layer' or 'model'), found 'return'}}
return u

// -----

// The end of the file inside a block.
layer l(u: [D]) -> [D] {
  let x = u
  // expected-error @+2 {{expected '}' to end the block, found end of file}}
  return x
