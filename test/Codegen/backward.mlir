// RUN: rm -rf %t && mkdir -p %t
// RUN: fp-opt %s -fp-derive-backward -fp-lower-fixed-point -fp-plan-buffers -fp-schedule-kernels | fp-translate --fp-to-host > %t/layer.cpp
// RUN: FileCheck %s < %t/layer.cpp
// RUN: FileCheck %s --check-prefix=GEMM < %t/layer.cpp
// RUN: c++ -std=c++17 -O1 -I%fp_src/runtime/include -I%fp_src/runtime/test '-DFP_PARAM_SIZES=32, 8, 8, 12, 4, 8, 16, 4, 4, 4, 12' %t/layer.cpp %S/Inputs/backward-check.cpp -lopenblas -o %t/check
// RUN: %t/check | FileCheck %s --check-prefix=NUMERIC

// The derived backward of a layer that uses every differentiable op once,
// compiled for the host and checked entry by entry against central
// differences of the compiled forward (Inputs/backward-check.cpp): the
// vector-Jacobian rules, the gradient kernels and the backward's codegen
// together. The layer has no fixed point, so its derived backward is its
// exact gradient.
// NUMERIC: ok

// The backward is a function of the library: its own workspace, the
// gradient kernels, the input's cotangent computed in the caller's buffer,
// parameter gradients accumulated into the caller's.
// CHECK: #include "fp/Runtime/Kernels/Kernels.h"
// CHECK: const fp::host::BufferSpec kBackwardBuffers[] =
// CHECK: void backward(const fp_backward_args &args, char *workspace, const size_t *offsets) {
// CHECK:   const Real *dy = static_cast<const Real *>(args.grad_output);
// CHECK:   Real *[[DX:s[0-9]+]] = static_cast<Real *>(args.grad_input);
// CHECK:   kernels::selectiveScanGrad(
// CHECK:   kernels::causalConvGradStrided(
// CHECK:   kernels::weightGrad(
// CHECK:   kernels::binary(kernels::Add(), B * T * 4, {{.*}}, [[DX]]);
// CHECK:   kernels::weightNormGrad(
// CHECK-NOT: args.grad_input
// CHECK:   const kernels::GradientSum<Real> [[SUMS:gradients[0-9]+]][] = {
// CHECK-NEXT:     {{[{]}}{{.*}}, 32, static_cast<Real *>(args.grad_params[0])}, // v
// CHECK:     {{[{]}}{{.*}}, 12, static_cast<Real *>(args.grad_params[10])}, // wt
// CHECK-NEXT:   };
// CHECK-NEXT:   kernels::accumulateAll([[SUMS]], 11);
// The transposed weights of the three linear maps' dx are not
// materialised: each GEMM reads the weight as it lies.
// GEMM-NOT: kernels::transpose(
// GEMM-COUNT-3: kernels::linearTransposed(
// GEMM-NOT: kernels::transpose(
// CHECK: const fp::host::LayerDescriptor kLayer = {"head", 11, kBuffers, {{[0-9]+}}, {&forward<float>, &forward<double>, &forward<fp::bf16>}, {}, nullptr, 0, kBackwardBuffers, {{[0-9]+}}, {&backward<float>, &backward<double>, &backward<fp::bf16>}, {}, "fused", nullptr, nullptr};
// CHECK: FP_MODEL_EXPORT fp_status fp_head_backward(const fp_backward_args *args) {
// CHECK-NEXT:   return fp::host::backward(args, layer_head::kLayer);

module attributes {fp.models = [{d_model = 4 : i64, layer = @head, n_layers = 1 : i64, name = "head", norm = "rms_norm", norm_eps = 1.000000e-05 : f64, pad_vocab_multiple = 8 : i64, tie_embeddings = true, vocab = 11 : i64}]} {
  func.func @head(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer} {
    %v = fp.param "v" init <fan_in_uniform> : tensor<8x4xf32>
    %g = fp.param "g" init <ones> : tensor<8xf32>
    %bias = fp.param "bias" init <zeros> : tensor<8xf32>
    %cw = fp.param "cw" init <ones> : tensor<4x3xf32>
    %cb = fp.param "cb" init <zeros> : tensor<4xf32>
    %alog = fp.param "alog" init <zeros> : tensor<4x2xf32>
    %wbc = fp.param "wbc" init <fan_in_uniform> : tensor<4x4xf32>
    %d = fp.param "D" init <ones> : tensor<4xf32>
    %lw = fp.param "lw" init <ones> : tensor<4xf32>
    %lb = fp.param "lb" init <zeros> : tensor<4xf32>
    %wt = fp.param "wt" init <fan_in_uniform> : tensor<3x4xf32>
    %wn = fp.weight_norm %v, %g : tensor<8x4xf32>, tensor<8xf32>
    %a = fp.linear %x, %wn bias %bias : (tensor<?x?x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
    %a1 = fp.slice %a[0 : 4] : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
    %a2 = fp.slice %a[4 : 8] : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
    %c = fp.causal_conv %a1, %cw bias %cb : tensor<?x?x4xf32>, tensor<4x3xf32>, tensor<4xf32>
    %dt = fp.softplus %a2 : tensor<?x?x4xf32>
    %ea = math.exp %alog : tensor<4x2xf32>
    %A = arith.negf %ea : tensor<4x2xf32>
    %bc = fp.linear %x, %wbc : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
    %braw = fp.slice %bc[0 : 2] : tensor<?x?x4xf32> -> tensor<?x?x2xf32>
    %cm = fp.slice %bc[2 : 4] : tensor<?x?x4xf32> -> tensor<?x?x2xf32>
    %bm = fp.l2norm %braw eps 1.0e-05 : tensor<?x?x2xf32>
    %s = fp.selective_scan %c, %dt, %A, %bm, %cm skip %d : tensor<?x?x4xf32>, tensor<4x2xf32>, tensor<?x?x2xf32>, tensor<4xf32>
    %ln = fp.layer_norm %s, %lw, %lb eps 1.0e-05 : tensor<?x?x4xf32>, tensor<4xf32>
    %sh = fp.shift %ln by 1 : tensor<?x?x4xf32>
    %co = fp.sigmoid %a2 : tensor<?x?x4xf32>
    %h = fp.scan %co, %sh : tensor<?x?x4xf32>
    %t = fp.linear %x, %wt : (tensor<?x?x4xf32>, tensor<3x4xf32>) -> tensor<?x?x3xf32>
    %l = fp.triu %t : tensor<?x?x3xf32> -> tensor<?x?x2x2xf32>
    %m = fp.matmul %l, %l {transpose_rhs} : tensor<?x?x2x2xf32>, tensor<?x?x2x2xf32> -> tensor<?x?x2x2xf32>
    %mx = fp.reduce_max %m dims [3] : tensor<?x?x2x2xf32> -> tensor<?x?x2xf32>
    %mxb = fp.broadcast %mx, %m dims [0, 1, 2] : tensor<?x?x2xf32>, tensor<?x?x2x2xf32>
    %mm = arith.mulf %m, %mxb : tensor<?x?x2x2xf32>
    %mr = fp.reshape %mm : tensor<?x?x2x2xf32> -> tensor<?x?x4xf32>
    %th = math.tanh %h : tensor<?x?x4xf32>
    %sq = math.sqrt %dt : tensor<?x?x4xf32>
    %lg = math.log %dt : tensor<?x?x4xf32>
    %p1 = arith.mulf %th, %mr : tensor<?x?x4xf32>
    %p2 = arith.subf %sq, %lg : tensor<?x?x4xf32>
    %p3 = arith.divf %p1, %sq : tensor<?x?x4xf32>
    %p4 = arith.addf %p3, %p2 : tensor<?x?x4xf32>
    %q1 = fp.slice %p4[0 : 2] : tensor<?x?x4xf32> -> tensor<?x?x2xf32>
    %q2 = fp.slice %h[2 : 4] : tensor<?x?x4xf32> -> tensor<?x?x2xf32>
    %cat = fp.concat %q2, %q1 : tensor<?x?x2xf32>, tensor<?x?x2xf32> -> tensor<?x?x4xf32>
    %sx = fp.silu %x : tensor<?x?x4xf32>
    %out = arith.addf %cat, %sx : tensor<?x?x4xf32>
    return %out : tensor<?x?x4xf32>
  }
}
