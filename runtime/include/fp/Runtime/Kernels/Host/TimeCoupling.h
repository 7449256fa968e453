//===- Host/TimeCoupling.h - Time-coupling host kernels ---------*- C++ -*-===//
//
// The ops that couple the tokens of a sample, on [B, T, F] buffers: shift,
// scan, selectiveScan and the depthwise causal convolution (causalConv,
// causalConvStrided), and their forms for a chunk of a sequence, which
// continue from a state the tokens before it left and return the state the
// chunk leaves (shiftFrom, scanFrom, selectiveScanFrom, causalConvFrom).
//
// Counterpart: Device/TimeCoupling.cuh.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_HOST_TIMECOUPLING_H
#define FP_RUNTIME_KERNELS_HOST_TIMECOUPLING_H

#include "fp/Runtime/Kernels/Host/Context.h"
#include "fp/Runtime/Kernels/Host/Launch.h"

namespace fp::host {

/// out[b, t] = in[b, t − offset] inside [0, T), zero elsewhere.
template <typename Real>
FP_KERNEL void shift(In<Real> in, int64_t batch, int64_t length,
                     int64_t features, int64_t offset, Real *out) {
  parallelFor(batch * length, features, [&](int64_t bt) {
    int64_t t = bt % length, source = t - offset;
    Real *dst = out + bt * features;
    if (source < 0 || source >= length)
      std::fill(dst, dst + features, Real(0));
    else
      std::memcpy(dst, in + (bt - offset) * features, sizeof(Real) * features);
  });
}

/// h_t = coeff_t ⊙ h_{t∓1} + input_t along time, from zero; the state h
/// is carried in Compute<Real>.
template <typename Real>
FP_KERNEL void scan(In<Real> coeff, In<Real> input, int64_t batch,
                    int64_t length, int64_t features, bool reverse, Real *out) {
  using C = Compute<Real>;
  parallelFor(batch, length * features, [&](int64_t b) {
    int64_t base = b * length * features;
    std::vector<C> h(features, C(0));
    for (int64_t s = 0; s < length; ++s) {
      int64_t t = reverse ? length - 1 - s : s;
      In<Real> c = coeff + base + t * features;
      In<Real> x = input + base + t * features;
      Real *dst = out + base + t * features;
      for (int64_t f = 0; f < features; ++f) {
        h[f] = s == 0 ? C(x[f]) : C(c[f]) * h[f] + C(x[f]);
        dst[f] = Real(h[f]);
      }
    }
  });
}

/// The last `rows` rows of each sample's sequence `state` ([B, rows, F])
/// then `in` ([B, T, F], rows `inStride` elements apart), into `next`
/// ([B, rows, F]): the state a chunk leaves for the next one.
template <typename Real>
FP_KERNEL void carryRows(In<Real> state, In<Real> in, int64_t inStride,
                         int64_t batch, int64_t length, int64_t rows,
                         int64_t features, Real *next) {
  parallelFor(batch * rows, features, [&](int64_t br) {
    const int64_t b = br / rows, r = br % rows;
    const int64_t t = length - rows + r; // the row's token; < 0: in state
    const Real *src = t >= 0 ? in + (b * length + t) * inStride
                             : state + (b * rows + rows + t) * features;
    std::memcpy(next + br * features, src, sizeof(Real) * features);
  });
}

/// shift of a chunk (fp.chunk_shift): out[b, t] = in[b, t − offset] for
/// t ≥ offset and state[b, t] below ([B, offset, F], the rows before the
/// chunk); `next` gets the last `offset` rows of state then in.
template <typename Real>
FP_KERNEL void shiftFrom(In<Real> in, In<Real> state, int64_t batch,
                         int64_t length, int64_t features, int64_t offset,
                         Real *out, Real *next) {
  parallelFor(batch * length, features, [&](int64_t bt) {
    const int64_t b = bt / length, t = bt % length;
    const Real *src = t >= offset ? in + (bt - offset) * features
                                  : state + (b * offset + t) * features;
    std::memcpy(out + bt * features, src, sizeof(Real) * features);
  });
  carryRows(state, in, features, batch, length, offset, features, next);
}

/// scan of a chunk (fp.chunk_scan): h_t = coeff_t ⊙ h_{t−1} + input_t from
/// h_{−1} = state ([B, 1, F]); `next` gets h_{T−1}.
template <typename Real>
FP_KERNEL void scanFrom(In<Real> coeff, In<Real> input, In<Real> state,
                        int64_t batch, int64_t length, int64_t features,
                        Real *out, Real *next) {
  using C = Compute<Real>;
  parallelFor(batch, length * features, [&](int64_t b) {
    const int64_t base = b * length * features;
    std::vector<C> h(features);
    for (int64_t f = 0; f < features; ++f)
      h[f] = C(state[b * features + f]);
    for (int64_t t = 0; t < length; ++t) {
      In<Real> c = coeff + base + t * features;
      In<Real> x = input + base + t * features;
      Real *dst = out + base + t * features;
      for (int64_t f = 0; f < features; ++f) {
        h[f] = C(c[f]) * h[f] + C(x[f]);
        dst[f] = Real(h[f]);
      }
    }
    for (int64_t f = 0; f < features; ++f)
      next[b * features + f] = Real(h[f]);
  });
}

/// Mamba-1's selective scan (fp.selective_scan): state S [d, N] per sample,
/// S_t = exp(Δ_t A) ⊙ S_{t−1} + (Δ_t u_t) B_t, y_t = S_t C_t + D u_t,
/// from S_{−1} = `init` ([B, d, N]; zero where null), leaving S_{T−1} in
/// `last` ([B, d, N]) where it is not null.
template <typename Real>
FP_KERNEL void selectiveScanFrom(In<Real> u, In<Real> delta, In<Real> a,
                                 In<Real> bm, In<Real> cm, In<Real> skip,
                                 In<Real> init, int64_t batch, int64_t length,
                                 int64_t channels, int64_t state, Real *out,
                                 Real *last) {
  // A task is one sample and a block of channels; the loops over channels
  // are innermost so that they vectorise, with the state of the block laid
  // out [state, block].
  // The state and the token's Δ, Δ·u and outputs are Compute<Real>.
  using C = Compute<Real>;
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (channels + kBlock - 1) / kBlock;
  parallelFor(batch * blocks, length * state * kBlock, [&](int64_t task) {
    const int64_t b = task / blocks, c0 = (task % blocks) * kBlock;
    const int64_t width = std::min(kBlock, channels - c0);
    std::vector<C> scratch(2 * state * width, C(0));
    C *st = scratch.data(), *at = st + state * width;
    for (int64_t n = 0; n < state; ++n)
      for (int64_t j = 0; j < width; ++j) {
        at[n * width + j] = C(a[(c0 + j) * state + n]);
        if (init)
          st[n * width + j] = C(init[(b * channels + c0 + j) * state + n]);
      }
    C dt[kBlock], ut[kBlock], du[kBlock], y[kBlock];
    for (int64_t t = 0; t < length; ++t) {
      const int64_t bt = b * length + t;
      for (int64_t j = 0; j < width; ++j) {
        dt[j] = C(delta[bt * channels + c0 + j]);
        ut[j] = C(u[bt * channels + c0 + j]);
        du[j] = dt[j] * ut[j];
        y[j] = 0;
      }
      for (int64_t n = 0; n < state; ++n) {
        const C bn = C(bm[bt * state + n]), cn = C(cm[bt * state + n]);
        C *sn = st + n * width;
        const C *an = at + n * width;
#pragma omp simd
        for (int64_t j = 0; j < width; ++j) {
          sn[j] = exp(dt[j] * an[j]) * sn[j] + du[j] * bn;
          y[j] += sn[j] * cn;
        }
      }
      Real *dst = out + bt * channels + c0;
      for (int64_t j = 0; j < width; ++j)
        dst[j] = Real(skip ? y[j] + C(skip[c0 + j]) * ut[j] : y[j]);
    }
    if (last)
      for (int64_t n = 0; n < state; ++n)
        for (int64_t j = 0; j < width; ++j)
          last[(b * channels + c0 + j) * state + n] = Real(st[n * width + j]);
  });
}

/// selectiveScanFrom a zero state.
template <typename Real>
FP_KERNEL void selectiveScan(In<Real> u, In<Real> delta, In<Real> a,
                             In<Real> bm, In<Real> cm, In<Real> skip,
                             int64_t batch, int64_t length, int64_t channels,
                             int64_t state, Real *out) {
  selectiveScanFrom<Real>(u, delta, a, bm, cm, skip, nullptr, batch, length,
                          channels, state, out, nullptr);
}

/// Depthwise causal convolution of a chunk (fp.chunk_causal_conv): out[b,
/// t, c] = bias[c] + Σ_k weight[c, k] · x[b, t − K + 1 + k, c] over the
/// sequence x of `state` ([B, K − 1, C], the inputs before the chunk; zeros
/// where null) then `in`, whose rows (one per token) start `inStride`
/// elements apart: a column range of a wider matrix (fp.slice read in
/// place). Where `next` is not null it gets the last K − 1 rows of x.
template <typename Real>
FP_KERNEL void causalConvFrom(In<Real> in, int64_t inStride, In<Real> state,
                              In<Real> weight, In<Real> bias, int64_t batch,
                              int64_t length, int64_t channels, int64_t width,
                              Real *out, Real *next) {
  using C = Compute<Real>;
  parallelFor(batch * length, channels * width, [&](int64_t bt) {
    const int64_t b = bt / length, t = bt % length;
    Real *dst = out + bt * channels;
    for (int64_t c = 0; c < channels; ++c) {
      C sum = bias ? C(bias[c]) : C(0);
      for (int64_t k = 0; k < width; ++k) {
        const int64_t source = t - width + 1 + k;
        if (source >= 0)
          sum += C(weight[c * width + k]) *
                 C(in[(bt - t + source) * inStride + c]);
        else if (state)
          sum +=
              C(weight[c * width + k]) *
              C(state[(b * (width - 1) + width - 1 + source) * channels + c]);
      }
      dst[c] = Real(sum);
    }
  });
  if (next)
    carryRows(state, in, inStride, batch, length, width - 1, channels, next);
}

/// Depthwise causal convolution: out[b, t, c] = bias[c] +
/// Σ_k weight[c, k] · in[b, t − K + 1 + k, c], zero left padding, with the
/// rows of `in` (one per token) starting `inStride` elements apart: a
/// column range of a wider matrix (fp.slice read in place).
template <typename Real>
FP_KERNEL void causalConvStrided(In<Real> in, int64_t inStride, In<Real> weight,
                                 In<Real> bias, int64_t batch, int64_t length,
                                 int64_t channels, int64_t width, Real *out) {
  causalConvFrom<Real>(in, inStride, nullptr, weight, bias, batch, length,
                       channels, width, out, nullptr);
}

/// causalConvStrided of packed rows.
template <typename Real>
FP_KERNEL void causalConv(In<Real> in, In<Real> weight, In<Real> bias,
                          int64_t batch, int64_t length, int64_t channels,
                          int64_t width, Real *out) {
  causalConvStrided(in, channels, weight, bias, batch, length, channels, width,
                    out);
}

} // namespace fp::host

#endif // FP_RUNTIME_KERNELS_HOST_TIMECOUPLING_H
