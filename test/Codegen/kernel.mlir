// RUN: fp-opt %s -fp-plan-buffers -fp-schedule-kernels -mlir-print-debuginfo | fp-translate --fp-to-host | FileCheck %s
// RUN: fp-opt %s -fp-plan-buffers -fp-schedule-kernels -mlir-print-debuginfo | fp-translate --fp-to-cuda | FileCheck %s --check-prefix=CUDA

// fp.kernel ops become function objects over Fused.h, launched per token
// (no scan) or per sample in time order (a scan inside). Intermediate values
// get scratch slots, reused once dead; results are written in place.

module attributes {fp.models = [{d_model = 4 : i64, layer = @fused, n_layers = 1 : i64, name = "fused", norm = "rms_norm", norm_eps = 1.000000e-05 : f64, pad_vocab_multiple = 8 : i64, tie_embeddings = true, vocab = 11 : i64}]} {
  func.func @fused(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer} {
    %g = fp.param "norm.weight" init <ones> : tensor<4xf32>
    %k = fp.kernel (%a = %u, %w = %g) : (tensor<?x?x4xf32>, tensor<4xf32>) -> tensor<?x?x4xf32> {
      %s = fp.silu %a : tensor<?x?x4xf32>
      %e = math.exp %s : tensor<?x?x4xf32>
      %m = arith.mulf %e, %a : tensor<?x?x4xf32>
      %n = fp.rms_norm %m, %w eps 1.0e-05 : tensor<?x?x4xf32>, tensor<4xf32>
      fp.yield %n : tensor<?x?x4xf32>
    }
    %h = fp.kernel (%c = %k, %x = %u) : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
      %sig = fp.sigmoid %c : tensor<?x?x4xf32>
      %scan = fp.scan %sig, %x : tensor<?x?x4xf32>
      %r = fp.reshape %scan : tensor<?x?x4xf32> -> tensor<?x?x2x2xf32>
      %back = fp.reshape %r : tensor<?x?x2x2xf32> -> tensor<?x?x4xf32>
      fp.yield %back : tensor<?x?x4xf32>
    }
    %j:2 = fp.kernel (%a = %h) : (tensor<?x?x4xf32>) -> (tensor<?x?x2x2xf32>, tensor<?x?x4xf32>) {
      %e = math.exp %a : tensor<?x?x4xf32>
      %r = fp.reshape %e : tensor<?x?x4xf32> -> tensor<?x?x2x2xf32>
      %n = arith.negf %a : tensor<?x?x4xf32>
      %t = math.tanh %n : tensor<?x?x4xf32>
      fp.yield %r, %t : tensor<?x?x2x2xf32>, tensor<?x?x4xf32>
    }
    %flat = fp.reshape %j#0 : tensor<?x?x2x2xf32> -> tensor<?x?x4xf32>
    %sum = arith.addf %flat, %j#1 : tensor<?x?x4xf32>
    %near = fp.kernel (%p = %sum, %q = %u) : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
      %back = fp.shift %p by 1 : tensor<?x?x4xf32>
      %ahead = fp.shift %q by -1 : tensor<?x?x4xf32>
      %m = arith.mulf %back, %ahead : tensor<?x?x4xf32>
      fp.yield %m : tensor<?x?x4xf32>
    }
    %built = fp.kernel (%p = %near, %q = %u) : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %b = tensor.dim %q, %c0 : tensor<?x?x4xf32>
      %t = tensor.dim %q, %c1 : tensor<?x?x4xf32>
      %zero = arith.constant 0.0 : f32
      %zeros = tensor.splat %zero[%b, %t] : tensor<?x?x2xf32>
      %eps = arith.constant {fp.literal = 1.0e-05 : f64} 9.99999974E-6 : f32
      %epss = tensor.splat %eps[%b, %t] : tensor<?x?x4xf32>
      %two = arith.constant dense<2.0> : tensor<f32>
      %twos = fp.broadcast %two, %p dims [] : tensor<f32>, tensor<?x?x4xf32>
      %m = arith.mulf %p, %twos : tensor<?x?x4xf32>
      %a = arith.addf %m, %epss : tensor<?x?x4xf32>
      %cat = fp.concat %zeros, %a : tensor<?x?x2xf32>, tensor<?x?x4xf32> -> tensor<?x?x6xf32>
      %end = fp.slice %cat[2 : 6] : tensor<?x?x6xf32> -> tensor<?x?x4xf32>
      fp.yield %end : tensor<?x?x4xf32>
    }
    return %built : tensor<?x?x4xf32>
  }
}

// Consecutive elementwise ops of one length run as one loop over elements
// (kernel-chains.mlir).
// CHECK-LABEL: namespace layer_fused {
//       CHECK:   namespace kernels = fp::host;
//       CHECK:   // fp.kernel at kernel.mlir:11:10: 4 ops
//  CHECK-NEXT:   template <typename Real>
//  CHECK-NEXT:   struct Kernel0 {
//  CHECK-NEXT:     using Scalar = fp::Compute<Real>;
//  CHECK-NEXT:     struct Registers {};
//  CHECK-NEXT:     static constexpr int64_t kRegisterState = 0;
//  CHECK-NEXT:     const Real *in0;
//  CHECK-NEXT:     const Real *in1;
//  CHECK-NEXT:     Real *out0;
//       CHECK:     FP_HOST_DEVICE void operator()(Team &team, int64_t row, int64_t step, Scalar *scratch, Scalar *state, Registers &registers) const {
//  CHECK-NEXT:       const Real *const x0 = in0 + row * 4;
//  CHECK-NEXT:       const Real *const x1 = in1;
//  CHECK-NEXT:       Real *const y0 = out0 + row * 4;
//  CHECK-NEXT:       Scalar *const v0 = scratch + 0;
//  CHECK-NEXT:       (void)row;
//       CHECK:       // fp.silu at kernel.mlir:12:12
//  CHECK-NEXT:       // math.exp at kernel.mlir:13:12
//  CHECK-NEXT:       // arith.mulf at kernel.mlir:14:12
//  CHECK-NEXT:       fp::fused::forEachElement(team, 4, [&](int64_t i) {
//  CHECK-NEXT:         const Scalar [[SILU:e[0-9]+]] = kernels::Silu()(Scalar(fp::fused::input(x0, i)));
//  CHECK-NEXT:         const Scalar [[EXP:e[0-9]+]] = kernels::Exp()([[SILU]]);
//  CHECK-NEXT:         const Scalar [[MUL:e[0-9]+]] = kernels::Mul()([[EXP]], Scalar(fp::fused::input(x0, i)));
//  CHECK-NEXT:         v0[i] = [[MUL]];
//  CHECK-NEXT:       });
//  CHECK-NEXT:       team.sync();
//  CHECK-NEXT:       // fp.rms_norm
//  CHECK-NEXT:       fp::fused::rmsNorm(team, v0, x1, 1, 4, Scalar(1.0000000000000001e-05), y0);
// A kernel run in time order reads its per-token inputs' rows from one of
// two stage buffers after its scratch (8 elements a row, aligned), filled by
// stage() a token ahead (Fused.h, "Staged inputs"); the summary pass of the
// chunked schedule reads them where they lie.
//       CHECK:   // fp.kernel at kernel.mlir:18:10: 4 ops, in time order
//       CHECK:   struct Kernel1 {
//       CHECK:       const Real *const x0 = stageBuffer(scratch, step) + 0;
//  CHECK-NEXT:       const Real *const x1 = stageBuffer(scratch, step) + 8;
//       CHECK:       fp::fused::unary(team, kernels::Sigmoid(), 4, x0, [[SIG:v[0-9]+]]);
//       CHECK:       fp::fused::scanStep(team, state + 0, [[SIG]], x1, 4, [[H:v[0-9]+]]);
//       CHECK:       fp::fused::copy(team, 4, [[H]], y0);
//       CHECK:     FP_HOST_DEVICE void summarize(
//  CHECK-NEXT:       const Real *const x0 = in0 + row * 4;
//  CHECK-NEXT:       const Real *const x1 = in1 + row * 4;
//       CHECK:     static constexpr int64_t kStage = 16;
//  CHECK-NEXT:     static constexpr int64_t kStageOffset = 8;
//  CHECK-NEXT:     FP_HOST_DEVICE static Real *stageBuffer(Scalar *scratch, int64_t step) {
//  CHECK-NEXT:       return reinterpret_cast<Real *>(scratch + kStageOffset) + (step & 1) * kStage;
//       CHECK:     FP_HOST_DEVICE void stage(Team &team, int64_t row, int64_t step, Real *to) const {
//  CHECK-NEXT:       (void)step;
//  CHECK-NEXT:       fp::fused::stageRow(team, in0 + row * 4, 4, to + 0);
//  CHECK-NEXT:       fp::fused::stageRow(team, in1 + row * 4, 4, to + 8);
//  CHECK-NEXT:     }
// Each function object declares its launch's scratch, stage buffers included
// (the launchers compile only the shared-memory form where it is small).
//       CHECK:     static constexpr int64_t kScratch = 40;
//  CHECK-NEXT:   };
// A yielded reshape of an intermediate value is copied to its result after
// the last op, so no later value may take its slot.
//       CHECK:   // fp.kernel at kernel.mlir:25:12: 4 ops
//       CHECK:   struct Kernel2 {
//       CHECK:       Scalar *const [[E:v[0-9]+]] = scratch + 0;
//   CHECK-NOT:       scratch +
//       CHECK:       fp::fused::forEachElement(team, 4, [&](int64_t i) {
//  CHECK-NEXT:         const Scalar [[EXP2:e[0-9]+]] = kernels::Exp()(Scalar(fp::fused::input(x0, i)));
//  CHECK-NEXT:         [[E]][i] = [[EXP2]];
//  CHECK-NEXT:         const Scalar [[NEG:e[0-9]+]] = kernels::Neg()(Scalar(fp::fused::input(x0, i)));
//  CHECK-NEXT:         const Scalar [[TANH:e[0-9]+]] = Scalar(Real(kernels::Tanh()([[NEG]])));
//  CHECK-NEXT:         y1[i] = Real([[TANH]]);
//  CHECK-NEXT:       });
//       CHECK:       fp::fused::copy(team, 4, [[E]], y0);
// A shifted input is read at the token `offset` steps back (or zeros) into
// a slot; the function object gets the sample length, and no pointer at
// the token's own row.
//       CHECK:   // fp.kernel at kernel.mlir:34:13: 3 ops
//       CHECK:   struct Kernel3 {
//       CHECK:     Real *out0;
//  CHECK-NEXT:     int64_t length; // tokens per sample, for the shifted reads
//   CHECK-NOT:       x0 =
//       CHECK:       Real *const y0 = out0 + row * 4;
//       CHECK:       fp::fused::shifted(team, in0, row, step, length, 1, 4, [[BACK:v[0-9]+]]);
//       CHECK:       fp::fused::shifted(team, in1, row, step, length, -1, 4, [[AHEAD:v[0-9]+]]);
//       CHECK:       fp::fused::binary(team, kernels::Mul(), 4, [[BACK]], [[AHEAD]], y0);
// Splat constants are filled per token into slots of their own (a float
// constant as its literal, exact in f64); their extents and scalars emit
// nothing, and an input read only for its extents gets no pointer. A
// constant of one element that only chains read is a register of every
// thread instead (a uniform scalar), with no slot and no barrier.
//       CHECK:   struct Kernel4 {
//       CHECK:       const Real *const x0 = in0 + row * 4;
//   CHECK-NOT:       x1 =
//       CHECK:       Real *const y0 = out0 + row * 4;
//   CHECK-NOT:       tensor.dim
//   CHECK-NOT:       arith.constant
//       CHECK:       // tensor.splat
//  CHECK-NEXT:       fp::fused::fill(team, 2, Scalar(0.0), [[ZEROS:v[0-9]+]]);
//       CHECK:       // tensor.splat
//  CHECK-NEXT:       fp::fused::fill(team, 4, Scalar(1.0000000000000001e-05), [[EPS:v[0-9]+]]);
//       CHECK:       // arith.constant
//  CHECK-NEXT:       const Scalar [[TWO:u[0-9]+]] = Scalar(2.0);
//   CHECK-NOT:       team.sync();
//       CHECK:       fp::fused::forEachElement(team, 4, [&](int64_t i) {
//  CHECK-NEXT:         const Scalar [[TWOS:e[0-9]+]] = [[TWO]];
//  CHECK-NEXT:         const Scalar [[TWICE:e[0-9]+]] = kernels::Mul()(Scalar(fp::fused::input(x0, i)), [[TWOS]]);
//  CHECK-NEXT:         const Scalar [[SUM4:e[0-9]+]] = kernels::Add()([[TWICE]], Scalar([[EPS]][i]));
//  CHECK-NEXT:         [[A:v[0-9]+]][i] = [[SUM4]];
//       CHECK:       fp::fused::insert(team, [[ZEROS]], 1, 2, 0, 6, [[CAT:v[0-9]+]]);
//       CHECK:       fp::fused::insert(team, [[A]], 1, 4, 2, 6, [[CAT]]);
//       CHECK:   void forward(
//       CHECK:     Real *[[OUT:s[0-9]+]] = static_cast<Real *>(args.output);
//       CHECK:     kernels::forEachToken<Real>(B, T, 4, 16, Kernel0<Real>{in, p0, [[K:s[0-9]+]]});
//       CHECK:     kernels::forEachSample<Real>(B, T, 40, 8, 16, Kernel1<Real>{[[K]], in, {{s[0-9]+}}});
//       CHECK:     kernels::forEachToken<Real>(B, T, 8, 12, Kernel3<Real>{[[SUM:s[0-9]+]], in, [[NEAR:s[0-9]+]], T});
//       CHECK:     kernels::forEachToken<Real>(B, T, 16, 29, Kernel4<Real>{[[NEAR]], in, [[OUT]]});
//   CHECK-NOT:     kernels::copy(

// The CUDA unit has the same function objects, over fp::cuda's launchers.
// CUDA-LABEL: namespace layer_fused::cuda {
//       CUDA:   namespace kernels = fp::cuda;
//       CUDA:   struct Kernel0 {
//       CUDA:       fp::fused::rmsNorm(team, v0, x1, 1, 4, Scalar(1.0000000000000001e-05), y0);
//       CUDA:     static constexpr int64_t kScratch = 4;
//       CUDA:     kernels::forEachToken<Real>(B, T, 4, 16, Kernel0<Real>{in, p0, {{s[0-9]+}}});
//       CUDA:     kernels::forEachSample<Real>(B, T, 40, 8, 16, Kernel1<Real>{
