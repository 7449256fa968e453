#!/usr/bin/env bash
#===- lint-selftest.sh - Self-test of the lit-line lint --------------------===#
#
# Writes sample lit tests into a temporary directory and checks that
# `utils/lint.sh --lit-lines` flags exactly the sample lines that contain the
# marker `lint-bad` (and nothing else), exits 1 on them and 0 on clean files.
# utils/lint.sh runs this too, so the check cannot rot unnoticed.
#
# Usage: utils/lint-selftest.sh        (prints `lint-selftest: ok` or fails)
#
#===----------------------------------------------------------------------===#

set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
lint="$here/lint.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lint-selftest.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

failures=0
fail() {
  echo "lint-selftest: FAIL: $*" >&2
  failures=$((failures + 1))
}

# Directives without a colon, prose that must pass, custom prefixes.
cat >"$tmp/directives.mlir" <<'EOF'
// RUN: fp-opt %s | FileCheck %s
// RUN: fp-opt %s | FileCheck %s --check-prefix=HELP
// RUN: fp-opt %s | FileCheck %s --check-prefixes=CUDA,HOST
// RUN: fp-opt %s | FileCheck %s -check-prefix SPACE
// RUN fp-opt %s | FileCheck %s lint-bad
//RUN: fp-opt %s
// REQUIRES cuda lint-bad
// REQUIRES: cuda
// XFAIL: *

// Check that the ops print; CHECK lines below are what FileCheck reads.
// CHECKS are case-sensitive, so this prose is fine, and so is RUNNING.
// The RUN line above runs fp-opt.
// TODO: nothing here is a directive.
// -----
//--- split-file-part.mlir

// CHECK-LABEL: func.func @f
// CHECK: fp.foo
//       CHECK:   fp.fixed_point
//   CHECK-NOT:   fp.mix
// CHECK-SAME: (%arg0
// CHECK-NEXT: return
// CHECK-DAG: arith.constant
// CHECK-EMPTY:
// CHECK-COUNT-2: fp.bar
// CHECK fp.foo lint-bad
//CHECK fp.foo lint-bad
// CHECK : fp.foo lint-bad
// CHECK-NEXT fp.foo lint-bad
// CHECK-SAME (%arg0 lint-bad
// CHECK-NOT fp.mix lint-bad
// CHECK-DAG arith.constant lint-bad
// CHECK-LABEL func.func @f lint-bad
// CHECK-EMPTY lint-bad
// CHECK-COUNT-2 fp.bar lint-bad
// CHECK-NEXTS are not a directive, and neither is CHECK-FOO.
func.func @f() {
  %0 = fp.foo : f32 // CHECK fp.foo is not a comment line, not checked
  return
}

// HELP: Available Dialects
// HELP Available Dialects lint-bad
// CUDA-LABEL: __global__
// CUDA-NEXT __global__ lint-bad
// HOST-DAG: extern
// HOST-NOT extern lint-bad
// SPACE: ok
// SPACE ok lint-bad
// OTHER is not a prefix of this file, so this is prose.
EOF

# -verify-diagnostics lines.
cat >"$tmp/diagnostics.mlir" <<'EOF'
// RUN: fp-opt %s -split-input-file -verify-diagnostics

func.func @f() {
  // expected-error @below {{initialiser 'constant' takes 1 argument(s)}}
  %0 = fp.param "p" init <constant> : tensor<8xf32>
  // expected-error@+1 {{message}}
  // expected-error @+2 {{message}}
  // expected-note @above {{secondary location}}
  // expected-remark {{did not fuse}}
  // expected-warning@-1 {{careful}}
  // expected-error-re @below {{takes {{[0-9]+}} argument(s)}}
  %1 = fp.foo : f32 // expected-error {{trailing comments count too}}
  // expected-error @below initialiser 'constant' takes 1 argument lint-bad
  // expected-error @below {{unterminated lint-bad
  // expected-error @below {{message}} then text lint-bad
  // expected-note secondary location lint-bad
  // expected-remark lint-bad
  //expected-warning @below {careful} lint-bad
  %2 = fp.foo : f32 // expected-error without braces lint-bad
  // expected-errors are written with {{ and }}: prose, not a directive.
  return
}
EOF

# *.test files: `#` comments too.
cat >"$tmp/driver.test" <<'EOF'
# RUN: fp-opt --help | FileCheck %s --check-prefix=HELP
# HELP: Available Dialects
# HELP Available Dialects lint-bad
# RUN fp-opt --version lint-bad
// RUN fp-opt --show-dialects lint-bad
## CHECK fp lint-bad
# Check that the driver starts; this is prose.
EOF

# A DSL model: `//` comments.
cat >"$tmp/model.fp" <<'EOF'
// RUN: fpc %s --emit=mlir | FileCheck %s
// CHECK-LABEL: fp.model
// CHECK fp.model lint-bad
// A model with a comment that mentions CHECK in the middle.
model m {
}
EOF

# A clean file.
cat >"$tmp/clean.mlir" <<'EOF'
// RUN: fp-opt %s | FileCheck %s
// Check that nothing is flagged.
// CHECK-LABEL: func.func @g
func.func @g() {
  return
}
EOF

samples=(directives.mlir diagnostics.mlir driver.test model.fp)

# What must be flagged: every line with the marker.
expected=$(cd "$tmp" && grep -n 'lint-bad' "${samples[@]}" |
  cut -d: -f1,2 | sort)

out=$(cd "$tmp" && bash "$lint" --lit-lines "${samples[@]}")
rc=$?
actual=$(printf '%s\n' "$out" | grep -E '^[^ ]+:[0-9]+: \[lit-lines\]' |
  cut -d: -f1,2 | sort)

if [ "$rc" -ne 1 ]; then
  fail "expected exit status 1 on the bad samples, got $rc"
fi
if [ "$expected" != "$actual" ]; then
  fail "flagged lines differ (< expected, > flagged):"
  diff <(printf '%s\n' "$expected") <(printf '%s\n' "$actual") >&2
  printf '%s\n' "$out" >&2
fi
count=$(printf '%s\n' "$expected" | grep -c .)
last=$(printf '%s\n' "$out" | tail -n 1)
if [ "$last" != "lint: $count problem(s)" ]; then
  fail "expected the last line 'lint: $count problem(s)', got '$last'"
fi

out=$(cd "$tmp" && bash "$lint" --lit-lines clean.mlir)
rc=$?
if [ "$rc" -ne 0 ] || [ "$out" != "lint: clean" ]; then
  fail "expected 'lint: clean' and status 0 on clean.mlir, got status $rc:"
  printf '%s\n' "$out" >&2
fi

if [ "$failures" -ne 0 ]; then
  echo "lint-selftest: $failures failure(s)" >&2
  exit 1
fi
echo "lint-selftest: ok ($count bad lines flagged, no false positives)"
