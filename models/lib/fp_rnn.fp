// The vector-state FP-RNN (paper §3, docs/spec.md §5.2):
//   h = Λ ⊙ shift(h) + (1 − Λ) ⊙ x̃,   x̃ = Q(p)(b ⊙ x − h) + h,
// a diagonal linear recurrence with the explicit (I − Λ) input
// normalisation and no LayerNorm on the iterates; FP-RNN solver constants
// (docs/spec.md §3.4): quantile 0.9, no relaxation, no decay.

import "kronecker.fp"

layer fp_rnn(u: [D]) -> [D] {
  config D = 64
  config E = 2
  config K = 4
  config mixer_type = kronecker(spectral = true)
  config use_short_conv = false
  config mixer_h_dep = true
  config eps = 1.0e-5
  config max_iter = 100

  let d = E * D

  param io_proj: linear(D, 2 * d)
  param b_proj: linear(d, d)
  param lambda_proj: linear(d, d, bias = true)
  param mixer: mixer_type
  param c_proj: linear(2 * d, d)
  param out_norm: rms_norm(d, eps = eps)
  param out_proj: linear(d, D)

  let xz = io_proj(u)
  let x = xz[0 : d]
  let z = xz[d : 2 * d]
  // Without the short convolutions every branch reads the raw x.
  let x_mix = x
  let x_b = x
  let x_lambda = x
  if use_short_conv {
    param conv_mix: causal_conv(d, K)
    param conv_b: causal_conv(d, K)
    param conv_lambda: causal_conv(d, K)
    param conv_x: causal_conv(d, K)
    x_mix = silu(conv_mix(x))
    x_b = silu(conv_b(x))
    x_lambda = silu(conv_lambda(x))
    x = silu(conv_x(x))
  }
  let bx = silu(b_proj(x_b)) * x
  let lambda = sigmoid(lambda_proj(x_lambda))

  fn f(h: [d]) -> [d] {
    let p = x_mix
    if mixer_h_dep {
      p = concat(x_mix, shift(h))
    }
    let xm = mixer(p, bx - h) + h
    return scan(lambda, (1.0 - lambda) * xm)
  }

  let hstar = fixed_point(f, 0.0, quantile = 0.9, max_iter_train = max_iter,
                          relax_start = 1.0, relax_decay = 1.0)
  let hhat = f(hstar)

  let readout = concat(x, shift(hhat))
  if use_short_conv {
    param readout_conv: causal_conv(2 * d, K)
    readout = silu(readout_conv(concat(x, hhat)))
  }
  let gated = silu(c_proj(readout)) * hhat
  return out_proj(out_norm(silu(z) * gated))
}
