// RUN: fp-translate --import-fp -verify-diagnostics %s

// The parser reports one error per bad statement and gives up after 20
// errors in one file: nothing is reported after "giving up" (in particular
// not a bogus "expected '}' ..., found end of file" at the 20th statement).

layer l(u: [D]) -> [D] {
  1 // expected-error {{expected a statement, found '1'}}
  2 // expected-error {{expected a statement, found '2'}}
  3 // expected-error {{expected a statement, found '3'}}
  4 // expected-error {{expected a statement, found '4'}}
  5 // expected-error {{expected a statement, found '5'}}
  6 // expected-error {{expected a statement, found '6'}}
  7 // expected-error {{expected a statement, found '7'}}
  8 // expected-error {{expected a statement, found '8'}}
  9 // expected-error {{expected a statement, found '9'}}
  10 // expected-error {{expected a statement, found '10'}}
  11 // expected-error {{expected a statement, found '11'}}
  12 // expected-error {{expected a statement, found '12'}}
  13 // expected-error {{expected a statement, found '13'}}
  14 // expected-error {{expected a statement, found '14'}}
  15 // expected-error {{expected a statement, found '15'}}
  16 // expected-error {{expected a statement, found '16'}}
  17 // expected-error {{expected a statement, found '17'}}
  18 // expected-error {{expected a statement, found '18'}}
  19 // expected-error {{expected a statement, found '19'}}
  // expected-error @+2 {{expected a statement, found '20'}}
  // expected-error @+1 {{too many errors, giving up on this file}}
  20
  21
  22
}
