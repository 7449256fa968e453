// The hand-written FP-Mamba (Householder r = 1) layer verifies, and after
// inlining its map the loop-invariant work leaves fp.fixed_point: parameters
// and A = −exp(A_log) are computed once per call, not once per iteration.

// RUN: fp-opt %models/mlir/fp_mamba_householder.mlir | FileCheck %s --check-prefix=PARSE
// PARSE-LABEL: func.func private @fp_mamba_map
// PARSE: fp.selective_scan
// PARSE-LABEL: func.func @fp_mamba_householder
// PARSE: fp.fixed_point
// PARSE-SAME: backward <one_step>
// PARSE: func.call @fp_mamba_map

// RUN: fp-opt %models/mlir/fp_mamba_householder.mlir --inline --canonicalize \
// RUN:   --loop-invariant-code-motion --cse --symbol-dce | FileCheck %s

// CHECK-NOT: func.func private @fp_mamba_map
// CHECK-LABEL: func.func @fp_mamba_householder
// CHECK-DAG: %[[A_LOG:.*]] = fp.param "A_log" init <s4d_real>
// CHECK-DAG: %[[EXP:.*]] = math.exp %[[A_LOG]]
// CHECK-DAG: %[[A:.*]] = arith.negf %[[EXP]]
// CHECK: fp.fixed_point
// CHECK-NOT: fp.param
// CHECK-NOT: math.exp
// CHECK: fp.selective_scan {{.*}}, %[[A]],
// CHECK: fp.yield
// The head applies the map once more at the fixed point.
// CHECK: fp.selective_scan {{.*}}, %[[A]],
// CHECK-NOT: call
// CHECK: return
