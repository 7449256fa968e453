// RUN: fp-opt %s -fp-plan-buffers -fp-schedule-kernels | fp-translate --fp-to-host | FileCheck %s
// RUN: fp-opt %s -fp-plan-buffers -fp-schedule-kernels | fp-translate --fp-to-cuda | FileCheck %s

// Consecutive ops of one element count that compute element i from element
// i of their operands, or from values computed before them, run as one loop
// over elements without barriers between them (a chain): a value only its
// chain reads stays in a register, one read later is stored, and one
// computed into a result is rounded to the element type before the chain
// reads it on. An op of another length (the tanh of the slice, which is a
// view of %w's last two columns and emits nothing) starts a chain of its
// own; an op that is not elementwise (the norms) ends one.
//
// A chain's inputs keep their slots until it ends: %p is dead after %q, the
// chain's first op, but %w, stored by the same loop, does not take its
// slot, since a thread storing its element of %w could otherwise overwrite
// an element of %p another thread has yet to read.
//
// Barriers separate what one thread writes from what another reads or
// writes: the tanh chain reads %w from its third element, which other
// threads wrote, so a barrier precedes it; the last norm only reads %w,
// as the tanh chain did, and writes a result nothing before it touched, so
// none does.

module attributes {fp.models = [{d_model = 4 : i64, layer = @chains, n_layers = 1 : i64, name = "chains", norm = "rms_norm", norm_eps = 1.000000e-05 : f64, pad_vocab_multiple = 8 : i64, tie_embeddings = true, vocab = 11 : i64}]} {
  func.func @chains(%u: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x2xf32>) attributes {fp.layer} {
    %k:2 = fp.kernel (%a = %u) : (tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x2xf32>) {
      %p = fp.l2norm %a eps 1.0e-05 : tensor<?x?x4xf32>
      %q = math.exp %p : tensor<?x?x4xf32>
      %w = arith.mulf %q, %q : tensor<?x?x4xf32>
      %s = fp.slice %w[2 : 4] : tensor<?x?x4xf32> -> tensor<?x?x2xf32>
      %t = math.tanh %s : tensor<?x?x2xf32>
      %v = arith.addf %t, %s : tensor<?x?x2xf32>
      %z = fp.l2norm %w eps 1.0e-05 : tensor<?x?x4xf32>
      fp.yield %z, %v : tensor<?x?x4xf32>, tensor<?x?x2xf32>
    }
    return %k#0, %k#1 : tensor<?x?x4xf32>, tensor<?x?x2xf32>
  }
}

// CHECK-LABEL: struct Kernel0 {
//       CHECK:   FP_HOST_DEVICE void operator()(
//  CHECK-NEXT:     const Real *const x0 = in0 + row * 4;
//  CHECK-NEXT:     Real *const y0 = out0 + row * 4;
//  CHECK-NEXT:     Real *const y1 = out1 + row * 2;
//  CHECK-NEXT:     Scalar *const [[P:v[0-9]+]] = scratch + 0;
//  CHECK-NEXT:     Scalar *const [[W:v[0-9]+]] = scratch + 4;
//   CHECK-NOT:     scratch +
//       CHECK:     fp::fused::l2norm(team, x0, 1, 4, Scalar(1.0000000000000001e-05), [[P]]);
//  CHECK-NEXT:     team.sync();
//  CHECK-NEXT:     // math.exp
//  CHECK-NEXT:     // arith.mulf
//  CHECK-NEXT:     fp::fused::forEachElement(team, 4, [&](int64_t i) {
//  CHECK-NEXT:       const Scalar [[Q:e[0-9]+]] = kernels::Exp()(Scalar([[P]][i]));
//  CHECK-NEXT:       const Scalar [[M:e[0-9]+]] = kernels::Mul()([[Q]], [[Q]]);
//  CHECK-NEXT:       [[W]][i] = [[M]];
//  CHECK-NEXT:     });
//  CHECK-NEXT:     team.sync();
//  CHECK-NEXT:     // math.tanh
//  CHECK-NEXT:     // arith.addf
//  CHECK-NEXT:     fp::fused::forEachElement(team, 2, [&](int64_t i) {
//  CHECK-NEXT:       const Scalar [[T:e[0-9]+]] = kernels::Tanh()(Scalar(([[W]] + 2)[i]));
//  CHECK-NEXT:       const Scalar [[V:e[0-9]+]] = Scalar(Real(kernels::Add()([[T]], Scalar(([[W]] + 2)[i]))));
//  CHECK-NEXT:       y1[i] = Real([[V]]);
//  CHECK-NEXT:     });
//  CHECK-NEXT:     // fp.l2norm
//  CHECK-NEXT:     fp::fused::l2norm(team, [[W]], 1, 4, Scalar(1.0000000000000001e-05), y0);
//       CHECK: kernels::forEachToken<Real>(B, T, 8,
