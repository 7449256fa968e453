// RUN: fp-opt %s -split-input-file -fp-lower-fixed-point | FileCheck %s
// RUN: fp-opt %s -split-input-file -fp-lower-fixed-point | fp-opt -split-input-file | FileCheck %s

// One iterate: the solver state is created before the loop with the loop's
// settings; the condition is the continue rule; the step is the body, then
// residual and relaxation, then the bookkeeping. The loop's results are the
// relaxed iterates; the counts come from the solver.
// CHECK-LABEL: func.func @one
//  CHECK-SAME:     (%[[U:.*]]: tensor<?x?x4xf32>, %[[X:.*]]: tensor<?x?x4xf32>)
//       CHECK:   %[[S:.*]] = fp.solver_init %[[U]] solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3> backward <truncated, steps = 2> : tensor<?x?x4xf32>
//       CHECK:   %[[R:.*]] = scf.while (%[[Y:.*]] = %[[U]]) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
//       CHECK:     %[[GO:.*]] = fp.solver_continue %[[S]]
//       CHECK:     scf.condition(%[[GO]]) %[[Y]] : tensor<?x?x4xf32>
//       CHECK:   } do {
//       CHECK:   ^bb0(%[[IT:.*]]: tensor<?x?x4xf32>):
//       CHECK:     %[[SH:.*]] = fp.shift %[[IT]] by 1
//       CHECK:     %[[F:.*]] = arith.addf %[[SH]], %[[X]]
//       CHECK:     %[[N:.*]] = fp.solver_relax %[[S]], %[[IT]], %[[F]] : tensor<?x?x4xf32>
//       CHECK:     fp.solver_update %[[S]]
//       CHECK:     scf.yield %[[N]] : tensor<?x?x4xf32>
//       CHECK:   }
//       CHECK:   %[[C:.*]] = fp.solver_iterations %[[S]] : tensor<?xi32>
//       CHECK:   return %[[R]], %[[C]]
//   CHECK-NOT: fp.fixed_point
func.func @one(%u: tensor<?x?x4xf32>, %x: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?xi32>) {
  %r, %n = fp.fixed_point (%y = %u) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
      backward <truncated, steps = 2> {
    %s = fp.shift %y by 1 : tensor<?x?x4xf32>
    %t = arith.addf %s, %x : tensor<?x?x4xf32>
    fp.yield %t : tensor<?x?x4xf32>
  }
  return %r, %n : tensor<?x?x4xf32>, tensor<?xi32>
}

// -----

// Several iterates: one relaxation each, in order, all before the single
// bookkeeping step, so that every iterate is relaxed with the same step
// size and the residual is the maximum over them.
// CHECK-LABEL: func.func @two
//       CHECK:   %[[S:.*]] = fp.solver_init
//       CHECK:   %[[R:.*]]:2 = scf.while (%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) : (tensor<?x?x4xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x2xf32>)
//       CHECK:   ^bb0(%[[Y:.*]]: tensor<?x?x4xf32>, %[[Z:.*]]: tensor<?x?x2xf32>):
//       CHECK:     %[[FY:.*]] = fp.shift %[[Y]]
//       CHECK:     %[[FZ:.*]] = fp.silu %[[Z]]
//       CHECK:     %[[NY:.*]] = fp.solver_relax %[[S]], %[[Y]], %[[FY]] : tensor<?x?x4xf32>
//       CHECK:     %[[NZ:.*]] = fp.solver_relax %[[S]], %[[Z]], %[[FZ]] : tensor<?x?x2xf32>
//       CHECK:     fp.solver_update %[[S]]
//       CHECK:     scf.yield %[[NY]], %[[NZ]]
//       CHECK:   return %[[R]]#1
func.func @two(%u: tensor<?x?x4xf32>, %v: tensor<?x?x2xf32>) -> tensor<?x?x2xf32> {
  %r:2, %n = fp.fixed_point (%y = %u, %z = %v) : tensor<?x?x4xf32>, tensor<?x?x2xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
      backward <one_step> {
    %s = fp.shift %y by 1 : tensor<?x?x4xf32>
    %t = fp.silu %z : tensor<?x?x2xf32>
    fp.yield %s, %t : tensor<?x?x4xf32>, tensor<?x?x2xf32>
  }
  return %r#1 : tensor<?x?x2xf32>
}

// -----

// A fused body: the kernel stays in the step; the relaxation reads its
// result.
// CHECK-LABEL: func.func @fused
//       CHECK:   scf.while
//       CHECK:   } do {
//       CHECK:     %[[K:.*]] = fp.kernel
//       CHECK:     fp.solver_relax %{{.*}}, %{{.*}}, %[[K]]
func.func @fused(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %r, %n = fp.fixed_point (%y = %u) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
      backward <one_step> {
    %k = fp.kernel (%a = %y) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
      %s = fp.silu %a : tensor<?x?x4xf32>
      %g = fp.sigmoid %s : tensor<?x?x4xf32>
      fp.yield %g : tensor<?x?x4xf32>
    }
    fp.yield %k : tensor<?x?x4xf32>
  }
  return %r : tensor<?x?x4xf32>
}

// -----

// Nested loops are lowered inside out: the inner loop's solver lives in the
// outer loop's step.
// CHECK-LABEL: func.func @nested
//       CHECK:   %[[OUTER:.*]] = fp.solver_init
//       CHECK:   scf.while
//       CHECK:   } do {
//       CHECK:     %[[INNER:.*]] = fp.solver_init
//       CHECK:     scf.while
//       CHECK:       fp.solver_continue %[[INNER]]
//       CHECK:       fp.solver_update %[[INNER]]
//       CHECK:     fp.solver_update %[[OUTER]]
//   CHECK-NOT: fp.fixed_point
func.func @nested(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %r, %n = fp.fixed_point (%y = %u) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
      backward <one_step> {
    %q, %m = fp.fixed_point (%z = %y) : tensor<?x?x4xf32>
        solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
        backward <one_step> {
      %s = fp.silu %z : tensor<?x?x4xf32>
      fp.yield %s : tensor<?x?x4xf32>
    }
    fp.yield %q : tensor<?x?x4xf32>
  }
  return %r : tensor<?x?x4xf32>
}

// -----

// Declined: a function without a fixed-point loop is unchanged.
// CHECK-LABEL: func.func @plain
//  CHECK-NEXT:   fp.silu
//  CHECK-NEXT:   return
func.func @plain(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %s = fp.silu %u : tensor<?x?x4xf32>
  return %s : tensor<?x?x4xf32>
}
