// RUN: fp-opt %s -split-input-file -fp-reuse-products | FileCheck %s

// The step after a solve: W [x; ȳ] + b, where W_x x + b was hoisted out of
// the loop. The product is reused, with its bias; the ȳ block gets the
// weight slice the loop body uses; the concatenation goes away.
// CHECK-LABEL: func.func @concat
//  CHECK-SAME:     (%[[X:.*]]: tensor<?x?x4xf32>, %[[YB:.*]]: tensor<?x?x4xf32>, %[[W:.*]]: tensor<6x8xf32>, %[[B:.*]]: tensor<6xf32>)
//       CHECK:   %[[WX:.*]] = fp.slice %[[W]][0 : 4]
//       CHECK:   %[[XW:.*]] = fp.linear %[[X]], %[[WX]] bias %[[B]]
//       CHECK:   %[[WY:.*]] = fp.slice %[[W]][4 : 8]
//   CHECK-NOT:   fp.concat
//   CHECK-NOT:   fp.slice
//       CHECK:   %[[YW:.*]] = fp.linear %[[YB]], %[[WY]] :
//       CHECK:   %[[U:.*]] = arith.addf %[[XW]], %[[YW]]
//       CHECK:   return %[[U]], %[[XW]]
func.func @concat(%x: tensor<?x?x4xf32>, %ybar: tensor<?x?x4xf32>, %w: tensor<6x8xf32>, %b: tensor<6xf32>) -> (tensor<?x?x6xf32>, tensor<?x?x6xf32>) {
  %wx = fp.slice %w[0 : 4] : tensor<6x8xf32> -> tensor<6x4xf32>
  %xw = fp.linear %x, %wx bias %b : (tensor<?x?x4xf32>, tensor<6x4xf32>, tensor<6xf32>) -> tensor<?x?x6xf32>
  %wy = fp.slice %w[4 : 8] : tensor<6x8xf32> -> tensor<6x4xf32>
  %p = fp.concat %x, %ybar : tensor<?x?x4xf32>, tensor<?x?x4xf32> -> tensor<?x?x8xf32>
  %u = fp.linear %p, %w bias %b : (tensor<?x?x8xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<?x?x6xf32>
  return %u, %xw : tensor<?x?x6xf32>, tensor<?x?x6xf32>
}

// -----

// W (x + ȳ) + b with W x + b computed: W x + b + W ȳ.
// CHECK-LABEL: func.func @sum
//  CHECK-SAME:     (%[[X:.*]]: tensor<?x?x4xf32>, %[[YB:.*]]: tensor<?x?x4xf32>, %[[W:.*]]: tensor<6x4xf32>, %[[B:.*]]: tensor<6xf32>)
//       CHECK:   %[[XW:.*]] = fp.linear %[[X]], %[[W]] bias %[[B]]
//   CHECK-NOT:   arith.addf %[[X]]
//       CHECK:   %[[YW:.*]] = fp.linear %[[YB]], %[[W]] :
//       CHECK:   %[[U:.*]] = arith.addf %[[XW]], %[[YW]]
//       CHECK:   return %[[U]]
func.func @sum(%x: tensor<?x?x4xf32>, %ybar: tensor<?x?x4xf32>, %w: tensor<6x4xf32>, %b: tensor<6xf32>) -> (tensor<?x?x6xf32>, tensor<?x?x6xf32>) {
  %xw = fp.linear %x, %w bias %b : (tensor<?x?x4xf32>, tensor<6x4xf32>, tensor<6xf32>) -> tensor<?x?x6xf32>
  %p = arith.addf %ybar, %x : tensor<?x?x4xf32>
  %u = fp.linear %p, %w bias %b : (tensor<?x?x4xf32>, tensor<6x4xf32>, tensor<6xf32>) -> tensor<?x?x6xf32>
  return %u, %xw : tensor<?x?x6xf32>, tensor<?x?x6xf32>
}

// -----

// Weights match when CSE would merge them: the loop body's weight
// normalisation and the step's own.
// CHECK-LABEL: func.func @equivalent_weights
//       CHECK:   %[[N0:.*]] = fp.weight_norm
//       CHECK:   %[[WX:.*]] = fp.slice %[[N0]][0 : 4]
//       CHECK:   %[[XW:.*]] = fp.linear %{{.*}}, %[[WX]] :
//       CHECK:   %[[N1:.*]] = fp.weight_norm
//       CHECK:   %[[WY:.*]] = fp.slice %[[N1]][4 : 8]
//       CHECK:   %[[YW:.*]] = fp.linear %{{.*}}, %[[WY]] :
//       CHECK:   arith.addf %[[XW]], %[[YW]]
func.func @equivalent_weights(%x: tensor<?x?x4xf32>, %ybar: tensor<?x?x4xf32>) -> (tensor<?x?x6xf32>, tensor<?x?x6xf32>) {
  %v = fp.param "v" init <fan_in_uniform> : tensor<6x8xf32>
  %g = fp.param "g" init <ones> : tensor<6xf32>
  %n0 = fp.weight_norm %v, %g : tensor<6x8xf32>, tensor<6xf32>
  %wx = fp.slice %n0[0 : 4] : tensor<6x8xf32> -> tensor<6x4xf32>
  %xw = fp.linear %x, %wx : (tensor<?x?x4xf32>, tensor<6x4xf32>) -> tensor<?x?x6xf32>
  %n1 = fp.weight_norm %v, %g : tensor<6x8xf32>, tensor<6xf32>
  %p = fp.concat %x, %ybar : tensor<?x?x4xf32>, tensor<?x?x4xf32> -> tensor<?x?x8xf32>
  %u = fp.linear %p, %n1 : (tensor<?x?x8xf32>, tensor<6x8xf32>) -> tensor<?x?x6xf32>
  return %u, %xw : tensor<?x?x6xf32>, tensor<?x?x6xf32>
}

// -----

// Declined: no product of a block is computed before the map (one after it,
// one with another bias, one of other columns), or the map is inside a
// fixed-point body, where fp-hoist-invariants splits it.
// CHECK-LABEL: func.func @declined
//   CHECK-NOT:   arith.addf
//       CHECK:   %[[P:.*]] = fp.concat
//   CHECK-NOT:   arith.addf
//       CHECK:   fp.linear %[[P]]
//   CHECK-NOT:   arith.addf
//       CHECK:   fp.fixed_point
//       CHECK:     fp.concat
//       CHECK:     fp.linear
//   CHECK-NOT:     arith.addf
//       CHECK:     fp.yield
func.func @declined(%x: tensor<?x?x4xf32>, %ybar: tensor<?x?x4xf32>, %w: tensor<6x8xf32>, %b: tensor<6xf32>) -> (tensor<?x?x6xf32>, tensor<?x?x6xf32>, tensor<?x?x6xf32>, tensor<?x?x6xf32>, tensor<?x?x6xf32>) {
  %wx = fp.slice %w[0 : 4] : tensor<6x8xf32> -> tensor<6x4xf32>
  %wy = fp.slice %w[2 : 6] : tensor<6x8xf32> -> tensor<6x4xf32>
  %unbiased = fp.linear %x, %wx : (tensor<?x?x4xf32>, tensor<6x4xf32>) -> tensor<?x?x6xf32>
  %shifted = fp.linear %ybar, %wy : (tensor<?x?x4xf32>, tensor<6x4xf32>) -> tensor<?x?x6xf32>
  %p = fp.concat %x, %ybar : tensor<?x?x4xf32>, tensor<?x?x4xf32> -> tensor<?x?x8xf32>
  %u = fp.linear %p, %w bias %b : (tensor<?x?x8xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<?x?x6xf32>
  %later = fp.linear %x, %wx bias %b : (tensor<?x?x4xf32>, tensor<6x4xf32>, tensor<6xf32>) -> tensor<?x?x6xf32>
  %r, %n = fp.fixed_point (%y = %ybar) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
      backward <one_step> {
    %q = fp.concat %x, %y : tensor<?x?x4xf32>, tensor<?x?x4xf32> -> tensor<?x?x8xf32>
    %v = fp.linear %q, %w bias %b : (tensor<?x?x8xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<?x?x6xf32>
    %s = fp.slice %v[0 : 4] : tensor<?x?x6xf32> -> tensor<?x?x4xf32>
    fp.yield %s : tensor<?x?x4xf32>
  }
  return %u, %unbiased, %shifted, %later, %u : tensor<?x?x6xf32>, tensor<?x?x6xf32>, tensor<?x?x6xf32>, tensor<?x?x6xf32>, tensor<?x?x6xf32>
}
