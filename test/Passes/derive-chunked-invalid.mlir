// RUN: fp-opt %s -split-input-file -fp-derive-chunked -verify-diagnostics

// Layers whose chunks cannot continue a sequence.

func.func @anti_causal(%u: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> attributes {fp.layer} {
  // expected-error @below {{'fp.shift' op cannot be run in chunks: it reads later tokens (offset -1) (`fpc --no-chunked` leaves the chunked form out)}}
  %0 = fp.shift %u by -1 : tensor<?x?x8xf32>
  return %0 : tensor<?x?x8xf32>
}

// -----

func.func @reverse_scan(%u: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> attributes {fp.layer} {
  // expected-error @below {{'fp.scan' op cannot be run in chunks: a reverse scan reads later tokens}}
  %0 = fp.scan reverse %u, %u : tensor<?x?x8xf32>
  return %0 : tensor<?x?x8xf32>
}

// -----

func.func @inlined(%u: tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<?xi32>) attributes {fp.layer} {
  %ys, %its = fp.fixed_point (%y = %u) : tensor<?x?x8xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 10, max_iter_eval = 20, relax_start = 1.0, relax_decay = 1.0, relax_patience = 15>
      backward <one_step> {
    // expected-error @below {{'fp.shift' op cannot be run in chunks: it couples tokens inside a fixed-point body outside a map}}
    %n = fp.shift %y by 1 : tensor<?x?x8xf32>
    fp.yield %n : tensor<?x?x8xf32>
  }
  return %ys, %its : tensor<?x?x8xf32>, tensor<?xi32>
}
