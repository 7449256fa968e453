// RUN: fp-opt %s -split-input-file -fp-narrow-to-slices | FileCheck %s

// The adjoint of a linear map of [x; ȳ] plus another cotangent, of which
// only x's columns are read: the slice moves through the sum into the
// transposed weight (and the bias), so the GEMM computes 4 columns, not 8.
// CHECK-LABEL: func.func @adjoint
//  CHECK-SAME:     (%[[DU:.*]]: tensor<?x?x6xf32>, %[[W:.*]]: tensor<6x8xf32>, %[[B:.*]]: tensor<8xf32>, %[[E:.*]]: tensor<?x?x8xf32>)
//   CHECK-NOT:   tensor<?x?x8xf32> {
//       CHECK:   %[[WX:.*]] = fp.slice %[[W]][0 : 4] : tensor<6x8xf32> -> tensor<6x4xf32>
//       CHECK:   %[[WXT:.*]] = fp.transpose %[[WX]] : tensor<6x4xf32> -> tensor<4x6xf32>
//       CHECK:   %[[BX:.*]] = fp.slice %[[B]][0 : 4] : tensor<8xf32> -> tensor<4xf32>
//       CHECK:   %[[D:.*]] = fp.linear %[[DU]], %[[WXT]] bias %[[BX]] : (tensor<?x?x6xf32>, tensor<4x6xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
//       CHECK:   %[[EX:.*]] = fp.slice %[[E]][0 : 4]
//       CHECK:   %[[S:.*]] = arith.addf %[[D]], %[[EX]] : tensor<?x?x4xf32>
//       CHECK:   %[[M:.*]] = arith.mulf %[[S]], %[[S]] : tensor<?x?x4xf32>
//   CHECK-NOT:   tensor<?x?x8xf32>
//       CHECK:   return %[[M]]
func.func @adjoint(%du: tensor<?x?x6xf32>, %w: tensor<6x8xf32>, %b: tensor<8xf32>, %e: tensor<?x?x8xf32>) -> tensor<?x?x4xf32> {
  %wt = fp.transpose %w : tensor<6x8xf32> -> tensor<8x6xf32>
  %d = fp.linear %du, %wt bias %b : (tensor<?x?x6xf32>, tensor<8x6xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %s = arith.addf %d, %e : tensor<?x?x8xf32>
  %m = arith.mulf %s, %s : tensor<?x?x8xf32>
  %dx = fp.slice %m[0 : 4] : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
  return %dx : tensor<?x?x4xf32>
}

// -----

// What something else reads too is computed in full: a sum read twice, a
// product read twice, and a weight not given transposed (its output
// columns are rows of the weight).
// CHECK-LABEL: func.func @read_elsewhere
//       CHECK:   %[[S:.*]] = arith.addf %{{.*}}, %{{.*}} : tensor<?x?x8xf32>
//       CHECK:   fp.slice %[[S]][0 : 4]
//       CHECK:   %[[D:.*]] = fp.linear %{{.*}}, %{{.*}} : (tensor<?x?x6xf32>, tensor<8x6xf32>) -> tensor<?x?x8xf32>
//       CHECK:   fp.slice %[[D]][4 : 8]
//       CHECK:   %[[P:.*]] = fp.linear %{{.*}}, %{{.*}} : (tensor<?x?x6xf32>, tensor<8x6xf32>) -> tensor<?x?x8xf32>
//       CHECK:   fp.slice %[[P]][0 : 4]
func.func @read_elsewhere(%du: tensor<?x?x6xf32>, %w: tensor<6x8xf32>, %v: tensor<8x6xf32>, %e: tensor<?x?x8xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<?x?x8xf32>, tensor<?x?x4xf32>) {
  %s = arith.addf %e, %e : tensor<?x?x8xf32>
  %s0 = fp.slice %s[0 : 4] : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
  %wt = fp.transpose %w : tensor<6x8xf32> -> tensor<8x6xf32>
  %d = fp.linear %du, %wt : (tensor<?x?x6xf32>, tensor<8x6xf32>) -> tensor<?x?x8xf32>
  %d1 = fp.slice %d[4 : 8] : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
  %p = fp.linear %du, %v : (tensor<?x?x6xf32>, tensor<8x6xf32>) -> tensor<?x?x8xf32>
  %p0 = fp.slice %p[0 : 4] : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
  return %s0, %s, %d1, %d, %p0 : tensor<?x?x4xf32>, tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<?x?x8xf32>, tensor<?x?x4xf32>
}

// -----

// Slices of a concatenation's input, of splats, of a slice, and of all
// columns. A slice across two inputs stays.
// CHECK-LABEL: func.func @layout
//  CHECK-SAME:     (%[[A:.*]]: tensor<?x?x4xf32>, %[[B:.*]]: tensor<?x?x4xf32>, %[[C:.*]]: tensor<?x?x8xf32>, %[[F:.*]]: f32, %[[N:.*]]: index)
//       CHECK:   %[[CAT:.*]] = fp.concat %[[A]], %[[B]]
//       CHECK:   %[[B1:.*]] = fp.slice %[[B]][1 : 3] : tensor<?x?x4xf32> -> tensor<?x?x2xf32>
//       CHECK:   %[[MID:.*]] = fp.slice %[[CAT]][2 : 6]
//       CHECK:   %[[SP:.*]] = tensor.splat %[[F]][%[[N]], %[[N]]] : tensor<?x?x3xf32>
//       CHECK:   %[[K:.*]] = arith.constant dense<2.500000e-01> : tensor<4x3xf32>
//       CHECK:   %[[C3:.*]] = fp.slice %[[C]][3 : 5] : tensor<?x?x8xf32> -> tensor<?x?x2xf32>
//       CHECK:   return %[[B1]], %[[MID]], %[[A]], %[[SP]], %[[K]], %[[C3]], %[[C]]
func.func @layout(%a: tensor<?x?x4xf32>, %b: tensor<?x?x4xf32>, %c: tensor<?x?x8xf32>, %f: f32, %n: index) -> (tensor<?x?x2xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x3xf32>, tensor<4x3xf32>, tensor<?x?x2xf32>, tensor<?x?x8xf32>) {
  %cat = fp.concat %a, %b : tensor<?x?x4xf32>, tensor<?x?x4xf32> -> tensor<?x?x8xf32>
  %in_b = fp.slice %cat[5 : 7] : tensor<?x?x8xf32> -> tensor<?x?x2xf32>
  %across = fp.slice %cat[2 : 6] : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
  %all_a = fp.slice %cat[0 : 4] : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
  %splat = tensor.splat %f[%n, %n] : tensor<?x?x8xf32>
  %sp = fp.slice %splat[2 : 5] : tensor<?x?x8xf32> -> tensor<?x?x3xf32>
  %k8 = arith.constant dense<0.25> : tensor<4x8xf32>
  %k = fp.slice %k8[0 : 3] : tensor<4x8xf32> -> tensor<4x3xf32>
  %c6 = fp.slice %c[1 : 7] : tensor<?x?x8xf32> -> tensor<?x?x6xf32>
  %c3 = fp.slice %c6[2 : 4] : tensor<?x?x6xf32> -> tensor<?x?x2xf32>
  %call = fp.slice %c[0 : 8] : tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %in_b, %across, %all_a, %sp, %k, %c3, %call : tensor<?x?x2xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x3xf32>, tensor<4x3xf32>, tensor<?x?x2xf32>, tensor<?x?x8xf32>
}

// -----

// Inside a fixed-point body nothing moves.
// CHECK-LABEL: func.func @in_loop
//       CHECK:   fp.fixed_point
//       CHECK:     %[[S:.*]] = arith.addf %{{.*}}, %{{.*}} : tensor<?x?x8xf32>
//       CHECK:     fp.slice %[[S]][0 : 4]
func.func @in_loop(%y0: tensor<?x?x4xf32>, %e: tensor<?x?x8xf32>) -> tensor<?x?x4xf32> {
  %r, %n = fp.fixed_point (%y = %y0) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 10, max_iter_eval = 10, relax_start = 1.0, relax_decay = 0.9, relax_patience = 5>
      backward <one_step> {
    %s = arith.addf %e, %e : tensor<?x?x8xf32>
    %s0 = fp.slice %s[0 : 4] : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
    %t = arith.addf %s0, %y : tensor<?x?x4xf32>
    fp.yield %t : tensor<?x?x4xf32>
  }
  return %r : tensor<?x?x4xf32>
}
