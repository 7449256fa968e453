// RUN: fp-opt %s -fp-plan-buffers | FileCheck %s --check-prefix=PLAN
// RUN: fp-opt %s -fp-plan-buffers -fp-schedule-kernels | fp-translate --fp-to-host | FileCheck %s
// RUN: fp-opt %s -fp-plan-buffers -fp-schedule-kernels | fp-translate --fp-to-cuda | FileCheck %s

// An fp.slice whose every reader reads it where it lies in its source takes
// no buffer and is not copied: a GEMM reads it with the source's row stride
// (as input or as weight of fp.linear, as an operand of fp.weight_grad), a
// causal convolution and its adjoint at that stride too (as their input; a
// slice that is a convolution's weight is materialised), a kernel a row per
// token at the source's row stride, each from a pointer `start` elements
// into the source. A slice
// with another reader (fp.silu), one a kernel shifts, and one read as
// rows of a multi-row token are materialised.

module attributes {fp.models = [{d_model = 4 : i64, layer = @slices, n_layers = 1 : i64, name = "slices", norm = "rms_norm", norm_eps = 1.000000e-05 : f64, pad_vocab_multiple = 8 : i64, tie_embeddings = true, vocab = 11 : i64}]} {
  func.func @slices(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer} {
    %w = fp.param "in_proj.weight" init <fan_in_uniform> decay : tensor<16x4xf32>
    %v = fp.param "mix.weight" init <fan_in_uniform> decay : tensor<4x12xf32>
    %cw = fp.param "conv.weight" init <uniform(-0.5, 0.5)> : tensor<4x6xf32>
    %x = fp.linear %u, %w : (tensor<?x?x4xf32>, tensor<16x4xf32>) -> tensor<?x?x16xf32>
    %a = fp.slice %x[4 : 8] : tensor<?x?x16xf32> -> tensor<?x?x4xf32>
    %va = fp.slice %v[8 : 12] : tensor<4x12xf32> -> tensor<4x4xf32>
    %p0 = fp.linear %a, %va : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
    %g = fp.weight_grad %p0, %a : tensor<?x?x4xf32>, tensor<?x?x4xf32> -> tensor<4x4xf32>
    %p = fp.linear %p0, %g : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
    %f = fp.slice %x[8 : 12] : tensor<?x?x16xf32> -> tensor<?x?x4xf32>
    %cw3 = fp.slice %cw[2 : 5] : tensor<4x6xf32> -> tensor<4x3xf32>
    %conv = fp.causal_conv %f, %cw3 : tensor<?x?x4xf32>, tensor<4x3xf32>
    %df, %dcw = fp.causal_conv_grad %f, %cw3 grad %conv : tensor<?x?x4xf32>, tensor<4x3xf32>
    %b = fp.slice %x[8 : 12] : tensor<?x?x16xf32> -> tensor<?x?x4xf32>
    %s = fp.silu %b : tensor<?x?x4xf32>
    %c = fp.slice %x[12 : 16] : tensor<?x?x16xf32> -> tensor<?x?x4xf32>
    %d = fp.slice %x[0 : 4] : tensor<?x?x16xf32> -> tensor<?x?x4xf32>
    %m = fp.reshape %x : tensor<?x?x16xf32> -> tensor<?x?x4x4xf32>
    %e = fp.slice %m[0 : 2] : tensor<?x?x4x4xf32> -> tensor<?x?x4x2xf32>
    %k = fp.kernel (%ka = %a, %kp = %p, %ks = %s, %kc = %c, %kd = %d, %ke = %e)
        : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4x2xf32>) -> tensor<?x?x4xf32> {
      %sum = arith.addf %ka, %kp : tensor<?x?x4xf32>
      %prod = arith.mulf %sum, %ks : tensor<?x?x4xf32>
      %sh = fp.shift %kc by 1 : tensor<?x?x4xf32>
      %t = arith.addf %prod, %sh : tensor<?x?x4xf32>
      %t2 = arith.addf %t, %kd : tensor<?x?x4xf32>
      %r = fp.reshape %ke : tensor<?x?x4x2xf32> -> tensor<?x?x8xf32>
      %h = fp.slice %r[0 : 4] : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
      %o = arith.addf %t2, %h : tensor<?x?x4xf32>
      fp.yield %o : tensor<?x?x4xf32>
    }
    %kf = arith.addf %k, %df : tensor<?x?x4xf32>
    return %kf : tensor<?x?x4xf32>
  }
}

// PLAN-LABEL: func.func @slices
//       PLAN:   %[[X:.*]] = fp.linear {{.*}} {fp.slots = array<i64: 0>}
//       PLAN:   fp.slice %[[X]][4 : 8] :
//       PLAN:   fp.slice %{{.*}}[8 : 12] :
//       PLAN:   fp.linear {{.*}} {fp.slots
//       PLAN:   fp.weight_grad {{.*}} {fp.slots
//       PLAN:   fp.linear {{.*}} {fp.slots
//       PLAN:   fp.slice %[[X]][8 : 12] :
//       PLAN:   fp.slice %{{.*}}[2 : 5] {fp.slots
//       PLAN:   fp.causal_conv
//       PLAN:   fp.causal_conv_grad
//       PLAN:   fp.slice %[[X]][8 : 12] {fp.slots
//       PLAN:   fp.silu
//       PLAN:   fp.slice %[[X]][12 : 16] {fp.slots
//       PLAN:   fp.slice %[[X]][0 : 4] :
//       PLAN:   fp.slice %{{.*}}[0 : 2] {fp.slots

// The strided operands, and the kernel's rows of x read 16 apart.
//       CHECK: struct Kernel0 {
//       CHECK:   const Real *const x0 = in0 + row * 16;
//       CHECK:   const Real *const x1 = in1 + row * 4;
//       CHECK:   const Real *const x4 = in4 + row * 16;
//       CHECK:   const Real *const x5 = in5 + row * 8;
//       CHECK: void forward(
//       CHECK:   kernels::linear(in, B * T, 4, p0, 16, nullptr, [[X:s[0-9]+]]);
//   CHECK-NOT:   sliceColumns([[X]], B * T, 16, 4,
//       CHECK:   kernels::linearStrided(([[X]] + 4), 16, B * T, 4, (p1 + 8), 12, false, 4, nullptr, [[P0:s[0-9]+]]);
//       CHECK:   kernels::weightGradStrided([[P0]], 4, ([[X]] + 4), 16, B * T, 4, 4, [[G:s[0-9]+]]);
//       CHECK:   kernels::linear([[P0]], B * T, 4, [[G]], 4, nullptr, [[P:s[0-9]+]]);
//       CHECK:   kernels::sliceColumns(p{{[0-9]+}}, 4, 6, 2, 3, [[CW:s[0-9]+]]);
//       CHECK:   kernels::causalConvStrided(([[X]] + 8), 16, [[CW]], nullptr, B, T, 4, 3, [[CONV:s[0-9]+]]);
//       CHECK:   kernels::causalConvGradStrided(([[X]] + 8), 16, [[CW]], [[CONV]], B, T, 4, 3,
//       CHECK:   kernels::sliceColumns([[X]], B * T, 16, 8, 4, [[B:s[0-9]+]]);
//       CHECK:   kernels::sliceColumns([[X]], B * T, 16, 12, 4, [[C:s[0-9]+]]);
//   CHECK-NOT:   kernels::sliceColumns([[X]], B * T, 16, 0,
//       CHECK:   kernels::sliceColumns([[X]], B * T * 4, 4, 0, 2, [[E:s[0-9]+]]);
//       CHECK:   Kernel0<Real>{([[X]] + 4), [[P]], {{s[0-9]+}}, [[C]], [[X]], [[E]],
