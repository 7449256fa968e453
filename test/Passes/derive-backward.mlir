// RUN: fp-opt %s -split-input-file -fp-derive-backward | FileCheck %s
// RUN: fp-opt %s -split-input-file -fp-derive-backward | fp-opt -split-input-file | FileCheck %s

// A layer without a loop: the backward recomputes what its rules read and
// applies them in reverse. The product's cotangents go to both factors; the
// input, read twice, gets the sum of its two cotangents. The linear map's
// input cotangent uses the transposed weight, its weight gradient is a sum
// over tokens, its bias gradient a sum over batch and time. Parameters get
// one result each, in order of first appearance.
// CHECK-LABEL: func.func @head(
//  CHECK-SAME:     -> tensor<?x?x4xf32> attributes {fp.layer}
// CHECK-LABEL: func.func @head_backward(
//  CHECK-SAME:     %[[X:.*]]: tensor<?x?x4xf32>, %[[G:.*]]: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<4x4xf32>, tensor<4xf32>)
//  CHECK-SAME:     attributes {fp.backward_of = @head, fp.param_gradients = ["w", "b"]}
//       CHECK:   %[[W:.*]] = fp.param "w"
//       CHECK:   %[[L:.*]] = fp.linear %[[X]], %[[W]] bias
//       CHECK:   %[[S:.*]] = fp.silu %[[L]]
//       CHECK:   %[[GS:.*]] = arith.mulf %[[G]], %[[X]]
//       CHECK:   %[[GX1:.*]] = arith.mulf %[[G]], %[[S]]
//       CHECK:   %[[NEG:.*]] = arith.negf %[[L]]
//       CHECK:   %[[SN:.*]] = fp.sigmoid %[[NEG]]
//       CHECK:   %[[T:.*]] = arith.mulf %[[S]], %[[SN]]
//       CHECK:   %[[SP:.*]] = fp.sigmoid %[[L]]
//       CHECK:   %[[SLOPE:.*]] = arith.addf %[[SP]], %[[T]]
//       CHECK:   %[[GL:.*]] = arith.mulf %[[GS]], %[[SLOPE]]
//       CHECK:   %[[WT:.*]] = fp.transpose %[[W]] : tensor<4x4xf32> -> tensor<4x4xf32>
//       CHECK:   %[[GX2:.*]] = fp.linear %[[GL]], %[[WT]] :
//       CHECK:   %[[DW:.*]] = fp.weight_grad %[[GL]], %[[X]] : tensor<?x?x4xf32>, tensor<?x?x4xf32> -> tensor<4x4xf32>
//       CHECK:   %[[DB:.*]] = fp.reduce_sum %[[GL]] dims [0, 1] : tensor<?x?x4xf32> -> tensor<4xf32>
//       CHECK:   %[[DX:.*]] = arith.addf %[[GX1]], %[[GX2]]
//       CHECK:   return %[[DX]], %[[DW]], %[[DB]]
func.func @head(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer} {
  %w = fp.param "w" init <fan_in_uniform> decay : tensor<4x4xf32>
  %b = fp.param "b" init <zeros> : tensor<4xf32>
  %l = fp.linear %x, %w bias %b : (tensor<?x?x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
  %s = fp.silu %l : tensor<?x?x4xf32>
  %m = arith.mulf %s, %x : tensor<?x?x4xf32>
  return %m : tensor<?x?x4xf32>
}

// -----

// one_step: the forward saves its fixed point; the backward reads it as a
// constant, so it contains no fixed-point loop and no cotangent of the
// fixed point; the gradient is that of the layer's own application of the
// map at the fixed point. The scan's adjoint is a reverse scan over the
// coefficients moved one step back; the coefficient gradient pairs it with
// the previous state.
// CHECK-LABEL: func.func @loop(
//  CHECK-SAME:     -> (tensor<?x?x4xf32>, tensor<?xi32>, tensor<?x?x4xf32> {fp.saved})
//       CHECK:   %[[FP:.*]], %[[N:.*]] = fp.fixed_point
//       CHECK:   return %{{.*}}, %[[N]], %[[FP]]
// CHECK-LABEL: func.func @loop_backward(
//  CHECK-SAME:     %[[X:.*]]: tensor<?x?x4xf32>, %[[YSTAR:.*]]: tensor<?x?x4xf32>, %[[G:.*]]: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<4xf32>)
//  CHECK-SAME:     fp.param_gradients = ["a"]
//   CHECK-NOT:   fp.fixed_point
//       CHECK:   %[[C:.*]] = fp.sigmoid
//       CHECK:   %[[SH:.*]] = fp.shift %[[YSTAR]] by 1
//       CHECK:   %[[U:.*]] = arith.addf %[[SH]], %[[X]]
//       CHECK:   %[[H:.*]] = fp.scan %[[C]], %[[U]]
//       CHECK:   %[[CB:.*]] = fp.shift %[[C]] by -1
//       CHECK:   %[[LAMBDA:.*]] = fp.scan reverse %[[CB]], %[[G]]
//       CHECK:   %[[PREV:.*]] = fp.shift %[[H]] by 1
//       CHECK:   %[[DC:.*]] = arith.mulf %[[LAMBDA]], %[[PREV]]
//   CHECK-NOT:   fp.shift %[[LAMBDA]]
//       CHECK:   %[[DA:.*]] = fp.reduce_sum %{{.*}} dims [0, 1] : tensor<?x?x4xf32> -> tensor<4xf32>
//       CHECK:   return %[[LAMBDA]], %[[DA]]
//   CHECK-NOT:   fp.fixed_point
func.func @loop(%x: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?xi32>) attributes {fp.layer} {
  %a = fp.param "a" init <ones> : tensor<4xf32>
  %c = fp.broadcast %a, %x dims [2] : tensor<4xf32>, tensor<?x?x4xf32>
  %coeff = fp.sigmoid %c : tensor<?x?x4xf32>
  %r, %n = fp.fixed_point (%y = %x) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
      backward <one_step> {
    %s = fp.shift %y by 1 : tensor<?x?x4xf32>
    %u = arith.addf %s, %x : tensor<?x?x4xf32>
    %h = fp.scan %coeff, %u : tensor<?x?x4xf32>
    fp.yield %h : tensor<?x?x4xf32>
  }
  %s = fp.shift %r by 1 : tensor<?x?x4xf32>
  %u = arith.addf %s, %x : tensor<?x?x4xf32>
  %h = fp.scan %coeff, %u : tensor<?x?x4xf32>
  return %h, %n : tensor<?x?x4xf32>, tensor<?xi32>
}

// -----

// Shapes: a slice's cotangent is padded with zeros (sized from the input),
// a concatenation's is sliced back, a value read twice gets the sum of its
// cotangents, a broadcast's is summed over the replicated dimensions, and a
// parameter the output does not depend on gets zeros.
// CHECK-LABEL: func.func @shapes_backward(
//  CHECK-SAME:     fp.param_gradients = ["v", "unused"]
//       CHECK:   %[[G0:.*]] = fp.slice %{{.*}}[0 : 2]
//       CHECK:   %[[G1:.*]] = fp.slice %{{.*}}[2 : 6]
//       CHECK:   %[[A:.*]] = arith.mulf %[[G0]], %[[VB:.*]] :
//       CHECK:   %[[B:.*]] = arith.mulf %[[G0]], %[[VB]] :
//       CHECK:   %[[GVB:.*]] = arith.addf %[[A]], %[[B]]
//       CHECK:   %[[DV:.*]] = fp.reduce_sum %[[GVB]] dims [0, 1] : tensor<?x?x2xf32> -> tensor<2xf32>
//       CHECK:   tensor.dim
//       CHECK:   %[[Z:.*]] = tensor.splat
//       CHECK:   %[[DX:.*]] = fp.concat %[[G1]], %[[Z]] : tensor<?x?x4xf32>, tensor<?x?x2xf32> -> tensor<?x?x6xf32>
//       CHECK:   %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<3xf32>
//       CHECK:   return %[[DX]], %[[DV]], %[[ZERO]]
func.func @shapes(%x: tensor<?x?x6xf32>) -> tensor<?x?x6xf32> attributes {fp.layer} {
  %v = fp.param "v" init <ones> : tensor<2xf32>
  %unused = fp.param "unused" init <ones> : tensor<3xf32>
  %head = fp.slice %x[0 : 4] : tensor<?x?x6xf32> -> tensor<?x?x4xf32>
  %tail = fp.slice %x[4 : 6] : tensor<?x?x6xf32> -> tensor<?x?x2xf32>
  %vb = fp.broadcast %v, %tail dims [2] : tensor<2xf32>, tensor<?x?x2xf32>
  %vv = arith.mulf %vb, %vb : tensor<?x?x2xf32>
  %j = fp.concat %vv, %head : tensor<?x?x2xf32>, tensor<?x?x4xf32> -> tensor<?x?x6xf32>
  return %j : tensor<?x?x6xf32>
}

// -----

// The adjoint of the fixed point by mode, on one layer: the map
// f(y) = scan(c, shift(y) + x) iterated, then applied once more.

// truncated(3): two more applications of the map from the saved fixed
// point are recomputed and differentiated through; the cotangent reaching
// the saved fixed point itself is dropped.
// CHECK-LABEL: func.func @truncated_backward(
//  CHECK-SAME:     %[[X:[^:]*]]: tensor<?x?x4xf32>, %[[YSTAR:[^:]*]]: tensor<?x?x4xf32>, %[[G:[^:]*]]: tensor<?x?x4xf32>)
//   CHECK-NOT:   fp.fixed_point
//       CHECK:   fp.shift %[[YSTAR]] by 1
//       CHECK:   %[[Z1:.*]] = fp.scan
//       CHECK:   fp.shift %[[Z1]] by 1
//       CHECK:   %[[Z2:.*]] = fp.scan
//       CHECK:   fp.shift %[[Z2]] by 1
//       CHECK:   %[[Z3:.*]] = fp.scan
//   CHECK-COUNT-3:   fp.scan reverse
//   CHECK-NOT:   fp.scan reverse
//   CHECK-NOT:   fp.fixed_point
//       CHECK:   return
func.func @truncated(%x: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?xi32>) attributes {fp.layer} {
  %a = fp.param "a" init <ones> : tensor<4xf32>
  %c = fp.broadcast %a, %x dims [2] : tensor<4xf32>, tensor<?x?x4xf32>
  %r, %n = fp.fixed_point (%y = %x) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
      backward <truncated, steps = 3> {
    %s = fp.shift %y by 1 : tensor<?x?x4xf32>
    %u = arith.addf %s, %x : tensor<?x?x4xf32>
    %h = fp.scan %c, %u : tensor<?x?x4xf32>
    fp.yield %h : tensor<?x?x4xf32>
  }
  %s = fp.shift %r by 1 : tensor<?x?x4xf32>
  %u = arith.addf %s, %x : tensor<?x?x4xf32>
  %h = fp.scan %c, %u : tensor<?x?x4xf32>
  return %h, %n : tensor<?x?x4xf32>, tensor<?xi32>
}

// -----

// neumann(3): the cotangent ḡ reaching the fixed point becomes
// ḡ + J_yᵀ(ḡ + J_yᵀ ḡ) (two products by J_yᵀ, each a reverse scan and a
// shift back), then one more VJP of the map at the fixed point carries it
// into x and the parameters.
// CHECK-LABEL: func.func @neumann_backward(
//   CHECK-NOT:   fp.fixed_point
//       CHECK:   %[[HEAD:.*]] = fp.scan reverse %{{.*}}, %{{.*}}
//       CHECK:   %[[GBAR:.*]] = fp.shift %[[HEAD]] by -1
//       CHECK:   %[[P1:.*]] = fp.scan reverse %{{.*}}, %[[GBAR]]
//       CHECK:   %[[Q1:.*]] = fp.shift %[[P1]] by -1
//       CHECK:   %[[W1:.*]] = arith.addf %[[GBAR]], %[[Q1]]
//       CHECK:   %[[P2:.*]] = fp.scan reverse %{{.*}}, %[[W1]]
//       CHECK:   %[[Q2:.*]] = fp.shift %[[P2]] by -1
//       CHECK:   %[[W2:.*]] = arith.addf %[[GBAR]], %[[Q2]]
//       CHECK:   fp.scan reverse %{{.*}}, %[[W2]]
//   CHECK-NOT:   fp.fixed_point
//       CHECK:   return
func.func @neumann(%x: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?xi32>) attributes {fp.layer} {
  %a = fp.param "a" init <ones> : tensor<4xf32>
  %c = fp.broadcast %a, %x dims [2] : tensor<4xf32>, tensor<?x?x4xf32>
  %r, %n = fp.fixed_point (%y = %x) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
      backward <neumann, steps = 3> {
    %s = fp.shift %y by 1 : tensor<?x?x4xf32>
    %u = arith.addf %s, %x : tensor<?x?x4xf32>
    %h = fp.scan %c, %u : tensor<?x?x4xf32>
    fp.yield %h : tensor<?x?x4xf32>
  }
  %s = fp.shift %r by 1 : tensor<?x?x4xf32>
  %u = arith.addf %s, %x : tensor<?x?x4xf32>
  %h = fp.scan %c, %u : tensor<?x?x4xf32>
  return %h, %n : tensor<?x?x4xf32>, tensor<?xi32>
}

// -----

// implicit(1e-6): the adjoint of the fixed point is a fixed point,
// w = ḡ + J_yᵀ w, solved from ḡ by every sample to the mode's tolerance
// (quantile 1, no relaxation, the forward's evaluation cap); its solution
// goes through one more VJP of the map at the fixed point.
// CHECK-LABEL: func.func @implicit_backward(
//       CHECK:   %[[HEAD:.*]] = fp.scan reverse %{{.*}}, %{{.*}}
//       CHECK:   %[[GBAR:.*]] = fp.shift %[[HEAD]] by -1
//       CHECK:   %[[W:.*]], %{{.*}} = fp.fixed_point (%[[IT:.*]] = %[[GBAR]]) : tensor<?x?x4xf32>
//  CHECK-SAME:       solver <tolerance = 1.0e-06, quantile = 1.0, max_iter_train = 9, max_iter_eval = 9, relax_start = 1.0, relax_decay = 1.0, relax_patience = 3>
//       CHECK:     %[[P:.*]] = fp.scan reverse %{{.*}}, %[[IT]]
//       CHECK:     %[[Q:.*]] = fp.shift %[[P]] by -1
//       CHECK:     %[[NEXT:.*]] = arith.addf %[[GBAR]], %[[Q]]
//       CHECK:     fp.yield %[[NEXT]]
//       CHECK:   fp.scan reverse %{{.*}}, %[[W]]
//       CHECK:   return
func.func @implicit(%x: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?xi32>) attributes {fp.layer} {
  %a = fp.param "a" init <ones> : tensor<4xf32>
  %c = fp.broadcast %a, %x dims [2] : tensor<4xf32>, tensor<?x?x4xf32>
  %r, %n = fp.fixed_point (%y = %x) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
      backward <implicit, tolerance = 1.0e-06> {
    %s = fp.shift %y by 1 : tensor<?x?x4xf32>
    %u = arith.addf %s, %x : tensor<?x?x4xf32>
    %h = fp.scan %c, %u : tensor<?x?x4xf32>
    fp.yield %h : tensor<?x?x4xf32>
  }
  %s = fp.shift %r by 1 : tensor<?x?x4xf32>
  %u = arith.addf %s, %x : tensor<?x?x4xf32>
  %h = fp.scan %c, %u : tensor<?x?x4xf32>
  return %h, %n : tensor<?x?x4xf32>, tensor<?xi32>
}
