// RUN: fp-opt %s -fp-lower-fixed-point -fp-plan-buffers -fp-schedule-kernels | fp-translate --fp-to-host | FileCheck %s

// The results a call provides memory for are computed there: the output in
// `args.output`, which therefore takes no workspace, and each saved value in
// the `saved` area when the call saves (a training forward), else in the
// workspace. What is not computed by the layer (the input) or is returned a
// second time is copied.

module attributes {fp.models = [{d_model = 4 : i64, layer = @saving, n_layers = 1 : i64, name = "saving", norm = "rms_norm", norm_eps = 1.000000e-05 : f64, pad_vocab_multiple = 8 : i64, tie_embeddings = true, vocab = 11 : i64}]} {
  func.func @saving(%u: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?xi32>, tensor<?x?x4xf32> {fp.saved}, tensor<?x?x2x2xf32> {fp.saved}, tensor<?x?x4xf32> {fp.saved}, tensor<?x?x4xf32> {fp.saved}) attributes {fp.layer} {
    %x = fp.silu %u : tensor<?x?x4xf32>
    %r, %n = fp.fixed_point (%y = %u) : tensor<?x?x4xf32>
        solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
        backward <one_step> {
      %s = fp.shift %y by 1 : tensor<?x?x4xf32>
      %t = arith.addf %s, %x : tensor<?x?x4xf32>
      fp.yield %t : tensor<?x?x4xf32>
    }
    %o = fp.sigmoid %r : tensor<?x?x4xf32>
    %p = fp.reshape %x : tensor<?x?x4xf32> -> tensor<?x?x2x2xf32>
    return %o, %n, %r, %p, %o, %u : tensor<?x?x4xf32>, tensor<?xi32>, tensor<?x?x4xf32>, tensor<?x?x2x2xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>
  }
}

// CHECK-LABEL: namespace layer_saving {
//       CHECK:   const fp::host::BufferSpec kBuffers[] = {{[{][{]}}4, true, true}, {4, true, true}, {4, true, true}, {4, true, true}, {0, false, false}};
//       CHECK:   const fp::host::BufferSpec kSaved[] = {{[{][{]}}4, true, true}, {4, true, true}, {4, true, true}, {4, true, true}};
//       CHECK:   void forward(
//       CHECK:     Real *[[X:s[0-9]+]] = args.saved ? reinterpret_cast<Real *>(static_cast<char *>(args.saved) + savedOffsets[1]) : reinterpret_cast<Real *>(workspace + offsets[0]);
//       CHECK:     Real *[[Y:s[0-9]+]] = args.saved ? reinterpret_cast<Real *>(static_cast<char *>(args.saved) + savedOffsets[0]) : reinterpret_cast<Real *>(workspace + offsets[1]);
//       CHECK:     Real *[[O:s[0-9]+]] = static_cast<Real *>(args.output);
//       CHECK:     kernels::unary(kernels::Silu(), B * T * 4, in, [[X]]);
//       CHECK:     kernels::copy(in, B * T * 4, [[Y]]);
//       CHECK:     .relaxAndUpdate([[Y]],
//       CHECK:     kernels::unary(kernels::Sigmoid(), B * T * 4, [[Y]], [[O]]);
//   CHECK-NOT:     kernels::copy
//       CHECK:     if (args.saved)
//  CHECK-NEXT:       kernels::copy([[O]], B * T * 4, reinterpret_cast<Real *>(static_cast<char *>(args.saved) + savedOffsets[2]));
//  CHECK-NEXT:     if (args.saved)
//  CHECK-NEXT:       kernels::copy(in, B * T * 4, reinterpret_cast<Real *>(static_cast<char *>(args.saved) + savedOffsets[3]));
//  CHECK-NEXT:   }
