// RUN: fp-opt %s | FileCheck %s
// RUN: fp-opt %s | fp-opt | FileCheck %s
// RUN: fp-opt %s --mlir-print-op-generic | fp-opt | FileCheck %s

// Every fp op in its custom form, printed, re-parsed, and through the
// generic form.

// CHECK-LABEL: func.func @params
func.func @params() {
  // CHECK: fp.param "in_proj" init <fan_in_uniform> decay : tensor<64x16xf32>
  %0 = fp.param "in_proj" init <fan_in_uniform> decay : tensor<64x16xf32>
  // CHECK: fp.param "out_proj" init <fan_in_uniform(0.7071)> decay : tensor<16x32xf32>
  %1 = fp.param "out_proj" init <fan_in_uniform(0.7071)> decay : tensor<16x32xf32>
  // CHECK: fp.param "A_log" init <s4d_real> : tensor<32x4xf32>
  %2 = fp.param "A_log" init <s4d_real> : tensor<32x4xf32>
  // CHECK: fp.param "dt_bias" init <dt_bias(0.001, 0.1, 0.0001)> : tensor<32xf32>
  %3 = fp.param "dt_bias" init <dt_bias(0.001, 0.1, 0.0001)> : tensor<32xf32>
  // CHECK: fp.param "g" init <row_norm of "V"> decay : tensor<8xf64>
  %4 = fp.param "g" init <row_norm of "V"> decay : tensor<8xf64>
  // CHECK: fp.param "b" init <uniform(-0.5, 0.5)> : tensor<8xf32>
  %5 = fp.param "b" init <uniform(-0.5, 0.5)> : tensor<8xf32>
  // CHECK: fp.param "e" init <normal(0.0, 0.02)> : tensor<67x16xf32>
  %6 = fp.param "e" init <normal(0.0, 0.02)> : tensor<67x16xf32>
  // CHECK: fp.param "D" init <ones> : tensor<32xf32>
  %7 = fp.param "D" init <ones> : tensor<32xf32>
  // CHECK: fp.param "z" init <zeros> : tensor<32xf32>
  %8 = fp.param "z" init <zeros> : tensor<32xf32>
  // CHECK: fp.param "c" init <constant(2.5)> : tensor<32xf32>
  %9 = fp.param "c" init <constant(2.5)> : tensor<32xf32>
  return
}

// CHECK-LABEL: func.func @fixed_point
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x8xf32>)
func.func @fixed_point(%x: tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<?xi32>) {
  // CHECK: %[[Y:.*]], %[[N:.*]] = fp.fixed_point (%[[IT:.*]] = %[[X]]) : tensor<?x?x8xf32>
  // CHECK-SAME: solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15>
  // CHECK-SAME: backward <one_step> {
  %y, %n = fp.fixed_point (%it = %x) : tensor<?x?x8xf32>
      solver <tolerance = 1.000000e-01, quantile = 7.500000e-01,
              max_iter_train = 100, max_iter_eval = 1000,
              relax_start = 9.900000e-01, relax_decay = 9.000000e-01,
              relax_patience = 15>
      backward <one_step> {
    // CHECK: %[[S:.*]] = fp.shift %[[IT]] by 1
    %s = fp.shift %it by 1 : tensor<?x?x8xf32>
    // CHECK: fp.yield %[[S]] : tensor<?x?x8xf32>
    fp.yield %s : tensor<?x?x8xf32>
  }
  // CHECK: return %[[Y]], %[[N]] : tensor<?x?x8xf32>, tensor<?xi32>
  return %y, %n : tensor<?x?x8xf32>, tensor<?xi32>
}

// CHECK-LABEL: func.func @fixed_point_two_iterates
func.func @fixed_point_two_iterates(%a: tensor<4x?x8xf64>, %b: tensor<4x?x2x3xf64>) -> tensor<4xi32> {
  // CHECK: fp.fixed_point (%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) : tensor<4x?x8xf64>, tensor<4x?x2x3xf64>
  // CHECK-SAME: backward <implicit, tolerance = 1.0e-06>
  // CHECK-SAME: attributes {note = "two"}
  %r:3 = fp.fixed_point (%ia = %a, %ib = %b) : tensor<4x?x8xf64>, tensor<4x?x2x3xf64>
      solver <tolerance = 1.0e-3, quantile = 1.0, max_iter_train = 1,
              max_iter_eval = 1, relax_start = 1.0, relax_decay = 1.0,
              relax_patience = 1>
      backward <implicit, tolerance = 1.0e-6> attributes {note = "two"} {
    // CHECK: fp.yield %{{.*}}, %{{.*}} : tensor<4x?x8xf64>, tensor<4x?x2x3xf64>
    fp.yield %ia, %ib : tensor<4x?x8xf64>, tensor<4x?x2x3xf64>
  }
  // CHECK: tensor<4xi32>
  return %r#2 : tensor<4xi32>
}

// CHECK-LABEL: func.func @backward_modes
func.func @backward_modes(%x: tensor<?x?x8xf32>) {
  // CHECK: backward <truncated, steps = 4>
  %0:2 = fp.fixed_point (%i = %x) : tensor<?x?x8xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 100,
              max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9,
              relax_patience = 15>
      backward <truncated, steps = 4> {
    fp.yield %i : tensor<?x?x8xf32>
  }
  // CHECK: backward <neumann, steps = 8>
  %1:2 = fp.fixed_point (%i = %x) : tensor<?x?x8xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 100,
              max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9,
              relax_patience = 15>
      backward <neumann, steps = 8> {
    fp.yield %i : tensor<?x?x8xf32>
  }
  return
}

// CHECK-LABEL: func.func @linear
func.func @linear(%x: tensor<?x?x16xf32>, %w: tensor<32x16xf32>,
                  %g: tensor<32xf32>, %b: tensor<32xf32>) {
  // CHECK: fp.linear %{{.*}}, %{{.*}} : (tensor<?x?x16xf32>, tensor<32x16xf32>) -> tensor<?x?x32xf32>
  %0 = fp.linear %x, %w : (tensor<?x?x16xf32>, tensor<32x16xf32>) -> tensor<?x?x32xf32>
  // CHECK: fp.linear %{{.*}}, %{{.*}} bias %{{.*}} : (tensor<?x?x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %1 = fp.linear %x, %w bias %b : (tensor<?x?x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  // CHECK: fp.linear %{{.*}}, %{{.*}} gain %{{.*}} bias %{{.*}} : (tensor<?x?x16xf32>, tensor<32x16xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %2 = fp.linear %x, %w gain %g bias %b : (tensor<?x?x16xf32>, tensor<32x16xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  // CHECK: fp.weight_norm %{{.*}}, %{{.*}} : tensor<32x16xf32>, tensor<32xf32>
  %3 = fp.weight_norm %w, %g : tensor<32x16xf32>, tensor<32xf32>
  return
}

// CHECK-LABEL: func.func @time_ops
func.func @time_ops(%x: tensor<?x?x8xf32>, %c: tensor<?x?x8x4xf32>,
                    %dt: tensor<?x?x8xf32>, %a: tensor<8x4xf32>,
                    %bc: tensor<?x?x4xf32>, %d: tensor<8xf32>,
                    %cw: tensor<8x4xf32>) {
  // CHECK: fp.shift %{{.*}} by -1 : tensor<?x?x8xf32>
  %0 = fp.shift %x by -1 : tensor<?x?x8xf32>
  // CHECK: fp.scan %{{.*}}, %{{.*}} : tensor<?x?x8x4xf32>
  %1 = fp.scan %c, %c : tensor<?x?x8x4xf32>
  // CHECK: fp.scan reverse %{{.*}}, %{{.*}} : tensor<?x?x8xf32>
  %2 = fp.scan reverse %x, %x : tensor<?x?x8xf32>
  // CHECK: fp.selective_scan %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} skip %{{.*}} : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>, tensor<8xf32>
  %3 = fp.selective_scan %x, %dt, %a, %bc, %bc skip %d
      : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>, tensor<8xf32>
  // CHECK: fp.selective_scan %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>
  %4 = fp.selective_scan %x, %dt, %a, %bc, %bc
      : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>
  // CHECK: fp.causal_conv %{{.*}}, %{{.*}} bias %{{.*}} : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<8xf32>
  %5 = fp.causal_conv %x, %cw bias %d : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<8xf32>
  // CHECK: fp.causal_conv %{{.*}}, %{{.*}} : tensor<?x?x8xf32>, tensor<8x4xf32>
  %6 = fp.causal_conv %x, %cw : tensor<?x?x8xf32>, tensor<8x4xf32>
  return
}

// CHECK-LABEL: func.func @chunk_ops
func.func @chunk_ops(%x: tensor<?x?x8xf32>, %s1: tensor<?x1x8xf32>,
                     %s2: tensor<?x2x8xf32>, %s3: tensor<?x3x8xf32>,
                     %dt: tensor<?x?x8xf32>, %a: tensor<8x4xf32>,
                     %bc: tensor<?x?x4xf32>, %d: tensor<8xf32>,
                     %h: tensor<?x8x4xf32>, %cw: tensor<8x4xf32>) {
  // CHECK: fp.chunk_shift %{{.*}} by 2 from %{{.*}} : tensor<?x?x8xf32>, tensor<?x2x8xf32>
  %0:2 = fp.chunk_shift %x by 2 from %s2 : tensor<?x?x8xf32>, tensor<?x2x8xf32>
  // CHECK: fp.chunk_scan %{{.*}}, %{{.*}} from %{{.*}} : tensor<?x?x8xf32>, tensor<?x1x8xf32>
  %1:2 = fp.chunk_scan %x, %x from %s1 : tensor<?x?x8xf32>, tensor<?x1x8xf32>
  // CHECK: fp.chunk_selective_scan %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} from %{{.*}} skip %{{.*}} : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>, tensor<?x8x4xf32>, tensor<8xf32>
  %2:2 = fp.chunk_selective_scan %x, %dt, %a, %bc, %bc from %h skip %d
      : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>,
        tensor<?x8x4xf32>, tensor<8xf32>
  // CHECK: fp.chunk_selective_scan %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} from %{{.*}} : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>, tensor<?x8x4xf32>
  %3:2 = fp.chunk_selective_scan %x, %dt, %a, %bc, %bc from %h
      : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>, tensor<?x8x4xf32>
  // CHECK: fp.chunk_causal_conv %{{.*}}, %{{.*}} from %{{.*}} bias %{{.*}} : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x3x8xf32>, tensor<8xf32>
  %4:2 = fp.chunk_causal_conv %x, %cw from %s3 bias %d
      : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x3x8xf32>, tensor<8xf32>
  return
}

// CHECK-LABEL: func.func @norms_and_activations
func.func @norms_and_activations(%x: tensor<?x?x8xf32>, %w: tensor<8xf32>) {
  // CHECK: fp.l2norm %{{.*}} eps 1.000000e-05 : tensor<?x?x8xf32>
  %0 = fp.l2norm %x eps 1.0e-5 : tensor<?x?x8xf32>
  // CHECK: fp.layer_norm %{{.*}}, %{{.*}}, %{{.*}} eps 9.9999999999999995E-7 : tensor<?x?x8xf32>, tensor<8xf32>
  %1 = fp.layer_norm %x, %w, %w eps 1.0e-6 : tensor<?x?x8xf32>, tensor<8xf32>
  // CHECK: fp.rms_norm %{{.*}}, %{{.*}} eps 1.000000e-05 : tensor<?x?x8xf32>, tensor<8xf32>
  %2 = fp.rms_norm %x, %w eps 1.0e-5 : tensor<?x?x8xf32>, tensor<8xf32>
  // CHECK: fp.silu %{{.*}} : tensor<?x?x8xf32>
  %3 = fp.silu %x : tensor<?x?x8xf32>
  // CHECK: fp.sigmoid %{{.*}} : tensor<?x?x8xf32>
  %4 = fp.sigmoid %x : tensor<?x?x8xf32>
  // CHECK: fp.softplus %{{.*}} : tensor<8xf32>
  %5 = fp.softplus %w : tensor<8xf32>
  return
}

// CHECK-LABEL: func.func @shape_ops
func.func @shape_ops(%x: tensor<?x?x8xf32>, %s: tensor<?x?xf32>,
                     %d: tensor<8xf32>, %t: tensor<?x?x36xf32>) {
  // CHECK: fp.broadcast %{{.*}}, %{{.*}} dims [2] : tensor<8xf32>, tensor<?x?x8xf32>
  %0 = fp.broadcast %d, %x dims [2] : tensor<8xf32>, tensor<?x?x8xf32>
  // CHECK: fp.broadcast %{{.*}}, %{{.*}} dims [0, 1] : tensor<?x?xf32>, tensor<?x?x8xf32>
  %1 = fp.broadcast %s, %x dims [0, 1] : tensor<?x?xf32>, tensor<?x?x8xf32>
  // CHECK: fp.broadcast %{{[^,]*}} dims [0] : tensor<8xf32>, tensor<8x4x2xf32>
  %static = fp.broadcast %d dims [0] : tensor<8xf32>, tensor<8x4x2xf32>
  // CHECK: fp.reduce_sum %{{.*}} dims [2] : tensor<?x?x8xf32> -> tensor<?x?xf32>
  %2 = fp.reduce_sum %x dims [2] : tensor<?x?x8xf32> -> tensor<?x?xf32>
  // CHECK: fp.reduce_sum %{{.*}} dims [0, 1] : tensor<?x?x8xf32> -> tensor<8xf32>
  %3 = fp.reduce_sum %x dims [0, 1] : tensor<?x?x8xf32> -> tensor<8xf32>
  // CHECK: fp.reduce_max %{{.*}} dims [2] : tensor<?x?x8xf32> -> tensor<?x?xf32>
  %m = fp.reduce_max %x dims [2] : tensor<?x?x8xf32> -> tensor<?x?xf32>
  // CHECK: fp.slice %{{.*}}[2 : 6] : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
  %4 = fp.slice %x [2 : 6] : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
  // CHECK: fp.concat %{{.*}}, %{{.*}} : tensor<?x?x8xf32>, tensor<?x?x4xf32> -> tensor<?x?x12xf32>
  %5 = fp.concat %x, %4 : tensor<?x?x8xf32>, tensor<?x?x4xf32> -> tensor<?x?x12xf32>
  // CHECK: fp.reshape %{{.*}} : tensor<?x?x8xf32> -> tensor<?x?x2x4xf32>
  %6 = fp.reshape %x : tensor<?x?x8xf32> -> tensor<?x?x2x4xf32>
  // CHECK: fp.matmul %{{.*}}, %{{.*}} {transpose_rhs} : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x?x2x2xf32>
  %7 = fp.matmul %6, %6 {transpose_rhs} : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x?x2x2xf32>
  // CHECK: fp.matmul %{{.*}}, %{{.*}} {transpose_lhs} : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x?x4x4xf32>
  %8 = fp.matmul %6, %6 {transpose_lhs} : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x?x4x4xf32>
  // CHECK: fp.triu %{{.*}} : tensor<?x?x36xf32> -> tensor<?x?x8x8xf32>
  %9 = fp.triu %t : tensor<?x?x36xf32> -> tensor<?x?x8x8xf32>
  return
}

// CHECK-LABEL: func.func @kernel
func.func @kernel(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?xf32>) {
  // CHECK: %[[K:.*]]:2 = fp.kernel (%[[A:.*]] = %{{.*}}, %[[G:.*]] = %{{.*}}) : (tensor<?x?x8xf32>, tensor<8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?xf32>) {
  // CHECK:   %[[S:.*]] = fp.silu %[[A]] : tensor<?x?x8xf32>
  // CHECK:   %[[N:.*]] = fp.rms_norm %[[S]], %[[G]] eps 1.000000e-05 : tensor<?x?x8xf32>, tensor<8xf32>
  // CHECK:   %[[R:.*]] = fp.reduce_sum %[[N]] dims [2] : tensor<?x?x8xf32> -> tensor<?x?xf32>
  // CHECK:   fp.yield %[[N]], %[[R]] : tensor<?x?x8xf32>, tensor<?x?xf32>
  // CHECK: }
  %k:2 = fp.kernel (%a = %x, %w = %g) : (tensor<?x?x8xf32>, tensor<8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?xf32>) {
    %s = fp.silu %a : tensor<?x?x8xf32>
    %n = fp.rms_norm %s, %w eps 1.0e-05 : tensor<?x?x8xf32>, tensor<8xf32>
    %r = fp.reduce_sum %n dims [2] : tensor<?x?x8xf32> -> tensor<?x?xf32>
    fp.yield %n, %r : tensor<?x?x8xf32>, tensor<?x?xf32>
  }
  return %k#0, %k#1 : tensor<?x?x8xf32>, tensor<?x?xf32>
}

// A kernel reads an input at the token before with fp.shift of the input.
// CHECK-LABEL: func.func @kernel_shifted_read
func.func @kernel_shifted_read(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  // CHECK: fp.kernel (%[[A:.*]] = %{{.*}}) : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  // CHECK:   %[[S:.*]] = fp.shift %[[A]] by 1 : tensor<?x?x8xf32>
  // CHECK:   arith.addf %[[S]], %[[A]] : tensor<?x?x8xf32>
  %k = fp.kernel (%a = %x) : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
    %s = fp.shift %a by 1 : tensor<?x?x8xf32>
    %m = arith.addf %s, %a : tensor<?x?x8xf32>
    fp.yield %m : tensor<?x?x8xf32>
  }
  return %k : tensor<?x?x8xf32>
}

// The solver ops of a lowered fixed-point loop, and the solver type.
// CHECK-LABEL: func.func @solver
//  CHECK-SAME:     (%[[Y:.*]]: tensor<?x?x8xf32>, %[[F:.*]]: tensor<?x?x8xf32>, %[[H:.*]]: !fp.solver)
//       CHECK:   %[[S:.*]] = fp.solver_init %[[Y]] solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15> backward <implicit, tolerance = 1.0e-06> : tensor<?x?x8xf32>
//       CHECK:   %{{.*}} = fp.solver_continue %[[S]]
//       CHECK:   %[[N:.*]] = fp.solver_relax %[[S]], %[[Y]], %[[F]] : tensor<?x?x8xf32>
//       CHECK:   fp.solver_update %[[S]]
//       CHECK:   %[[C:.*]] = fp.solver_iterations %[[S]] : tensor<?xi32>
//       CHECK:   fp.solver_update %[[H]]
func.func @solver(%y: tensor<?x?x8xf32>, %f: tensor<?x?x8xf32>, %h: !fp.solver) -> (i1, tensor<?x?x8xf32>, tensor<?xi32>) {
  %s = fp.solver_init %y solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15> backward <implicit, tolerance = 1.0e-06> : tensor<?x?x8xf32>
  %go = fp.solver_continue %s
  %n = fp.solver_relax %s, %y, %f : tensor<?x?x8xf32>
  fp.solver_update %s
  %c = fp.solver_iterations %s : tensor<?xi32>
  fp.solver_update %h
  return %go, %n, %c : i1, tensor<?x?x8xf32>, tensor<?xi32>
}

// The gradient ops of derived backward functions.
// CHECK-LABEL: func.func @gradients
//       CHECK:   fp.transpose %{{.*}} : tensor<8x4xf32> -> tensor<4x8xf32>
//       CHECK:   fp.weight_grad %{{.*}}, %{{.*}} : tensor<?x?x8xf32>, tensor<?x?x4xf32> -> tensor<8x4xf32>
//       CHECK:   fp.triu_pack %{{.*}} : tensor<?x?x3x3xf32> -> tensor<?x?x6xf32>
//       CHECK:   fp.l2norm_grad %{{.*}}, %{{.*}} eps 1.000000e-05 : tensor<?x?x8xf32>
//       CHECK:   {{.*}} = fp.weight_norm_grad %{{.*}}, %{{.*}} grad %{{.*}} : tensor<8x4xf32>, tensor<8xf32>
//       CHECK:   fp.reduce_max_grad %{{.*}}, %{{.*}} dims [3] : tensor<?x?x3x3xf32>, tensor<?x?x3xf32>
//       CHECK:   {{.*}} = fp.selective_scan_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} grad %{{.*}} : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>
//       CHECK:   {{.*}} = fp.causal_conv_grad %{{.*}}, %{{.*}} grad %{{.*}} : tensor<?x?x8xf32>, tensor<8x4xf32>
func.func @gradients(%w: tensor<8x4xf32>, %g: tensor<?x?x8xf32>, %x: tensor<?x?x4xf32>, %m: tensor<?x?x3x3xf32>, %r: tensor<?x?x3xf32>, %gain: tensor<8xf32>) {
  %wt = fp.transpose %w : tensor<8x4xf32> -> tensor<4x8xf32>
  %dw = fp.weight_grad %g, %x : tensor<?x?x8xf32>, tensor<?x?x4xf32> -> tensor<8x4xf32>
  %p = fp.triu_pack %m : tensor<?x?x3x3xf32> -> tensor<?x?x6xf32>
  %dn = fp.l2norm_grad %g, %g eps 1.0e-05 : tensor<?x?x8xf32>
  %dv:2 = fp.weight_norm_grad %w, %gain grad %w : tensor<8x4xf32>, tensor<8xf32>
  %dm = fp.reduce_max_grad %m, %r dims [3] : tensor<?x?x3x3xf32>, tensor<?x?x3xf32>
  %s:5 = fp.selective_scan_grad %g, %g, %w, %x, %x grad %g : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>
  %c:2 = fp.causal_conv_grad %g, %w grad %g : tensor<?x?x8xf32>, tensor<8x4xf32>
  return
}

// A frozen parameter, the initialisers of square matrices and the matrix
// exponential (the orthogonal map of the nonselective mixer).
// CHECK-LABEL: func.func @orthogonal
//       CHECK:   fp.param "weight.original" init <eye(-1.0)> : tensor<4x4xf32>
//       CHECK:   fp.param "weight.base" init <orthogonal> frozen : tensor<4x4xf32>
//       CHECK:   fp.matrix_exp %{{.*}} : tensor<4x4xf32>
func.func @orthogonal() -> tensor<4x4xf32> {
  %o = fp.param "weight.original" init <eye(-1.0)> : tensor<4x4xf32>
  %b = fp.param "weight.base" init <orthogonal> frozen : tensor<4x4xf32>
  %s = arith.subf %o, %b : tensor<4x4xf32>
  %e = fp.matrix_exp %s : tensor<4x4xf32>
  return %e : tensor<4x4xf32>
}
