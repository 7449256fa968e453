// RUN: fp-opt %s -fp-plan-buffers -fp-schedule-kernels | fp-translate --fp-to-host | FileCheck %s
// RUN: fp-opt %s -fp-plan-buffers -fp-schedule-kernels | fp-translate --fp-to-cuda | FileCheck %s

// Where a fused kernel's body synchronises its team. A barrier precedes an
// op only where the op may touch an element another thread touched since
// the last barrier, one of the two a write. Every element loop gives
// element i to the same thread, so an op that reads, element by element, a
// value the op before it wrote so (from the same first element) needs
// none. Such ops here: chains; a norm of one row of more than 128
// elements, which the whole team computes element by element (a shorter
// row goes to one warp's lanes, which read every element); a scan step,
// each thread stepping the channels it owns. A team-wide reduction inside
// an op is a barrier itself. The launchers synchronise between tokens, so
// the body ends with none.
//
// Here (no fusion passes, so each elementwise op is an element loop of its
// own): the silu, the norm of its 256 values and the sum after it run
// without barriers; the slices of B and C (copies, which may write any
// element) reuse a slot the norm read, so a barrier precedes them; the
// 16-value norms go to one warp, so a barrier precedes each; the scan
// reads B and C whole after a barrier, its input element by element as
// the sum wrote it; the layer norm reads the scan's result as the scan
// wrote it.

module attributes {fp.models = [{d_model = 256 : i64, layer = @barriers, n_layers = 1 : i64, name = "barriers", norm = "rms_norm", norm_eps = 1.000000e-05 : f64, pad_vocab_multiple = 8 : i64, tie_embeddings = true, vocab = 11 : i64}]} {
  func.func @barriers(%x: tensor<?x?x256xf32>) -> tensor<?x?x256xf32> attributes {fp.layer} {
    %wbc = fp.param "bc.weight" init <ones> : tensor<32x256xf32>
    %bc = fp.linear %x, %wbc : (tensor<?x?x256xf32>, tensor<32x256xf32>) -> tensor<?x?x32xf32>
    %a = fp.param "A" init <ones> : tensor<256x16xf32>
    %w = fp.param "norm.weight" init <ones> : tensor<256xf32>
    %b = fp.param "norm.bias" init <zeros> : tensor<256xf32>
    %k = fp.kernel (%u = %x, %bcs = %bc, %am = %a, %nw = %w, %nb = %b) : (tensor<?x?x256xf32>, tensor<?x?x32xf32>, tensor<256x16xf32>, tensor<256xf32>, tensor<256xf32>) -> tensor<?x?x256xf32> {
      %s = fp.silu %u : tensor<?x?x256xf32>
      %n = fp.l2norm %s eps 1.0e-05 : tensor<?x?x256xf32>
      %v = arith.addf %n, %u : tensor<?x?x256xf32>
      %bm = fp.slice %bcs[0 : 16] : tensor<?x?x32xf32> -> tensor<?x?x16xf32>
      %cm = fp.slice %bcs[16 : 32] : tensor<?x?x32xf32> -> tensor<?x?x16xf32>
      %bn = fp.l2norm %bm eps 1.0e-05 : tensor<?x?x16xf32>
      %cn = fp.l2norm %cm eps 1.0e-05 : tensor<?x?x16xf32>
      %y = fp.selective_scan %v, %u, %am, %bn, %cn : tensor<?x?x256xf32>, tensor<256x16xf32>, tensor<?x?x16xf32>
      %o = fp.layer_norm %y, %nw, %nb eps 1.0e-05 : tensor<?x?x256xf32>, tensor<256xf32>
      fp.yield %o : tensor<?x?x256xf32>
    }
    return %k : tensor<?x?x256xf32>
  }
}

// CHECK-LABEL: struct Kernel0 {
//       CHECK:   FP_HOST_DEVICE void operator()(
//       CHECK:     // fp.silu
//  CHECK-NEXT:     fp::fused::unary(team, kernels::Silu(), 256, x0, [[S:v[0-9]+]]);
//  CHECK-NEXT:     // fp.l2norm
//  CHECK-NEXT:     fp::fused::l2norm(team, [[S]], 1, 256, {{.*}}, [[N:v[0-9]+]]);
//  CHECK-NEXT:     // arith.addf
//  CHECK-NEXT:     fp::fused::binary(team, kernels::Add(), 256, [[N]], x0, [[V:v[0-9]+]]);
//  CHECK-NEXT:     team.sync();
//  CHECK-NEXT:     // fp.slice
//  CHECK-NEXT:     fp::fused::slice(team, x1, 1, 32, 0, 16, [[B:v[0-9]+]]);
//  CHECK-NEXT:     // fp.slice
//  CHECK-NEXT:     fp::fused::slice(team, x1, 1, 32, 16, 16, [[C:v[0-9]+]]);
//  CHECK-NEXT:     team.sync();
//  CHECK-NEXT:     // fp.l2norm
//  CHECK-NEXT:     fp::fused::l2norm(team, [[B]], 1, 16, {{.*}}, [[BN:v[0-9]+]]);
//  CHECK-NEXT:     team.sync();
//  CHECK-NEXT:     // fp.l2norm
//  CHECK-NEXT:     fp::fused::l2norm(team, [[C]], 1, 16, {{.*}}, [[CN:v[0-9]+]]);
//  CHECK-NEXT:     team.sync();
//  CHECK-NEXT:     // fp.selective_scan
//       CHECK:     fp::fused::selectiveScanStep(team, step == 0, registers.scan0, [[V]], x0, x2, [[BN]], [[CN]], nullptr, [[Y:v[0-9]+]]);
//  CHECK-NEXT:     #else
//  CHECK-NEXT:     fp::fused::selectiveScanStep(team, step == 0, state + 0, [[V]], x0, x2, [[BN]], [[CN]], nullptr, 256, 16, [[Y]]);
//  CHECK-NEXT:     #endif
//  CHECK-NEXT:     // fp.layer_norm
//  CHECK-NEXT:     fp::fused::layerNorm(team, [[Y]], x3, x4, 1, 256, {{.*}}, y0);
//  CHECK-NEXT:   }
