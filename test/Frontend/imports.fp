// RUN: fp-translate --import-fp --fp-include=%S/Inputs/include %s | FileCheck %s
// RUN: fpc %s --emit=mlir -I %S/Inputs/include | FileCheck %s
// RUN: fpc %s --emit=mlir -I%S/Inputs/does_not_exist -I%S/Inputs/include | FileCheck %s

// Without the include directory, the import that needs it is reported, with
// the places searched.
// RUN: not fp-translate --import-fp %s 2>&1 | FileCheck %s --check-prefix=NOINC
// RUN: not fpc %s --emit=mlir -I %S/Inputs/does_not_exist 2>&1 | FileCheck %s --check-prefix=NOINC-DIR

// Import resolution (docs/dsl.md §4.7): relative to the importing file, then
// in the include directories; a file reached twice (here base.fp, through
// left.fp and through right.fp under another spelling) is loaded once; the
// mixers and layers of every loaded file share one namespace; only the main
// file's models are compiled.

import "Inputs/left.fp"
import "Inputs/right.fp"
import "from_include.fp"
// Importing a file again is harmless.
import "Inputs/left.fp"

layer main_layer(u: [D]) -> [D] {
  config D = 4
  // base_mix comes from a file this file does not import itself.
  param a: base_mix
  param b: right_mix
  param c: include_mix
  fn f(y: [D]) -> [D] {
    return a(u, b(u, c(u, y)))
  }
  return fixed_point(f, 0.0)
}

model main_model {
  d_model = 4
  layer = main_layer
}

model left {
  d_model = 8
  layer = left_layer
}

// CHECK: module attributes {fp.models = [{d_model = 4 : i64, layer = @main_layer, {{.*}}name = "main_model"{{.*}}}, {d_model = 8 : i64, layer = @left_layer, {{.*}}name = "left"{{.*}}}]}
// CHECK-NOT: left_model
// CHECK-DAG: func.func @main_layer(
// CHECK-DAG: func.func private @main_layer.f(
// CHECK-DAG: func.func private @main_layer.f.a(
// CHECK-DAG: func.func private @main_layer.f.b(
// CHECK-DAG: func.func private @main_layer.f.b.{{.*}}inner(
// CHECK-DAG: func.func private @main_layer.f.c(
// CHECK-DAG: func.func private @main_layer.f.c.{{.*}}inner(
// CHECK-DAG: func.func @left_layer(
// CHECK-DAG: func.func private @left_layer.f(
// CHECK-DAG: func.func private @left_layer.f.mix(
// CHECK-DAG: fp.param "b.inner.g.weight"
// CHECK-NOT: left_model

// NOINC: imports.fp:18:1: error: cannot find imported file 'from_include.fp' (searched next to '{{.*}}imports.fp')
// NOINC-NEXT: import "from_include.fp"
// NOINC-NOT: error:

// NOINC-DIR: imports.fp:18:1: error: cannot find imported file 'from_include.fp' (searched next to '{{.*}}imports.fp', in '{{.*}}does_not_exist')
// NOINC-DIR-NOT: error:
