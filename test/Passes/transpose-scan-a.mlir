// RUN: fp-opt %s -split-input-file -fp-transpose-scan-a | FileCheck %s
// RUN: fp-opt %s -split-input-file -fp-transpose-scan-a -fp-transpose-scan-a | FileCheck %s

// A kernel input read only as a selective scan's A becomes Aᵀ: one
// transpose where A is defined (outside the loop), shared by every kernel
// that reads A, and one back at the start of each kernel's body. A second
// run changes nothing (the input is then read by the transpose).
// CHECK-LABEL: func.func @in_and_after_loop
//  CHECK-SAME:     (%[[Y0:.*]]: tensor<?x?x8xf32>, %[[DT:.*]]: tensor<?x?x8xf32>, %[[A:.*]]: tensor<8x4xf32>, %[[B:.*]]: tensor<?x?x4xf32>, %[[D:.*]]: tensor<8xf32>)
//  CHECK-NEXT:   %[[AT:.*]] = fp.transpose %[[A]] : tensor<8x4xf32> -> tensor<4x8xf32>
//  CHECK-NEXT:   fp.fixed_point
//       CHECK:     fp.kernel ({{.*}}, %[[IN:.*]] = %[[AT]], {{.*}}) : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<4x8xf32>, tensor<?x?x4xf32>, tensor<8xf32>) -> tensor<?x?x8xf32> {
//  CHECK-NEXT:       %[[BACK:.*]] = fp.transpose %[[IN]] : tensor<4x8xf32> -> tensor<8x4xf32>
//  CHECK-NEXT:       fp.selective_scan %{{.*}}, %{{.*}}, %[[BACK]], %{{.*}}, %{{.*}} skip %{{.*}} :
//       CHECK:   fp.kernel ({{.*}}, %[[IN2:.*]] = %[[AT]], {{.*}}) : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<4x8xf32>, tensor<?x?x4xf32>) -> tensor<?x?x8xf32> {
//  CHECK-NEXT:     %[[BACK2:.*]] = fp.transpose %[[IN2]] : tensor<4x8xf32> -> tensor<8x4xf32>
//  CHECK-NEXT:     fp.selective_scan %{{.*}}, %{{.*}}, %[[BACK2]], %{{.*}}, %{{.*}} :
//   CHECK-NOT:   fp.transpose
func.func @in_and_after_loop(%y0: tensor<?x?x8xf32>, %dt: tensor<?x?x8xf32>,
                             %a: tensor<8x4xf32>, %b: tensor<?x?x4xf32>,
                             %skip: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %r, %n = fp.fixed_point (%y = %y0) : tensor<?x?x8xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 10, max_iter_eval = 10, relax_start = 1.0, relax_decay = 0.9, relax_patience = 5>
      backward <one_step> {
    %k = fp.kernel (%u = %y, %d = %dt, %am = %a, %bm = %b, %s = %skip) : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>, tensor<8xf32>) -> tensor<?x?x8xf32> {
      %h = fp.selective_scan %u, %d, %am, %bm, %bm skip %s : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>, tensor<8xf32>
      fp.yield %h : tensor<?x?x8xf32>
    }
    fp.yield %k : tensor<?x?x8xf32>
  }
  %k2 = fp.kernel (%u = %r, %d = %dt, %am = %a, %bm = %b) : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x8xf32> {
    %h = fp.selective_scan %u, %d, %am, %bm, %bm : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>
    fp.yield %h : tensor<?x?x8xf32>
  }
  return %k2 : tensor<?x?x8xf32>
}

// -----

// Where A is computed: after its definition.
// CHECK-LABEL: func.func @computed
//       CHECK:   %[[E:.*]] = math.exp
//  CHECK-NEXT:   %[[NEG:.*]] = arith.negf %[[E]] : tensor<8x4xf32>
//  CHECK-NEXT:   %[[AT:.*]] = fp.transpose %[[NEG]] : tensor<8x4xf32> -> tensor<4x8xf32>
//  CHECK-NEXT:   fp.kernel ({{.*}}, %{{.*}} = %[[AT]], {{.*}})
func.func @computed(%u: tensor<?x?x8xf32>, %logA: tensor<8x4xf32>,
                    %b: tensor<?x?x4xf32>) -> tensor<?x?x8xf32> {
  %e = math.exp %logA : tensor<8x4xf32>
  %a = arith.negf %e : tensor<8x4xf32>
  %k = fp.kernel (%x = %u, %am = %a, %bm = %b) : (tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x8xf32> {
    %h = fp.selective_scan %x, %x, %am, %bm, %bm : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>
    fp.yield %h : tensor<?x?x8xf32>
  }
  return %k : tensor<?x?x8xf32>
}

// -----

// Declined: the body reads the input otherwise than as a scan's A (here it
// computes A from it), so the input keeps its layout.
// CHECK-LABEL: func.func @read_otherwise
//   CHECK-NOT:   fp.transpose
//       CHECK:   fp.kernel ({{.*}}) : (tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>)
//   CHECK-NOT:   fp.transpose
func.func @read_otherwise(%u: tensor<?x?x8xf32>, %logA: tensor<8x4xf32>,
                          %b: tensor<?x?x4xf32>) -> tensor<?x?x8xf32> {
  %k = fp.kernel (%x = %u, %l = %logA, %bm = %b) : (tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x8xf32> {
    %e = math.exp %l : tensor<8x4xf32>
    %h = fp.selective_scan %x, %x, %e, %bm, %bm : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>
    fp.yield %h : tensor<?x?x8xf32>
  }
  return %k : tensor<?x?x8xf32>
}
