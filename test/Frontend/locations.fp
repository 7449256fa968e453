// RUN: fp-translate --import-fp %s --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s
// RUN: fpc %s --emit=mlir --mlir-print-debuginfo | FileCheck %s --check-prefix=ALIAS

// Source locations (docs/dsl.md §6.4): every operation carries the
// file:line:col of the construct that produced it, an operation whose result
// a `let` binds directly carries the name too, fp.param carries the
// parameter's full name, functions sit at their name, the module at 1:1, and
// operations from an imported file point into that file.

import "Inputs/gate.fp"

layer tiny(u: [D]) -> [D] {
  config D = 4
  param in_proj: linear(D, D)
  param mix: gate
  param scale: [D] = ones decay
  let x = in_proj(u)
  fn f(y: [D]) -> [D] {
    let mixed = mix(shift(y), x - y)
    return mixed + y
  }
  let ystar = fixed_point(f, 0.0)
  let out = f(ystar) * scale
  return out
}

model tiny_model {
  d_model = 4
  layer = tiny
}

// CHECK-LABEL: func.func @tiny(
// CHECK-SAME: loc("{{.*}}locations.fp":12:7)
// CHECK: fp.param "in_proj.weight" {{.*}} loc("in_proj.weight"("{{.*}}locations.fp":14:9))
// CHECK: fp.param "scale" {{.*}} loc("scale"("{{.*}}locations.fp":16:9))
// CHECK: fp.linear {{.*}} loc("x"("{{.*}}locations.fp":17:11))
// CHECK: tensor.splat {{.*}} loc("{{.*}}locations.fp":22:15)
// CHECK: fp.fixed_point
// CHECK: func.call @tiny.f({{.*}} loc("{{.*}}locations.fp":22:15)
// CHECK: fp.yield {{.*}} loc("{{.*}}locations.fp":22:15)
// CHECK: } loc("ystar"("{{.*}}locations.fp":22:15))
// CHECK: call @tiny.f({{.*}} loc("{{.*}}locations.fp":23:13)
// CHECK: fp.broadcast {{.*}} loc("{{.*}}locations.fp":23:22)
// CHECK: arith.mulf {{.*}} loc("out"("{{.*}}locations.fp":23:22))
// CHECK: } loc("{{.*}}locations.fp":12:7)

// The map: its captured argument keeps the name of the layer value.
// CHECK-LABEL: func.func private @tiny.f(
// CHECK-SAME: loc("x"("{{.*}}locations.fp":17:11))
// CHECK: fp.shift {{.*}} loc("{{.*}}locations.fp":19:21)
// CHECK: arith.subf {{.*}} loc("{{.*}}locations.fp":19:33)
// CHECK: call @tiny.f.mix({{.*}} loc("mixed"("{{.*}}locations.fp":19:17))
// CHECK: arith.addf {{.*}} loc("{{.*}}locations.fp":20:18)
// CHECK: } loc("{{.*}}locations.fp":18:6)

// The mixer, from the imported file, with its parameter under the prefix.
// CHECK-LABEL: func.func private @tiny.f.mix(
// CHECK: fp.param "mix.g.weight" {{.*}} loc("mix.g.weight"("{{.*}}Inputs{{[/\\]}}gate.fp":4:9))
// CHECK: fp.linear {{.*}} loc("{{.*}}Inputs{{[/\\]}}gate.fp":5:19)
// CHECK: fp.sigmoid {{.*}} loc("s"("{{.*}}Inputs{{[/\\]}}gate.fp":5:11))
// CHECK: arith.mulf {{.*}} loc("{{.*}}Inputs{{[/\\]}}gate.fp":6:12)
// CHECK: } loc("{{.*}}Inputs{{[/\\]}}gate.fp":3:7)
// CHECK: } loc("{{.*}}locations.fp":1:1)

// Without --mlir-print-local-scope, locations are printed as aliases.
// ALIAS-DAG: [[FILE:#loc[0-9]*]] = loc("{{.*}}locations.fp":17:11)
// ALIAS-DAG: [[X:#loc[0-9]*]] = loc("x"([[FILE]]))
// ALIAS: fp.linear {{.*}} loc([[X]])
