// One FP-Mamba layer (spec §1) with a Householder mixer of rank 1, written
// directly in the fp dialect: D = 16, d = 32, N = 4, dt_rank R = 1, no short
// convolution, glu_in_loop = false, bc_norm = true, concat mixer input.
//
// The fixed-point map f is the function @fp_mamba_map; the layer calls it in
// the fixed-point body and once more at the fixed point (ŷ = f(y*)) for the
// output head. After inlining, the iteration-invariant work (parameters,
// A = −exp(A_log)) is hoisted out of fp.fixed_point:
//
//   fp-opt models/mlir/fp_mamba_householder.mlir \
//     --inline --canonicalize --loop-invariant-code-motion --cse --symbol-dce
//
// Once the DSL frontend exists this file is generated from models/*.fp.

// f(y) for precomputed x, Δ, B^x, C^x (spec §1.4).
func.func private @fp_mamba_map(%y: tensor<?x?x32xf32>, %x: tensor<?x?x32xf32>,
                                %delta: tensor<?x?x32xf32>,
                                %bx: tensor<?x?x4xf32>, %cx: tensor<?x?x4xf32>)
    -> tensor<?x?x32xf32> {
  %a_log = fp.param "A_log" init <s4d_real> : tensor<32x4xf32>
  %d_skip = fp.param "D" init <ones> : tensor<32xf32>
  %v_bcy = fp.param "bc_y_proj.V" init <fan_in_uniform> decay : tensor<8x32xf32>
  %g_bcy = fp.param "bc_y_proj.g" init <row_norm of "bc_y_proj.V"> decay : tensor<8xf32>
  %v_u = fp.param "mixer.u_proj.V" init <fan_in_uniform> decay : tensor<32x64xf32>
  %g_u = fp.param "mixer.u_proj.g" init <row_norm of "mixer.u_proj.V"> decay : tensor<32xf32>
  %v_a = fp.param "mixer.alpha_proj.V" init <fan_in_uniform> decay : tensor<1x64xf32>
  %g_a = fp.param "mixer.alpha_proj.g" init <row_norm of "mixer.alpha_proj.V"> decay : tensor<1xf32>
  %b_a = fp.param "mixer.alpha_proj.bias" init <zeros> : tensor<1xf32>
  %ln_w = fp.param "out_norm.weight" init <ones> : tensor<32xf32>
  %ln_b = fp.param "out_norm.bias" init <zeros> : tensor<32xf32>

  // Mixer parameters from p = [x ; ȳ] (spec §2.1).
  %ybar = fp.shift %y by 1 : tensor<?x?x32xf32>
  %p = fp.concat %x, %ybar : tensor<?x?x32xf32>, tensor<?x?x32xf32> -> tensor<?x?x64xf32>
  %u_raw = fp.linear %p, %v_u gain %g_u
      : (tensor<?x?x64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %u_act = fp.silu %u_raw : tensor<?x?x32xf32>
  %u = fp.l2norm %u_act eps 1.0e-5 : tensor<?x?x32xf32>
  %a_raw = fp.linear %p, %v_a gain %g_a bias %b_a
      : (tensor<?x?x64xf32>, tensor<1x64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x?x1xf32>
  %a_col = fp.sigmoid %a_raw : tensor<?x?x1xf32>
  %alpha = fp.reshape %a_col : tensor<?x?x1xf32> -> tensor<?x?xf32>

  // x̃ = Q(p)(x − y) + y with Q = I − 2 α u uᵀ.
  %v = arith.subf %x, %y : tensor<?x?x32xf32>
  %uv = arith.mulf %u, %v : tensor<?x?x32xf32>
  %dot = fp.reduce_sum %uv dims [2] : tensor<?x?x32xf32> -> tensor<?x?xf32>
  %coef = arith.mulf %alpha, %dot : tensor<?x?xf32>
  %coef2 = arith.addf %coef, %coef : tensor<?x?xf32>
  %coef_b = fp.broadcast %coef2, %x dims [0, 1] : tensor<?x?xf32>, tensor<?x?x32xf32>
  %refl = arith.mulf %coef_b, %u : tensor<?x?x32xf32>
  %qv = arith.subf %v, %refl : tensor<?x?x32xf32>
  %x_mixed = arith.addf %qv, %y : tensor<?x?x32xf32>

  // B = nrm(B^x + B^y), C = nrm(C^x + C^y) with [B^y ; C^y] = W_bcy ȳ.
  %bcy = fp.linear %ybar, %v_bcy gain %g_bcy
      : (tensor<?x?x32xf32>, tensor<8x32xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %by = fp.slice %bcy[0 : 4] : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
  %cy = fp.slice %bcy[4 : 8] : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
  %b_sum = arith.addf %bx, %by : tensor<?x?x4xf32>
  %c_sum = arith.addf %cx, %cy : tensor<?x?x4xf32>
  %b = fp.l2norm %b_sum eps 1.0e-5 : tensor<?x?x4xf32>
  %c = fp.l2norm %c_sum eps 1.0e-5 : tensor<?x?x4xf32>

  // Selective scan with A = −exp(A_log), then LayerNorm.
  %a_exp = math.exp %a_log : tensor<32x4xf32>
  %a = arith.negf %a_exp : tensor<32x4xf32>
  %s = fp.selective_scan %x_mixed, %delta, %a, %b, %c skip %d_skip
      : tensor<?x?x32xf32>, tensor<32x4xf32>, tensor<?x?x4xf32>, tensor<32xf32>
  %f = fp.layer_norm %s, %ln_w, %ln_b eps 1.0e-5 : tensor<?x?x32xf32>, tensor<32xf32>
  return %f : tensor<?x?x32xf32>
}

// The layer: precompute (spec §1.3), solve (spec §3), head (spec §1.5).
func.func @fp_mamba_householder(%in: tensor<?x?x16xf32>)
    -> (tensor<?x?x16xf32>, tensor<?xi32>) {
  %w_in = fp.param "in_proj.weight" init <fan_in_uniform> decay : tensor<64x16xf32>
  %w_x = fp.param "x_proj.weight" init <fan_in_uniform> decay : tensor<9x32xf32>
  %w_dt = fp.param "dt_proj.weight" init <uniform(-1.0, 1.0)> decay : tensor<32x1xf32>
  %b_dt = fp.param "dt_proj.bias" init <dt_bias(0.001, 0.1, 0.0001)> : tensor<32xf32>
  %v_zy = fp.param "z_y_proj.V" init <fan_in_uniform> decay : tensor<32x32xf32>
  %g_zy = fp.param "z_y_proj.g" init <row_norm of "z_y_proj.V"> decay : tensor<32xf32>
  %w_out = fp.param "out_proj.weight" init <fan_in_uniform> decay : tensor<16x32xf32>

  %xz = fp.linear %in, %w_in : (tensor<?x?x16xf32>, tensor<64x16xf32>) -> tensor<?x?x64xf32>
  %x = fp.slice %xz[0 : 32] : tensor<?x?x64xf32> -> tensor<?x?x32xf32>
  %z = fp.slice %xz[32 : 64] : tensor<?x?x64xf32> -> tensor<?x?x32xf32>
  %xdbl = fp.linear %x, %w_x : (tensor<?x?x32xf32>, tensor<9x32xf32>) -> tensor<?x?x9xf32>
  %dt_low = fp.slice %xdbl[0 : 1] : tensor<?x?x9xf32> -> tensor<?x?x1xf32>
  %bx = fp.slice %xdbl[1 : 5] : tensor<?x?x9xf32> -> tensor<?x?x4xf32>
  %cx = fp.slice %xdbl[5 : 9] : tensor<?x?x9xf32> -> tensor<?x?x4xf32>
  %dt_pre = fp.linear %dt_low, %w_dt bias %b_dt
      : (tensor<?x?x1xf32>, tensor<32x1xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %delta = fp.softplus %dt_pre : tensor<?x?x32xf32>

  %zero = arith.constant dense<0.0> : tensor<f32>
  %y0 = fp.broadcast %zero, %x dims [] : tensor<f32>, tensor<?x?x32xf32>
  %ystar, %iters = fp.fixed_point (%y = %y0) : tensor<?x?x32xf32>
      solver <tolerance = 0.1, quantile = 0.75, max_iter_train = 100,
              max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9,
              relax_patience = 15>
      backward <one_step> {
    %fy = func.call @fp_mamba_map(%y, %x, %delta, %bx, %cx)
        : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>,
           tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x32xf32>
    fp.yield %fy : tensor<?x?x32xf32>
  }

  // o = W_out(silu(z + W_zy ŷ̄) ⊙ ŷ), ŷ = f(y*).
  %yhat = func.call @fp_mamba_map(%ystar, %x, %delta, %bx, %cx)
      : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>,
         tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x32xf32>
  %yhat_bar = fp.shift %yhat by 1 : tensor<?x?x32xf32>
  %zy = fp.linear %yhat_bar, %v_zy gain %g_zy
      : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %gate_in = arith.addf %z, %zy : tensor<?x?x32xf32>
  %gate = fp.silu %gate_in : tensor<?x?x32xf32>
  %gated = arith.mulf %gate, %yhat : tensor<?x?x32xf32>
  %out = fp.linear %gated, %w_out : (tensor<?x?x32xf32>, tensor<16x32xf32>) -> tensor<?x?x16xf32>
  return %out, %iters : tensor<?x?x16xf32>, tensor<?xi32>
}
