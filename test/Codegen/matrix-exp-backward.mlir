// RUN: rm -rf %t && mkdir -p %t
// RUN: fp-opt %s -fp-derive-backward -fp-lower-fixed-point -fp-plan-buffers -fp-schedule-kernels | fp-translate --fp-to-host > %t/layer.cpp
// RUN: FileCheck %s < %t/layer.cpp
// RUN: c++ -std=c++17 -O1 -I%fp_src/runtime/include -I%fp_src/runtime/test '-DFP_PARAM_SIZES=16, 16, 16' '-DFP_FROZEN_PARAMS=2' %t/layer.cpp %S/Inputs/backward-check.cpp -lopenblas -o %t/check
// RUN: %t/check | FileCheck %s --check-prefix=NUMERIC

// The derivative of fp.matrix_exp, of the transpose, lower-triangle and
// product that the DSL's orthogonal map is made of (docs/dsl.md §4.5), and
// of a frozen parameter, checked as backward.mlir checks every other op:
// the compiled backward entry by entry against central differences of the
// compiled forward (Inputs/backward-check.cpp), in f64 on random normal
// parameters (so that `m` has a 1-norm of a few units and the exponential
// is halved before its series). The frozen `base` gets an exactly zero
// gradient.
// NUMERIC: ok

// The forward computes both exponentials; the backward the exponential of
// each one's 8 × 8 block matrix.
// CHECK: void forward(
// CHECK-COUNT-2: kernels::matrixExp({{.*}}, 4, {{.*}});
// CHECK: void backward(
// CHECK-COUNT-2: kernels::matrixExp({{.*}}, 8, {{.*}});

module attributes {fp.models = [{d_model = 4 : i64, layer = @head, n_layers = 1 : i64, name = "head", norm = "rms_norm", norm_eps = 1.000000e-05 : f64, pad_vocab_multiple = 8 : i64, tie_embeddings = true, vocab = 11 : i64}]} {
  func.func @head(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer} {
    %m = fp.param "m" init <zeros> : tensor<4x4xf32>
    %orig = fp.param "original" init <eye(-1.0)> : tensor<4x4xf32>
    %base = fp.param "base" init <orthogonal> frozen : tensor<4x4xf32>
    // A general matrix.
    %em = fp.matrix_exp %m : tensor<4x4xf32>
    %y1 = fp.linear %x, %em : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
    // base · exp(L − Lᵀ), L = tril(original), as the frontend writes it.
    %ot = fp.transpose %orig : tensor<4x4xf32> -> tensor<4x4xf32>
    %packed = fp.triu_pack %ot : tensor<4x4xf32> -> tensor<10xf32>
    %lt = fp.triu %packed : tensor<10xf32> -> tensor<4x4xf32>
    %l = fp.transpose %lt : tensor<4x4xf32> -> tensor<4x4xf32>
    %skew = arith.subf %l, %lt : tensor<4x4xf32>
    %es = fp.matrix_exp %skew : tensor<4x4xf32>
    %est = fp.transpose %es : tensor<4x4xf32> -> tensor<4x4xf32>
    %w = fp.linear %base, %est : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %y2 = fp.linear %x, %w : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
    %out = arith.addf %y1, %y2 : tensor<?x?x4xf32>
    return %out : tensor<?x?x4xf32>
  }
}
