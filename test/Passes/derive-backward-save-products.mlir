// RUN: fp-opt %s -split-input-file -fp-derive-backward=save-products | FileCheck %s
// RUN: fp-opt %s -split-input-file -fp-derive-backward | FileCheck %s --check-prefix=RECOMPUTE

// With save-products the forward saves, after its fixed point and in
// forward order, the products of its linear maps over tokens that the
// backward reads: in_proj's (silu's derivative reads it) and the map's at
// the fixed point (tanh's derivative reads it). out_proj's product is the
// output, which no rule reads: it is neither saved nor recomputed. The
// backward runs no forward GEMM: its fp.linear ops are the input cotangents
// through transposed weights.
// CHECK-LABEL: func.func @layer(
//  CHECK-SAME:     -> (tensor<?x?x4xf32>, tensor<?xi32>, tensor<?x?x4xf32> {fp.saved}, tensor<?x?x4xf32> {fp.saved}, tensor<?x?x4xf32> {fp.saved})
//       CHECK:   %[[IN:.*]] = fp.linear %{{.*}}, %{{.*}} :
//       CHECK:   %[[R:.*]], %[[N:.*]] = fp.fixed_point
//       CHECK:   %[[MAP:.*]] = fp.linear %[[R]], %{{.*}} :
//       CHECK:   return %{{.*}}, %[[N]], %[[R]], %[[IN]], %[[MAP]] :
// CHECK-LABEL: func.func @layer_backward(
//  CHECK-SAME:     %[[X:[^:]*]]: tensor<?x?x4xf32>, %[[YSTAR:[^:]*]]: tensor<?x?x4xf32>, %[[SIN:[^:]*]]: tensor<?x?x4xf32>, %[[SMAP:[^:]*]]: tensor<?x?x4xf32>, %[[G:[^:]*]]: tensor<?x?x4xf32>)
//   CHECK-NOT:   fp.linear %[[X]]
//   CHECK-NOT:   fp.linear %[[YSTAR]]
//       CHECK:   fp.silu %[[SIN]]
//       CHECK:   math.tanh %[[SMAP]]
//   CHECK-NOT:   fp.linear %[[X]]
//   CHECK-NOT:   fp.linear %[[YSTAR]]
//       CHECK:   return

// Without it only the fixed point is saved and the backward recomputes
// both products.
// RECOMPUTE-LABEL: func.func @layer(
//  RECOMPUTE-SAME:     -> (tensor<?x?x4xf32>, tensor<?xi32>, tensor<?x?x4xf32> {fp.saved})
// RECOMPUTE-LABEL: func.func @layer_backward(
//  RECOMPUTE-SAME:     %[[X:[^:]*]]: tensor<?x?x4xf32>, %[[YSTAR:[^:]*]]: tensor<?x?x4xf32>, %[[G:[^:]*]]: tensor<?x?x4xf32>)
//       RECOMPUTE:   fp.linear %[[X]]
//       RECOMPUTE:   fp.linear %[[YSTAR]]
func.func @layer(%x: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?xi32>) attributes {fp.layer} {
  %w_in = fp.param "w_in" init <fan_in_uniform> : tensor<4x4xf32>
  %w_map = fp.param "w_map" init <fan_in_uniform> : tensor<4x4xf32>
  %w_out = fp.param "w_out" init <fan_in_uniform> : tensor<4x4xf32>
  %a = fp.param "a" init <ones> : tensor<4xf32>
  %c = fp.broadcast %a, %x dims [2] : tensor<4xf32>, tensor<?x?x4xf32>
  %l = fp.linear %x, %w_in : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
  %v = fp.silu %l : tensor<?x?x4xf32>
  %r, %n = fp.fixed_point (%y = %v) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
      backward <one_step> {
    %m = fp.linear %y, %w_map : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
    %t = math.tanh %m : tensor<?x?x4xf32>
    %u = arith.addf %t, %v : tensor<?x?x4xf32>
    %h = fp.scan %c, %u : tensor<?x?x4xf32>
    fp.yield %h : tensor<?x?x4xf32>
  }
  %m = fp.linear %r, %w_map : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
  %t = math.tanh %m : tensor<?x?x4xf32>
  %u = arith.addf %t, %v : tensor<?x?x4xf32>
  %h = fp.scan %c, %u : tensor<?x?x4xf32>
  %o = fp.linear %h, %w_out : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
  return %o, %n : tensor<?x?x4xf32>, tensor<?xi32>
}

// -----

// truncated(2): the map after the loop is applied to the end of a chain
// recomputed from the saved fixed point, not to what the forward applied it
// to, so its product is recomputed; in_proj's, which does not depend on the
// loop, is saved.
// CHECK-LABEL: func.func @truncated(
//  CHECK-SAME:     -> (tensor<?x?x4xf32>, tensor<?xi32>, tensor<?x?x4xf32> {fp.saved}, tensor<?x?x4xf32> {fp.saved})
//       CHECK:   %[[IN:.*]] = fp.linear %{{.*}}, %{{.*}} :
//       CHECK:   %[[R:.*]], %[[N:.*]] = fp.fixed_point
//       CHECK:   return %{{.*}}, %[[N]], %[[R]], %[[IN]] :
// CHECK-LABEL: func.func @truncated_backward(
//  CHECK-SAME:     %[[X:[^:]*]]: tensor<?x?x4xf32>, %[[YSTAR:[^:]*]]: tensor<?x?x4xf32>, %[[SIN:[^:]*]]: tensor<?x?x4xf32>, %[[G:[^:]*]]: tensor<?x?x4xf32>)
//   CHECK-NOT:   fp.linear %[[X]]
//       CHECK:   fp.silu %[[SIN]]
//       CHECK:   fp.linear %[[YSTAR]]
//       CHECK:   %[[Y1:.*]] = fp.scan
//       CHECK:   fp.linear %[[Y1]]
//       CHECK:   return
func.func @truncated(%x: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?xi32>) attributes {fp.layer} {
  %w_in = fp.param "w_in" init <fan_in_uniform> : tensor<4x4xf32>
  %w_map = fp.param "w_map" init <fan_in_uniform> : tensor<4x4xf32>
  %a = fp.param "a" init <ones> : tensor<4xf32>
  %c = fp.broadcast %a, %x dims [2] : tensor<4xf32>, tensor<?x?x4xf32>
  %l = fp.linear %x, %w_in : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
  %v = fp.silu %l : tensor<?x?x4xf32>
  %r, %n = fp.fixed_point (%y = %v) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
      backward <truncated, steps = 2> {
    %m = fp.linear %y, %w_map : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
    %t = math.tanh %m : tensor<?x?x4xf32>
    %u = arith.addf %t, %v : tensor<?x?x4xf32>
    %h = fp.scan %c, %u : tensor<?x?x4xf32>
    fp.yield %h : tensor<?x?x4xf32>
  }
  %m = fp.linear %r, %w_map : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
  %t = math.tanh %m : tensor<?x?x4xf32>
  %u = arith.addf %t, %v : tensor<?x?x4xf32>
  %h = fp.scan %c, %u : tensor<?x?x4xf32>
  return %h, %n : tensor<?x?x4xf32>, tensor<?xi32>
}
