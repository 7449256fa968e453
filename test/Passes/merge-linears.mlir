// RUN: fp-opt %s -split-input-file -fp-merge-linears=row-multiple=1 | FileCheck %s
// RUN: fp-opt %s -split-input-file -fp-merge-linears | FileCheck %s --check-prefix=PAD

// Three maps of the shifted iterate with invariant weights: the weights are
// stacked by rows before the loop (flattened, concatenated, reshaped), one
// GEMM remains in the body and each former result is a slice of it.
// CHECK-LABEL: func.func @three_maps
//  CHECK-SAME:     (%[[Y0:.*]]: tensor<?x?x4xf32>, %[[W0:.*]]: tensor<4x4xf32>, %[[W1:.*]]: tensor<1x4xf32>, %[[W2:.*]]: tensor<2x4xf32>)
//       CHECK:   %[[F0:.*]] = fp.reshape %[[W0]] : tensor<4x4xf32> -> tensor<16xf32>
//       CHECK:   %[[F1:.*]] = fp.reshape %[[W1]] : tensor<1x4xf32> -> tensor<4xf32>
//       CHECK:   %[[F2:.*]] = fp.reshape %[[W2]] : tensor<2x4xf32> -> tensor<8xf32>
//       CHECK:   %[[FLAT:.*]] = fp.concat %[[F0]], %[[F1]], %[[F2]] : tensor<16xf32>, tensor<4xf32>, tensor<8xf32> -> tensor<28xf32>
//       CHECK:   %[[W:.*]] = fp.reshape %[[FLAT]] : tensor<28xf32> -> tensor<7x4xf32>
//       CHECK:   fp.fixed_point (%[[Y:.*]] = %[[Y0]])
//       CHECK:     %[[S:.*]] = fp.shift %[[Y]] by 1
//       CHECK:     %[[ALL:.*]] = fp.linear %[[S]], %[[W]] : (tensor<?x?x4xf32>, tensor<7x4xf32>) -> tensor<?x?x7xf32>
//   CHECK-DAG:     %[[U:.*]] = fp.slice %[[ALL]][0 : 4] : tensor<?x?x7xf32> -> tensor<?x?x4xf32>
//   CHECK-DAG:     %[[G:.*]] = fp.slice %[[ALL]][4 : 5] : tensor<?x?x7xf32> -> tensor<?x?x1xf32>
//   CHECK-DAG:     %[[BC:.*]] = fp.slice %[[ALL]][5 : 7] : tensor<?x?x7xf32> -> tensor<?x?x2xf32>
//   CHECK-NOT:     fp.linear
//       CHECK:     fp.reshape %[[G]]
//       CHECK:     fp.reduce_sum %[[BC]]
// With the default row-multiple (8), a zero row pads the stacked weight
// from 7 to 8 rows, so that the GEMM's result rows stay aligned; no slice
// reads its column.
// PAD-LABEL: func.func @three_maps
//       PAD:   %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<1x4xf32>
//       PAD:   %[[ZF:.*]] = fp.reshape %[[Z]] : tensor<1x4xf32> -> tensor<4xf32>
//       PAD:   %[[FLAT:.*]] = fp.concat %{{.*}}, %{{.*}}, %{{.*}}, %[[ZF]] : tensor<16xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32> -> tensor<32xf32>
//       PAD:   %[[W:.*]] = fp.reshape %[[FLAT]] : tensor<32xf32> -> tensor<8x4xf32>
//       PAD:     %[[ALL:.*]] = fp.linear %{{.*}}, %[[W]] : (tensor<?x?x4xf32>, tensor<8x4xf32>) -> tensor<?x?x8xf32>
//  PAD-NEXT:     fp.slice %[[ALL]][0 : 4] : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
//  PAD-NEXT:     fp.slice %[[ALL]][4 : 5] : tensor<?x?x8xf32> -> tensor<?x?x1xf32>
//  PAD-NEXT:     fp.slice %[[ALL]][5 : 7] : tensor<?x?x8xf32> -> tensor<?x?x2xf32>
//   PAD-NOT:     fp.slice
func.func @three_maps(%y0: tensor<?x?x4xf32>, %w0: tensor<4x4xf32>,
                      %w1: tensor<1x4xf32>, %w2: tensor<2x4xf32>) -> tensor<?x?x4xf32> {
  %r, %n = fp.fixed_point (%y = %y0) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 10, max_iter_eval = 10, relax_start = 1.0, relax_decay = 0.9, relax_patience = 5>
      backward <one_step> {
    %s = fp.shift %y by 1 : tensor<?x?x4xf32>
    %u = fp.linear %s, %w0 : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
    %g = fp.linear %s, %w1 : (tensor<?x?x4xf32>, tensor<1x4xf32>) -> tensor<?x?x1xf32>
    %bc = fp.linear %s, %w2 : (tensor<?x?x4xf32>, tensor<2x4xf32>) -> tensor<?x?x2xf32>
    %g2 = fp.reshape %g : tensor<?x?x1xf32> -> tensor<?x?xf32>
    %gb = fp.broadcast %g2, %u dims [0, 1] : tensor<?x?xf32>, tensor<?x?x4xf32>
    %v = arith.mulf %gb, %u : tensor<?x?x4xf32>
    %c = fp.reduce_sum %bc dims [2] : tensor<?x?x2xf32> -> tensor<?x?xf32>
    %cb = fp.broadcast %c, %v dims [0, 1] : tensor<?x?xf32>, tensor<?x?x4xf32>
    %out = arith.addf %v, %cb : tensor<?x?x4xf32>
    fp.yield %out : tensor<?x?x4xf32>
  }
  return %r : tensor<?x?x4xf32>
}

// -----

// One member has a bias: the stacked bias is its bias next to zeros for the
// other member.
// CHECK-LABEL: func.func @one_bias
//  CHECK-SAME:     (%[[Y0:.*]]: tensor<?x?x4xf32>, %[[W0:.*]]: tensor<4x4xf32>, %[[W1:.*]]: tensor<1x4xf32>, %[[B1:.*]]: tensor<1xf32>)
//       CHECK:   %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<4xf32>
//       CHECK:   %[[W:.*]] = fp.reshape %{{.*}} : tensor<20xf32> -> tensor<5x4xf32>
//       CHECK:   %[[B:.*]] = fp.concat %[[ZERO]], %[[B1]] : tensor<4xf32>, tensor<1xf32> -> tensor<5xf32>
//       CHECK:   fp.fixed_point
//       CHECK:     fp.linear %[[Y:.*]], %[[W]] bias %[[B]] : (tensor<?x?x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<?x?x5xf32>
//   CHECK-NOT:     fp.linear
//       CHECK:     fp.yield
// Padded, the stacked bias gets zeros for the padding rows too.
// PAD-LABEL: func.func @one_bias
//       PAD:   %[[ZB:.*]] = arith.constant dense<0.000000e+00> : tensor<3xf32>
//       PAD:   %[[B:.*]] = fp.concat %{{.*}}, %{{.*}}, %[[ZB]] : tensor<4xf32>, tensor<1xf32>, tensor<3xf32> -> tensor<8xf32>
//       PAD:     fp.linear %{{.*}}, %{{.*}} bias %[[B]] : (tensor<?x?x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
func.func @one_bias(%y0: tensor<?x?x4xf32>, %w0: tensor<4x4xf32>,
                    %w1: tensor<1x4xf32>, %b1: tensor<1xf32>) -> tensor<?x?x4xf32> {
  %r, %n = fp.fixed_point (%y = %y0) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 10, max_iter_eval = 10, relax_start = 1.0, relax_decay = 0.9, relax_patience = 5>
      backward <one_step> {
    %u = fp.linear %y, %w0 : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
    %g = fp.linear %y, %w1 bias %b1 : (tensor<?x?x4xf32>, tensor<1x4xf32>, tensor<1xf32>) -> tensor<?x?x1xf32>
    %g2 = fp.reshape %g : tensor<?x?x1xf32> -> tensor<?x?xf32>
    %gb = fp.broadcast %g2, %u dims [0, 1] : tensor<?x?xf32>, tensor<?x?x4xf32>
    %v = arith.mulf %gb, %u : tensor<?x?x4xf32>
    fp.yield %v : tensor<?x?x4xf32>
  }
  return %r : tensor<?x?x4xf32>
}

// -----

// Declined: different inputs, a weight computed in the body, a
// weight-normalised map, and a lone map outside any loop.
// CHECK-LABEL: func.func @declined
//       CHECK:   fp.linear %{{.*}}, %{{.*}} : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
//       CHECK:   fp.fixed_point
//       CHECK:     fp.linear %[[A:.*]], %{{.*}} :
//       CHECK:     fp.linear %[[A]], %{{.*}} gain
//       CHECK:     %[[WB:.*]] = arith.mulf
//       CHECK:     fp.linear %[[A]], %[[WB]] :
//       CHECK:     fp.linear %[[Y:.*]], %{{.*}} :
//       CHECK:     fp.yield
//   CHECK-NOT:   fp.concat
func.func @declined(%y0: tensor<?x?x4xf32>, %x: tensor<?x?x4xf32>,
                    %w0: tensor<4x4xf32>, %w1: tensor<4x4xf32>,
                    %g: tensor<4xf32>) -> tensor<?x?x4xf32> {
  %h = fp.linear %x, %w0 : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
  %r, %n = fp.fixed_point (%y = %y0) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 10, max_iter_eval = 10, relax_start = 1.0, relax_decay = 0.9, relax_patience = 5>
      backward <one_step> {
    %a = fp.shift %y by 1 : tensor<?x?x4xf32>
    %u = fp.linear %a, %w0 : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
    %v = fp.linear %a, %w1 gain %g : (tensor<?x?x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
    %wb = arith.mulf %w0, %w1 : tensor<4x4xf32>
    %q = fp.linear %a, %wb : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
    %z = fp.linear %y, %w1 : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
    %s0 = arith.addf %u, %v : tensor<?x?x4xf32>
    %s1 = arith.addf %s0, %q : tensor<?x?x4xf32>
    %s2 = arith.addf %s1, %z : tensor<?x?x4xf32>
    %s3 = arith.addf %s2, %h : tensor<?x?x4xf32>
    fp.yield %s3 : tensor<?x?x4xf32>
  }
  return %r : tensor<?x?x4xf32>
}

// -----

// After the loop, maps of one input with the merged group's weights and
// biases, in order (the step after the solve), read the stacked weight and
// bias: one GEMM. Maps with the weights in another order, or only some of
// them, stay as they are.
// CHECK-LABEL: func.func @after_the_loop
//  CHECK-SAME:     (%[[Y0:.*]]: tensor<?x?x4xf32>, %[[W0:.*]]: tensor<4x4xf32>, %[[W1:.*]]: tensor<1x4xf32>, %[[B1:.*]]: tensor<1xf32>)
//       CHECK:   %[[W:.*]] = fp.reshape {{.*}} : tensor<20xf32> -> tensor<5x4xf32>
//       CHECK:   %[[B:.*]] = fp.concat {{.*}} : tensor<4xf32>, tensor<1xf32> -> tensor<5xf32>
//       CHECK:   %[[R:.*]], %{{.*}} = fp.fixed_point
//       CHECK:   %[[ALL:.*]] = fp.linear %[[R]], %[[W]] bias %[[B]] : (tensor<?x?x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<?x?x5xf32>
//   CHECK-DAG:   %[[U:.*]] = fp.slice %[[ALL]][0 : 4]
//   CHECK-DAG:   %[[G:.*]] = fp.slice %[[ALL]][4 : 5]
//       CHECK:   %[[G1:.*]] = fp.linear %[[Y0]], %[[W1]] bias %[[B1]]
//       CHECK:   %[[U1:.*]] = fp.linear %[[Y0]], %[[W0]] :
//       CHECK:   %[[U2:.*]] = fp.linear %[[U]], %[[W0]] :
//       CHECK:   return %[[U]], %[[G]], %[[G1]], %[[U1]], %[[U2]]
func.func @after_the_loop(%y0: tensor<?x?x4xf32>, %w0: tensor<4x4xf32>,
                          %w1: tensor<1x4xf32>, %b1: tensor<1xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x1xf32>, tensor<?x?x1xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  %r, %n = fp.fixed_point (%y = %y0) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 10, max_iter_eval = 10, relax_start = 1.0, relax_decay = 0.9, relax_patience = 5>
      backward <one_step> {
    %u = fp.linear %y, %w0 : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
    %g = fp.linear %y, %w1 bias %b1 : (tensor<?x?x4xf32>, tensor<1x4xf32>, tensor<1xf32>) -> tensor<?x?x1xf32>
    %g2 = fp.reshape %g : tensor<?x?x1xf32> -> tensor<?x?xf32>
    %gb = fp.broadcast %g2, %u dims [0, 1] : tensor<?x?xf32>, tensor<?x?x4xf32>
    %out = arith.mulf %gb, %u : tensor<?x?x4xf32>
    fp.yield %out : tensor<?x?x4xf32>
  }
  %u = fp.linear %r, %w0 : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
  %g = fp.linear %r, %w1 bias %b1 : (tensor<?x?x4xf32>, tensor<1x4xf32>, tensor<1xf32>) -> tensor<?x?x1xf32>
  %g1 = fp.linear %y0, %w1 bias %b1 : (tensor<?x?x4xf32>, tensor<1x4xf32>, tensor<1xf32>) -> tensor<?x?x1xf32>
  %u1 = fp.linear %y0, %w0 : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
  %u2 = fp.linear %u, %w0 : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
  return %u, %g, %g1, %u1, %u2 : tensor<?x?x4xf32>, tensor<?x?x1xf32>, tensor<?x?x1xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>
}
