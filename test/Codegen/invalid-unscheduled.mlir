// RUN: fp-opt %s -fp-plan-buffers | not fp-translate --fp-to-host 2>&1 | FileCheck %s

// The kernel emitter prints a schedule and decides none: a kernel that
// fp-schedule-kernels has not scheduled is refused, naming the pass.

// CHECK: error: 'fp.kernel' op is not scheduled: run fp-schedule-kernels before emitting it

module attributes {fp.models = [{d_model = 4 : i64, layer = @unscheduled, n_layers = 1 : i64, name = "unscheduled", norm = "rms_norm", norm_eps = 1.000000e-05 : f64, pad_vocab_multiple = 8 : i64, tie_embeddings = true, vocab = 11 : i64}]} {
  func.func @unscheduled(%u: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {fp.layer} {
    %k = fp.kernel (%a = %u) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
      %s = fp.silu %a : tensor<?x?x4xf32>
      fp.yield %s : tensor<?x?x4xf32>
    }
    return %k : tensor<?x?x4xf32>
  }
}
