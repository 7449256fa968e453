// RUN: fp-opt %s -split-input-file -fp-lower-fixed-point -fp-plan-buffers | FileCheck %s

// A chain: a buffer is reused once its value is dead, and only by a value
// with the same dependence on batch and time. Parameters, the input and
// reshapes take no buffer of their own. The output is computed in place of
// the caller's: its buffer holds nothing else and is marked `result = 0`.
// CHECK-LABEL: func.func @chain
//  CHECK-SAME:     fp.workspace = [{elements = 8 : i64, per_batch, per_step}, {elements = 8 : i64, per_batch, per_step}, {elements = 4 : i64}, {elements = 8 : i64, per_batch, per_step, result = 0 : i64}]
//       CHECK:   fp.param "w"
//   CHECK-NOT:     fp.slots
//       CHECK:   fp.linear {{.*}} {fp.slots = array<i64: 0>}
//       CHECK:   fp.silu {{.*}} {fp.slots = array<i64: 1>}
//       CHECK:   fp.reshape
//   CHECK-NOT:     fp.slots
//       CHECK:   math.exp {{.*}} {fp.slots = array<i64: 2>}
//       CHECK:   arith.mulf {{.*}} {fp.slots = array<i64: 0>}
//       CHECK:   fp.sigmoid {{.*}} {fp.slots = array<i64: 3>}
func.func @chain(%u: tensor<?x?x4xf32>) -> (tensor<?x?x2x4xf32>, tensor<4xf32>) attributes {fp.layer} {
  %w = fp.param "w" init <ones> : tensor<8x4xf32>
  %g = fp.param "g" init <ones> : tensor<4xf32>
  %a = fp.linear %u, %w : (tensor<?x?x4xf32>, tensor<8x4xf32>) -> tensor<?x?x8xf32>
  %b = fp.silu %a : tensor<?x?x8xf32>
  %r = fp.reshape %b : tensor<?x?x8xf32> -> tensor<?x?x2x4xf32>
  %e = math.exp %g : tensor<4xf32>
  %m = arith.mulf %r, %r : tensor<?x?x2x4xf32>
  %o = fp.sigmoid %m : tensor<?x?x2x4xf32>
  return %o, %e : tensor<?x?x2x4xf32>, tensor<4xf32>
}

// -----

// A value defined before a fixed-point loop and read inside it lives until
// the loop ends, so nothing in the loop reuses its buffer; the iterate has
// a buffer of its own, which the relaxation updates in place and the loop
// result aliases.
// CHECK-LABEL: func.func @loop
//  CHECK-SAME:     fp.workspace = [{elements = 4 : i64, per_batch, per_step}, {elements = 4 : i64, per_batch, per_step}, {elements = 4 : i64, per_batch, per_step}, {elements = 4 : i64, per_batch, per_step}, {elements = 4 : i64, per_batch, per_step, result = 0 : i64}]
//       CHECK:   %[[X:.*]] = fp.silu %{{.*}} {fp.slots = array<i64: 0>}
//       CHECK:   scf.while
//       CHECK:     fp.shift {{.*}} {fp.slots = array<i64: 2>}
//       CHECK:     arith.addf {{.*}} {fp.slots = array<i64: 3>}
//       CHECK:     fp.solver_relax
//   CHECK-NOT:       fp.slots
//       CHECK:   } attributes {fp.iterate_slots = array<i64: 1>}
//       CHECK:   fp.solver_iterations
//   CHECK-NOT:     fp.slots
//       CHECK:   fp.sigmoid {{.*}} {fp.slots = array<i64: 4>}
func.func @loop(%u: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?xi32>) attributes {fp.layer} {
  %x = fp.silu %u : tensor<?x?x4xf32>
  %r, %n = fp.fixed_point (%y = %u) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
      backward <one_step> {
    %s = fp.shift %y by 1 : tensor<?x?x4xf32>
    %t = arith.addf %s, %x : tensor<?x?x4xf32>
    fp.yield %t : tensor<?x?x4xf32>
  }
  %o = fp.sigmoid %r : tensor<?x?x4xf32>
  return %o, %n : tensor<?x?x4xf32>, tensor<?xi32>
}

// -----

// Declined: a function that is not a layer keeps no plan.
// CHECK-LABEL: func.func @mixer
//   CHECK-NOT:   fp.workspace
//   CHECK-NOT:   fp.slots
func.func @mixer(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %s = fp.silu %u : tensor<?x?x4xf32>
  return %s : tensor<?x?x4xf32>
}

// -----

// Two iterates: each keeps its own buffer for the whole loop and is relaxed
// in place. The first is the output, computed in the caller's buffer.
// CHECK-LABEL: func.func @two_iterates
//  CHECK-SAME:     fp.workspace = [{elements = 4 : i64, per_batch, per_step, result = 0 : i64}, {elements = 2 : i64, per_batch, per_step}, {elements = 4 : i64, per_batch, per_step}, {elements = 2 : i64, per_batch, per_step}, {elements = 2 : i64, per_batch, per_step}]
//       CHECK:   scf.while
//       CHECK:     fp.shift {{.*}} {fp.slots = array<i64: 2>}
//       CHECK:     fp.silu {{.*}} {fp.slots = array<i64: 3>}
//       CHECK:     fp.sigmoid {{.*}} {fp.slots = array<i64: 4>}
//       CHECK:     fp.solver_relax
//       CHECK:     fp.solver_relax
//       CHECK:   } attributes {fp.iterate_slots = array<i64: 0, 1>}
func.func @two_iterates(%u: tensor<?x?x4xf32>, %v: tensor<?x?x2xf32>) -> (tensor<?x?x4xf32>, tensor<?xi32>) attributes {fp.layer} {
  %r:2, %n = fp.fixed_point (%y = %u, %z = %v) : tensor<?x?x4xf32>, tensor<?x?x2xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
      backward <one_step> {
    %s = fp.shift %y by 1 : tensor<?x?x4xf32>
    %t = fp.silu %z : tensor<?x?x2xf32>
    %g = fp.sigmoid %t : tensor<?x?x2xf32>
    fp.yield %s, %g : tensor<?x?x4xf32>, tensor<?x?x2xf32>
  }
  return %r#0, %n : tensor<?x?x4xf32>, tensor<?xi32>
}

// -----

// A transpose read only as the weight of fp.linear takes no buffer: the
// GEMM reads its input, which therefore lives until that read, so a weight
// computed in between takes a new buffer. A transpose read otherwise is
// materialised, here in the buffer its dead neighbour's input held.
// CHECK-LABEL: func.func @transposed_weight
//  CHECK-SAME:     fp.workspace = [{elements = 16 : i64}, {elements = 16 : i64}, {elements = 4 : i64, per_batch, per_step, result = 0 : i64}]
//       CHECK:   math.exp {{.*}} {fp.slots = array<i64: 0>}
//       CHECK:   fp.transpose
//   CHECK-NOT:     fp.slots
//       CHECK:   math.exp {{.*}} {fp.slots = array<i64: 1>}
//       CHECK:   fp.linear {{.*}} {fp.slots = array<i64: 2>}
//       CHECK:   fp.transpose {{.*}} {fp.slots = array<i64: 0>}
func.func @transposed_weight(%u: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<4x4xf32>) attributes {fp.layer} {
  %w = fp.param "w" init <ones> : tensor<4x4xf32>
  %n = math.exp %w : tensor<4x4xf32>
  %t = fp.transpose %n : tensor<4x4xf32> -> tensor<4x4xf32>
  %e = math.exp %w : tensor<4x4xf32>
  %a = fp.linear %u, %t : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
  %m = fp.transpose %e : tensor<4x4xf32> -> tensor<4x4xf32>
  return %a, %m : tensor<?x?x4xf32>, tensor<4x4xf32>
}

// -----

// A training forward computes its output and the values it saves in place.
// The loop's result is saved: its iterate's buffer is marked. The reshape
// of %x is saved: %x's buffer is marked. The output is saved a second time
// and the input once: both are copied, so they mark nothing.
// CHECK-LABEL: func.func @saved
//  CHECK-SAME:     fp.workspace = [{elements = 4 : i64, per_batch, per_step, result = 3 : i64}, {elements = 4 : i64, per_batch, per_step, result = 2 : i64}, {elements = 4 : i64, per_batch, per_step}, {elements = 4 : i64, per_batch, per_step, result = 0 : i64}]
//       CHECK:   fp.silu {{.*}} {fp.slots = array<i64: 0>}
//       CHECK:   scf.while
//       CHECK:     fp.shift {{.*}} {fp.slots = array<i64: 2>}
//       CHECK:   } attributes {fp.iterate_slots = array<i64: 1>}
//       CHECK:   fp.sigmoid {{.*}} {fp.slots = array<i64: 3>}
func.func @saved(%u: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?xi32>, tensor<?x?x4xf32> {fp.saved}, tensor<?x?x2x2xf32> {fp.saved}, tensor<?x?x4xf32> {fp.saved}, tensor<?x?x4xf32> {fp.saved}) attributes {fp.layer} {
  %x = fp.silu %u : tensor<?x?x4xf32>
  %r, %n = fp.fixed_point (%y = %u) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
      backward <one_step> {
    %s = fp.shift %y by 1 : tensor<?x?x4xf32>
    fp.yield %s : tensor<?x?x4xf32>
  }
  %o = fp.sigmoid %r : tensor<?x?x4xf32>
  %p = fp.reshape %x : tensor<?x?x4xf32> -> tensor<?x?x2x2xf32>
  return %o, %n, %r, %p, %o, %u : tensor<?x?x4xf32>, tensor<?xi32>, tensor<?x?x4xf32>, tensor<?x?x2x2xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>
}

// -----

// A backward computes its input cotangent in place; its parameter gradients
// are accumulated into the caller's, so their buffers are not marked.
// CHECK-LABEL: func.func @backward
//  CHECK-SAME:     fp.workspace = [{elements = 4 : i64, per_batch, per_step, result = 0 : i64}, {elements = 4 : i64}]
//       CHECK:   fp.silu {{.*}} {fp.slots = array<i64: 0>}
//       CHECK:   fp.reduce_sum {{.*}} {fp.slots = array<i64: 1>}
func.func @backward(%u: tensor<?x?x4xf32>, %dy: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<4xf32>) attributes {fp.backward_of = @layer, fp.param_gradients = ["g"]} {
  %dx = fp.silu %dy : tensor<?x?x4xf32>
  %dg = fp.reduce_sum %dy dims [0, 1] : tensor<?x?x4xf32> -> tensor<4xf32>
  return %dx, %dg : tensor<?x?x4xf32>, tensor<4xf32>
}
