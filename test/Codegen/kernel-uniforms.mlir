// RUN: fp-opt %s -fp-plan-buffers -fp-schedule-kernels | fp-translate --fp-to-host | FileCheck %s
// RUN: fp-opt %s -fp-plan-buffers -fp-schedule-kernels | fp-translate --fp-to-cuda | FileCheck %s

// An op of one element that only chains and other such ops read (through
// views, or for its extents) is a uniform scalar: every thread computes it
// for itself, into a register, with no scratch slot and no barrier. Here:
// the constant, the gate's sigmoid (read through a reshape), c = 2σ(g),
// and the products with c.
//
// A row sum of one row into such a scalar is a reduction of the whole team
// that every thread gets (fp::fused::rowSum, the sum of n); where a chain
// computes the row (⟨n, a⟩ from n ⊙ a), the chain accumulates it as it
// goes, in order (forEachElementInOrder), and needs no barrier after it
// (the reduction has them). A chain reads a uniform scalar directly, and a
// single op that reads one (the broadcast of c · Σn) is a chain of its own.
// A one-element op the kernel yields (the exp), and the maxima, are stored
// as before.
//
// What a uniform scalar reads lives until the next op followed by a
// barrier has run, since threads may still be computing the scalar while
// that op runs: the slot of max(n ⊙ a), which the product after it reads
// last, is not given to max(a), computed next (n ⊙ a's, read by the chain
// after that, is not free either).
//
// A barrier precedes an op only where it reads or writes what another
// thread wrote or read since the last one: the chain after the uniform
// scalars reads the first norm's result; a reduction inside an op (the
// row sums) is a barrier itself; max(a) and the chain after it touch
// neither each other's slots nor the product's, and the exp reads what the
// barrier before the second norm ordered.

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
      %x = fp.reduce_max %m dims [2] : tensor<?x?x4xf32> -> tensor<?x?xf32>
      %xs = arith.mulf %x, %s : tensor<?x?xf32>
      %q = fp.reduce_max %a dims [2] : tensor<?x?x4xf32> -> tensor<?x?xf32>
      %sb = fp.broadcast %xs, %n dims [0, 1] : tensor<?x?xf32>, tensor<?x?x4xf32>
      %r = arith.mulf %sb, %n : tensor<?x?x4xf32>
      %o = arith.subf %a, %r : tensor<?x?x4xf32>
      %p = arith.addf %o, %m : tensor<?x?x4xf32>
      %z = fp.l2norm %p eps 1.0e-05 : tensor<?x?x4xf32>
      %t = fp.reduce_sum %n dims [2] : tensor<?x?x4xf32> -> tensor<?x?xf32>
      %ct = arith.mulf %c, %t : tensor<?x?xf32>
      %cb = fp.broadcast %ct, %n dims [0, 1] : tensor<?x?xf32>, tensor<?x?x4xf32>
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
//  CHECK-NEXT:     Scalar *const [[X:v[0-9]+]] = scratch + 8;
//  CHECK-NEXT:     Scalar *const [[Q:v[0-9]+]] = scratch + 9;
//  CHECK-NEXT:     Scalar *const [[P:v[0-9]+]] = scratch + 10;
//  CHECK-NEXT:     Scalar *const [[CB:v[0-9]+]] = scratch + 4;
//   CHECK-NOT:     scratch +
//       CHECK:     fp::fused::l2norm(team, x0, 1, 4, Scalar(1.0000000000000001e-05), [[N]]);
//  CHECK-NEXT:     // arith.constant
//  CHECK-NEXT:     const Scalar [[TWO:u[0-9]+]] = Scalar(2.0);
//  CHECK-NEXT:     // fp.sigmoid
//  CHECK-NEXT:     const Scalar [[SIG:u[0-9]+]] = kernels::Sigmoid()(Scalar(x1[0]));
//  CHECK-NEXT:     // fp.broadcast
//  CHECK-NEXT:     const Scalar [[TWOS:u[0-9]+]] = [[TWO]];
//  CHECK-NEXT:     // arith.mulf
//  CHECK-NEXT:     const Scalar [[C:u[0-9]+]] = kernels::Mul()([[TWOS]], [[SIG]]);
//  CHECK-NEXT:     team.sync();
//  CHECK-NEXT:     // arith.mulf
//  CHECK-NEXT:     // fp.reduce_sum
//  CHECK-NEXT:     fp::fused::Wide<Scalar> [[PART:p[0-9]+]] = 0;
//  CHECK-NEXT:     fp::fused::forEachElementInOrder(team, 4, [&](int64_t i) {
//  CHECK-NEXT:       const Scalar [[ME:e[0-9]+]] = kernels::Mul()(Scalar([[N]][i]), Scalar(fp::fused::input(x0, i)));
//  CHECK-NEXT:       [[M]][i] = [[ME]];
//  CHECK-NEXT:       [[PART]] += fp::fused::Wide<Scalar>([[ME]]);
//  CHECK-NEXT:     });
//  CHECK-NEXT:     const Scalar [[D:u[0-9]+]] = Scalar(team.sum([[PART]]));
//  CHECK-NEXT:     // arith.mulf
//  CHECK-NEXT:     const Scalar [[S:u[0-9]+]] = kernels::Mul()([[C]], [[D]]);
//  CHECK-NEXT:     // fp.reduce_max
//       CHECK:     fp::fused::reduce(team, [[M]], 1, {{.*}}, false, [[X]]);
//  CHECK-NEXT:     team.sync();
//  CHECK-NEXT:     // arith.mulf
//  CHECK-NEXT:     const Scalar [[XS:u[0-9]+]] = kernels::Mul()(Scalar([[X]][0]), [[S]]);
//  CHECK-NEXT:     // fp.reduce_max
//       CHECK:     fp::fused::reduce(team, x0, 1, {{.*}}, false, [[Q]]);
//  CHECK-NEXT:     // fp.broadcast
//  CHECK-NEXT:     // arith.mulf
//  CHECK-NEXT:     // arith.subf
//  CHECK-NEXT:     // arith.addf
//  CHECK-NEXT:     fp::fused::forEachElement(team, 4, [&](int64_t i) {
//  CHECK-NEXT:       const Scalar [[SB:e[0-9]+]] = [[XS]];
//  CHECK-NEXT:       const Scalar [[R:e[0-9]+]] = kernels::Mul()([[SB]], Scalar([[N]][i]));
//  CHECK-NEXT:       const Scalar [[O:e[0-9]+]] = kernels::Sub()(Scalar(fp::fused::input(x0, i)), [[R]]);
//  CHECK-NEXT:       const Scalar [[PE:e[0-9]+]] = kernels::Add()([[O]], Scalar([[M]][i]));
//  CHECK-NEXT:       [[P]][i] = [[PE]];
//  CHECK-NEXT:     });
//  CHECK-NEXT:     team.sync();
//  CHECK-NEXT:     // fp.l2norm
//  CHECK-NEXT:     fp::fused::l2norm(team, [[P]], 1, 4, Scalar(1.0000000000000001e-05), y0);
//  CHECK-NEXT:     // fp.reduce_sum
//  CHECK-NEXT:     const Scalar [[T:u[0-9]+]] = fp::fused::rowSum<Scalar>(team, [[N]], 4);
//  CHECK-NEXT:     // arith.mulf
//  CHECK-NEXT:     const Scalar [[CT:u[0-9]+]] = kernels::Mul()([[C]], [[T]]);
//  CHECK-NEXT:     // fp.broadcast
//  CHECK-NEXT:     fp::fused::forEachElement(team, 4, [&](int64_t i) {
//  CHECK-NEXT:       const Scalar [[CE:e[0-9]+]] = [[CT]];
//  CHECK-NEXT:       [[CB]][i] = [[CE]];
//  CHECK-NEXT:     });
//  CHECK-NEXT:     team.sync();
//  CHECK-NEXT:     // fp.l2norm
//  CHECK-NEXT:     fp::fused::l2norm(team, [[CB]], 1, 4, Scalar(1.0000000000000001e-05), y1);
//  CHECK-NEXT:     // math.exp
//  CHECK-NEXT:     fp::fused::unary(team, kernels::Exp(), 1, [[Q]], y2);
//  CHECK-NEXT:   }
//       CHECK: kernels::forEachToken<Real>(B, T, 14,
