// RUN: fp-opt %s -fp-plan-buffers | fp-translate --fp-to-host | FileCheck %s
// RUN: fp-opt %s -fp-plan-buffers | fp-translate --fp-to-cuda | FileCheck %s

// An op of one element that only chains and other such ops read (through
// views, or for its extents) is a uniform scalar: every thread computes it
// for itself, into a register, with no scratch slot and no barrier. Here:
// the constant, the gate's sigmoid (read through a reshape), 2σ(g), and
// 2σ(g)·⟨n, a⟩ from a row sum stored before it. A chain reads a uniform
// scalar directly, and a single op that reads one (the broadcast of 2σ(g))
// is a chain of its own. A one-element op the kernel yields (the exp) is
// computed and stored as before.
//
// What a uniform scalar reads lives until the next op followed by a
// barrier has run, since threads may still be computing the scalar while
// that op runs: ⟨n, a⟩'s slot is not given to the row sum of a after it
// (n ⊙ a's, read by the chain after that, is not free either).

module attributes {fp.models = [{d_model = 4 : i64, layer = @uniforms, n_layers = 1 : i64, name = "uniforms", norm = "rms_norm", norm_eps = 1.000000e-05 : f64, pad_vocab_multiple = 8 : i64, tie_embeddings = true, vocab = 11 : i64}]} {
  func.func @uniforms(%u: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?xf32>) attributes {fp.layer} {
    %gate = fp.slice %u[3 : 4] : tensor<?x?x4xf32> -> tensor<?x?x1xf32>
    %k:3 = fp.kernel (%a = %u, %g = %gate) : (tensor<?x?x4xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?xf32>) {
      %n = fp.l2norm %a eps 1.0e-05 : tensor<?x?x4xf32>
      %two = arith.constant dense<2.0> : tensor<f32>
      %gs = fp.sigmoid %g : tensor<?x?x1xf32>
      %gr = fp.reshape %gs : tensor<?x?x1xf32> -> tensor<?x?xf32>
      %twos = fp.broadcast %two, %gr dims [] : tensor<f32>, tensor<?x?xf32>
      %c = arith.mulf %twos, %gr : tensor<?x?xf32>
      %m = arith.mulf %n, %a : tensor<?x?x4xf32>
      %d = fp.reduce_sum %m dims [2] : tensor<?x?x4xf32> -> tensor<?x?xf32>
      %s = arith.mulf %c, %d : tensor<?x?xf32>
      %q = fp.reduce_sum %a dims [2] : tensor<?x?x4xf32> -> tensor<?x?xf32>
      %sb = fp.broadcast %s, %n dims [0, 1] : tensor<?x?xf32>, tensor<?x?x4xf32>
      %r = arith.mulf %sb, %n : tensor<?x?x4xf32>
      %o = arith.subf %a, %r : tensor<?x?x4xf32>
      %p = arith.addf %o, %m : tensor<?x?x4xf32>
      %z = fp.l2norm %p eps 1.0e-05 : tensor<?x?x4xf32>
      %cb = fp.broadcast %c, %n dims [0, 1] : tensor<?x?xf32>, tensor<?x?x4xf32>
      %w = fp.l2norm %cb eps 1.0e-05 : tensor<?x?x4xf32>
      %e = math.exp %q : tensor<?x?xf32>
      fp.yield %z, %w, %e : tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?xf32>
    }
    return %k#0, %k#1, %k#2 : tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?xf32>
  }
}

// CHECK-LABEL: struct Kernel0 {
//       CHECK:   FP_HOST_DEVICE void operator()(
//       CHECK:     Scalar *const [[N:v[0-9]+]] = scratch + 0;
//  CHECK-NEXT:     Scalar *const [[M:v[0-9]+]] = scratch + 4;
//  CHECK-NEXT:     Scalar *const [[D:v[0-9]+]] = scratch + 8;
//  CHECK-NEXT:     Scalar *const [[Q:v[0-9]+]] = scratch + 9;
//  CHECK-NEXT:     Scalar *const [[P:v[0-9]+]] = scratch + 10;
//  CHECK-NEXT:     Scalar *const [[CB:v[0-9]+]] = scratch + 4;
//   CHECK-NOT:     scratch +
//       CHECK:     fp::fused::l2norm(team, x0, 1, 4, Scalar(1.0000000000000001e-05), [[N]]);
//  CHECK-NEXT:     team.sync();
//  CHECK-NEXT:     // arith.constant
//  CHECK-NEXT:     const Scalar [[TWO:u[0-9]+]] = Scalar(2.0);
//  CHECK-NEXT:     // fp.sigmoid
//  CHECK-NEXT:     const Scalar [[SIG:u[0-9]+]] = kernels::Sigmoid()(Scalar(x1[0]));
//  CHECK-NEXT:     // fp.broadcast
//  CHECK-NEXT:     const Scalar [[TWOS:u[0-9]+]] = [[TWO]];
//  CHECK-NEXT:     // arith.mulf
//  CHECK-NEXT:     const Scalar [[C:u[0-9]+]] = kernels::Mul()([[TWOS]], [[SIG]]);
//  CHECK-NEXT:     // arith.mulf
//  CHECK-NEXT:     fp::fused::binary(team, kernels::Mul(), 4, [[N]], x0, [[M]]);
//  CHECK-NEXT:     team.sync();
//  CHECK-NEXT:     // fp.reduce_sum
//  CHECK-NEXT:     fp::fused::sumRows(team, [[M]], 1, 4, [[D]]);
//  CHECK-NEXT:     team.sync();
//  CHECK-NEXT:     // arith.mulf
//  CHECK-NEXT:     const Scalar [[S:u[0-9]+]] = kernels::Mul()([[C]], Scalar([[D]][0]));
//  CHECK-NEXT:     // fp.reduce_sum
//  CHECK-NEXT:     fp::fused::sumRows(team, x0, 1, 4, [[Q]]);
//  CHECK-NEXT:     team.sync();
//  CHECK-NEXT:     // fp.broadcast
//  CHECK-NEXT:     // arith.mulf
//  CHECK-NEXT:     // arith.subf
//  CHECK-NEXT:     // arith.addf
//  CHECK-NEXT:     fp::fused::forEachElement(team, 4, [&](int64_t i) {
//  CHECK-NEXT:       const Scalar [[SB:e[0-9]+]] = [[S]];
//  CHECK-NEXT:       const Scalar [[R:e[0-9]+]] = kernels::Mul()([[SB]], Scalar([[N]][i]));
//  CHECK-NEXT:       const Scalar [[O:e[0-9]+]] = kernels::Sub()(Scalar(x0[i]), [[R]]);
//  CHECK-NEXT:       const Scalar [[PE:e[0-9]+]] = kernels::Add()([[O]], Scalar([[M]][i]));
//  CHECK-NEXT:       [[P]][i] = [[PE]];
//  CHECK-NEXT:     });
//  CHECK-NEXT:     team.sync();
//  CHECK-NEXT:     // fp.l2norm
//  CHECK-NEXT:     fp::fused::l2norm(team, [[P]], 1, 4, Scalar(1.0000000000000001e-05), y0);
//  CHECK-NEXT:     team.sync();
//  CHECK-NEXT:     // fp.broadcast
//  CHECK-NEXT:     fp::fused::forEachElement(team, 4, [&](int64_t i) {
//  CHECK-NEXT:       const Scalar [[CE:e[0-9]+]] = [[C]];
//  CHECK-NEXT:       [[CB]][i] = [[CE]];
//  CHECK-NEXT:     });
//  CHECK-NEXT:     team.sync();
//  CHECK-NEXT:     // fp.l2norm
//  CHECK-NEXT:     fp::fused::l2norm(team, [[CB]], 1, 4, Scalar(1.0000000000000001e-05), y1);
//  CHECK-NEXT:     team.sync();
//  CHECK-NEXT:     // math.exp
//  CHECK-NEXT:     fp::fused::unary(team, kernels::Exp(), 1, [[Q]], y2);
//  CHECK-NEXT:     team.sync();
//  CHECK-NEXT:   }
//       CHECK: kernels::forEachToken<Real>(B, T, 14,
