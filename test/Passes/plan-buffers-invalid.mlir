// RUN: fp-opt %s -split-input-file -fp-plan-buffers -verify-diagnostics

// Buffer planning refuses loops it cannot plan, each with a located error:
// an fp.fixed_point that is not lowered, and scf.while loops that are not in
// the form fp-lower-fixed-point produces (the relaxation runs in place, so
// it must be the last reader of its iterate, and of the values that share
// its storage).

func.func @not_lowered(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer} {
  // expected-error @+1 {{must be lowered before buffer planning (run fp-lower-fixed-point, which fp-pipeline does)}}
  %r, %n = fp.fixed_point (%y = %u) : tensor<?x?x4xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
      backward <one_step> {
    fp.yield %y : tensor<?x?x4xf32>
  }
  return %r : tensor<?x?x4xf32>
}

// -----

func.func @read_after_relax(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer} {
  %s = fp.solver_init %u solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3> backward <one_step> : tensor<?x?x4xf32>
  // expected-error @+1 {{'scf.while' op is not a fixed-point loop in the form fp-lower-fixed-point produces: iterate #0 is read after its fp.solver_relax}}
  %r = scf.while (%y = %u) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
    %go = fp.solver_continue %s
    scf.condition(%go) %y : tensor<?x?x4xf32>
  } do {
  ^bb0(%y: tensor<?x?x4xf32>):
    %f = fp.silu %y : tensor<?x?x4xf32>
    %n = fp.solver_relax %s, %y, %f : tensor<?x?x4xf32>
    %late = fp.sigmoid %y : tensor<?x?x4xf32>
    fp.solver_update %s
    scf.yield %n : tensor<?x?x4xf32>
  }
  return %r : tensor<?x?x4xf32>
}

// -----

// Read after the relaxation through a slice that shares the iterate's
// storage (read in place by the GEMM).
func.func @read_after_relax_in_place(%u: tensor<?x?x4xf32>) -> tensor<?x?x2xf32> attributes {fp.layer} {
  %w = fp.param "w" init <ones> : tensor<2x2xf32>
  %s = fp.solver_init %u solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3> backward <one_step> : tensor<?x?x4xf32>
  // expected-error @+1 {{'scf.while' op is not a fixed-point loop in the form fp-lower-fixed-point produces: iterate #0 is read after its fp.solver_relax}}
  %r = scf.while (%y = %u) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
    %go = fp.solver_continue %s
    scf.condition(%go) %y : tensor<?x?x4xf32>
  } do {
  ^bb0(%y: tensor<?x?x4xf32>):
    %half = fp.slice %y[2 : 4] : tensor<?x?x4xf32> -> tensor<?x?x2xf32>
    %f = fp.silu %y : tensor<?x?x4xf32>
    %n = fp.solver_relax %s, %y, %f : tensor<?x?x4xf32>
    %late = fp.linear %half, %w : (tensor<?x?x2xf32>, tensor<2x2xf32>) -> tensor<?x?x2xf32>
    fp.solver_update %s
    scf.yield %n : tensor<?x?x4xf32>
  }
  %o = fp.slice %r[0 : 2] : tensor<?x?x4xf32> -> tensor<?x?x2xf32>
  return %o : tensor<?x?x2xf32>
}

// -----

func.func @not_relaxed(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer} {
  %s = fp.solver_init %u solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3> backward <one_step> : tensor<?x?x4xf32>
  // expected-error @+1 {{iterate #0 is not updated by fp.solver_relax of its solver}}
  %r = scf.while (%y = %u) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
    %go = fp.solver_continue %s
    scf.condition(%go) %y : tensor<?x?x4xf32>
  } do {
  ^bb0(%y: tensor<?x?x4xf32>):
    %f = fp.silu %y : tensor<?x?x4xf32>
    fp.solver_update %s
    scf.yield %f : tensor<?x?x4xf32>
  }
  return %r : tensor<?x?x4xf32>
}

// -----

func.func @other_condition(%u: tensor<?x?x4xf32>, %c: i1) -> tensor<?x?x4xf32> attributes {fp.layer} {
  %s = fp.solver_init %u solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3> backward <one_step> : tensor<?x?x4xf32>
  // expected-error @+1 {{its condition is not only fp.solver_continue}}
  %r = scf.while (%y = %u) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
    scf.condition(%c) %y : tensor<?x?x4xf32>
  } do {
  ^bb0(%y: tensor<?x?x4xf32>):
    %n = fp.solver_relax %s, %y, %y : tensor<?x?x4xf32>
    fp.solver_update %s
    scf.yield %n : tensor<?x?x4xf32>
  }
  return %r : tensor<?x?x4xf32>
}

// -----

func.func @update_first(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer} {
  %s = fp.solver_init %u solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3> backward <one_step> : tensor<?x?x4xf32>
  // expected-error @+1 {{fp.solver_update comes before an fp.solver_relax}}
  %r = scf.while (%y = %u) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
    %go = fp.solver_continue %s
    scf.condition(%go) %y : tensor<?x?x4xf32>
  } do {
  ^bb0(%y: tensor<?x?x4xf32>):
    %f = fp.silu %y : tensor<?x?x4xf32>
    fp.solver_update %s
    %n = fp.solver_relax %s, %y, %f : tensor<?x?x4xf32>
    scf.yield %n : tensor<?x?x4xf32>
  }
  return %r : tensor<?x?x4xf32>
}
