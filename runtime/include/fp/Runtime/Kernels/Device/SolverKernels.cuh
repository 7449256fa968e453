//===- Device/SolverKernels.cuh - The device side of Solver -----*- C++ -*-===//
//
// What Solver (Device/Solver.cuh) runs on: the state and constants of a solve
// in device memory, the kernels of a step (residual and relaxation,
// bookkeeping, the continue rule), the words of pinned memory through which the
// device publishes a solve's progress, and what capturing a step into a CUDA
// graph needs.
//
// CUDA only: the host solver (Host/Solver.h) needs none of it.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_DEVICE_SOLVERKERNELS_CUH
#define FP_RUNTIME_KERNELS_DEVICE_SOLVERKERNELS_CUH

#include "fp/Runtime/Kernels/Device/Context.cuh"
#include "fp/Runtime/Kernels/Device/Launch.cuh"

namespace fp::cuda {

namespace detail {

/// Device-side counters of one solve.
struct SolverControl {
  int32_t steps;    // steps taken while running
  int32_t running;  // the continue rule, evaluated for the next step
  uint32_t arrived; // blocks of the current relax-and-decide launch done
};

/// The constants of one solve, resolved on the host as Host.h does.
template <typename Real> struct SolverRule {
  double tolerance;
  int32_t cap, fixedIters, relaxPatience;
  Real relaxDecay;
  Real quantile; // of the finite ρ*, which only the device counts
};

/// Device addresses of the state of one solve.
template <typename Real> struct SolverState {
  SolverControl *control;
  Real *best, *eta;
  Real *rho; // this step's residuals, a max over blocks; +0 between steps
  int32_t *patience;
  Real *sortScratch; // global sort buffer, or null for shared memory
  unsigned long long *published;
  uint32_t generation;
  int64_t batch;
  int64_t sortSize; // batch rounded up to a power of two
  // While the steps run as a graph's while node: its condition, which the
  // bookkeeping kernel sets to the continue rule.
  cudaGraphConditionalHandle loopCondition;
  int32_t inGraph;
};

/// The word through which the device publishes a solve's progress: the
/// solve's generation, its steps and whether it still runs.
__host__ __device__ inline unsigned long long
packProgress(uint32_t generation, int32_t steps, bool running) {
  return (static_cast<unsigned long long>(generation) << 32) |
         (static_cast<unsigned long long>(static_cast<uint32_t>(steps) << 1)) |
         (running ? 1ull : 0ull);
}

/// max of non-negative values by their bits, which order them as numbers:
/// exact, so the result does not depend on the order of the updates.
__device__ inline void atomicMaxNonNegative(float *address, float value) {
  atomicMax(reinterpret_cast<unsigned int *>(address), __float_as_uint(value));
}
__device__ inline void atomicMaxNonNegative(double *address, double value) {
  atomicMax(reinterpret_cast<unsigned long long *>(address),
            static_cast<unsigned long long>(__double_as_longlong(value)));
}

template <typename Real>
__global__ void solverInitKernel(SolverState<Real> state, Real eta,
                                 int32_t patience) {
  for (int64_t b = firstThread(); b < state.batch; b += allThreads()) {
    state.best[b] = Real(HUGE_VAL);
    state.eta[b] = eta;
    state.rho[b] = Real(0);
    state.patience[b] = patience;
  }
  if (firstThread() == 0) {
    state.control->steps = 0;
    state.control->running = 1;
    state.control->arrived = 0;
  }
}

/// One token's row relaxed in place, y ← e·fy + keep·y, by the lanes of a
/// group (`lane` of `group`), each folding max |y − fy| and max |fy| of its
/// elements into diff and scale. Where the rows are whole 16-byte vectors,
/// both aligned, a lane reads and writes a vector at a time (8 bf16, 4 f32
/// or 2 f64 elements): a token's row of config LM's bf16 iterate is then
/// six round trips to memory per lane instead of 48. Each element's
/// arithmetic is the same either way, and maxima do not depend on order.
template <typename Real, typename C>
__device__ inline void relaxToken(Real *yt, const Real *ft, int64_t tokenSize,
                                  int lane, int group, C e, C keep, C &diff,
                                  C &scale, bool &finite) {
  const MaxOp maxOf;
  const auto relax = [&](Real &y, Real f) {
    const C yv = C(y), fv = C(f);
    finite &= bool(isfinite(yv - fv));
    diff = maxOf(diff, std::abs(yv - fv));
    scale = maxOf(scale, std::abs(fv));
    y = Real(e * fv + keep * yv);
  };
  constexpr int64_t kPerVector = 16 / int64_t(sizeof(Real));
  static_assert(16 % sizeof(Real) == 0, "elements that tile 16 bytes");
  if (tokenSize % kPerVector == 0 &&
      reinterpret_cast<uintptr_t>(yt) % 16 == 0 &&
      reinterpret_cast<uintptr_t>(ft) % 16 == 0) {
    uint4 *yv = reinterpret_cast<uint4 *>(yt);
    const uint4 *fv = reinterpret_cast<const uint4 *>(ft);
    for (int64_t v = lane; v < tokenSize / kPerVector; v += group) {
      uint4 yWord = yv[v];
      const uint4 fWord = fv[v];
      Real ys[kPerVector], fs[kPerVector];
      memcpy(ys, &yWord, sizeof(yWord));
      memcpy(fs, &fWord, sizeof(fWord));
#pragma unroll
      for (int64_t k = 0; k < kPerVector; ++k)
        relax(ys[k], fs[k]);
      memcpy(&yWord, ys, sizeof(yWord));
      yv[v] = yWord;
    }
    return;
  }
  for (int64_t f = lane; f < tokenSize; f += group)
    relax(yt[f], ft[f]);
}

/// Residual and relaxation of one iterate, the part of the grid's work that
/// falls to this block. A block takes a chunk of tokens of one sample; a
/// group of `group` lanes (a power of two ≤ 32) takes one token at a time:
/// it reads y and fy once, relaxes y in place and reduces the token's
/// max |y − fy| and max |fy| by shuffles. The block's largest token ratio
/// goes into rho[b] by an exact atomic max; a non-finite element of y or fy
/// makes it NaN (Host.h's Solver::relax), whose bits exceed every
/// non-negative number's. The arithmetic, and the solver's state, is
/// Compute<Real>.
template <typename Real>
__device__ void relaxChunks(Real *y, const Real *fy, int64_t length,
                            int64_t tokenSize, int64_t tokensPerChunk,
                            int64_t chunks, int group,
                            const SolverState<Compute<Real>> &state) {
  using C = Compute<Real>;
  const MaxOp maxOf;
  const int groups = int(blockDim.x) / group;
  const int groupIndex = int(threadIdx.x) / group;
  const int lane = int(threadIdx.x) % group;
  for (int64_t task = blockIdx.x; task < state.batch * chunks;
       task += gridDim.x) {
    const int64_t b = task / chunks, first = task % chunks * tokensPerChunk;
    const int64_t end =
        first + tokensPerChunk < length ? first + tokensPerChunk : length;
    const C e = state.eta[b], keep = C(1) - e;
    C worst = 0;
    bool finite = true;
    for (int64_t base = first; base < end; base += groups) {
      const int64_t t = base + groupIndex;
      C diff = 0, scale = 0;
      if (t < end)
        relaxToken(y + (b * length + t) * tokenSize,
                   fy + (b * length + t) * tokenSize, tokenSize, lane, group, e,
                   keep, diff, scale, finite);
      for (int offset = group / 2; offset > 0; offset /= 2) {
        diff = maxOf(diff, __shfl_xor_sync(0xffffffffu, diff, offset));
        scale = maxOf(scale, __shfl_xor_sync(0xffffffffu, scale, offset));
      }
      if (t < end)
        worst = maxOf(worst, diff / (scale + C(1e-8)));
    }
    worst = blockReduce(worst, maxOf);
    finite = __syncthreads_and(finite && isfinite(worst));
    if (threadIdx.x == 0)
      atomicMaxNonNegative(
          state.rho + b, finite ? worst : std::numeric_limits<C>::quiet_NaN());
  }
}

/// Solver::report's statistics into device memory (each may be null):
/// steps + 1 and ρ* per sample, and the steps.
template <typename C>
__global__ void solverReportKernel(const SolverControl *control, const C *best,
                                   int64_t batch, int64_t *iterations,
                                   float *residuals, int64_t *steps) {
  for (int64_t b = firstThread(); b < batch; b += allThreads()) {
    if (iterations)
      iterations[b] = int64_t(control->steps) + 1;
    if (residuals)
      residuals[b] = float(best[b]);
  }
  if (steps && blockIdx.x == 0 && threadIdx.x == 0)
    *steps = control->steps;
}

template <typename Real>
__global__ void solverRelaxKernel(Real *y, const Real *fy, int64_t length,
                                  int64_t tokenSize, int64_t tokensPerChunk,
                                  int64_t chunks, int group,
                                  SolverState<Compute<Real>> state) {
  if (state.control->running)
    relaxChunks(y, fy, length, tokenSize, tokensPerChunk, chunks, group, state);
}

/// Sorts data[0, n) ascending (n a power of two) with the whole block; ends
/// synchronised.
template <typename Real> __device__ void bitonicSort(Real *data, int64_t n) {
  __syncthreads();
  for (int64_t k = 2; k <= n; k *= 2)
    for (int64_t j = k / 2; j > 0; j /= 2) {
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const int64_t partner = i ^ j;
        if (partner <= i)
          continue;
        const Real x = data[i], y = data[partner];
        if ((i & k) == 0 ? y < x : x < y) {
          data[i] = y;
          data[partner] = x;
        }
      }
      __syncthreads();
    }
}

/// The bookkeeping of one step of a running solve, by one block:
/// best-so-far, patience and step-size decay per sample (Host.h's
/// Solver::update), the step counter, and the continue rule for the next
/// step (Host.h's shouldContinue: the quantile of the finite ρ*, a stop
/// once none is finite), which it publishes to the host. Reads ρ from L2
/// (`__ldcg`): other blocks of the same launch may have written it.
template <typename Real>
__device__ void decideStep(const SolverRule<Real> &rule,
                           const SolverState<Real> &state) {
  SolverControl *control = state.control;
  const int32_t steps = control->steps + 1;
  Real *sorted = state.sortScratch ? state.sortScratch
                                   : reinterpret_cast<Real *>(sharedBytes());
  bool moving = false;
  int64_t finiteCount = 0;
  for (int64_t b = threadIdx.x; b < state.batch; b += blockDim.x) {
    const Real rho = __ldcg(state.rho + b), best = state.best[b];
    state.rho[b] = Real(0);
    const bool improved = rho < best;
    // std::min(best, rho); NaN once the sample has diverged.
    const Real newBest = isfinite(rho) && !isnan(best)
                             ? (rho < best ? rho : best)
                             : std::numeric_limits<Real>::quiet_NaN();
    int32_t patience = improved ? rule.relaxPatience : state.patience[b] - 1;
    Real eta = state.eta[b];
    if (patience == 0) {
      patience = rule.relaxPatience;
      eta = eta * rule.relaxDecay;
      state.eta[b] = eta;
    }
    state.best[b] = newBest;
    state.patience[b] = patience;
    moving |= eta >= Real(1e-3);
    // Diverged samples sort last, behind the finite ones.
    const bool finite = isfinite(newBest);
    finiteCount += finite ? 1 : 0;
    sorted[b] = finite ? newBest : Real(HUGE_VAL);
  }
  for (int64_t i = state.batch + threadIdx.x; i < state.sortSize;
       i += blockDim.x)
    sorted[i] = Real(HUGE_VAL);
  moving = __syncthreads_or(moving);
  finiteCount = blockReduce(finiteCount, SumOp());
  bool running;
  if (rule.fixedIters > 0) {
    running = steps < rule.fixedIters;
  } else if (!moving || steps >= rule.cap || finiteCount == 0) {
    running = false;
  } else {
    // The q-quantile of the finite ρ* with linear interpolation
    // (torch.quantile) and torch.lerp's two-sided formula, its rank in Real
    // as Host.h computes it.
    bitonicSort(sorted, state.sortSize);
    const Real rank = rule.quantile * Real(finiteCount - 1);
    const Real below = floor(rank), above = ceil(rank);
    const Real lo = sorted[int64_t(below)], hi = sorted[int64_t(above)];
    const Real w = rank - below;
    const Real quantile =
        w < Real(0.5) ? lo + w * (hi - lo) : hi - (hi - lo) * (Real(1) - w);
    running = double(quantile) >= rule.tolerance;
  }
  if (threadIdx.x == 0) {
    control->steps = steps;
    control->running = running ? 1 : 0;
    volatile unsigned long long *word = state.published;
    *word = packProgress(state.generation, steps, running);
    __threadfence_system();
    if (state.inGraph)
      cudaGraphSetConditional(state.loopCondition, running ? 1u : 0u);
  }
}

/// Ends a step whose solve has stopped: the graph's loop ends too.
template <typename Real>
__device__ void stopLoop(const SolverState<Real> &state) {
  if (state.inGraph && blockIdx.x == 0 && threadIdx.x == 0)
    cudaGraphSetConditional(state.loopCondition, 0);
}

/// The bookkeeping of one step in a launch of its own (one block).
template <typename Real>
__global__ void solverDecideKernel(SolverRule<Real> rule,
                                   SolverState<Real> state) {
  if (state.control->running)
    decideStep(rule, state);
  else
    stopLoop(state);
}

/// Whether this block is the last of its grid to get here, counted in
/// `arrived`, which the last block resets for the next launch. The global
/// writes the other blocks made before they arrived are visible to it.
/// Every thread of the block must call it.
__device__ inline bool lastBlockToArrive(uint32_t *arrived) {
  __shared__ bool last;
  __threadfence(); // this thread's writes reach the device before it counts
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(arrived, 1u) == gridDim.x - 1;
    if (last)
      *arrived = 0;
  }
  __syncthreads();
  if (last)
    __threadfence();
  return last;
}

/// Residual and relaxation of a step's last iterate, and the step's
/// bookkeeping by whichever block finishes its share of the relaxation
/// last: one launch where relax() and update() take two.
template <typename Real>
__global__ void solverRelaxAndDecideKernel(Real *y, const Real *fy,
                                           int64_t length, int64_t tokenSize,
                                           int64_t tokensPerChunk,
                                           int64_t chunks, int group,
                                           SolverRule<Compute<Real>> rule,
                                           SolverState<Compute<Real>> state) {
  if (!state.control->running) {
    stopLoop(state);
    return;
  }
  relaxChunks(y, fy, length, tokenSize, tokensPerChunk, chunks, group, state);
  if (lastBlockToArrive(&state.control->arrived))
    decideStep(rule, state);
}

/// Words of mapped pinned memory through which solves publish progress,
/// shared by the process. A released word is reused only once an event
/// recorded after the last kernel that may write it has completed.
class ProgressWords {
public:
  struct Word {
    volatile unsigned long long *host = nullptr;
    unsigned long long *device = nullptr;
    cudaEvent_t released = nullptr; // null: never used
    int eventDevice = -1;
  };

  /// Never destroyed: events of released words may be pending at exit.
  static ProgressWords &instance() {
    static ProgressWords *words = new ProgressWords;
    return *words;
  }

  Word acquire() {
    std::lock_guard<std::mutex> lock(mutex);
    for (size_t i = 0; i < available.size();) {
      Word word = available[i];
      if (word.released) {
        cudaError_t status = cudaEventQuery(word.released);
        if (status != cudaSuccess) {
          (void)cudaGetLastError(); // not an error of the caller's kernels
          if (status == cudaErrorNotReady) {
            ++i;
          } else { // unusable: its last writer is unknown
            available[i] = available.back();
            available.pop_back();
          }
          continue;
        }
      }
      available[i] = available.back();
      available.pop_back();
      return word;
    }
    constexpr int kWordsPerAllocation = 64;
    void *host = nullptr, *device = nullptr;
    check(cudaHostAlloc(&host, kWordsPerAllocation * sizeof(unsigned long long),
                        cudaHostAllocMapped | cudaHostAllocPortable),
          "Solver (cudaHostAlloc)");
    std::memset(host, 0, kWordsPerAllocation * sizeof(unsigned long long));
    cudaError_t status = cudaHostGetDevicePointer(&device, host, 0);
    if (status != cudaSuccess) {
      (void)cudaFreeHost(host);
      check(status, "Solver (cudaHostGetDevicePointer)");
    }
    auto *hostWords = static_cast<unsigned long long *>(host);
    auto *deviceWords = static_cast<unsigned long long *>(device);
    for (int i = 1; i < kWordsPerAllocation; ++i)
      available.push_back({hostWords + i, deviceWords + i, nullptr, -1});
    return {hostWords, deviceWords, nullptr, -1};
  }

  /// Returns `word` once the work queued on `stream` so far has completed.
  /// On failure the word is dropped rather than reused too early.
  void release(Word word, cudaStream_t stream) noexcept {
    int device = -1;
    if (cudaGetDevice(&device) != cudaSuccess) {
      (void)cudaGetLastError();
      return;
    }
    if (word.released && word.eventDevice != device) {
      (void)cudaEventDestroy(word.released);
      word.released = nullptr;
    }
    if (!word.released) {
      if (cudaEventCreateWithFlags(&word.released, cudaEventDisableTiming) !=
          cudaSuccess) {
        (void)cudaGetLastError();
        return;
      }
      word.eventDevice = device;
    }
    if (cudaEventRecord(word.released, stream) != cudaSuccess) {
      (void)cudaGetLastError();
      return;
    }
    std::lock_guard<std::mutex> lock(mutex);
    available.push_back(word);
  }

private:
  std::mutex mutex;
  std::vector<Word> available;
};

/// A fresh nonzero tag per solve, so that a word's value from an earlier
/// solve is never taken for this one's.
inline uint32_t nextGeneration() {
  static std::atomic<uint32_t> counter{0};
  uint32_t generation = ++counter;
  return generation ? generation : ++counter;
}

inline size_t alignUp(size_t offset) { return (offset + 255) / 256 * 256; }

/// Shared memory the continue rule may sort in; larger batches sort in
/// global memory.
inline constexpr size_t kMaxSortSharedBytes = 48 * 1024;

inline constexpr int kDecideThreads = 512;
/// Elements a block of the relax kernel takes per chunk, about.
inline constexpr int64_t kRelaxChunk = 8192;

/// The stream this thread captures solver steps on, one per device. A
/// capture needs a stream of its own: the caller's may be the legacy
/// default stream, which cannot capture. Kept for the thread's lifetime.
inline cudaStream_t captureStream(int device) {
  static thread_local std::vector<std::pair<int, cudaStream_t>> streams;
  for (const auto &entry : streams)
    if (entry.first == device)
      return entry.second;
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
        "Solver (creating its capture stream)");
  streams.emplace_back(device, stream);
  return stream;
}

/// The cuBLAS workspace of a captured step (NVIDIA's recommendation for
/// Hopper).
inline constexpr size_t kCaptureBlasWorkspace = size_t(32) << 20;

/// Whether solver loops may run as CUDA graphs: unless FP_CUDA_GRAPHS=0.
inline bool graphLoopsEnabled() {
  static const bool enabled = [] {
    const char *value = std::getenv("FP_CUDA_GRAPHS");
    return !value || std::string(value) != "0";
  }();
  return enabled;
}

/// Says once per process, on stderr, why a solver loop could not run as a
/// CUDA graph. The loop still runs, its steps queued from the host, which
/// then waits for the device's progress every few steps
/// (fp_solver_stats::host_waits): a cost worth knowing about.
inline void warnGraphFallback(const std::string &why) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::fprintf(stderr,
                 "fp::cuda::Solver: the fixed-point loop runs from the host, "
                 "not as a CUDA graph (%s); later solves that fall back are "
                 "not reported\n",
                 why.c_str());
  });
}

} // namespace detail

} // namespace fp::cuda

#endif // FP_RUNTIME_KERNELS_DEVICE_SOLVERKERNELS_CUH
