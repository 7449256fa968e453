// RUN: fp-opt %s -split-input-file -fp-schedule-kernels | FileCheck %s
// RUN: fp-opt %s -split-input-file -fp-schedule-kernels=stage-inputs=false | FileCheck %s --check-prefix=UNSTAGED
// RUN: fp-opt %s -split-input-file -fp-schedule-kernels -fp-schedule-kernels | FileCheck %s

// The schedule of a kernel run in time order (no fusion passes, so every
// elementwise op is an element loop of its own).
//
// Barriers: the silu, the norm of its 256 values and the sum after it run
// element by element from the same first element, so none separates them;
// the slices (copies, which may write any element) take the slot the norm
// read, so a barrier precedes them; each 16-value norm goes to one warp,
// which reads every element of its input, so a barrier precedes it; the
// scan reads B and C whole after a barrier; the layer norm reads the
// scan's result as the scan wrote it. The summary pass (the ops the scan
// reads) has no second 16-value norm, so no barrier of its own before it.
//
// Slots: the sum reuses the silu's slot (dead once the norm read it), the
// slices the norm's; the layer norm is computed into the result. The scan
// keeps its 256 × 16 state in registers on CUDA. Both per-token inputs are
// staged (8-element aligned), after the scratch of both passes.

// CHECK-LABEL: func.func @scan
//       CHECK:   fp.kernel
//  CHECK-SAME:     fp.carry_size = 4352 : i64
//  CHECK-SAME:     fp.register_state = 8448 : i64
//  CHECK-SAME:     fp.scratch_size = 1376 : i64
//  CHECK-SAME:     fp.stage_offset = 800 : i64, fp.stage_size = 288 : i64
//  CHECK-SAME:     fp.staged_inputs = array<i64: 0, 0, 1, 256>
//  CHECK-SAME:     fp.state_size = 8448 : i64
//  CHECK-NEXT:     fp.silu %{{.*}} {fp.slot = 0 : i64, fp.summary = {slot = 0 : i64}}
//  CHECK-NEXT:     fp.l2norm %{{.*}} {fp.slot = 256 : i64, fp.summary = {slot = 256 : i64}}
//  CHECK-NEXT:     arith.addf %{{.*}} {fp.slot = 0 : i64, fp.summary = {slot = 0 : i64}}
//  CHECK-NEXT:     fp.barrier call summary
//  CHECK-NEXT:     fp.slice %{{.*}}[0 : 16] {fp.slot = 256 : i64, fp.summary = {slot = 256 : i64}}
//  CHECK-NEXT:     fp.slice %{{.*}}[16 : 32] {fp.slot = 512 : i64}
//  CHECK-NEXT:     fp.barrier call summary
//  CHECK-NEXT:     fp.l2norm %{{.*}} {fp.slot = 528 : i64, fp.summary = {slot = 512 : i64}}
//  CHECK-NEXT:     fp.barrier call{{$}}
//  CHECK-NEXT:     fp.l2norm %{{.*}} {fp.slot = 256 : i64}
//  CHECK-NEXT:     fp.barrier call summary
//  CHECK-NEXT:     fp.selective_scan {{.*}} {fp.carry_offset = 0 : i64, fp.registers, fp.slot = 544 : i64, fp.state_offset = 0 : i64, fp.summary = {}}
//  CHECK-NEXT:     fp.layer_norm {{.*}} {fp.out = 0 : i64}
//  CHECK-NEXT:     fp.yield

// UNSTAGED-LABEL: func.func @scan
//       UNSTAGED:   fp.kernel
//   UNSTAGED-NOT:     fp.stage_offset
//  UNSTAGED-SAME:     fp.scratch_size = 800 : i64, fp.stage_size = 0 : i64,
//   UNSTAGED-NOT:     fp.staged_inputs
//  UNSTAGED-SAME:     fp.state_size = 8448 : i64

func.func @scan(%x: tensor<?x?x256xf32>, %bc: tensor<?x?x32xf32>, %a: tensor<256x16xf32>, %w: tensor<256xf32>, %b: tensor<256xf32>) -> tensor<?x?x256xf32> {
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

// -----

// Chains: the exp and the product run as one element loop, the product
// stored (the slice and the last norm read it), the exp in a register; the
// tanh and the sum of the slice are another, computed into result 1. A
// barrier precedes each chain: the first reads the norm's result, which
// one warp wrote, and the second reads its slice from an offset other than
// its own first element. A kernel without a scan has no state, stage or
// summary.

// CHECK-LABEL: func.func @chains
//       CHECK:   fp.kernel
//  CHECK-SAME:     {fp.register_state = 0 : i64, fp.scratch_size = 8 : i64, fp.stage_size = 0 : i64, fp.state_size = 0 : i64}
//  CHECK-NEXT:     fp.l2norm %{{.*}} {fp.slot = 0 : i64}
//  CHECK-NEXT:     fp.barrier call{{$}}
//  CHECK-NEXT:     math.exp %{{.*}} {fp.chain = 0 : i64}
//  CHECK-NEXT:     arith.mulf %{{.*}} {fp.chain = 0 : i64, fp.slot = 4 : i64}
//  CHECK-NEXT:     fp.slice
//  CHECK-NEXT:     fp.barrier call{{$}}
//  CHECK-NEXT:     math.tanh %{{.*}} {fp.chain = 1 : i64}
//  CHECK-NEXT:     arith.addf %{{.*}} {fp.chain = 1 : i64, fp.out = 1 : i64}
//  CHECK-NEXT:     fp.l2norm %{{.*}} {fp.out = 0 : i64}
//  CHECK-NEXT:     fp.yield

func.func @chains(%u: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x2xf32>) {
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

// -----

// A product with a transposed right operand stages that operand in a
// temporary of its own while it runs (2 matrices of 2 × (2 | 1)). A value
// yielded twice is computed into the first result and copied into the
// second after a barrier: the product may have written any element of it.

// CHECK-LABEL: func.func @temporary
//       CHECK:   fp.kernel
//  CHECK-SAME:     fp.scratch_size = 12 : i64
//  CHECK-NEXT:     fp.matmul {{.*}} {fp.out = 0 : i64, fp.temp = array<i64: 0, 12>, transpose_rhs}
//  CHECK-NEXT:     fp.barrier call{{$}}
//  CHECK-NEXT:     fp.yield

func.func @temporary(%l: tensor<?x?x2x2x2xf32>) -> (tensor<?x?x2x2x2xf32>, tensor<?x?x2x2x2xf32>) {
  %k:2 = fp.kernel (%a = %l) : (tensor<?x?x2x2x2xf32>) -> (tensor<?x?x2x2x2xf32>, tensor<?x?x2x2x2xf32>) {
    %m = fp.matmul %a, %a {transpose_rhs} : tensor<?x?x2x2x2xf32>, tensor<?x?x2x2x2xf32> -> tensor<?x?x2x2x2xf32>
    fp.yield %m, %m : tensor<?x?x2x2x2xf32>, tensor<?x?x2x2x2xf32>
  }
  return %k#0, %k#1 : tensor<?x?x2x2x2xf32>, tensor<?x?x2x2x2xf32>
}
