// RUN: fp-opt %s -split-input-file -fp-hoist-invariants | FileCheck %s
// RUN: fp-opt %s -split-input-file -fp-hoist-invariants=split-concat=false | FileCheck %s --check-prefix=NOSPLIT

// A weight-normalised map becomes an explicit normalisation; inside the loop
// its weight is invariant, so the normalisation leaves the loop.
// CHECK-LABEL: func.func @weight_norm_hoisted
//       CHECK:   %[[W:.*]] = fp.weight_norm %{{.*}}, %{{.*}} : tensor<8x8xf32>, tensor<8xf32>
//       CHECK:   fp.fixed_point
//       CHECK:     fp.linear %{{.*}}, %[[W]] :
//   CHECK-NOT:     gain
//   CHECK-NOT:     fp.weight_norm
//       CHECK:     fp.yield
func.func @weight_norm_hoisted(%y0: tensor<?x?x8xf32>, %v: tensor<8x8xf32>,
                               %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %r, %n = fp.fixed_point (%y = %y0) : tensor<?x?x8xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 10, max_iter_eval = 10, relax_start = 1.0, relax_decay = 0.9, relax_patience = 5>
      backward <one_step> {
    %l = fp.linear %y, %v gain %g : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
    fp.yield %l : tensor<?x?x8xf32>
  }
  return %r : tensor<?x?x8xf32>
}

// -----

// W [x; ȳ] with x invariant: the x block of the weight, its product with x
// and the bias are computed before the loop; only W_y ȳ stays inside.
// CHECK-LABEL: func.func @split_concat
//  CHECK-SAME:     (%[[Y0:.*]]: tensor<?x?x4xf32>, %[[X:.*]]: tensor<?x?x6xf32>, %[[W:.*]]: tensor<4x10xf32>, %[[B:.*]]: tensor<4xf32>)
//       CHECK:   %[[WX:.*]] = fp.slice %[[W]][0 : 6] : tensor<4x10xf32> -> tensor<4x6xf32>
//       CHECK:   %[[PX:.*]] = fp.linear %[[X]], %[[WX]] bias %[[B]]
//       CHECK:   %[[WY:.*]] = fp.slice %[[W]][6 : 10] : tensor<4x10xf32> -> tensor<4x4xf32>
//       CHECK:   fp.fixed_point (%[[Y:.*]] = %[[Y0]])
//       CHECK:     %[[S:.*]] = fp.shift %[[Y]] by 1
//       CHECK:     %[[PY:.*]] = fp.linear %[[S]], %[[WY]] :
//       CHECK:     %[[SUM:.*]] = arith.addf %[[PX]], %[[PY]]
//       CHECK:     fp.yield %[[SUM]]
// NOSPLIT-LABEL: func.func @split_concat
//       NOSPLIT:   fp.fixed_point
//       NOSPLIT:     fp.concat
//       NOSPLIT:     fp.linear
func.func @split_concat(%y0: tensor<?x?x4xf32>, %x: tensor<?x?x6xf32>,
                        %w: tensor<4x10xf32>, %b: tensor<4xf32>) -> tensor<?x?x4xf32> {
  %r, %n = fp.fixed_point (%y = %y0) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 10, max_iter_eval = 10, relax_start = 1.0, relax_decay = 0.9, relax_patience = 5>
      backward <one_step> {
    %s = fp.shift %y by 1 : tensor<?x?x4xf32>
    %p = fp.concat %x, %s : tensor<?x?x6xf32>, tensor<?x?x4xf32> -> tensor<?x?x10xf32>
    %l = fp.linear %p, %w bias %b : (tensor<?x?x10xf32>, tensor<4x10xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
    fp.yield %l : tensor<?x?x4xf32>
  }
  return %r : tensor<?x?x4xf32>
}

// -----

// Declined: every block of the concatenation depends on the iterate, so
// there is nothing to hoist.
// CHECK-LABEL: func.func @no_split_when_all_variant
//       CHECK:   fp.fixed_point
//       CHECK:     %[[P:.*]] = fp.concat
//       CHECK:     fp.linear %[[P]]
//   CHECK-NOT:     fp.slice
func.func @no_split_when_all_variant(%y0: tensor<?x?x4xf32>, %w: tensor<4x8xf32>) -> tensor<?x?x4xf32> {
  %r, %n = fp.fixed_point (%y = %y0) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 10, max_iter_eval = 10, relax_start = 1.0, relax_decay = 0.9, relax_patience = 5>
      backward <one_step> {
    %s = fp.shift %y by 1 : tensor<?x?x4xf32>
    %p = fp.concat %y, %s : tensor<?x?x4xf32>, tensor<?x?x4xf32> -> tensor<?x?x8xf32>
    %l = fp.linear %p, %w : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
    fp.yield %l : tensor<?x?x4xf32>
  }
  return %r : tensor<?x?x4xf32>
}

// -----

// Declined: outside a fixed-point loop a linear map of a concatenation is
// one GEMM and stays one.
// CHECK-LABEL: func.func @no_split_outside_loops
//       CHECK:   %[[P:.*]] = fp.concat
//       CHECK:   fp.linear %[[P]]
//   CHECK-NOT:   fp.slice
func.func @no_split_outside_loops(%x: tensor<?x?x4xf32>, %z: tensor<?x?x4xf32>,
                                  %w: tensor<4x8xf32>) -> tensor<?x?x4xf32> {
  %p = fp.concat %x, %z : tensor<?x?x4xf32>, tensor<?x?x4xf32> -> tensor<?x?x8xf32>
  %l = fp.linear %p, %w : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  return %l : tensor<?x?x4xf32>
}

// -----

// W (ȳ + x) with x invariant: W x and the bias before the loop, W ȳ inside,
// the sum after the GEMM.
// CHECK-LABEL: func.func @split_sum
//  CHECK-SAME:     (%[[Y0:.*]]: tensor<?x?x4xf32>, %[[X:.*]]: tensor<?x?x4xf32>, %[[W:.*]]: tensor<6x4xf32>, %[[B:.*]]: tensor<6xf32>)
//       CHECK:   %[[PX:.*]] = fp.linear %[[X]], %[[W]] bias %[[B]]
//       CHECK:   fp.fixed_point (%[[Y:.*]] = %[[Y0]])
//       CHECK:     %[[S:.*]] = fp.shift %[[Y]] by 1
//   CHECK-NOT:     arith.addf %[[S]]
//       CHECK:     %[[PY:.*]] = fp.linear %[[S]], %[[W]] :
//       CHECK:     %[[SUM:.*]] = arith.addf %[[PX]], %[[PY]]
//       CHECK:     fp.slice %[[SUM]]
// NOSPLIT-LABEL: func.func @split_sum
//       NOSPLIT:   fp.fixed_point
//       NOSPLIT:     arith.addf
//       NOSPLIT:     fp.linear
func.func @split_sum(%y0: tensor<?x?x4xf32>, %x: tensor<?x?x4xf32>,
                     %w: tensor<6x4xf32>, %b: tensor<6xf32>) -> tensor<?x?x4xf32> {
  %r, %n = fp.fixed_point (%y = %y0) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 10, max_iter_eval = 10, relax_start = 1.0, relax_decay = 0.9, relax_patience = 5>
      backward <one_step> {
    %s = fp.shift %y by 1 : tensor<?x?x4xf32>
    %p = arith.addf %s, %x : tensor<?x?x4xf32>
    %l = fp.linear %p, %w bias %b : (tensor<?x?x4xf32>, tensor<6x4xf32>, tensor<6xf32>) -> tensor<?x?x6xf32>
    %o = fp.slice %l[0 : 4] : tensor<?x?x6xf32> -> tensor<?x?x4xf32>
    fp.yield %o : tensor<?x?x4xf32>
  }
  return %r : tensor<?x?x4xf32>
}

// -----

// Declined: both terms of the sum depend on the iterate.
// CHECK-LABEL: func.func @no_split_when_sum_all_variant
//       CHECK:   fp.fixed_point
//       CHECK:     %[[P:.*]] = arith.addf
//       CHECK:     fp.linear %[[P]]
//   CHECK-NOT:     fp.linear
func.func @no_split_when_sum_all_variant(%y0: tensor<?x?x4xf32>, %w: tensor<4x4xf32>) -> tensor<?x?x4xf32> {
  %r, %n = fp.fixed_point (%y = %y0) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 10, max_iter_eval = 10, relax_start = 1.0, relax_decay = 0.9, relax_patience = 5>
      backward <one_step> {
    %s = fp.shift %y by 1 : tensor<?x?x4xf32>
    %p = arith.addf %s, %y : tensor<?x?x4xf32>
    %l = fp.linear %p, %w : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
    fp.yield %l : tensor<?x?x4xf32>
  }
  return %r : tensor<?x?x4xf32>
}

// -----

// Invariant elementwise work leaves the loop; work on the iterate stays.
// CHECK-LABEL: func.func @licm
//       CHECK:   %[[E:.*]] = math.exp
//       CHECK:   %[[N:.*]] = arith.negf %[[E]]
//       CHECK:   fp.fixed_point (%[[Y:.*]] = %{{.*}})
//       CHECK:     arith.mulf %[[N]], %[[Y]]
//   CHECK-NOT:     math.exp
func.func @licm(%y0: tensor<?x?x4xf32>, %a: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %r, %n = fp.fixed_point (%y = %y0) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 10, max_iter_eval = 10, relax_start = 1.0, relax_decay = 0.9, relax_patience = 5>
      backward <one_step> {
    %e = math.exp %a : tensor<?x?x4xf32>
    %ne = arith.negf %e : tensor<?x?x4xf32>
    %m = arith.mulf %ne, %y : tensor<?x?x4xf32>
    fp.yield %m : tensor<?x?x4xf32>
  }
  return %r : tensor<?x?x4xf32>
}
