// RUN: fp-opt %s -split-input-file -verify-diagnostics

// The verifier of a scheduled fp.kernel (fp-schedule-kernels): every slot,
// temporary, staged row and scan state within its space, and fp.barrier
// only in a kernel. One expected error per split.

func.func @barrier_outside(%x: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'fp.barrier' op expects parent op 'fp.kernel'}}
  fp.barrier call
  return
}

// -----

func.func @barrier_of_no_pass(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %k = fp.kernel (%a = %x) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
    %s = fp.silu %a : tensor<?x?x4xf32>
    // expected-error @+1 {{expects to synchronise the call, the summary pass, or both}}
    fp.barrier
    fp.yield %s : tensor<?x?x4xf32>
  }
  return %k : tensor<?x?x4xf32>
}

// -----

func.func @slot_outside(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %k = fp.kernel (%a = %x) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.register_state = 0 : i64, fp.scratch_size = 6 : i64, fp.stage_size = 0 : i64, fp.state_size = 0 : i64} {
    // expected-error @+1 {{has its slot at [4, 8), outside the kernel's 6 elements}}
    %s = fp.silu %a {fp.slot = 4 : i64} : tensor<?x?x4xf32>
    %t = fp.silu %s {fp.out = 0 : i64} : tensor<?x?x4xf32>
    fp.yield %t : tensor<?x?x4xf32>
  }
  return %k : tensor<?x?x4xf32>
}

// -----

func.func @temporary_outside(%l: tensor<?x?x2x2xf32>) -> tensor<?x?x2x2xf32> {
  %k = fp.kernel (%a = %l) : (tensor<?x?x2x2xf32>) -> tensor<?x?x2x2xf32> attributes {fp.register_state = 0 : i64, fp.scratch_size = 4 : i64, fp.stage_size = 0 : i64, fp.state_size = 0 : i64} {
    // expected-error @+1 {{has its temporary at [0, 6), outside the kernel's 4 elements}}
    %m = fp.matmul %a, %a {fp.out = 0 : i64, fp.temp = array<i64: 0, 6>, transpose_rhs} : tensor<?x?x2x2xf32>, tensor<?x?x2x2xf32> -> tensor<?x?x2x2xf32>
    fp.yield %m : tensor<?x?x2x2xf32>
  }
  return %k : tensor<?x?x2x2xf32>
}

// -----

func.func @summary_slot_outside(%x: tensor<?x?x4xf32>, %c: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %k = fp.kernel (%a = %x, %b = %c) : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.carry_size = 8 : i64, fp.register_state = 0 : i64, fp.scratch_size = 4 : i64, fp.stage_size = 0 : i64, fp.state_size = 8 : i64} {
    // expected-error @+1 {{has its summary slot at [2, 6), outside the kernel's 4 elements}}
    %s = fp.silu %a {fp.slot = 0 : i64, fp.summary = {slot = 2 : i64}} : tensor<?x?x4xf32>
    %y = fp.scan %s, %b {fp.carry_offset = 0 : i64, fp.out = 0 : i64, fp.state_offset = 0 : i64, fp.summary = {}} : tensor<?x?x4xf32>
    fp.yield %y : tensor<?x?x4xf32>
  }
  return %k : tensor<?x?x4xf32>
}

// -----

func.func @summary_unchunked(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %k = fp.kernel (%a = %x) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.register_state = 0 : i64, fp.scratch_size = 4 : i64, fp.stage_size = 0 : i64, fp.state_size = 0 : i64} {
    // expected-error @+1 {{runs in the summary pass of a kernel that does not run in chunks}}
    %s = fp.silu %a {fp.out = 0 : i64, fp.summary = {}} : tensor<?x?x4xf32>
    fp.yield %s : tensor<?x?x4xf32>
  }
  return %k : tensor<?x?x4xf32>
}

// -----

func.func @state_outside(%x: tensor<?x?x4xf32>, %c: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %k = fp.kernel (%a = %x, %b = %c) : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.register_state = 0 : i64, fp.scratch_size = 0 : i64, fp.stage_size = 0 : i64, fp.state_size = 4 : i64} {
    // expected-error @+1 {{has its state at [0, 8), outside the kernel's 4 elements}}
    %y = fp.scan %a, %b {fp.out = 0 : i64, fp.state_offset = 0 : i64} : tensor<?x?x4xf32>
    fp.yield %y : tensor<?x?x4xf32>
  }
  return %k : tensor<?x?x4xf32>
}

// -----

func.func @scan_without_state(%x: tensor<?x?x4xf32>, %c: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %k = fp.kernel (%a = %x, %b = %c) : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.register_state = 0 : i64, fp.scratch_size = 0 : i64, fp.stage_size = 0 : i64, fp.state_size = 8 : i64} {
    // expected-error @+1 {{expects its state's offset ('fp.state_offset')}}
    %y = fp.scan %a, %b {fp.out = 0 : i64} : tensor<?x?x4xf32>
    fp.yield %y : tensor<?x?x4xf32>
  }
  return %k : tensor<?x?x4xf32>
}

// -----

func.func @staged_outside(%x: tensor<?x?x4xf32>, %c: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  // expected-error @+1 {{stages input #1 at [4, 8), outside its stage buffer of 6 elements}}
  %k = fp.kernel (%a = %x, %b = %c) : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.register_state = 0 : i64, fp.scratch_size = 0 : i64, fp.stage_size = 6 : i64, fp.staged_inputs = array<i64: 0, 0, 1, 4>, fp.state_size = 8 : i64} {
    %y = fp.scan %a, %b {fp.out = 0 : i64, fp.state_offset = 0 : i64} : tensor<?x?x4xf32>
    fp.yield %y : tensor<?x?x4xf32>
  }
  return %k : tensor<?x?x4xf32>
}

// -----

func.func @staged_not_shift(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %k = fp.kernel (%a = %x) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.register_state = 0 : i64, fp.scratch_size = 0 : i64, fp.stage_size = 8 : i64, fp.state_size = 0 : i64} {
    // expected-error @+1 {{is staged, but only a shift of an input is}}
    %s = fp.silu %a {fp.out = 0 : i64, fp.staged = 0 : i64} : tensor<?x?x4xf32>
    fp.yield %s : tensor<?x?x4xf32>
  }
  return %k : tensor<?x?x4xf32>
}

// -----

func.func @out_of_range_result(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %k = fp.kernel (%a = %x) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.register_state = 0 : i64, fp.scratch_size = 0 : i64, fp.stage_size = 0 : i64, fp.state_size = 0 : i64} {
    // expected-error @+1 {{is computed into result #1, which the kernel lacks}}
    %s = fp.silu %a {fp.out = 1 : i64} : tensor<?x?x4xf32>
    fp.yield %s : tensor<?x?x4xf32>
  }
  return %k : tensor<?x?x4xf32>
}

// -----

func.func @missing_size(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  // expected-error @+1 {{expects 'fp.state_size' to be a non-negative integer}}
  %k = fp.kernel (%a = %x) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.register_state = 0 : i64, fp.scratch_size = 0 : i64, fp.stage_size = 0 : i64} {
    %s = fp.silu %a {fp.out = 0 : i64} : tensor<?x?x4xf32>
    fp.yield %s : tensor<?x?x4xf32>
  }
  return %k : tensor<?x?x4xf32>
}
