// RUN: fp-opt %s -split-input-file -fp-fuse-mix-scan | FileCheck %s
// RUN: fp-opt %s -split-input-file -fp-fuse-mix-scan=scans=false | FileCheck %s --check-prefix=NOSCAN

// A per-token chain becomes one kernel; only the value used after it
// leaves the kernel.
// CHECK-LABEL: func.func @chain
//  CHECK-SAME:     (%[[X:.*]]: tensor<?x?x8xf32>, %[[Y:.*]]: tensor<?x?x8xf32>, %[[U:.*]]: tensor<?x?x8xf32>)
//       CHECK:   %[[K:.*]] = fp.kernel (%[[A0:.*]] = %[[X]], %[[A1:.*]] = %[[Y]], %[[A2:.*]] = %[[U]]) : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
//       CHECK:     %[[D:.*]] = arith.subf %[[A0]], %[[A1]]
//       CHECK:     %[[S:.*]] = fp.silu %[[A2]]
//       CHECK:     %[[N:.*]] = fp.l2norm %[[S]]
//       CHECK:     %[[M:.*]] = arith.mulf %[[N]], %[[D]]
//       CHECK:     fp.yield %[[M]] : tensor<?x?x8xf32>
//       CHECK:   }
//       CHECK:   return %[[K]]
func.func @chain(%x: tensor<?x?x8xf32>, %y: tensor<?x?x8xf32>,
                 %u: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %d = arith.subf %x, %y : tensor<?x?x8xf32>
  %s = fp.silu %u : tensor<?x?x8xf32>
  %n = fp.l2norm %s eps 1.0e-05 : tensor<?x?x8xf32>
  %m = arith.mulf %n, %d : tensor<?x?x8xf32>
  return %m : tensor<?x?x8xf32>
}

// -----

// The fixed-point body of FP-Mamba: the GEMM stays outside, the mixer, the
// selective scan and the LayerNorm epilogue form one kernel; uniform
// operands (A, D, the norm's weight and bias) are kernel inputs. The GEMM
// maps y itself, and the kernel reads its result one token back: W ȳ =
// shift(W y) for a map without a bias, so no shifted copy of y is written.
// CHECK-LABEL: func.func @mix_scan_epilogue
//       CHECK:   fp.fixed_point (%[[Y:.*]] = %{{.*}})
//   CHECK-NOT:     fp.shift
//       CHECK:     %[[L:.*]] = fp.linear %[[Y]]
//   CHECK-NOT:     fp.shift
//       CHECK:     %[[K:.*]] = fp.kernel ({{.*}}%[[LA:.*]] = %[[L]]{{.*}}) : ({{.*}}tensor<8x4xf32>{{.*}}) -> tensor<?x?x8xf32> {
//       CHECK:       %[[LS:.*]] = fp.shift %[[LA]] by 1
//       CHECK:       fp.sigmoid %[[LS]]
//       CHECK:       arith.mulf
//       CHECK:       fp.selective_scan
//       CHECK:       %[[N:.*]] = fp.layer_norm
//       CHECK:       fp.yield %[[N]]
//       CHECK:     }
//       CHECK:     fp.yield %[[K]]
// NOSCAN-LABEL: func.func @mix_scan_epilogue
//       NOSCAN:     fp.kernel
//       NOSCAN:       fp.shift
//       NOSCAN:       fp.sigmoid
//       NOSCAN:       arith.mulf
//       NOSCAN:       fp.yield
//       NOSCAN:     fp.selective_scan
//   NOSCAN-NOT:     fp.kernel
//       NOSCAN:     fp.layer_norm
func.func @mix_scan_epilogue(%y0: tensor<?x?x8xf32>, %w: tensor<8x8xf32>,
                             %dt: tensor<?x?x8xf32>, %a: tensor<8x4xf32>,
                             %b: tensor<?x?x4xf32>, %c: tensor<?x?x4xf32>,
                             %skip: tensor<8xf32>, %g: tensor<8xf32>,
                             %beta: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %r, %n = fp.fixed_point (%y = %y0) : tensor<?x?x8xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 10, max_iter_eval = 10, relax_start = 1.0, relax_decay = 0.9, relax_patience = 5>
      backward <one_step> {
    %s = fp.shift %y by 1 : tensor<?x?x8xf32>
    %l = fp.linear %s, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
    %gate = fp.sigmoid %l : tensor<?x?x8xf32>
    %u = arith.mulf %gate, %y : tensor<?x?x8xf32>
    %h = fp.selective_scan %u, %dt, %a, %b, %c skip %skip : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>, tensor<8xf32>
    %o = fp.layer_norm %h, %g, %beta eps 1.0e-05 : tensor<?x?x8xf32>, tensor<8xf32>
    fp.yield %o : tensor<?x?x8xf32>
  }
  return %r : tensor<?x?x8xf32>
}

// -----

// Declined: the second op reads the first both directly and through a
// GEMM, so fusing them would put the GEMM inside the kernel's span.
// CHECK-LABEL: func.func @not_convex
//   CHECK-NOT:   fp.kernel
//       CHECK:   fp.silu
//       CHECK:   fp.linear
//       CHECK:   arith.addf
func.func @not_convex(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  %a = fp.silu %x : tensor<?x?x8xf32>
  %l = fp.linear %a, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %b = arith.addf %a, %l : tensor<?x?x8xf32>
  return %b : tensor<?x?x8xf32>
}

// -----

// An op that reads a group member but cannot join (a GEMM) and sat between
// members moves after the kernel; both members' values leave the kernel.
// CHECK-LABEL: func.func @dependent_moves_after
//       CHECK:   %[[K:.*]]:2 = fp.kernel
//       CHECK:     fp.silu
//       CHECK:     arith.mulf
//       CHECK:     fp.yield
//       CHECK:   %[[L:.*]] = fp.linear %[[K]]#0
//       CHECK:   return %[[L]], %[[K]]#1
func.func @dependent_moves_after(%x: tensor<?x?x8xf32>, %z: tensor<?x?x8xf32>,
                                 %w: tensor<8x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %a = fp.silu %x : tensor<?x?x8xf32>
  %l = fp.linear %a, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %m = arith.mulf %a, %z : tensor<?x?x8xf32>
  return %l, %m : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Declined: single per-token ops, time-coupled ops (shift, reverse scan)
// and ops on tensors without batch and time dimensions stay as they are.
// CHECK-LABEL: func.func @declined
//   CHECK-NOT:   fp.kernel
func.func @declined(%x: tensor<?x?x8xf32>, %c: tensor<?x?x8xf32>,
                    %p: tensor<8xf32>) -> (tensor<?x?x8xf32>, tensor<8xf32>) {
  %s = fp.silu %x : tensor<?x?x8xf32>
  %t = fp.shift %s by 1 : tensor<?x?x8xf32>
  %h = fp.scan reverse %c, %t : tensor<?x?x8xf32>
  %e = math.exp %p : tensor<8xf32>
  %q = arith.negf %e : tensor<8xf32>
  return %h, %q : tensor<?x?x8xf32>, tensor<8xf32>
}

// -----

// Independent chains become separate kernels; a broadcast of a parameter
// is per-token work with a uniform input. (They share only the parameter.)
// CHECK-LABEL: func.func @siblings
//       CHECK:   fp.kernel
//       CHECK:     fp.broadcast
//       CHECK:     arith.addf
//       CHECK:     fp.yield
//       CHECK:   fp.kernel
//       CHECK:     fp.sigmoid
//       CHECK:     fp.rms_norm
//       CHECK:     fp.yield
//   CHECK-NOT:   fp.kernel
func.func @siblings(%x: tensor<?x?x8xf32>, %y: tensor<?x?x8xf32>,
                    %p: tensor<8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %b = fp.broadcast %p, %x dims [2] : tensor<8xf32>, tensor<?x?x8xf32>
  %a = arith.addf %x, %b : tensor<?x?x8xf32>
  %s = fp.sigmoid %y : tensor<?x?x8xf32>
  %n = fp.rms_norm %s, %p eps 1.0e-05 : tensor<?x?x8xf32>, tensor<8xf32>
  return %a, %n : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Independent chains that read one per-token value become one kernel, which
// reads it once per token; a kernel that holds a scan takes no sibling, so
// that their tokens need not run in time order.
// CHECK-LABEL: func.func @siblings_sharing_a_row
//       CHECK:   fp.kernel
//       CHECK:     fp.slice
//       CHECK:     fp.silu
//       CHECK:     fp.scan
//       CHECK:     fp.yield
//       CHECK:   fp.kernel
//       CHECK:     fp.slice
//       CHECK:     fp.sigmoid
//       CHECK:     fp.yield
//   CHECK-NOT:   fp.kernel
// NOSCAN-LABEL: func.func @siblings_sharing_a_row
//       NOSCAN:   fp.kernel
//       NOSCAN:     fp.slice
//       NOSCAN:     fp.silu
//       NOSCAN:     fp.slice
//       NOSCAN:     fp.sigmoid
//       NOSCAN:     fp.yield
//   NOSCAN-NOT:   fp.kernel
//       NOSCAN:   fp.scan
//       NOSCAN:   return
func.func @siblings_sharing_a_row(%r: tensor<?x?x16xf32>, %c: tensor<?x?x8xf32>)
    -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %a = fp.slice %r[0 : 8] : tensor<?x?x16xf32> -> tensor<?x?x8xf32>
  %u = fp.silu %a : tensor<?x?x8xf32>
  %h = fp.scan %c, %u : tensor<?x?x8xf32>
  %b = fp.slice %r[8 : 16] : tensor<?x?x16xf32> -> tensor<?x?x8xf32>
  %v = fp.sigmoid %b : tensor<?x?x8xf32>
  return %h, %v : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// A shift that a kernel reads moves into it: the kernel reads the shift's
// input at another token (by 1 and by -1 here). A shift other operations
// read stays for them.
// CHECK-LABEL: func.func @shifted_reads
//  CHECK-SAME:     (%[[X:.*]]: tensor<?x?x8xf32>, %[[Y:.*]]: tensor<?x?x8xf32>)
//       CHECK:   %[[T:.*]] = fp.shift %[[Y]] by -1
//       CHECK:   %[[K:.*]] = fp.kernel (%[[A0:.*]] = %[[X]], %[[A1:.*]] = %[[Y]])
//   CHECK-DAG:     %[[XS:.*]] = fp.shift %[[A0]] by 1
//   CHECK-DAG:     %[[YS:.*]] = fp.shift %[[A1]] by -1
//       CHECK:     fp.silu %[[XS]]
//       CHECK:     arith.mulf %{{.*}}, %[[YS]]
//       CHECK:   }
//       CHECK:   return %[[K]], %[[T]]
func.func @shifted_reads(%x: tensor<?x?x8xf32>, %y: tensor<?x?x8xf32>)
    -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %s = fp.shift %x by 1 : tensor<?x?x8xf32>
  %t = fp.shift %y by -1 : tensor<?x?x8xf32>
  %a = fp.silu %s : tensor<?x?x8xf32>
  %m = arith.mulf %a, %t : tensor<?x?x8xf32>
  return %m, %t : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Declined: a linear map with a bias does not commute with the shift (its
// first token would read the bias, not zero), and one whose result leaves
// for other operations keeps its shifted input; a weight-normalised map
// without a bias commutes.
// CHECK-LABEL: func.func @shifted_linears
//  CHECK-SAME:     (%[[Y:.*]]: tensor<?x?x8xf32>,
//       CHECK:   %[[S:.*]] = fp.shift %[[Y]] by 1
//       CHECK:   %[[BIASED:.*]] = fp.linear %[[S]], %{{.*}} bias
//       CHECK:   %[[SHARED:.*]] = fp.linear %[[S]], %{{.*}} :
//       CHECK:   %[[NORMED:.*]] = fp.linear %[[Y]], %{{.*}} gain
//       CHECK:   fp.kernel (%{{.*}} = %[[BIASED]], %{{.*}} = %[[SHARED]], %[[N:.*]] = %[[NORMED]])
//       CHECK:     fp.shift %[[N]] by 1
//   CHECK-NOT:     fp.shift
//       CHECK:     fp.yield
//       CHECK:   return %{{.*}}, %[[SHARED]]
func.func @shifted_linears(%y: tensor<?x?x8xf32>, %w: tensor<8x8xf32>,
                           %g: tensor<8xf32>, %b: tensor<8xf32>)
    -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %s = fp.shift %y by 1 : tensor<?x?x8xf32>
  %biased = fp.linear %s, %w bias %b : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %shared = fp.linear %s, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %normed = fp.linear %s, %w gain %g : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %a = arith.addf %biased, %shared : tensor<?x?x8xf32>
  %m = arith.mulf %a, %normed : tensor<?x?x8xf32>
  return %m, %shared : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// The splat constants a kernel reads are built in its body: a per-token
// splat from the batch and time extents of another per-token input (no
// batch × time buffer is written and read back), a small uniform splat as
// it is. A splat other operations read stays for them; a uniform splat of
// more than 256 elements stays an input.
// CHECK-LABEL: func.func @built_constants
//  CHECK-SAME:     (%[[X:.*]]: tensor<?x?x8xf32>, %[[G:.*]]: tensor<?x?x4xf32>, %[[Y:.*]]: tensor<?x?x512xf32>)
//       CHECK:   %[[BIG:.*]] = arith.constant dense<3.000000e+00> : tensor<512xf32>
//       CHECK:   %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
//       CHECK:   %[[KEPT:.*]] = tensor.splat %[[HALF]]
//       CHECK:   %[[K:.*]]:2 = fp.kernel (%[[A0:.*]] = %[[G]], %[[A1:.*]] = %[[X]], %[[A2:.*]] = %[[BIG]], %[[A3:.*]] = %[[Y]]) : (tensor<?x?x4xf32>, tensor<?x?x8xf32>, tensor<512xf32>, tensor<?x?x512xf32>)
//   CHECK-DAG:     %[[TWO:.*]] = arith.constant dense<2.000000e+00> : tensor<f32>
//   CHECK-DAG:     %[[B:.*]] = tensor.dim %[[A0]], %{{.*}}
//   CHECK-DAG:     %[[T:.*]] = tensor.dim %[[A0]], %{{.*}}
//   CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
//   CHECK-DAG:     %[[ZEROS:.*]] = tensor.splat %[[ZERO]][%[[B]], %[[T]]] : tensor<?x?x4xf32>
//   CHECK-DAG:     %[[INNER:.*]] = arith.constant 5.000000e-01 : f32
//   CHECK-DAG:     %[[HALVES:.*]] = tensor.splat %[[INNER]][%[[B]], %[[T]]] : tensor<?x?x8xf32>
//       CHECK:     fp.concat %[[ZEROS]], %[[A0]]
//       CHECK:     fp.broadcast %[[TWO]], %[[A1]]
//       CHECK:     arith.mulf %{{.*}}, %[[HALVES]]
//       CHECK:     fp.broadcast %[[A2]], %[[A3]]
//       CHECK:   }
//   CHECK-NOT:   tensor.splat
//       CHECK:   return %[[K]]#0, %[[K]]#1, %[[KEPT]]
func.func @built_constants(%x: tensor<?x?x8xf32>, %g: tensor<?x?x4xf32>,
                           %y: tensor<?x?x512xf32>)
    -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %x, %c0 : tensor<?x?x8xf32>
  %t = tensor.dim %x, %c1 : tensor<?x?x8xf32>
  %two = arith.constant dense<2.0> : tensor<f32>
  %big = arith.constant dense<3.0> : tensor<512xf32>
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %zeros = tensor.splat %zero[%b, %t] : tensor<?x?x4xf32>
  %halves = tensor.splat %half[%b, %t] : tensor<?x?x8xf32>
  %padded = fp.concat %zeros, %g : tensor<?x?x4xf32>, tensor<?x?x4xf32> -> tensor<?x?x8xf32>
  %twos = fp.broadcast %two, %x dims [] : tensor<f32>, tensor<?x?x8xf32>
  %d = arith.mulf %padded, %twos : tensor<?x?x8xf32>
  %h = arith.mulf %d, %halves : tensor<?x?x8xf32>
  %bigs = fp.broadcast %big, %y dims [2] : tensor<512xf32>, tensor<?x?x512xf32>
  %p = arith.mulf %y, %bigs : tensor<?x?x512xf32>
  %s = fp.reduce_sum %p dims [2] : tensor<?x?x512xf32> -> tensor<?x?xf32>
  %sb = fp.broadcast %s, %x dims [0, 1] : tensor<?x?xf32>, tensor<?x?x8xf32>
  %e = arith.addf %d, %sb : tensor<?x?x8xf32>
  return %h, %e, %halves : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Declined: a per-token splat that is the kernel's only per-token input has
// no extents to be built from, so it stays an input.
// CHECK-LABEL: func.func @lone_splat
//       CHECK:   %[[Z:.*]] = tensor.splat
//       CHECK:   fp.kernel (%{{.*}} = %[[Z]]) : (tensor<?x?x8xf32>)
//   CHECK-NOT:     tensor.splat
//       CHECK:     fp.yield
func.func @lone_splat(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %x, %c0 : tensor<?x?x8xf32>
  %t = tensor.dim %x, %c1 : tensor<?x?x8xf32>
  %one = arith.constant 1.0 : f32
  %ones = tensor.splat %one[%b, %t] : tensor<?x?x8xf32>
  %e = math.exp %ones : tensor<?x?x8xf32>
  %n = arith.negf %e : tensor<?x?x8xf32>
  return %n : tensor<?x?x8xf32>
}
