// RUN: fp-opt %s -split-input-file -fp-lower-fixed-point -fp-plan-buffers | FileCheck %s

// A chain: a buffer is reused once its value is dead, and only by a value
// with the same dependence on batch and time. Parameters, the input and
// reshapes take no buffer of their own.
// CHECK-LABEL: func.func @chain
//  CHECK-SAME:     fp.workspace = [{elements = 8 : i64, per_batch, per_step}, {elements = 8 : i64, per_batch, per_step}, {elements = 4 : i64}]
//       CHECK:   fp.param "w"
//   CHECK-NOT:     fp.slots
//       CHECK:   fp.linear {{.*}} {fp.slots = array<i64: 0>}
//       CHECK:   fp.silu {{.*}} {fp.slots = array<i64: 1>}
//       CHECK:   fp.reshape
//   CHECK-NOT:     fp.slots
//       CHECK:   math.exp {{.*}} {fp.slots = array<i64: 2>}
//       CHECK:   arith.mulf {{.*}} {fp.slots = array<i64: 0>}
func.func @chain(%u: tensor<?x?x4xf32>) -> (tensor<?x?x2x4xf32>, tensor<4xf32>) attributes {fp.layer} {
  %w = fp.param "w" init <ones> : tensor<8x4xf32>
  %g = fp.param "g" init <ones> : tensor<4xf32>
  %a = fp.linear %u, %w : (tensor<?x?x4xf32>, tensor<8x4xf32>) -> tensor<?x?x8xf32>
  %b = fp.silu %a : tensor<?x?x8xf32>
  %r = fp.reshape %b : tensor<?x?x8xf32> -> tensor<?x?x2x4xf32>
  %e = math.exp %g : tensor<4xf32>
  %m = arith.mulf %r, %r : tensor<?x?x2x4xf32>
  return %m, %e : tensor<?x?x2x4xf32>, tensor<4xf32>
}

// -----

// A value defined before a fixed-point loop and read inside it lives until
// the loop ends, so nothing in the loop reuses its buffer; the iterate has
// a buffer of its own, which the relaxation updates in place and the loop
// result aliases.
// CHECK-LABEL: func.func @loop
//  CHECK-SAME:     fp.workspace = [{elements = 4 : i64, per_batch, per_step}, {elements = 4 : i64, per_batch, per_step}, {elements = 4 : i64, per_batch, per_step}, {elements = 4 : i64, per_batch, per_step}]
//       CHECK:   %[[X:.*]] = fp.silu %{{.*}} {fp.slots = array<i64: 0>}
//       CHECK:   scf.while
//       CHECK:     fp.shift {{.*}} {fp.slots = array<i64: 2>}
//       CHECK:     arith.addf {{.*}} {fp.slots = array<i64: 3>}
//       CHECK:     fp.solver_relax
//   CHECK-NOT:       fp.slots
//       CHECK:   } attributes {fp.iterate_slots = array<i64: 1>}
//       CHECK:   fp.solver_iterations
//   CHECK-NOT:     fp.slots
//       CHECK:   fp.sigmoid {{.*}} {fp.slots = array<i64: 0>}
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
// in place.
// CHECK-LABEL: func.func @two_iterates
//  CHECK-SAME:     fp.workspace = [{elements = 4 : i64, per_batch, per_step}, {elements = 2 : i64, per_batch, per_step}, {elements = 4 : i64, per_batch, per_step}, {elements = 2 : i64, per_batch, per_step}, {elements = 2 : i64, per_batch, per_step}]
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
//  CHECK-SAME:     fp.workspace = [{elements = 16 : i64}, {elements = 16 : i64}, {elements = 4 : i64, per_batch, per_step}]
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
