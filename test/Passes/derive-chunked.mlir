// RUN: fp-opt %s -split-input-file -fp-derive-chunked | FileCheck %s

// The chunked form of a layer whose map couples tokens: the map's states
// become arguments and results of @L.chunk, shared by the call in the loop
// and the application after it, whose next states the chunk returns; the
// layer's own shift after the loop has a state of its own.

func.func private @L.f(%y: tensor<?x?x8xf32>, %x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %0 = fp.shift %y by 1 : tensor<?x?x8xf32>
  %1 = arith.addf %0, %x : tensor<?x?x8xf32>
  %2 = fp.scan %x, %1 : tensor<?x?x8xf32>
  return %2 : tensor<?x?x8xf32>
}

func.func @L(%u: tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<?xi32>) attributes {fp.layer} {
  %ys, %its = fp.fixed_point (%y = %u) : tensor<?x?x8xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 10, max_iter_eval = 20, relax_start = 1.0, relax_decay = 1.0, relax_patience = 15>
      backward <one_step> {
    %n = func.call @L.f(%y, %u) : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
    fp.yield %n : tensor<?x?x8xf32>
  }
  %yhat = func.call @L.f(%ys, %u) : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %out = fp.shift %yhat by 1 : tensor<?x?x8xf32>
  return %out, %its : tensor<?x?x8xf32>, tensor<?xi32>
}

// Each map's chunked copy follows it.
// CHECK-LABEL: func.func private @L.f.chunk(
// CHECK-SAME:      tensor<?x1x8xf32> {fp.state = "L.f.shift"}
// CHECK-SAME:      tensor<?x1x8xf32> {fp.state = "L.f.scan"}
// CHECK:         %[[R0:.*]], %[[N0:.*]] = fp.chunk_shift
// CHECK:         %[[R1:.*]], %[[N1:.*]] = fp.chunk_scan
// CHECK:         return %[[R1]], %[[N0]], %[[N1]]

// The layer is left as it was.
// CHECK-LABEL: func.func @L(
// CHECK-SAME:      attributes {fp.layer}
// CHECK:         fp.shift
// CHECK-NOT:     fp.chunk_

// CHECK-LABEL: func.func @L.chunk(
// CHECK-SAME:      %[[U:[^:]+]]: tensor<?x?x8xf32>
// CHECK-SAME:      %[[S0:[^:]+]]: tensor<?x1x8xf32> {fp.state = "L.f.shift"}
// CHECK-SAME:      %[[S1:[^:]+]]: tensor<?x1x8xf32> {fp.state = "L.f.scan"}
// CHECK-SAME:      %[[S2:[^:]+]]: tensor<?x1x8xf32> {fp.state = "L.shift"}
// CHECK-SAME:      -> (tensor<?x?x8xf32>, tensor<?xi32>, tensor<?x1x8xf32>, tensor<?x1x8xf32>, tensor<?x1x8xf32>)
// CHECK-SAME:      attributes {fp.chunk_of = @L}
// CHECK:         fp.fixed_point
// CHECK:           func.call @L.f.chunk(%{{.*}}, %[[U]], %[[S0]], %[[S1]])
// CHECK:         %[[HAT:.*]]:3 = call @L.f.chunk(%{{.*}}, %[[U]], %[[S0]], %[[S1]])
// CHECK:         %[[OUT:.*]], %[[NEXT:.*]] = fp.chunk_shift %[[HAT]]#0 by 1 from %[[S2]]
// CHECK:         return %[[OUT]], %{{.*}}, %[[HAT]]#1, %[[HAT]]#2, %[[NEXT]]


// -----

// A layer that returns the fixed point itself: one more application of the
// map after the loop gives the state the chunk leaves.

func.func private @M.f(%y: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %0 = fp.shift %y by 1 : tensor<?x?x8xf32>
  return %0 : tensor<?x?x8xf32>
}

func.func @M(%u: tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<?xi32>) attributes {fp.layer} {
  %ys, %its = fp.fixed_point (%y = %u) : tensor<?x?x8xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 10, max_iter_eval = 20, relax_start = 1.0, relax_decay = 1.0, relax_patience = 15>
      backward <one_step> {
    %n = func.call @M.f(%y) : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
    fp.yield %n : tensor<?x?x8xf32>
  }
  return %ys, %its : tensor<?x?x8xf32>, tensor<?xi32>
}

// CHECK-LABEL: func.func @M.chunk(
// CHECK-SAME:      %{{[^:]+}}: tensor<?x?x8xf32>, %[[S:[^:]+]]: tensor<?x1x8xf32> {fp.state = "M.f.shift"}
// CHECK:         %[[YS:.*]], %[[ITS:.*]] = fp.fixed_point
// CHECK:           func.call @M.f.chunk(%{{.*}}, %[[S]])
// CHECK:         %[[AGAIN:.*]]:2 = call @M.f.chunk(%[[YS]], %[[S]])
// CHECK:         return %[[YS]], %[[ITS]], %[[AGAIN]]#1

// -----

// A layer whose ops couple no tokens: its chunked form is itself, without
// state.

func.func @N(%u: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> attributes {fp.layer} {
  %0 = fp.silu %u : tensor<?x?x8xf32>
  return %0 : tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @N.chunk(%{{[^:]+}}: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> attributes {fp.chunk_of = @N}
// CHECK-NEXT:    fp.silu
