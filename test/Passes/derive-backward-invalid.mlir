// RUN: fp-opt %s -split-input-file -fp-derive-backward -verify-diagnostics

// What fp-derive-backward refuses, each with an error at the op (for DSL
// input: at its source).

func.func @no_rule(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer} {
  // expected-error @below {{'math.absf' op has no vector-Jacobian product rule; fp-derive-backward cannot differentiate it}}
  %a = math.absf %x : tensor<?x?x4xf32>
  return %a : tensor<?x?x4xf32>
}

// -----

func.func @reads_counts(%x: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?xf32>) attributes {fp.layer} {
  %r, %n = fp.fixed_point (%y = %x) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
      backward <one_step> {
    fp.yield %y : tensor<?x?x4xf32>
  }
  // expected-error @below {{'arith.sitofp' op cannot be differentiated: it reads the iteration counts of a fixed-point loop}}
  %f = arith.sitofp %n : tensor<?xi32> to tensor<?xf32>
  return %r, %f : tensor<?x?x4xf32>, tensor<?xf32>
}

// -----

func.func @inline_gain(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer} {
  %v = fp.param "v" init <fan_in_uniform> : tensor<4x4xf32>
  %g = fp.param "g" init <row_norm of "v"> : tensor<4xf32>
  // expected-error @below {{'fp.linear' op cannot be differentiated with its weight normalisation inline; run fp-hoist-invariants first}}
  %l = fp.linear %x, %v gain %g : (tensor<?x?x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
  return %l : tensor<?x?x4xf32>
}
