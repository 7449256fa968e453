// RUN: fp-opt %s -fp-lower-fixed-point -fp-plan-buffers -fp-schedule-kernels | fp-translate --fp-to-host | FileCheck %s

// A loop with two iterates: each initial value is copied into its iterate's
// buffer, and every step relaxes both in place; the second relaxation also
// does the step's bookkeeping (one launch on CUDA).
// CHECK-LABEL: namespace layer_pair {
//       CHECK:   kernels::Solver<Real> [[SOLVER:solver[0-9]+]](B, kSolver, args.training != 0, args.solver);
//       CHECK:   kernels::copy(in, B * T * 4, [[Y:s[0-9]+]]);
//       CHECK:   kernels::copy([[Z0:s[0-9]+]], B * T * 2, [[Z:s[0-9]+]]);
//       CHECK:   [[SOLVER]].loop([&] {
//       CHECK:     kernels::shift([[Y]], B, T, 4, 1, [[FY:s[0-9]+]]);
//       CHECK:     kernels::unary(kernels::Silu(), B * T * 2, [[Z]], [[FZ:s[0-9]+]]);
//       CHECK:     [[SOLVER]].relax([[Y]], [[FY]], T, 4);
//       CHECK:     [[SOLVER]].relaxAndUpdate([[Z]], [[FZ]], T, 2);
//  CHECK-NEXT:   });
//       CHECK:   [[SOLVER]].report(args.stats, args.device_stats);
module attributes {fp.models = [{d_model = 4 : i64, layer = @pair, n_layers = 1 : i64, name = "pair", norm = "rms_norm", norm_eps = 1.000000e-05 : f64, pad_vocab_multiple = 8 : i64, tie_embeddings = true, vocab = 11 : i64}]} {
  func.func @pair(%u: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?xi32>) attributes {fp.layer} {
    %z0 = fp.slice %u[0 : 2] : tensor<?x?x4xf32> -> tensor<?x?x2xf32>
    %r:2, %n = fp.fixed_point (%y = %u, %z = %z0) : tensor<?x?x4xf32>, tensor<?x?x2xf32>
        solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 7, max_iter_eval = 9, relax_start = 0.99, relax_decay = 0.9, relax_patience = 3>
        backward <one_step> {
      %s = fp.shift %y by 1 : tensor<?x?x4xf32>
      %t = fp.silu %z : tensor<?x?x2xf32>
      fp.yield %s, %t : tensor<?x?x4xf32>, tensor<?x?x2xf32>
    }
    return %r#0, %n : tensor<?x?x4xf32>, tensor<?xi32>
  }
}
