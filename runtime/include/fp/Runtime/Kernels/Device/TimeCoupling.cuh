//===- Device/TimeCoupling.cuh - Time-coupling CUDA kernels -----*- C++ -*-===//
//
// The ops that couple the tokens of a sample, on [B, T, F] buffers: shift,
// scan, selectiveScan with the choice among its kernels, and the depthwise
// causal convolution (causalConv, causalConvStrided), and their forms for a
// chunk of a sequence (shiftFrom, scanFrom, selectiveScanFrom,
// causalConvFrom).
//
// Counterpart: Host/TimeCoupling.h.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_DEVICE_TIMECOUPLING_CUH
#define FP_RUNTIME_KERNELS_DEVICE_TIMECOUPLING_CUH

#include "fp/Runtime/Kernels/Device/Context.cuh"
#include "fp/Runtime/Kernels/Device/Launch.cuh"

namespace fp::cuda {

namespace detail {

/// With `state` ([B, offset, F], offset > 0), the rows before the chunk
/// where fp.shift has zeros.
template <typename Real>
__global__ void shiftKernel(const Real *in, const Real *state, int64_t batch,
                            int64_t length, int64_t features, int64_t offset,
                            Real *out) {
  const int64_t n = batch * length * features;
  for (int64_t index = firstThread(); index < n; index += allThreads()) {
    const int64_t t = index / features % length, source = t - offset;
    if (source >= 0 && source < length)
      out[index] = in[index - offset * features];
    else if (state && source < 0)
      out[index] = state[(index / features / length * offset + t) * features +
                         index % features];
    else
      out[index] = Real(0);
  }
}

/// The last `rows` rows of each sample's sequence `state` then `in` (rows
/// `inStride` elements apart), into `next` ([B, rows, F]).
template <typename Real>
__global__ void carryRowsKernel(const Real *state, const Real *in,
                                int64_t inStride, int64_t batch, int64_t length,
                                int64_t rows, int64_t features, Real *next) {
  const int64_t n = batch * rows * features;
  for (int64_t index = firstThread(); index < n; index += allThreads()) {
    const int64_t f = index % features, br = index / features;
    const int64_t b = br / rows, r = br % rows;
    const int64_t t = length - rows + r;
    next[index] = t >= 0 ? in[(b * length + t) * inStride + f]
                         : state[(b * rows + rows + t) * features + f];
  }
}

/// One thread per (sample, feature), its state h in a register: from zero,
/// or forward from `state` ([B, 1, F]) leaving h_{T−1} in `next`.
template <typename Real>
__global__ void scanKernel(const Real *coeff, const Real *input,
                           const Real *state, int64_t batch, int64_t length,
                           int64_t features, bool reverse, Real *out,
                           Real *next) {
  using C = Compute<Real>;
  for (int64_t index = firstThread(); index < batch * features;
       index += allThreads()) {
    const int64_t base = index / features * length * features,
                  f = index % features;
    C h = state ? C(state[index]) : C(0);
    for (int64_t s = 0; s < length; ++s) {
      const int64_t t = reverse ? length - 1 - s : s;
      const int64_t at = base + t * features + f;
      h = s == 0 && !state ? C(input[at]) : C(coeff[at]) * h + C(input[at]);
      out[at] = Real(h);
    }
    if (next)
      next[index] = Real(h);
  }
}

/// Per thread (one channel of one sample), the state S[:, c] and A[c, :]
/// live in dynamic shared memory as Compute<Real>, element n at
/// [n · blockDim.x]; S starts from `init` ([B, d, N]) where it is not null
/// and ends in `last` where that is not null.
template <typename Real>
__global__ void
selectiveScanKernel(const Real *u, const Real *delta, const Real *a,
                    const Real *bm, const Real *cm, const Real *skip,
                    const Real *init, int64_t batch, int64_t length,
                    int64_t channels, int64_t state, Real *out, Real *last) {
  using C = Compute<Real>;
  const int64_t stride = blockDim.x;
  C *st = reinterpret_cast<C *>(sharedBytes()) + threadIdx.x;
  C *at = st + state * stride;
  const int64_t blocksPerSample = (channels + stride - 1) / stride;
  for (int64_t task = blockIdx.x; task < batch * blocksPerSample;
       task += gridDim.x) {
    const int64_t b = task / blocksPerSample;
    const int64_t c = task % blocksPerSample * stride + threadIdx.x;
    if (c >= channels)
      continue;
    for (int64_t n = 0; n < state; ++n) {
      st[n * stride] = init ? C(init[(b * channels + c) * state + n]) : C(0);
      at[n * stride] = C(a[c * state + n]);
    }
    for (int64_t t = 0; t < length; ++t) {
      const int64_t bt = b * length + t;
      const C dt = C(delta[bt * channels + c]), ut = C(u[bt * channels + c]);
      const C du = dt * ut;
      C y = 0;
      for (int64_t n = 0; n < state; ++n) {
        const C bn = C(bm[bt * state + n]), cn = C(cm[bt * state + n]);
        const C s =
            fp::host::exp(dt * at[n * stride]) * st[n * stride] + du * bn;
        st[n * stride] = s;
        y += s * cn;
      }
      out[bt * channels + c] = Real(skip ? y + C(skip[c]) * ut : y);
    }
    if (last)
      for (int64_t n = 0; n < state; ++n)
        last[(b * channels + c) * state + n] = Real(st[n * stride]);
  }
}

/// The selective scan with one thread per (sample, channel) and its
/// states in registers (fp::fused::selectiveScanChannel), for N ≤
/// kMaxState, loading kAhead tokens ahead.
template <typename Real, int kMaxState, int kAhead>
__global__ void
selectiveScanRegistersKernel(const Real *u, const Real *delta, const Real *a,
                             const Real *bm, const Real *cm, const Real *skip,
                             int64_t batch, int64_t length, int64_t channels,
                             int64_t state, Real *out) {
  const int64_t n = batch * channels;
  for (int64_t index = firstThread(); index < n; index += allThreads())
    fp::fused::selectiveScanChannel<kMaxState, kAhead>(
        u, delta, a, bm, cm, skip, index / channels, index % channels, length,
        channels, state, out);
}

/// States a selective-scan thread keeps in registers; above, in shared
/// memory (selectiveScanKernel).
inline constexpr int64_t kScanRegisterStates = 16;
/// Threads of a block of selectiveScanRegistersKernel: small blocks spread
/// few (sample, channel) pairs evenly over the SMs (config LM: 24 576
/// threads, 384 blocks).
inline constexpr int kScanRegisterThreads = 64;
/// Token slots of ScanKernel::Ahead.
inline constexpr int kScanDeepAhead = 4;
/// Threads of a block of selectiveScanLanesKernel.
inline constexpr int kScanLaneThreads = 128;

/// Steps kHalf, kHalf / 2, …, 1 of laneTransposeSum.
template <int kHalf, typename C, int kN>
__device__ inline void laneHalving(C (&v)[kN], int lane) {
  if constexpr (kHalf >= 1) {
#pragma unroll
    for (int j = 0; j < kHalf; ++j)
      v[j] = fp::fused::keptHalf<kHalf>(v, lane, j) +
             __shfl_xor_sync(0xffffffffu,
                             fp::fused::sentHalf<kHalf>(v, lane, j), kHalf);
    laneHalving<kHalf / 2>(v, lane);
  }
}

/// Σ over each group of kLanes lanes (aligned, within a warp) of v[l],
/// left in lane l's v[0] (fp::fused::keptHalf). Every lane of the warp
/// calls it.
template <int kLanes, typename C>
__device__ inline void laneTransposeSum(C (&v)[kLanes], int lane) {
  laneHalving<kLanes / 2>(v, lane);
}

/// The selective scan with kLanes lanes per (sample, channel)
/// (fp::fused::ScanLane), for N ≤ kMaxState. A warp holds 32 / kLanes
/// channels; a warp past the last one leaves, the lanes of a warp's
/// channels past it run along inactive, so that its shuffles have every
/// lane.
template <typename Real, int kMaxState, int kLanes>
__global__ void __launch_bounds__(kScanLaneThreads)
    selectiveScanLanesKernel(const Real *u, const Real *delta, const Real *a,
                             const Real *bm, const Real *cm, const Real *skip,
                             int64_t batch, int64_t length, int64_t channels,
                             int64_t state, Real *out) {
  static_assert(32 % kLanes == 0, "a channel's lanes are in one warp");
  using C = Compute<Real>;
  const int64_t pairs = batch * channels;
  const int lane = int(threadIdx.x % kLanes);
  for (int64_t thread = firstThread();
       (thread - threadIdx.x % 32) / kLanes < pairs; thread += allThreads()) {
    const int64_t pair = thread / kLanes;
    const bool active = pair < pairs;
    fp::fused::ScanLane<Real, kMaxState, kLanes> scan(
        a, skip, active ? pair / channels : 0, active ? pair % channels : 0,
        channels, state, lane, active);
    for (int64_t t0 = 0; t0 < length; t0 += kLanes) {
      C p[kLanes];
      scan.group(u, delta, bm, cm, skip, t0, length, p);
      laneTransposeSum<kLanes>(p, lane);
      scan.store(p[0], t0, length, out);
    }
  }
}

/// Threads of `kernel` the current device holds at once in blocks of
/// `threads` (asked once per device and Tag: a solver step launches a scan
/// at every step).
template <typename Tag, typename... Params>
inline int64_t residentThreads(void (*kernel)(Params...), int threads,
                               const char *what) {
  constexpr int kDevices = 64;
  static std::atomic<int64_t> residentOn[kDevices] = {};
  int device = 0;
  check(cudaGetDevice(&device), what);
  if (device < kDevices)
    if (int64_t known = residentOn[device].load())
      return known;
  int multiprocessors = 0, perMultiprocessor = 0;
  check(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount,
                               device),
        what);
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perMultiprocessor,
                                                      kernel, threads, 0),
        what);
  const int64_t resident =
      int64_t(multiprocessors) * std::max(perMultiprocessor, 1) * threads;
  if (device < kDevices)
    residentOn[device].store(resident);
  return resident;
}

} // namespace detail

/// The CUDA kernels of a selective scan of at most 16 states. One thread
/// per (sample, channel) walks the channel's tokens in order; where those
/// threads are too few to hide the latency of a token's loads (config LM:
/// 16 samples × 1536 channels, 24 576 threads, under 6 warps per SM of an
/// H100), the channel's states are split over lanes, each with fewer
/// states and the same tokens, which multiplies the threads, or a thread
/// loads further ahead.
enum class ScanKernel {
  /// One thread per (sample, channel), the next token's operands loaded
  /// during a token's arithmetic (137 registers per thread in f32, 123 in
  /// bf16 on sm_90).
  Channel,
  /// One thread per (sample, channel), the operands of four tokens in
  /// registers, so that a load has three tokens' arithmetic to arrive
  /// (244 and 200 registers; f32 and bf16 only: f64 would spill).
  Ahead,
  /// Four lanes per (sample, channel), four states each, tokens in groups
  /// of four.
  Lanes4,
  /// Sixteen lanes per (sample, channel), one state each, tokens in groups
  /// of sixteen.
  Lanes16,
};

namespace detail {

template <typename Real, ScanKernel> struct ScanKernelTag {};

/// The kernel a selective scan of `pairs` (sample, channel) pairs in Real
/// runs with N ≤ 16: FP_SCAN_KERNEL=channel|ahead|lanes4|lanes16 where set
/// (for comparisons), else the fewest threads per pair, one, four or
/// sixteen, whose threads fill at least half of what the device holds at
/// once of that kernel (sixteen where none does): enough warps per SM to
/// cover a load's latency with other warps' arithmetic, without the
/// lanes' shuffles where the pairs alone suffice.
template <typename Real> inline ScanKernel chooseScanKernel(int64_t pairs) {
  if (const char *forced = std::getenv("FP_SCAN_KERNEL"); forced && *forced) {
    const std::string value = forced;
    if (value == "channel")
      return ScanKernel::Channel;
    if (value == "ahead" && sizeof(Real) <= 4)
      return ScanKernel::Ahead;
    if (value == "lanes4")
      return ScanKernel::Lanes4;
    if (value == "lanes16")
      return ScanKernel::Lanes16;
    throw std::invalid_argument(
        "FP_SCAN_KERNEL=" + value +
        ": expected channel, ahead (f32 and bf16 calls), lanes4 or lanes16");
  }
  constexpr int kStates = int(kScanRegisterStates);
  if (2 * pairs >= residentThreads<ScanKernelTag<Real, ScanKernel::Channel>>(
                       selectiveScanRegistersKernel<Real, kStates, 1>,
                       kScanRegisterThreads, "selectiveScan"))
    return ScanKernel::Channel;
  if (2 * 4 * pairs >= residentThreads<ScanKernelTag<Real, ScanKernel::Lanes4>>(
                           selectiveScanLanesKernel<Real, kStates, 4>,
                           kScanLaneThreads, "selectiveScan"))
    return ScanKernel::Lanes4;
  return ScanKernel::Lanes16;
}

/// With `state` ([B, K − 1, C]), the inputs before the chunk where
/// fp.causal_conv pads with zeros.
template <typename Real>
__global__ void
causalConvKernel(const Real *in, int64_t inStride, const Real *state,
                 const Real *weight, const Real *bias, int64_t batch,
                 int64_t length, int64_t channels, int64_t width, Real *out) {
  using C = Compute<Real>;
  const int64_t n = batch * length * channels;
  for (int64_t index = firstThread(); index < n; index += allThreads()) {
    const int64_t c = index % channels, bt = index / channels;
    const int64_t t = bt % length, b = bt / length;
    C sum = bias ? C(bias[c]) : C(0);
    for (int64_t k = 0; k < width; ++k) {
      const int64_t source = t - width + 1 + k;
      if (source >= 0)
        sum +=
            C(weight[c * width + k]) * C(in[(bt - t + source) * inStride + c]);
      else if (state)
        sum += C(weight[c * width + k]) *
               C(state[(b * (width - 1) + width - 1 + source) * channels + c]);
    }
    out[index] = Real(sum);
  }
}

/// Shared memory of a selective-scan block per thread: S and A columns.
inline constexpr size_t kMaxSharedBytes = 48 * 1024;

} // namespace detail

/// out[b, t] = in[b, t − offset] inside [0, T), zero elsewhere. One thread
/// per output element.
template <typename Real>
inline void shift(In<Real> in, int64_t batch, int64_t length, int64_t features,
                  int64_t offset, Real *out) {
  detail::launch("shift", detail::shiftKernel<Real>,
                 detail::blocksFor(batch * length * features), detail::kThreads,
                 0, detail::stream(), in, static_cast<const Real *>(nullptr),
                 batch, length, features, offset, out);
}

/// The last `rows` rows of each sample's sequence `state` then `in`.
template <typename Real>
inline void carryRows(In<Real> state, In<Real> in, int64_t inStride,
                      int64_t batch, int64_t length, int64_t rows,
                      int64_t features, Real *next) {
  detail::launch("carryRows", detail::carryRowsKernel<Real>,
                 detail::blocksFor(batch * rows * features), detail::kThreads,
                 0, detail::stream(), state, in, inStride, batch, length, rows,
                 features, next);
}

/// shift of a chunk (fp.chunk_shift): the rows before it from `state`
/// ([B, offset, F]); `next` gets the last `offset` rows of state then in.
template <typename Real>
inline void shiftFrom(In<Real> in, In<Real> state, int64_t batch,
                      int64_t length, int64_t features, int64_t offset,
                      Real *out, Real *next) {
  detail::launch("shift", detail::shiftKernel<Real>,
                 detail::blocksFor(batch * length * features), detail::kThreads,
                 0, detail::stream(), in, state, batch, length, features,
                 offset, out);
  carryRows<Real>(state, in, features, batch, length, offset, features, next);
}

/// h_t = coeff_t ⊙ h_{t∓1} + input_t along time, from zero. One thread per
/// (sample, feature), sequential over time.
template <typename Real>
inline void scan(In<Real> coeff, In<Real> input, int64_t batch, int64_t length,
                 int64_t features, bool reverse, Real *out) {
  detail::launch("scan", detail::scanKernel<Real>,
                 detail::blocksFor(batch * features), detail::kThreads, 0,
                 detail::stream(), coeff, input,
                 static_cast<const Real *>(nullptr), batch, length, features,
                 reverse, out, static_cast<Real *>(nullptr));
}

/// scan of a chunk (fp.chunk_scan): forward from h_{−1} = state
/// ([B, 1, F]); `next` gets h_{T−1}.
template <typename Real>
inline void scanFrom(In<Real> coeff, In<Real> input, In<Real> state,
                     int64_t batch, int64_t length, int64_t features, Real *out,
                     Real *next) {
  detail::launch("scan", detail::scanKernel<Real>,
                 detail::blocksFor(batch * features), detail::kThreads, 0,
                 detail::stream(), coeff, input, state, batch, length, features,
                 false, out, next);
}

/// The selective scan from S_{−1} = `init` ([B, d, N]; zero where null),
/// leaving S_{T−1} in `last` where that is not null (fp.chunk_selective_scan
/// and the general case of selectiveScanWith): one thread per (sample,
/// channel) with its states in shared memory.
template <typename Real>
inline void selectiveScanFrom(In<Real> u, In<Real> delta, In<Real> a,
                              In<Real> bm, In<Real> cm, In<Real> skip,
                              In<Real> init, int64_t batch, int64_t length,
                              int64_t channels, int64_t state, Real *out,
                              Real *last) {
  const size_t perThread = 2 * size_t(state) * sizeof(Compute<Real>);
  int threads = 128;
  while (threads > 1 && perThread * threads > detail::kMaxSharedBytes)
    threads /= 2;
  if (perThread * threads > detail::kMaxSharedBytes)
    throw DeviceError("fp::cuda::selectiveScan: a state of " +
                      std::to_string(state) + " does not fit in shared memory");
  const int64_t blocksPerSample = (channels + threads - 1) / threads;
  detail::launch("selectiveScan", detail::selectiveScanKernel<Real>,
                 batch * blocksPerSample, threads, perThread * threads,
                 detail::stream(), u, delta, a, bm, cm, skip, init, batch,
                 length, channels, state, out, last);
}

/// Mamba-1's selective scan (fp.selective_scan): state S [d, N] per sample,
/// S_t = exp(Δ_t A) ⊙ S_{t−1} + (Δ_t u_t) B_t, y_t = S_t C_t + D u_t (skip
/// may be null). Sequential over time; for N ≤ 16 its states in registers,
/// in the kernel `kind` names (ScanKernel), else one thread per (sample,
/// channel) with its states in shared memory. The arithmetic per state is
/// Host.h's; where lanes split a channel's states, y sums their parts in
/// another order.
template <typename Real>
inline void selectiveScanWith(ScanKernel kind, In<Real> u, In<Real> delta,
                              In<Real> a, In<Real> bm, In<Real> cm,
                              In<Real> skip, int64_t batch, int64_t length,
                              int64_t channels, int64_t state, Real *out) {
  constexpr int kStates = int(detail::kScanRegisterStates);
  const int64_t pairs = batch * channels;
  if (state <= kStates) {
    auto lanes = [&](auto kernel, int64_t perPair) {
      detail::launch("selectiveScan", kernel,
                     (pairs * perPair + detail::kScanLaneThreads - 1) /
                         detail::kScanLaneThreads,
                     detail::kScanLaneThreads, 0, detail::stream(), u, delta, a,
                     bm, cm, skip, batch, length, channels, state, out);
    };
    const int64_t blocks = (pairs + detail::kScanRegisterThreads - 1) /
                           detail::kScanRegisterThreads;
    switch (kind) {
    case ScanKernel::Ahead:
      if constexpr (sizeof(Real) <= 4) {
        detail::launch(
            "selectiveScan",
            detail::selectiveScanRegistersKernel<Real, kStates,
                                                 detail::kScanDeepAhead>,
            blocks, detail::kScanRegisterThreads, 0, detail::stream(), u, delta,
            a, bm, cm, skip, batch, length, channels, state, out);
        return;
      }
      throw DeviceError("fp::cuda::selectiveScan: ScanKernel::Ahead is for "
                        "f32 and bf16 calls");
    case ScanKernel::Lanes4:
      lanes(detail::selectiveScanLanesKernel<Real, kStates, 4>, 4);
      return;
    case ScanKernel::Lanes16:
      lanes(detail::selectiveScanLanesKernel<Real, kStates, 16>, 16);
      return;
    case ScanKernel::Channel:
      break;
    }
    detail::launch("selectiveScan",
                   detail::selectiveScanRegistersKernel<Real, kStates, 1>,
                   blocks, detail::kScanRegisterThreads, 0, detail::stream(), u,
                   delta, a, bm, cm, skip, batch, length, channels, state, out);
    return;
  }
  selectiveScanFrom<Real>(u, delta, a, bm, cm, skip, nullptr, batch, length,
                          channels, state, out, nullptr);
}

/// selectiveScanWith the kernel detail::chooseScanKernel picks.
template <typename Real>
inline void selectiveScan(In<Real> u, In<Real> delta, In<Real> a, In<Real> bm,
                          In<Real> cm, In<Real> skip, int64_t batch,
                          int64_t length, int64_t channels, int64_t state,
                          Real *out) {
  const ScanKernel kind = state <= detail::kScanRegisterStates
                              ? detail::chooseScanKernel<Real>(batch * channels)
                              : ScanKernel::Channel;
  selectiveScanWith<Real>(kind, u, delta, a, bm, cm, skip, batch, length,
                          channels, state, out);
}

/// Depthwise causal convolution: out[b, t, c] = bias[c] +
/// Σ_k weight[c, k] · in[b, t − K + 1 + k, c], zero left padding (bias may
/// be null), with the rows of `in` (one per token) starting `inStride`
/// elements apart: a column range of a wider matrix (fp.slice read in
/// place). One thread per output element.
template <typename Real>
inline void causalConvStrided(In<Real> in, int64_t inStride, In<Real> weight,
                              In<Real> bias, int64_t batch, int64_t length,
                              int64_t channels, int64_t width, Real *out) {
  detail::launch("causalConv", detail::causalConvKernel<Real>,
                 detail::blocksFor(batch * length * channels), detail::kThreads,
                 0, detail::stream(), in, inStride,
                 static_cast<const Real *>(nullptr), weight, bias, batch,
                 length, channels, width, out);
}

/// causalConvStrided of a chunk (fp.chunk_causal_conv): the inputs before it
/// from `state` ([B, K − 1, C]); `next` gets the last K − 1 rows of state
/// then in.
template <typename Real>
inline void causalConvFrom(In<Real> in, int64_t inStride, In<Real> state,
                           In<Real> weight, In<Real> bias, int64_t batch,
                           int64_t length, int64_t channels, int64_t width,
                           Real *out, Real *next) {
  detail::launch("causalConv", detail::causalConvKernel<Real>,
                 detail::blocksFor(batch * length * channels), detail::kThreads,
                 0, detail::stream(), in, inStride, state, weight, bias, batch,
                 length, channels, width, out);
  carryRows<Real>(state, in, inStride, batch, length, width - 1, channels,
                  next);
}

/// causalConvStrided of packed rows.
template <typename Real>
inline void causalConv(In<Real> in, In<Real> weight, In<Real> bias,
                       int64_t batch, int64_t length, int64_t channels,
                       int64_t width, Real *out) {
  causalConvStrided<Real>(in, channels, weight, bias, batch, length, channels,
                          width, out);
}

} // namespace fp::cuda

#endif // FP_RUNTIME_KERNELS_DEVICE_TIMECOUPLING_CUH
