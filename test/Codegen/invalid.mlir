// RUN: fp-translate --fp-to-host %s -split-input-file -verify-diagnostics

// expected-error @+1 {{cannot emit a library without layers}}
module {
  func.func @not_a_layer(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
    return %u : tensor<?x?x4xf32>
  }
}

// -----

module {
  // expected-error @+1 {{cannot emit a layer whose signature is not}}
  func.func @static_batch(%u: tensor<2x?x4xf32>) -> tensor<2x?x4xf32> attributes {fp.layer} {
    return %u : tensor<2x?x4xf32>
  }
}

// -----

module {
  func.func private @mixer(tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  func.func @calls(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer} {
    // expected-error @+1 {{cannot emit a call; run the inliner first}}
    %r = func.call @mixer(%u) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    return %r : tensor<?x?x4xf32>
  }
}

// -----

module {
  func.func @reduce_batch(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer} {
    // expected-error @+1 {{cannot emit a reduction over dimension 0 (batch or time)}}
    %s = fp.reduce_sum %u dims [0] : tensor<?x?x4xf32> -> tensor<?x4xf32>
    return %u : tensor<?x?x4xf32>
  }
}

// -----

module {
  func.func @not_lowered(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer} {
    // expected-error @+1 {{cannot emit a fixed-point loop that is not lowered (run fp-lower-fixed-point, which fp-pipeline does)}}
    %r, %n = fp.fixed_point (%y = %u) : tensor<?x?x4xf32>
        solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
        backward <one_step> {
      fp.yield %y : tensor<?x?x4xf32>
    }
    return %r : tensor<?x?x4xf32>
  }
}

// -----

module {
  // expected-error @+1 {{cannot emit a layer without a buffer plan ('fp.workspace' missing; run fp-plan-buffers, which fp-pipeline does)}}
  func.func @unplanned(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer} {
    %s = fp.silu %u : tensor<?x?x4xf32>
    return %s : tensor<?x?x4xf32>
  }
}

// -----

module {
  func.func @slot_too_small(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer, fp.workspace = [{elements = 2 : i64, per_batch, per_step}]} {
    // expected-error @+1 {{cannot emit: buffer 0 does not hold a 'tensor<?x?x4xf32>'}}
    %s = fp.silu %u {fp.slots = array<i64: 0>} : tensor<?x?x4xf32>
    return %s : tensor<?x?x4xf32>
  }
}

// -----

module {
  // expected-error @+1 {{cannot emit: 'fp.workspace' entry {elements = 4 : i64, per_batch, per_step, result = 1 : i64} holds a result that cannot be computed in place (the output, or a value the forward saves, each in one buffer)}}
  func.func @result_not_saved(%u: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>) attributes {fp.layer, fp.workspace = [{elements = 4 : i64, per_batch, per_step, result = 1 : i64}]} {
    %s = fp.silu %u {fp.slots = array<i64: 0>} : tensor<?x?x4xf32>
    return %u, %s : tensor<?x?x4xf32>, tensor<?x?x4xf32>
  }
}

// -----

module {
  // expected-error @+1 {{holds a result that cannot be computed in place}}
  func.func @result_twice(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer, fp.workspace = [{elements = 4 : i64, per_batch, per_step, result = 0 : i64}, {elements = 4 : i64, per_batch, per_step, result = 0 : i64}]} {
    %s = fp.silu %u {fp.slots = array<i64: 0>} : tensor<?x?x4xf32>
    %t = fp.silu %s {fp.slots = array<i64: 1>} : tensor<?x?x4xf32>
    return %t : tensor<?x?x4xf32>
  }
}

// -----

module {
  // expected-error @+1 {{cannot emit: buffer 0 is planned to hold result #0 in place, but holds several values}}
  func.func @result_shared(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer, fp.workspace = [{elements = 4 : i64, per_batch, per_step, result = 0 : i64}]} {
    %s = fp.silu %u {fp.slots = array<i64: 0>} : tensor<?x?x4xf32>
    %t = fp.silu %s {fp.slots = array<i64: 0>} : tensor<?x?x4xf32>
    return %t : tensor<?x?x4xf32>
  }
}

// -----

module {
  // expected-error @+1 {{cannot emit: buffer 1 is planned to hold result #0 in place, but holds another value}}
  func.func @result_elsewhere(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer, fp.workspace = [{elements = 4 : i64, per_batch, per_step}, {elements = 4 : i64, per_batch, per_step, result = 0 : i64}]} {
    %s = fp.silu %u {fp.slots = array<i64: 1>} : tensor<?x?x4xf32>
    %t = fp.silu %s {fp.slots = array<i64: 0>} : tensor<?x?x4xf32>
    return %t : tensor<?x?x4xf32>
  }
}
