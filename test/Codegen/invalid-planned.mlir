// RUN: fp-opt %s -split-input-file -fp-lower-fixed-point -fp-plan-buffers -fp-schedule-kernels | not fp-translate --fp-to-host -split-input-file 2>&1 | FileCheck %s

// IR the emitters reject after buffer planning, each with a located error.

module {
  func.func @gain(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer} {
    %v = fp.param "v" init <fan_in_uniform> : tensor<4x4xf32>
    %g = fp.param "g" init <row_norm of "v"> : tensor<4xf32>
    // CHECK: error: 'fp.linear' op cannot emit a weight-normalised fp.linear; run fp-hoist-invariants
    %r = fp.linear %u, %v gain %g : (tensor<?x?x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
    return %r : tensor<?x?x4xf32>
  }
}

// -----
module {
  func.func @counts_used(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer} {
    %r, %n = fp.fixed_point (%y = %u) : tensor<?x?x4xf32>
        solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
        backward <one_step> {
      fp.yield %y : tensor<?x?x4xf32>
    }
    // CHECK: error: 'arith.sitofp' op cannot emit a use of the iteration counts other than the layer's result
    %f = arith.sitofp %n : tensor<?xi32> to tensor<?xf32>
    return %r : tensor<?x?x4xf32>
  }
}

// -----
module {
  func.func @gemm_in_kernel(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer} {
    %w = fp.param "w" init <ones> : tensor<4x4xf32>
    %k = fp.kernel (%a = %u, %b = %w) : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32> {
      // CHECK: error: 'fp.linear' op cannot emit this operation in a kernel
      %l = fp.linear %a, %b : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
      fp.yield %l : tensor<?x?x4xf32>
    }
    return %k : tensor<?x?x4xf32>
  }
}

// -----
module {
  func.func @two_loops(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer} {
    %r, %n = fp.fixed_point (%y = %u) : tensor<?x?x4xf32>
        solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
        backward <one_step> {
      fp.yield %y : tensor<?x?x4xf32>
    }
    // CHECK: error: 'scf.while' op cannot emit a layer with more than one fixed-point loop
    %r2, %n2 = fp.fixed_point (%y = %r) : tensor<?x?x4xf32>
        solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
        backward <one_step> {
      fp.yield %y : tensor<?x?x4xf32>
    }
    return %r2 : tensor<?x?x4xf32>
  }
}
