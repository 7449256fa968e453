// RUN: fp-translate --import-fp %s | FileCheck %s

// Function symbols (docs/dsl.md §6.2): a layer is @<layer> (made unique with
// a suffix when two models elaborate it), a map is @<caller>.<map>, a mixer
// is @<caller>.<param>, where <caller> is the function that first calls it:
// so a mixer inside a mixer is @<caller>.<param>.<inner param>, each
// parameter name appearing once.

mixer inner_mix(p: [m], v: [d]) -> [d] {
  param g: linear(m, d)
  return g(p) * v
}

mixer outer_mix(p: [m], v: [d]) -> [d] {
  param inner: inner_mix
  return inner(p, v) + v
}

layer tiny(u: [D]) -> [D] {
  config D = 4
  param mix: outer_mix
  fn f(y: [D]) -> [D] {
    return mix(u, y)
  }
  return fixed_point(f, 0.0)
}

model a {
  d_model = 4
  layer = tiny
}

model b {
  d_model = 8
  layer = tiny
}

// CHECK: layer = @tiny,
// CHECK-SAME: layer = @tiny_1,
// CHECK-DAG: func.func @tiny(%arg0: tensor<?x?x4xf32>)
// CHECK-DAG: func.func private @tiny.f(
// CHECK-DAG: func.func private @tiny.f.mix(
// CHECK-DAG: func.func private @tiny.f.mix.inner(
// CHECK-DAG: fp.param "mix.inner.g.weight" {{.*}} : tensor<4x4xf32>
// CHECK-DAG: func.func @tiny_1(%arg0: tensor<?x?x8xf32>)
// CHECK-DAG: func.func private @tiny_1.f(
// CHECK-DAG: func.func private @tiny_1.f.mix(
// CHECK-DAG: func.func private @tiny_1.f.mix.inner(
// CHECK-DAG: fp.param "mix.inner.g.weight" {{.*}} : tensor<8x8xf32>
