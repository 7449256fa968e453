// RUN: fp-opt %s -fp-plan-buffers -fp-schedule-kernels | fp-translate --fp-to-host | FileCheck %s
// RUN: fp-opt %s -fp-plan-buffers -fp-schedule-kernels | fp-translate --fp-to-cuda | FileCheck %s --check-prefix=CUDA
// RUN: fp-opt %s -fp-transpose-scan-a -fp-plan-buffers -fp-schedule-kernels | fp-translate --fp-to-cuda | FileCheck %s --check-prefix=TRANSPOSED

// Where a fused kernel's scans keep their state. On CUDA a selective scan
// whose state fits 128 values per thread of a 256-thread team keeps it in
// registers (4 channels × 2 states here); one that does not (4096 channels
// × 16 states: 16 × 16 per thread) and every plain scan keep theirs in the
// per-sample state buffer. The register-held slots come last in that
// buffer, which the host uses whole and the device allocates without them.
// A selective scan's slots are S, Aᵀ and ΣΔ (2 · 4096 · 16 + 4096 for the
// large one), a plain scan's h and P (2 · 4).
//
// Both kernels' scans are linear, but only the first can run a sample in
// chunks: in the second, a scan reads another scan's result. The first gets
// the summary pass (the ops its scans read and their summary steps, no
// result written) and the carry of each scan, [S | ΣΔ] or [h | P], in body
// order.
//
// With fp-transpose-scan-a the kernel takes each A transposed, which the
// layer computes once per call, and every scan function reads it as it
// lies (`<true>`): the transposes in the body emit nothing, and the kernel
// still runs in chunks.

module attributes {fp.models = [{d_model = 4 : i64, layer = @scans, n_layers = 1 : i64, name = "scans", norm = "rms_norm", norm_eps = 1.000000e-05 : f64, pad_vocab_multiple = 8 : i64, tie_embeddings = true, vocab = 11 : i64}]} {
  func.func @scans(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer} {
    %wbig = fp.param "big.weight" init <ones> : tensor<4096x4xf32>
    %abig = fp.param "big.A" init <ones> : tensor<4096x16xf32>
    %wbc = fp.param "big.bc" init <ones> : tensor<16x4xf32>
    %a = fp.param "small.A" init <ones> : tensor<4x2xf32>
    %wsmall = fp.param "small.bc" init <ones> : tensor<2x4xf32>
    %d = fp.param "small.D" init <ones> : tensor<4xf32>
    %big = fp.linear %x, %wbig : (tensor<?x?x4xf32>, tensor<4096x4xf32>) -> tensor<?x?x4096xf32>
    %bc16 = fp.linear %x, %wbc : (tensor<?x?x4xf32>, tensor<16x4xf32>) -> tensor<?x?x16xf32>
    %bc2 = fp.linear %x, %wsmall : (tensor<?x?x4xf32>, tensor<2x4xf32>) -> tensor<?x?x2xf32>
    %k:3 = fp.kernel (%ub = %big, %ab = %abig, %bb = %bc16, %u = %x, %as = %a, %bs = %bc2, %ds = %d) : (tensor<?x?x4096xf32>, tensor<4096x16xf32>, tensor<?x?x16xf32>, tensor<?x?x4xf32>, tensor<4x2xf32>, tensor<?x?x2xf32>, tensor<4xf32>) -> (tensor<?x?x4096xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
      %s1 = fp.selective_scan %ub, %ub, %ab, %bb, %bb : tensor<?x?x4096xf32>, tensor<4096x16xf32>, tensor<?x?x16xf32>
      %s2 = fp.selective_scan %u, %u, %as, %bs, %bs skip %ds : tensor<?x?x4xf32>, tensor<4x2xf32>, tensor<?x?x2xf32>, tensor<4xf32>
      %sig = fp.sigmoid %u : tensor<?x?x4xf32>
      %h = fp.scan %sig, %u : tensor<?x?x4xf32>
      fp.yield %s1, %s2, %h : tensor<?x?x4096xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>
    }
    %chained = fp.kernel (%u = %x) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
      %sig = fp.sigmoid %u : tensor<?x?x4xf32>
      %h1 = fp.scan %sig, %u : tensor<?x?x4xf32>
      %h2 = fp.scan %sig, %h1 : tensor<?x?x4xf32>
      fp.yield %h2 : tensor<?x?x4xf32>
    }
    %sum = arith.addf %k#1, %k#2 : tensor<?x?x4xf32>
    %all = arith.addf %sum, %chained : tensor<?x?x4xf32>
    return %all : tensor<?x?x4xf32>
  }
}

// CHECK-LABEL: struct Kernel0 {
//  CHECK-NEXT:   using Scalar = fp::Compute<Real>;
//  CHECK-NEXT:   // Scan state a CUDA thread keeps across the sample's tokens.
//  CHECK-NEXT:   struct Registers {
//  CHECK-NEXT:     #ifdef __CUDA_ARCH__
//  CHECK-NEXT:     fp::fused::ScanRegisters<Scalar, 4, 2, kernels::kTeamSize> scan0;
//  CHECK-NEXT:     #endif
//  CHECK-NEXT:   };
//  CHECK-NEXT:   static constexpr int64_t kRegisterState = 20;
//       CHECK:   FP_HOST_DEVICE void operator()(Team &team, int64_t row, int64_t step, Scalar *scratch, Scalar *state, Registers &registers) const {
//       CHECK:     // fp.selective_scan
//  CHECK-NEXT:     fp::fused::selectiveScanStep(team, step == 0, state + 0, x0, x0, x1, x2, x2, nullptr, 4096, 16, y0);
//       CHECK:     // fp.selective_scan
//  CHECK-NEXT:     #ifdef __CUDA_ARCH__
//  CHECK-NEXT:     fp::fused::selectiveScanStep(team, step == 0, registers.scan0, x3, x3, x4, x5, x5, x6, y1);
//  CHECK-NEXT:     #else
//  CHECK-NEXT:     fp::fused::selectiveScanStep(team, step == 0, state + 135176, x3, x3, x4, x5, x5, x6, 4, 2, y1);
//  CHECK-NEXT:     #endif
//       CHECK:     fp::fused::scanStep(team, state + 135168, {{v[0-9]+}}, x3, 4, y2);
//       CHECK:   static constexpr bool kChunkable = true;
//  CHECK-NEXT:   static constexpr int64_t kCarry = 69652;
//       CHECK:   FP_HOST_DEVICE void summarize(Team &team, int64_t row, int64_t step, bool first, Scalar *scratch, Scalar *state, Registers &registers) const {
//   CHECK-NOT:     y{{[0-9]}}
//       CHECK:     fp::fused::selectiveScanSummaryStep(team, first, state + 0, x0, x0, x1, x2, 4096, 16);
//       CHECK:     fp::fused::selectiveScanSummaryStep(team, first, registers.scan0, x3, x3, x4, x5);
//  CHECK-NEXT:     #else
//  CHECK-NEXT:     fp::fused::selectiveScanSummaryStep(team, first, state + 135176, x3, x3, x4, x5, 4, 2);
//       CHECK:     fp::fused::unary(team, kernels::Sigmoid(), 4, x3, [[SIG:v[0-9]+]]);
//       CHECK:     fp::fused::scanSummaryStep(team, first, state + 135168, [[SIG]], x3, 4);
//       CHECK:   FP_HOST_DEVICE void saveCarry(
//       CHECK:     fp::fused::saveSelectiveScanCarry(team, state + 0, 4096, 16, carry + 0);
//       CHECK:     fp::fused::saveSelectiveScanCarry(team, registers.scan0, carry + 69632);
//       CHECK:     fp::fused::saveScanCarry(team, state + 135168, 4, carry + 69644);
//       CHECK:   FP_HOST_DEVICE void loadCarry(
//       CHECK:     fp::fused::loadSelectiveScanCarry(team, state + 0, in1, 4096, 16, carries + 0, kCarry, count);
//       CHECK:     fp::fused::loadSelectiveScanCarry(team, registers.scan0, state + 135176, in4, carries + 69632, kCarry, count);
//       CHECK:     fp::fused::loadScanCarry(team, state + 135168, 4, carries + 69644, kCarry, count);
//       CHECK: struct Kernel1 {
//       CHECK:     fp::fused::scanStep(team, state + 8, {{v[0-9]+}}, {{v[0-9]+}}, 4, y0);
//       CHECK:   static constexpr bool kChunkable = false;
//  CHECK-NEXT:   static constexpr int64_t kCarry = 0;
//   CHECK-NOT:   summarize
//       CHECK: kernels::forEachSample<Real>(B, T, {{[0-9]+}}, 135196, {{[0-9]+}}, Kernel0<Real>{

// CUDA: namespace kernels = fp::cuda;
// CUDA: static constexpr int64_t kRegisterState = 20;
// CUDA: kernels::forEachSample<Real>(B, T, {{[0-9]+}}, 135196, {{[0-9]+}}, Kernel0<Real>{

// TRANSPOSED-LABEL: struct Kernel0 {
//       TRANSPOSED:   FP_HOST_DEVICE void operator()(
//   TRANSPOSED-NOT:     transpose
//       TRANSPOSED:     fp::fused::selectiveScanStep<true>(team, step == 0, state + 0, x0, x0, x1, x2, x2, nullptr, 4096, 16, y0);
//       TRANSPOSED:     fp::fused::selectiveScanStep<true>(team, step == 0, registers.scan0, x3, x3, x4, x5, x5, x6, y1);
//  TRANSPOSED-NEXT:     #else
//  TRANSPOSED-NEXT:     fp::fused::selectiveScanStep<true>(team, step == 0, state + 135176, x3, x3, x4, x5, x5, x6, 4, 2, y1);
//       TRANSPOSED:   static constexpr bool kChunkable = true;
//       TRANSPOSED:     fp::fused::selectiveScanSummaryStep<true>(team, first, state + 0, x0, x0, x1, x2, 4096, 16);
//       TRANSPOSED:     fp::fused::loadSelectiveScanCarry<true>(team, state + 0, in1, 4096, 16, carries + 0, kCarry, count);
//       TRANSPOSED:     fp::fused::loadSelectiveScanCarry<true>(team, registers.scan0, state + 135176, in4, carries + 69632, kCarry, count);
//       TRANSPOSED:   kernels::transpose(p1, 4096, 16, [[ABIG:s[0-9]+]]);
//       TRANSPOSED:   kernels::transpose(p3, 4, 2, [[ASMALL:s[0-9]+]]);
//       TRANSPOSED:   Kernel0<Real>{{{.*}}[[ABIG]]{{.*}}[[ASMALL]]
