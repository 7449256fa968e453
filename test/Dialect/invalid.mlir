// RUN: fp-opt %s -split-input-file -verify-diagnostics

// One verifier error per case, grouped by attribute and op; keep
// one expected error per split.

func.func @init_arity() {
  // expected-error @below {{initialiser 'constant' takes 1 argument(s), got 0}}
  %0 = fp.param "p" init <constant> : tensor<8xf32>
  return
}

// -----

func.func @init_arity_range() {
  // expected-error @below {{initialiser 'fan_in_uniform' takes 0 to 1 argument(s), got 2}}
  %0 = fp.param "p" init <fan_in_uniform(1.0, 2.0)> : tensor<8xf32>
  return
}

// -----

func.func @init_non_finite() {
  // expected-error @below {{initialiser 'constant' has a non-finite argument}}
  %0 = fp.param "p" init <constant(0x7FF0000000000000)> : tensor<8xf32>
  return
}

// -----

func.func @init_row_norm_without_of() {
  // expected-error @below {{initialiser 'row_norm' needs the parameter it is the norm of ('of "name"')}}
  %0 = fp.param "p" init <row_norm> : tensor<8xf32>
  return
}

// -----

func.func @init_of_on_other_kind() {
  // expected-error @below {{initialiser 'ones' does not refer to another parameter}}
  %0 = fp.param "p" init <ones of "V"> : tensor<8xf32>
  return
}

// -----

func.func @init_uniform_bounds() {
  // expected-error @below {{initialiser 'uniform' needs lo < hi}}
  %0 = fp.param "p" init <uniform(1.0, -1.0)> : tensor<8xf32>
  return
}

// -----

func.func @init_normal_std() {
  // expected-error @below {{initialiser 'normal' needs a positive std}}
  %0 = fp.param "p" init <normal(0.0, 0.0)> : tensor<8xf32>
  return
}

// -----

func.func @init_dt_bias_range() {
  // expected-error @below {{initialiser 'dt_bias' needs 0 < dt_min < dt_max and floor > 0}}
  %0 = fp.param "p" init <dt_bias(0.1, 0.001, 0.0001)> : tensor<8xf32>
  return
}

// -----

func.func @solver_tolerance(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{solver tolerance must be positive, got 0.000000e+00}}
  %y, %n = fp.fixed_point (%i = %x) : tensor<?x?x8xf32> solver <tolerance = 0.0, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15> backward <one_step> {
    fp.yield %i : tensor<?x?x8xf32>
  }
  return
}

// -----

func.func @solver_quantile(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{solver quantile must lie in [0, 1], got 1.500000e+00}}
  %y, %n = fp.fixed_point (%i = %x) : tensor<?x?x8xf32> solver <tolerance = 0.1, quantile = 1.5, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15> backward <one_step> {
    fp.yield %i : tensor<?x?x8xf32>
  }
  return
}

// -----

func.func @solver_max_iter_train(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{solver max_iter_train must be at least 1, got 0}}
  %y, %n = fp.fixed_point (%i = %x) : tensor<?x?x8xf32> solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 0, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15> backward <one_step> {
    fp.yield %i : tensor<?x?x8xf32>
  }
  return
}

// -----

func.func @solver_max_iter_eval(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{solver max_iter_eval must be at least 1, got -1}}
  %y, %n = fp.fixed_point (%i = %x) : tensor<?x?x8xf32> solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = -1, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15> backward <one_step> {
    fp.yield %i : tensor<?x?x8xf32>
  }
  return
}

// -----

func.func @solver_relax_start(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{solver relax_start must lie in (0, 1], got 0.000000e+00}}
  %y, %n = fp.fixed_point (%i = %x) : tensor<?x?x8xf32> solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.0, relax_decay = 0.9, relax_patience = 15> backward <one_step> {
    fp.yield %i : tensor<?x?x8xf32>
  }
  return
}

// -----

func.func @solver_relax_decay(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{solver relax_decay must lie in (0, 1], got 1.500000e+00}}
  %y, %n = fp.fixed_point (%i = %x) : tensor<?x?x8xf32> solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 1.5, relax_patience = 15> backward <one_step> {
    fp.yield %i : tensor<?x?x8xf32>
  }
  return
}

// -----

func.func @solver_relax_patience(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{solver relax_patience must be at least 1, got 0}}
  %y, %n = fp.fixed_point (%i = %x) : tensor<?x?x8xf32> solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 0> backward <one_step> {
    fp.yield %i : tensor<?x?x8xf32>
  }
  return
}

// -----

func.func @backward_steps_missing(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{backward mode 'truncated' needs steps >= 1, got 0}}
  %y, %n = fp.fixed_point (%i = %x) : tensor<?x?x8xf32> solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15> backward <truncated> {
    fp.yield %i : tensor<?x?x8xf32>
  }
  return
}

// -----

func.func @backward_neumann_steps(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{backward mode 'neumann' needs steps >= 1, got -2}}
  %y, %n = fp.fixed_point (%i = %x) : tensor<?x?x8xf32> solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15> backward <neumann, steps = -2> {
    fp.yield %i : tensor<?x?x8xf32>
  }
  return
}

// -----

func.func @backward_steps_not_taken(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{backward mode 'one_step' takes no steps}}
  %y, %n = fp.fixed_point (%i = %x) : tensor<?x?x8xf32> solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15> backward <one_step, steps = 3> {
    fp.yield %i : tensor<?x?x8xf32>
  }
  return
}

// -----

func.func @backward_implicit_tolerance(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{backward mode 'implicit' needs a positive tolerance, got 0.000000e+00}}
  %y, %n = fp.fixed_point (%i = %x) : tensor<?x?x8xf32> solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15> backward <implicit> {
    fp.yield %i : tensor<?x?x8xf32>
  }
  return
}

// -----

func.func @backward_tolerance_not_taken(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{backward mode 'neumann' takes no tolerance}}
  %y, %n = fp.fixed_point (%i = %x) : tensor<?x?x8xf32> solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15> backward <neumann, steps = 2, tolerance = 1.0e-3> {
    fp.yield %i : tensor<?x?x8xf32>
  }
  return
}

// -----

func.func @fixed_point_no_iterates() {
  // expected-error @below {{'fp.fixed_point' op expects at least one iteration argument}}
  %n = "fp.fixed_point"() <{solver = #fp.solver<tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15>, backward = #fp.backward<one_step>}> ({
    "fp.yield"() : () -> ()
  }) : () -> tensor<?xi32>
  return
}

// -----

func.func @fixed_point_result_count(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.fixed_point' op expects one fixed-point result per iteration argument, got 2 for 1}}
  %r:3 = "fp.fixed_point"(%x) <{solver = #fp.solver<tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15>, backward = #fp.backward<one_step>}> ({
  ^bb0(%i: tensor<?x?x8xf32>):
    "fp.yield"(%i) : (tensor<?x?x8xf32>) -> ()
  }) : (tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?xi32>)
  return
}

// -----

func.func @fixed_point_result_type(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.fixed_point' op expects result #0 to have the type of iteration argument #0, 'tensor<?x?x8xf32>', got 'tensor<?x?x4xf32>'}}
  %r:2 = "fp.fixed_point"(%x) <{solver = #fp.solver<tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15>, backward = #fp.backward<one_step>}> ({
  ^bb0(%i: tensor<?x?x8xf32>):
    "fp.yield"(%i) : (tensor<?x?x8xf32>) -> ()
  }) : (tensor<?x?x8xf32>) -> (tensor<?x?x4xf32>, tensor<?xi32>)
  return
}

// -----

func.func @fixed_point_batch_mismatch(%a: tensor<4x?x8xf32>, %b: tensor<2x?x8xf32>) {
  // expected-error @below {{'fp.fixed_point' op expects every iteration argument to have batch size 4, got 2 for #1}}
  %r:3 = fp.fixed_point (%i = %a, %j = %b) : tensor<4x?x8xf32>, tensor<2x?x8xf32> solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15> backward <one_step> {
    fp.yield %i, %j : tensor<4x?x8xf32>, tensor<2x?x8xf32>
  }
  return
}

// -----

func.func @fixed_point_iteration_counts(%x: tensor<4x?x8xf32>) {
  // expected-error @below {{'fp.fixed_point' op expects one iteration count per sample (4), got 3}}
  %r:2 = "fp.fixed_point"(%x) <{solver = #fp.solver<tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15>, backward = #fp.backward<one_step>}> ({
  ^bb0(%i: tensor<4x?x8xf32>):
    "fp.yield"(%i) : (tensor<4x?x8xf32>) -> ()
  }) : (tensor<4x?x8xf32>) -> (tensor<4x?x8xf32>, tensor<3xi32>)
  return
}

// -----

func.func @fixed_point_body_arity(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.fixed_point' op expects the body to take 1 argument(s), one per iterate, got 2}}
  %r:2 = "fp.fixed_point"(%x) <{solver = #fp.solver<tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15>, backward = #fp.backward<one_step>}> ({
  ^bb0(%i: tensor<?x?x8xf32>, %j: tensor<?x?x8xf32>):
    "fp.yield"(%i) : (tensor<?x?x8xf32>) -> ()
  }) : (tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<?xi32>)
  return
}

// -----

func.func @fixed_point_body_argument_type(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.fixed_point' op expects body argument #0 to have type 'tensor<?x?x8xf32>', got 'tensor<?x?x8xf64>'}}
  %r:2 = "fp.fixed_point"(%x) <{solver = #fp.solver<tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15>, backward = #fp.backward<one_step>}> ({
  ^bb0(%i: tensor<?x?x8xf64>):
    "fp.yield"(%x) : (tensor<?x?x8xf32>) -> ()
  }) : (tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<?xi32>)
  return
}

// -----

func.func @fixed_point_yield_count(%x: tensor<?x?x8xf32>) {
  %y, %n = fp.fixed_point (%i = %x) : tensor<?x?x8xf32> solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15> backward <one_step> {
    // expected-error @below {{'fp.yield' op expects 1 yielded value(s), one per iterate, got 2}}
    fp.yield %i, %i : tensor<?x?x8xf32>, tensor<?x?x8xf32>
  }
  return
}

// -----

func.func @fixed_point_yield_type(%x: tensor<?x?x8xf32>) {
  %y, %n = fp.fixed_point (%i = %x) : tensor<?x?x8xf32> solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15> backward <one_step> {
    %s = fp.slice %i [0 : 4] : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
    // expected-error @below {{'fp.yield' op expects yielded value #0 to have type 'tensor<?x?x8xf32>', got 'tensor<?x?x4xf32>'}}
    fp.yield %s : tensor<?x?x4xf32>
  }
  return
}

// -----

func.func @fixed_point_type_count(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{expected 1 types for the iteration arguments, got 2}}
  %y, %n = fp.fixed_point (%i = %x) : tensor<?x?x8xf32>, tensor<?x?x8xf32> solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15> backward <one_step> {
    fp.yield %i : tensor<?x?x8xf32>
  }
  return
}

// -----

func.func @fixed_point_iterate_rank(%x: tensor<8xf32>) {
  // expected-error @below {{'fp.fixed_point' op operand #0 must be variadic of ranked float tensor of rank >= 2 (batch, time, features...)}}
  %r:2 = "fp.fixed_point"(%x) <{solver = #fp.solver<tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15>, backward = #fp.backward<one_step>}> ({
  ^bb0(%i: tensor<8xf32>):
    "fp.yield"(%i) : (tensor<8xf32>) -> ()
  }) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<?xi32>)
  return
}

// -----

func.func @yield_outside_fixed_point() {
  // expected-error @below {{'fp.yield' op expects parent op to be one of 'fp.fixed_point, fp.kernel'}}
  fp.yield
  return
}

// -----

func.func @param_empty_name() {
  // expected-error @below {{'fp.param' op expects a non-empty parameter name}}
  %0 = fp.param "" init <zeros> : tensor<8xf32>
  return
}

// -----

func.func @param_zero_dim() {
  // expected-error @below {{'fp.param' op expects every dimension to be positive, got 0 for dimension 1}}
  %0 = fp.param "w" init <zeros> : tensor<8x0xf32>
  return
}

// -----

func.func @param_dynamic() {
  // expected-error @below {{'fp.param' op result #0 must be statically shaped float tensor}}
  %0 = fp.param "w" init <zeros> : tensor<?x8xf32>
  return
}

// -----

func.func @param_fan_in_scalar() {
  // expected-error @below {{'fp.param' op initialiser 'fan_in_uniform' needs a parameter of rank >= 1}}
  %0 = fp.param "w" init <fan_in_uniform> : tensor<f32>
  return
}

// -----

func.func @param_row_norm_rank() {
  // expected-error @below {{'fp.param' op initialiser 'row_norm' needs a parameter of rank 1 (one gain per row), got rank 2}}
  %0 = fp.param "g" init <row_norm of "V"> : tensor<8x1xf32>
  return
}

// -----

func.func @weight_norm_gain_size(%v: tensor<8x16xf32>, %g: tensor<4xf32>) {
  // expected-error @below {{'fp.weight_norm' op expects one gain per weight row (8), got 4}}
  %0 = fp.weight_norm %v, %g : tensor<8x16xf32>, tensor<4xf32>
  return
}

// -----

func.func @weight_norm_grad_gain_size(%v: tensor<8x16xf32>, %g: tensor<4xf32>) {
  // expected-error @below {{'fp.weight_norm_grad' op expects one gain per weight row (8), got 4}}
  %0:2 = fp.weight_norm_grad %v, %g grad %v : tensor<8x16xf32>, tensor<4xf32>
  return
}

// -----

func.func @weight_norm_element_type(%v: tensor<8x16xf32>, %g: tensor<8xf64>) {
  // expected-error @below {{'fp.weight_norm' op expects all operands and results to have element type 'f32', got 'tensor<8xf64>'}}
  %0 = fp.weight_norm %v, %g : tensor<8x16xf32>, tensor<8xf64>
  return
}

// -----

func.func @linear_element_type(%x: tensor<?x?x16xf32>, %w: tensor<32x16xf64>) {
  // expected-error @below {{'fp.linear' op expects all operands and results to have element type 'f32', got 'tensor<32x16xf64>'}}
  %0 = fp.linear %x, %w : (tensor<?x?x16xf32>, tensor<32x16xf64>) -> tensor<?x?x32xf32>
  return
}

// -----

func.func @linear_input_size(%x: tensor<?x?x8xf32>, %w: tensor<32x16xf32>) {
  // expected-error @below {{'fp.linear' op expects the input's last dimension (8) to match the weight's input size (16)}}
  %0 = fp.linear %x, %w : (tensor<?x?x8xf32>, tensor<32x16xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

func.func @linear_result_rank(%x: tensor<?x?x16xf32>, %w: tensor<32x16xf32>) {
  // expected-error @below {{'fp.linear' op expects a result of rank 3, got 2}}
  %0 = fp.linear %x, %w : (tensor<?x?x16xf32>, tensor<32x16xf32>) -> tensor<?x32xf32>
  return
}

// -----

func.func @linear_result_leading_dim(%x: tensor<4x?x16xf32>, %w: tensor<32x16xf32>) {
  // expected-error @below {{'fp.linear' op expects result dimension 0 (3) to match the input's (4)}}
  %0 = fp.linear %x, %w : (tensor<4x?x16xf32>, tensor<32x16xf32>) -> tensor<3x?x32xf32>
  return
}

// -----

func.func @linear_output_size(%x: tensor<?x?x16xf32>, %w: tensor<32x16xf32>) {
  // expected-error @below {{'fp.linear' op expects the result's last dimension (16) to match the weight's output size (32)}}
  %0 = fp.linear %x, %w : (tensor<?x?x16xf32>, tensor<32x16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @linear_gain_size(%x: tensor<?x?x16xf32>, %w: tensor<32x16xf32>, %g: tensor<16xf32>) {
  // expected-error @below {{'fp.linear' op expects the gain to have the weight's output size (32), got 16}}
  %0 = fp.linear %x, %w gain %g : (tensor<?x?x16xf32>, tensor<32x16xf32>, tensor<16xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

func.func @linear_bias_size(%x: tensor<?x?x16xf32>, %w: tensor<32x16xf32>, %b: tensor<31xf32>) {
  // expected-error @below {{'fp.linear' op expects the bias to have the weight's output size (32), got 31}}
  %0 = fp.linear %x, %w bias %b : (tensor<?x?x16xf32>, tensor<32x16xf32>, tensor<31xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

func.func @shift_rank(%x: tensor<8xf32>) {
  // expected-error @below {{'fp.shift' op operand #0 must be ranked float tensor of rank >= 2 (batch, time, features...), but got 'tensor<8xf32>'}}
  %0 = fp.shift %x by 1 : tensor<8xf32>
  return
}

// -----

func.func @scan_type_mismatch(%a: tensor<?x?x8xf32>, %b: tensor<?x?x4xf32>) {
  // expected-error @below {{'fp.scan' op failed to verify that all of {coeff, input, result} have same type}}
  %0 = "fp.scan"(%a, %b) : (tensor<?x?x8xf32>, tensor<?x?x4xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @selective_scan_element_type(%u: tensor<?x?x8xf32>, %dt: tensor<?x?x8xf32>, %a: tensor<8x4xf64>, %b: tensor<?x?x4xf32>) {
  // expected-error @below {{'fp.selective_scan' op expects all operands and results to have element type 'f32', got 'tensor<8x4xf64>'}}
  %0 = fp.selective_scan %u, %dt, %a, %b, %b : tensor<?x?x8xf32>, tensor<8x4xf64>, tensor<?x?x4xf32>
  return
}

// -----

func.func @selective_scan_a_rows(%u: tensor<?x?x8xf32>, %dt: tensor<?x?x8xf32>, %a: tensor<6x4xf32>, %b: tensor<?x?x4xf32>) {
  // expected-error @below {{'fp.selective_scan' op expects 'A' to have one row per channel (8), got 6}}
  %0 = fp.selective_scan %u, %dt, %a, %b, %b : tensor<?x?x8xf32>, tensor<6x4xf32>, tensor<?x?x4xf32>
  return
}

// -----

func.func @selective_scan_bc_tokens(%u: tensor<2x5x8xf32>, %a: tensor<8x4xf32>, %b: tensor<2x6x4xf32>) {
  // expected-error @below {{'fp.selective_scan' op expects 'B' and 'C' to have the batch and time sizes of 'u'}}
  %0 = fp.selective_scan %u, %u, %a, %b, %b : tensor<2x5x8xf32>, tensor<8x4xf32>, tensor<2x6x4xf32>
  return
}

// -----

func.func @selective_scan_state_size(%u: tensor<?x?x8xf32>, %dt: tensor<?x?x8xf32>, %a: tensor<8x4xf32>, %b: tensor<?x?x3xf32>) {
  // expected-error @below {{'fp.selective_scan' op expects 'B' and 'C' to have the state size of 'A' (4), got 3}}
  %0 = fp.selective_scan %u, %dt, %a, %b, %b : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x3xf32>
  return
}

// -----

func.func @selective_scan_skip_size(%u: tensor<?x?x8xf32>, %dt: tensor<?x?x8xf32>, %a: tensor<8x4xf32>, %b: tensor<?x?x4xf32>, %d: tensor<4xf32>) {
  // expected-error @below {{'fp.selective_scan' op expects the skip 'D' to have one entry per channel (8), got 4}}
  %0 = fp.selective_scan %u, %dt, %a, %b, %b skip %d : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>, tensor<4xf32>
  return
}

// -----

func.func @selective_scan_delta_type(%u: tensor<?x?x8xf32>, %dt: tensor<?x?x4xf32>, %a: tensor<8x4xf32>, %b: tensor<?x?x4xf32>) {
  // expected-error @below {{'fp.selective_scan' op failed to verify that all of {u, delta, result} have same type}}
  %0 = "fp.selective_scan"(%u, %dt, %a, %b, %b) : (tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @causal_conv_element_type(%x: tensor<?x?x8xf32>, %w: tensor<8x4xf64>) {
  // expected-error @below {{'fp.causal_conv' op expects all operands and results to have element type 'f32', got 'tensor<8x4xf64>'}}
  %0 = fp.causal_conv %x, %w : tensor<?x?x8xf32>, tensor<8x4xf64>
  return
}

// -----

func.func @causal_conv_rows(%x: tensor<?x?x8xf32>, %w: tensor<2x4xf32>) {
  // expected-error @below {{'fp.causal_conv' op expects one weight row per channel (8), got 2}}
  %0 = fp.causal_conv %x, %w : tensor<?x?x8xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @causal_conv_kernel_width(%x: tensor<?x?x8xf32>, %w: tensor<8x?xf32>) {
  // expected-error @below {{'fp.causal_conv' op expects a static kernel width >= 1, got ?}}
  %0 = fp.causal_conv %x, %w : tensor<?x?x8xf32>, tensor<8x?xf32>
  return
}

// -----

func.func @causal_conv_bias(%x: tensor<?x?x8xf32>, %w: tensor<8x4xf32>, %b: tensor<3xf32>) {
  // expected-error @below {{'fp.causal_conv' op expects one bias per channel (8), got 3}}
  %0 = fp.causal_conv %x, %w bias %b : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<3xf32>
  return
}

// -----

func.func @l2norm_eps(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.l2norm' op expects a positive finite eps, got 0.000000e+00}}
  %0 = fp.l2norm %x eps 0.0 : tensor<?x?x8xf32>
  return
}

// -----

func.func @layer_norm_weight_size(%x: tensor<?x?x8xf32>, %w: tensor<4xf32>) {
  // expected-error @below {{'fp.layer_norm' op expects the weight to have the input's last dimension (8), got 4}}
  %0 = fp.layer_norm %x, %w, %w eps 1.0e-5 : tensor<?x?x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @layer_norm_eps(%x: tensor<?x?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @below {{'fp.layer_norm' op expects a positive finite eps, got -1.000000e+00}}
  %0 = fp.layer_norm %x, %w, %w eps -1.0 : tensor<?x?x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @layer_norm_element_type(%x: tensor<?x?x8xf32>, %w: tensor<8xf64>) {
  // expected-error @below {{'fp.layer_norm' op expects all operands and results to have element type 'f32', got 'tensor<8xf64>'}}
  %0 = fp.layer_norm %x, %w, %w eps 1.0e-5 : tensor<?x?x8xf32>, tensor<8xf64>
  return
}

// -----

func.func @rms_norm_weight_size(%x: tensor<?x?x8xf32>, %w: tensor<9xf32>) {
  // expected-error @below {{'fp.rms_norm' op expects the weight to have the input's last dimension (8), got 9}}
  %0 = fp.rms_norm %x, %w eps 1.0e-5 : tensor<?x?x8xf32>, tensor<9xf32>
  return
}

// -----

func.func @rms_norm_eps(%x: tensor<?x?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @below {{'fp.rms_norm' op expects a positive finite eps, got 0.000000e+00}}
  %0 = fp.rms_norm %x, %w eps 0.0 : tensor<?x?x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @rms_norm_element_type(%x: tensor<?x?x8xf32>, %w: tensor<8xf64>) {
  // expected-error @below {{'fp.rms_norm' op expects all operands and results to have element type 'f32', got 'tensor<8xf64>'}}
  %0 = fp.rms_norm %x, %w eps 1.0e-5 : tensor<?x?x8xf32>, tensor<8xf64>
  return
}

// -----

func.func @activation_type(%x: tensor<8xi32>) {
  // expected-error @below {{'fp.silu' op operand #0 must be ranked tensor of floating-point values, but got 'tensor<8xi32>'}}
  %0 = fp.silu %x : tensor<8xi32>
  return
}

// -----

func.func @broadcast_element_type(%x: tensor<?x?x8xf32>, %d: tensor<8xf64>) {
  // expected-error @below {{'fp.broadcast' op expects all operands and results to have element type 'f64', got 'tensor<?x?x8xf32>'}}
  %0 = fp.broadcast %d, %x dims [2] : tensor<8xf64>, tensor<?x?x8xf32>
  return
}

// -----

func.func @broadcast_dims_count(%x: tensor<?x?x8xf32>, %d: tensor<8xf32>) {
  // expected-error @below {{'fp.broadcast' op expects one entry in 'dims' per input dimension (1), got 2}}
  %0 = fp.broadcast %d, %x dims [1, 2] : tensor<8xf32>, tensor<?x?x8xf32>
  return
}

// -----

func.func @broadcast_dims_range(%x: tensor<?x?x8xf32>, %d: tensor<8xf32>) {
  // expected-error @below {{'fp.broadcast' op expects 'dims' in [0, 3), got 3}}
  %0 = fp.broadcast %d, %x dims [3] : tensor<8xf32>, tensor<?x?x8xf32>
  return
}

// -----

func.func @broadcast_dynamic_without_like(%d: tensor<8xf32>) {
  // expected-error @below {{'fp.broadcast' op without 'like' expects a static result, got 'tensor<?x?x8xf32>'}}
  %0 = fp.broadcast %d dims [2] : tensor<8xf32>, tensor<?x?x8xf32>
  return
}

// -----

func.func @broadcast_static_dims(%d: tensor<8xf32>) {
  // expected-error @below {{'fp.broadcast' op expects input dimension 0 (8) to match result dimension 1 (4)}}
  %0 = fp.broadcast %d dims [1] : tensor<8xf32>, tensor<8x4xf32>
  return
}

// -----

func.func @broadcast_dims_order(%x: tensor<?x?x8xf32>, %s: tensor<?x?xf32>) {
  // expected-error @below {{'fp.broadcast' op expects 'dims' to be strictly increasing}}
  %0 = fp.broadcast %s, %x dims [1, 0] : tensor<?x?xf32>, tensor<?x?x8xf32>
  return
}

// -----

func.func @broadcast_dim_size(%x: tensor<?x?x8xf32>, %d: tensor<4xf32>) {
  // expected-error @below {{'fp.broadcast' op expects input dimension 0 (4) to match result dimension 2 (8)}}
  %0 = fp.broadcast %d, %x dims [2] : tensor<4xf32>, tensor<?x?x8xf32>
  return
}

// -----

func.func @reduce_sum_element_type(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.reduce_sum' op expects all operands and results to have element type 'f32', got 'tensor<?x?xf64>'}}
  %0 = fp.reduce_sum %x dims [2] : tensor<?x?x8xf32> -> tensor<?x?xf64>
  return
}

// -----

func.func @reduce_sum_no_dims(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.reduce_sum' op expects at least one dimension to reduce}}
  %0 = fp.reduce_sum %x dims [] : tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return
}

// -----

func.func @reduce_sum_dims_range(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.reduce_sum' op expects 'dims' in [0, 3), got -1}}
  %0 = fp.reduce_sum %x dims [-1] : tensor<?x?x8xf32> -> tensor<?x?xf32>
  return
}

// -----

func.func @reduce_max_no_dims(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.reduce_max' op expects at least one dimension to reduce}}
  %0 = fp.reduce_max %x dims [] : tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return
}

// -----

func.func @reduce_max_result_dim(%x: tensor<?x?x4x8xf32>) {
  // expected-error @below {{'fp.reduce_max' op expects result dimension 2 to be 4, got 8}}
  %0 = fp.reduce_max %x dims [3] : tensor<?x?x4x8xf32> -> tensor<?x?x8xf32>
  return
}

// -----

func.func @reduce_sum_result_rank(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.reduce_sum' op expects a result of rank 2, got 3}}
  %0 = fp.reduce_sum %x dims [2] : tensor<?x?x8xf32> -> tensor<?x?x1xf32>
  return
}

// -----

func.func @reduce_sum_result_dim(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.reduce_sum' op expects result dimension 0 to be 8, got 4}}
  %0 = fp.reduce_sum %x dims [0, 1] : tensor<?x?x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @slice_element_type(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.slice' op expects all operands and results to have element type 'f32', got 'tensor<?x?x4xf64>'}}
  %0 = fp.slice %x [0 : 4] : tensor<?x?x8xf32> -> tensor<?x?x4xf64>
  return
}

// -----

func.func @slice_empty(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.slice' op expects 0 <= start < end, got [4 : 4]}}
  %0 = fp.slice %x [4 : 4] : tensor<?x?x8xf32> -> tensor<?x?x0xf32>
  return
}

// -----

func.func @slice_out_of_range(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.slice' op expects the range [4 : 12] to lie within the last dimension (8)}}
  %0 = fp.slice %x [4 : 12] : tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return
}

// -----

func.func @slice_result_rank(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.slice' op expects a result of rank 3, got 2}}
  %0 = fp.slice %x [0 : 4] : tensor<?x?x8xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @slice_result_leading_dim(%x: tensor<2x?x8xf32>) {
  // expected-error @below {{'fp.slice' op expects result dimension 0 to match the input's}}
  %0 = fp.slice %x [0 : 4] : tensor<2x?x8xf32> -> tensor<3x?x4xf32>
  return
}

// -----

func.func @slice_result_size(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.slice' op expects the result's last dimension to be 4, got 3}}
  %0 = fp.slice %x [0 : 4] : tensor<?x?x8xf32> -> tensor<?x?x3xf32>
  return
}

// -----

func.func @concat_no_inputs() {
  // expected-error @below {{'fp.concat' op expects at least one input}}
  %0 = "fp.concat"() : () -> tensor<?x?x8xf32>
  return
}

// -----

func.func @concat_element_type(%x: tensor<?x?x8xf32>, %y: tensor<?x?x8xf64>) {
  // expected-error @below {{'fp.concat' op expects all operands and results to have element type 'f32', got 'tensor<?x?x8xf64>'}}
  %0 = fp.concat %x, %y : tensor<?x?x8xf32>, tensor<?x?x8xf64> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @concat_rank(%x: tensor<?x?x8xf32>, %y: tensor<?x8xf32>) {
  // expected-error @below {{'fp.concat' op expects every input to have the result's rank (3), got 2 for input #1}}
  %0 = fp.concat %x, %y : tensor<?x?x8xf32>, tensor<?x8xf32> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @concat_leading_dim(%x: tensor<2x?x8xf32>, %y: tensor<3x?x8xf32>) {
  // expected-error @below {{'fp.concat' op expects input #1 to match the result in dimension 0}}
  %0 = fp.concat %x, %y : tensor<2x?x8xf32>, tensor<3x?x8xf32> -> tensor<2x?x16xf32>
  return
}

// -----

func.func @concat_size(%x: tensor<?x?x8xf32>, %y: tensor<?x?x4xf32>) {
  // expected-error @below {{'fp.concat' op expects the result's last dimension to be the sum of the inputs' (12), got 16}}
  %0 = fp.concat %x, %y : tensor<?x?x8xf32>, tensor<?x?x4xf32> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @reshape_element_type(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.reshape' op expects all operands and results to have element type 'f32', got 'tensor<?x?x2x4xf64>'}}
  %0 = fp.reshape %x : tensor<?x?x8xf32> -> tensor<?x?x2x4xf64>
  return
}

// -----

func.func @reshape_kept_rank(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.reshape' op expects the result to keep the input's leading dimensions up to its last dynamic one (2)}}
  %0 = fp.reshape %x : tensor<?x?x8xf32> -> tensor<?xf32>
  return
}

// -----

func.func @reshape_kept_dim(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.reshape' op expects result dimension 1 to be ?, got 2}}
  %0 = fp.reshape %x : tensor<?x?x8xf32> -> tensor<?x2x8xf32>
  return
}

// -----

func.func @reshape_dynamic_result(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.reshape' op expects the reshaped dimensions of the result to be static}}
  %0 = fp.reshape %x : tensor<?x?x8xf32> -> tensor<?x?x?x4xf32>
  return
}

// -----

func.func @reshape_element_count(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.reshape' op expects the reshaped dimensions to hold 8 elements, got 9}}
  %0 = fp.reshape %x : tensor<?x?x8xf32> -> tensor<?x?x3x3xf32>
  return
}

// -----

func.func @matmul_element_type(%m: tensor<?x?x2x4xf32>, %n: tensor<?x?x4x2xf64>) {
  // expected-error @below {{'fp.matmul' op expects all operands and results to have element type 'f32', got 'tensor<?x?x4x2xf64>'}}
  %0 = fp.matmul %m, %n : tensor<?x?x2x4xf32>, tensor<?x?x4x2xf64> -> tensor<?x?x2x2xf32>
  return
}

// -----

func.func @matmul_rank(%m: tensor<?x?x2x4xf32>, %n: tensor<?x4x2xf32>) {
  // expected-error @below {{'fp.matmul' op expects operands and result of equal rank, got 4, 3 and 4}}
  %0 = fp.matmul %m, %n : tensor<?x?x2x4xf32>, tensor<?x4x2xf32> -> tensor<?x?x2x2xf32>
  return
}

// -----

func.func @matmul_batch(%m: tensor<3x?x2x4xf32>, %n: tensor<5x?x4x2xf32>) {
  // expected-error @below {{'fp.matmul' op expects batch dimension 0 to agree}}
  %0 = fp.matmul %m, %n : tensor<3x?x2x4xf32>, tensor<5x?x4x2xf32> -> tensor<3x?x2x2xf32>
  return
}

// -----

func.func @matmul_contracting(%m: tensor<?x?x2x4xf32>) {
  // expected-error @below {{'fp.matmul' op expects contracting sizes to agree, got 4 and 2}}
  %0 = fp.matmul %m, %m : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x?x2x4xf32>
  return
}

// -----

func.func @matmul_result_shape(%m: tensor<?x?x2x4xf32>) {
  // expected-error @below {{'fp.matmul' op expects result matrices of shape 2x2, got 4x4}}
  %0 = fp.matmul %m, %m {transpose_rhs} : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x?x4x4xf32>
  return
}

// -----

func.func @triu_element_type(%t: tensor<?x?x36xf32>) {
  // expected-error @below {{'fp.triu' op expects all operands and results to have element type 'f32', got 'tensor<?x?x8x8xf64>'}}
  %0 = fp.triu %t : tensor<?x?x36xf32> -> tensor<?x?x8x8xf64>
  return
}

// -----

func.func @triu_rank(%t: tensor<?x?x36xf32>) {
  // expected-error @below {{'fp.triu' op expects a result of rank 4, got 3}}
  %0 = fp.triu %t : tensor<?x?x36xf32> -> tensor<?x8x8xf32>
  return
}

// -----

func.func @triu_leading_dim(%t: tensor<2x?x36xf32>) {
  // expected-error @below {{'fp.triu' op expects result dimension 0 to match the input's}}
  %0 = fp.triu %t : tensor<2x?x36xf32> -> tensor<3x?x8x8xf32>
  return
}

// -----

func.func @triu_not_square(%t: tensor<?x?x36xf32>) {
  // expected-error @below {{'fp.triu' op expects static square result matrices}}
  %0 = fp.triu %t : tensor<?x?x36xf32> -> tensor<?x?x8x9xf32>
  return
}

// -----

func.func @triu_packed_count(%t: tensor<?x?x36xf32>) {
  // expected-error @below {{'fp.triu' op expects 28 packed entries for 7x7 upper-triangular matrices, got 36}}
  %0 = fp.triu %t : tensor<?x?x36xf32> -> tensor<?x?x7x7xf32>
  return
}

// -----

func.func @kernel_yield_count(%x: tensor<?x?x8xf32>) {
  %k = fp.kernel (%a = %x) : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
    %s = fp.silu %a : tensor<?x?x8xf32>
    // expected-error @below {{'fp.yield' op expects 1 yielded value(s), one per kernel result, got 2}}
    fp.yield %s, %s : tensor<?x?x8xf32>, tensor<?x?x8xf32>
  }
  return
}

// -----

func.func @kernel_yield_type(%x: tensor<?x?x8xf32>) {
  %k = fp.kernel (%a = %x) : (tensor<?x?x8xf32>) -> tensor<?x?x4xf32> {
    %s = fp.silu %a : tensor<?x?x8xf32>
    // expected-error @below {{'fp.yield' op expects yielded value #0 to have type 'tensor<?x?x4xf32>', got 'tensor<?x?x8xf32>'}}
    fp.yield %s : tensor<?x?x8xf32>
  }
  return
}

// -----

func.func @kernel_shift_of_intermediate(%x: tensor<?x?x8xf32>) {
  %k = fp.kernel (%a = %x) : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
    %s = fp.silu %a : tensor<?x?x8xf32>
    // expected-error @below {{'fp.shift' op in a kernel must shift one of the kernel's inputs}}
    %t = fp.shift %s by 1 : tensor<?x?x8xf32>
    fp.yield %t : tensor<?x?x8xf32>
  }
  return
}

// -----

func.func @kernel_isolated(%x: tensor<?x?x8xf32>, %y: tensor<?x?x8xf32>) {
  // expected-note @below {{required by region isolation constraints}}
  %k = fp.kernel (%a = %x) : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
    // expected-error @below {{using value defined outside the region}}
    %s = arith.addf %a, %y : tensor<?x?x8xf32>
    fp.yield %s : tensor<?x?x8xf32>
  }
  return
}

// -----

func.func @kernel_reverse_scan(%x: tensor<?x?x8xf32>) {
  %k = fp.kernel (%a = %x) : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
    // expected-error @below {{'fp.scan' op cannot be part of a kernel: kernels run forward in time}}
    %h = fp.scan reverse %a, %a : tensor<?x?x8xf32>
    fp.yield %h : tensor<?x?x8xf32>
  }
  return
}

// -----

func.func @kernel_no_results(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.kernel' op expects at least one result}}
  fp.kernel (%a = %x) : (tensor<?x?x8xf32>) -> () {
    fp.yield
  }
  return
}

// -----

func.func @solver_init_not_tokens(%x: tensor<8xf32>) {
  // expected-error @below {{'fp.solver_init' op operand #0 must be ranked float tensor of rank >= 2 (batch, time, features...)}}
  %s = "fp.solver_init"(%x) <{solver = #fp.solver<tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>, backward = #fp.backward<one_step>}> : (tensor<8xf32>) -> !fp.solver
  return
}

// -----

func.func @solver_relax_types(%s: !fp.solver, %y: tensor<?x?x8xf32>, %f: tensor<?x?x4xf32>) {
  // expected-error @below {{'fp.solver_relax' op failed to verify that all of {current, next, result} have same type}}
  %n = "fp.solver_relax"(%s, %y, %f) : (!fp.solver, tensor<?x?x8xf32>, tensor<?x?x4xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @solver_continue_not_solver(%x: tensor<?x?x8xf32>) {
  // expected-error @below {{'fp.solver_continue' op operand #0 must be the state of one fixed-point solve}}
  %go = "fp.solver_continue"(%x) : (tensor<?x?x8xf32>) -> i1
  return
}

// -----

func.func @solver_iterations_type(%s: !fp.solver) {
  // expected-error @below {{'fp.solver_iterations' op result #0 must be 1D tensor of 32-bit signless integer values}}
  %c = "fp.solver_iterations"(%s) : (!fp.solver) -> tensor<?xi64>
  return
}

// -----

func.func @transpose_shape(%w: tensor<8x4xf32>) {
  // expected-error @below {{'fp.transpose' op expects the result to be 4x8, got 8x4}}
  %t = fp.transpose %w : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @weight_grad_shape(%g: tensor<?x?x8xf32>, %x: tensor<?x?x4xf32>) {
  // expected-error @below {{'fp.weight_grad' op expects a 8x4 result, got 4x8}}
  %dw = fp.weight_grad %g, %x : tensor<?x?x8xf32>, tensor<?x?x4xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @triu_pack_entries(%m: tensor<?x?x3x3xf32>) {
  // expected-error @below {{'fp.triu_pack' op expects 6 packed entries for 3x3 upper-triangular matrices, got 5}}
  %p = fp.triu_pack %m : tensor<?x?x3x3xf32> -> tensor<?x?x5xf32>
  return
}

// -----

func.func @reduce_max_grad_shape(%m: tensor<?x?x3x3xf32>, %g: tensor<?x?x4xf32>) {
  // expected-error @below {{'fp.reduce_max_grad' op expects 'grad' to have the shape of the reduction of 'input' over the dimensions}}
  %d = fp.reduce_max_grad %m, %g dims [3] : tensor<?x?x3x3xf32>, tensor<?x?x4xf32>
  return
}

// -----

func.func @selective_scan_grad_states(%u: tensor<?x?x8xf32>, %a: tensor<8x4xf32>, %b: tensor<?x?x3xf32>) {
  // expected-error @below {{'fp.selective_scan_grad' op expects 'B' and 'C' to have the state size of 'A' (4), got 3}}
  %s:5 = fp.selective_scan_grad %u, %u, %a, %b, %b grad %u : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x3xf32>
  return
}

// -----

func.func @causal_conv_grad_rows(%x: tensor<?x?x8xf32>, %w: tensor<4x4xf32>) {
  // expected-error @below {{'fp.causal_conv_grad' op expects one weight row per channel (8), got 4}}
  %c:2 = fp.causal_conv_grad %x, %w grad %x : tensor<?x?x8xf32>, tensor<4x4xf32>
  return
}

// -----

func.func @chunk_shift_offset(%x: tensor<?x?x8xf32>, %s: tensor<?x1x8xf32>) {
  // expected-error @below {{'fp.chunk_shift' op expects a causal offset >= 1, got -1}}
  %0:2 = fp.chunk_shift %x by -1 from %s : tensor<?x?x8xf32>, tensor<?x1x8xf32>
  return
}

// -----

func.func @chunk_shift_rows(%x: tensor<?x?x8xf32>, %s: tensor<?x1x8xf32>) {
  // expected-error @below {{'fp.chunk_shift' op expects the state to hold 2 row(s) along dimension 1, got 1}}
  %0:2 = fp.chunk_shift %x by 2 from %s : tensor<?x?x8xf32>, tensor<?x1x8xf32>
  return
}

// -----

func.func @chunk_scan_features(%x: tensor<?x?x8xf32>, %s: tensor<?x1x4xf32>) {
  // expected-error @below {{'fp.chunk_scan' op expects the state's dimension 2 to be the input's (8), got 4}}
  %0:2 = fp.chunk_scan %x, %x from %s : tensor<?x?x8xf32>, tensor<?x1x4xf32>
  return
}

// -----

func.func @chunk_scan_batch(%x: tensor<2x?x8xf32>, %s: tensor<3x1x8xf32>) {
  // expected-error @below {{'fp.chunk_scan' op expects the state to have the batch size of the input (2), got 3}}
  %0:2 = fp.chunk_scan %x, %x from %s : tensor<2x?x8xf32>, tensor<3x1x8xf32>
  return
}

// -----

func.func @chunk_selective_scan_state(%x: tensor<?x?x8xf32>, %a: tensor<8x4xf32>,
                                      %bc: tensor<?x?x4xf32>, %h: tensor<?x8x2xf32>) {
  // expected-error @below {{'fp.chunk_selective_scan' op expects a state of shape (batch, 8, 4) with static channels and states, got 'tensor<?x8x2xf32>'}}
  %0:2 = fp.chunk_selective_scan %x, %x, %a, %bc, %bc from %h
      : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x?x4xf32>, tensor<?x8x2xf32>
  return
}

// -----

func.func @chunk_causal_conv_width(%x: tensor<?x?x8xf32>, %w: tensor<8x1xf32>,
                                   %s: tensor<?x1x8xf32>) {
  // expected-error @below {{'fp.chunk_causal_conv' op expects a kernel width >= 2 (a width of 1 carries no state), got 1}}
  %0:2 = fp.chunk_causal_conv %x, %w from %s : tensor<?x?x8xf32>, tensor<8x1xf32>, tensor<?x1x8xf32>
  return
}

// -----

func.func @chunk_causal_conv_tail(%x: tensor<?x?x8xf32>, %w: tensor<8x4xf32>,
                                  %s: tensor<?x2x8xf32>) {
  // expected-error @below {{'fp.chunk_causal_conv' op expects the state to hold 3 row(s) along dimension 1, got 2}}
  %0:2 = fp.chunk_causal_conv %x, %w from %s : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<?x2x8xf32>
  return
}

// -----

func.func @matrix_exp_square(%m: tensor<4x3xf32>) {
  // expected-error @below {{'fp.matrix_exp' op expects a square matrix, got 'tensor<4x3xf32>'}}
  %0 = fp.matrix_exp %m : tensor<4x3xf32>
  return
}

// -----

func.func @matrix_exp_static(%m: tensor<?x4xf32>) {
  // expected-error @below {{'fp.matrix_exp' op operand #0 must be statically shaped float matrix}}
  %0 = fp.matrix_exp %m : tensor<?x4xf32>
  return
}

// -----

func.func @eye_square() {
  // expected-error @below {{'fp.param' op initialiser 'eye' needs a square matrix, got 'tensor<4x3xf32>'}}
  %0 = fp.param "p" init <eye(1.0)> : tensor<4x3xf32>
  return
}

// -----

func.func @orthogonal_args() {
  // expected-error @below {{initialiser 'orthogonal' takes 0 argument(s), got 1}}
  %0 = fp.param "p" init <orthogonal(1.0)> : tensor<4x4xf32>
  return
}

// -----

func.func @frozen_decay() {
  // expected-error @below {{'fp.param' op a frozen parameter is not trained, so it cannot be in the weight-decay group}}
  %0 = fp.param "p" init <orthogonal> decay frozen : tensor<4x4xf32>
  return
}
