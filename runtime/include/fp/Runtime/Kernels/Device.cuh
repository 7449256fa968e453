//===- Device.cuh - CUDA kernels of compiled model libraries ---*- C++ -*-===//
//
// The CUDA counterpart of Host.h: the same functions, with the same names,
// template parameters and argument lists, in namespace fp::cuda, so that one
// generated forward body compiles against either header through
// `namespace kernels = fp::host;` or `namespace kernels = fp::cuda;`. Buffers
// are device pointers; constants of the generated code (upload) and the
// shape, dimension and flag arrays are host memory.
//
// Every kernel is launched on the stream of the calling thread's current
// Scope, which the generated forward opens first. A failed launch or CUDA or
// cuBLAS call throws DeviceError with the kernel's name and the CUDA message.
//
// Kernels are simple: one thread per element, per independent recurrence or
// per output, and one block per row where a row is reduced, with a fixed
// shuffle tree so that results never depend on scheduling. Where one thread
// accumulates, it does so in Host.h's order, so that with -fmad=false those
// kernels round exactly as the host ones, but for e^x in single precision,
// which is CUDA's expf here (Common.h). GEMMs go to cuBLAS; bf16 ones run
// on tensor cores with f32 accumulation (cublasGemmEx, CUBLAS_COMPUTE_32F).
// As in Host.h, a kernel on bf16 buffers computes in Compute<Real> (float):
// intermediate values, recurrence states, block reductions and the solver's
// state are float, and every stored result is rounded once.
//
// The solver keeps its state on the device and never waits for the device
// per step; see Solver below.
//
// Depends on Common.h, the CUDA runtime and cuBLAS.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_DEVICE_CUH
#define FP_RUNTIME_KERNELS_DEVICE_CUH

#include "fp/Runtime/Kernels/Common.h"
#include "fp/Runtime/Kernels/Fused.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace fp::cuda {

// What generated code names through `kernels::` besides the kernels.
using fp::host::BufferSpec;
using fp::host::DeviceError;
using fp::host::GradientSum;
using fp::host::In;
using fp::host::kBufferAlignment;
using fp::host::kMaxRank;
using fp::host::layoutBuffers;
using fp::host::Reduction;
using fp::host::Shape;
using fp::host::SolverSettings;
using fp::host::timeChunks;

using fp::host::exp;
using fp::host::sigmoid;
using fp::host::silu;
using fp::host::softplus;

using fp::host::Abs;
using fp::host::Add;
using fp::host::Div;
using fp::host::Exp;
using fp::host::Log;
using fp::host::Max;
using fp::host::Min;
using fp::host::Mul;
using fp::host::Neg;
using fp::host::Sigmoid;
using fp::host::Silu;
using fp::host::Softplus;
using fp::host::Sqrt;
using fp::host::Sub;
using fp::host::Tanh;

//===----------------------------------------------------------------------===//
// Execution context
//===----------------------------------------------------------------------===//

namespace detail {

/// Throws DeviceError for a failed CUDA call; `what` names the kernel or
/// operation.
inline void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw DeviceError(std::string("fp::cuda::") + what + ": " +
                      cudaGetErrorString(status));
}

inline void checkBlas(cublasStatus_t status, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw DeviceError(std::string("fp::cuda::") + what + ": " +
                      cublasGetStatusString(status));
}

/// The stream of the innermost live Scope of this thread, its device, and
/// the cuBLAS handle bound to the stream (null until a kernel needs it).
struct Context {
  cudaStream_t stream = nullptr;
  int device = 0;
  cublasHandle_t blas = nullptr;
};

inline thread_local Context current;

/// The cuBLAS handles of this thread, one per device, created on first use
/// and destroyed when the thread ends.
class BlasHandles {
public:
  BlasHandles() = default;
  BlasHandles(const BlasHandles &) = delete;
  BlasHandles &operator=(const BlasHandles &) = delete;
  ~BlasHandles() {
    for (auto &entry : handles)
      (void)cublasDestroy(entry.second);
  }

  cublasHandle_t get(int device) {
    for (auto &entry : handles)
      if (entry.first == device)
        return entry.second;
    cublasHandle_t handle = nullptr;
    checkBlas(cublasCreate(&handle), "cublasCreate");
    handles.emplace_back(device, handle);
    return handle;
  }

private:
  std::vector<std::pair<int, cublasHandle_t>> handles;
};

inline thread_local BlasHandles blasHandles;

inline cudaStream_t stream() { return current.stream; }

/// The cuBLAS handle of the current device, bound to the current stream.
inline cublasHandle_t blas() {
  if (!current.blas) {
    cublasHandle_t handle = blasHandles.get(current.device);
    checkBlas(cublasSetStream(handle, current.stream), "cublasSetStream");
    current.blas = handle;
  }
  return current.blas;
}

} // namespace detail

/// Makes `stream` (a cudaStream_t; null is the legacy default stream) and
/// the current device the context of every kernel this thread launches
/// until the Scope ends. Scopes nest; the outer context, including the
/// stream its cuBLAS handle was bound to, comes back when an inner one ends.
class Scope {
public:
  explicit Scope(void *stream) : saved(detail::current) {
    int device = 0;
    detail::check(cudaGetDevice(&device), "Scope");
    detail::current.stream = static_cast<cudaStream_t>(stream);
    detail::current.device = device;
    detail::current.blas = nullptr;
  }
  Scope(const Scope &) = delete;
  Scope &operator=(const Scope &) = delete;
  ~Scope() {
    if (saved.blas &&
        cublasSetStream(saved.blas, saved.stream) != CUBLAS_STATUS_SUCCESS)
      saved.blas = nullptr; // bind again on next use
    detail::current = saved;
  }

private:
  detail::Context saved;
};

//===----------------------------------------------------------------------===//
// Launch helpers and block reductions
//===----------------------------------------------------------------------===//

namespace detail {

/// Threads of the elementwise and per-row-of-work kernels.
inline constexpr int kThreads = 256;
/// Grids are capped; kernels cover the rest with grid-stride loops.
inline constexpr int64_t kMaxBlocks = int64_t(1) << 16;

inline int64_t blocksFor(int64_t work) {
  return (work + kThreads - 1) / kThreads;
}

/// Threads of a block that reduces rows of `width` elements: a power of two
/// between one warp and kThreads.
inline int rowThreads(int64_t width) {
  int threads = 32;
  while (threads < width && threads < kThreads)
    threads *= 2;
  return threads;
}

/// Launches kernel<<<blocks, threads, sharedBytes, stream>>>(args...) unless
/// there is no work, and reports a failed launch.
template <typename... Params, typename... Args>
inline void launch(const char *name, void (*kernel)(Params...), int64_t blocks,
                   int threads, size_t sharedBytes, cudaStream_t stream,
                   const Args &...args) {
  if (blocks <= 0)
    return;
  kernel<<<unsigned(std::min(blocks, kMaxBlocks)), unsigned(threads),
           sharedBytes, stream>>>(args...);
  check(cudaGetLastError(), name);
}

__device__ inline int64_t firstThread() {
  return int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t allThreads() {
  return int64_t(gridDim.x) * blockDim.x;
}

struct SumOp {
  template <typename Real> __device__ Real operator()(Real a, Real b) const {
    return a + b;
  }
};
/// std::max(a, b): a NaN b is ignored, as in Host.h's running maxima.
struct MaxOp {
  template <typename Real> __device__ Real operator()(Real a, Real b) const {
    return a < b ? b : a;
  }
};

/// Combines `value` over the calling warp (all 32 lanes call it) along a
/// fixed tree; every lane gets lane 0's result.
template <typename Real, typename Combine>
__device__ Real warpReduce(Real value, Combine combine) {
  for (unsigned offset = 16; offset > 0; offset /= 2)
    value = combine(value, __shfl_down_sync(0xffffffffu, value, offset));
  return __shfl_sync(0xffffffffu, value, 0);
}

/// Combines `value` over the block (blockDim.x a multiple of 32) along a
/// fixed tree: within warps, then over warp results in the first warp.
/// Every thread must call it; every thread gets the result.
template <typename Real, typename Combine>
__device__ Real blockReduce(Real value, Combine combine) {
  __shared__ Real partial[32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const unsigned warps = blockDim.x / 32;
  for (unsigned offset = 16; offset > 0; offset /= 2)
    value = combine(value, __shfl_down_sync(0xffffffffu, value, offset));
  __syncthreads(); // earlier readers of `partial` are done
  if (lane == 0)
    partial[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = partial[lane < warps ? lane : 0];
    for (unsigned offset = 16; offset > 0; offset /= 2) {
      Real other = __shfl_down_sync(0xffffffffu, value, offset);
      if (lane + offset < warps)
        value = combine(value, other);
    }
    if (lane == 0)
      partial[0] = value;
  }
  __syncthreads();
  return partial[0];
}

/// Combines `value` over a block of `Warps` warps as blockReduce does,
/// with one barrier instead of three: each warp's result goes to
/// partial[buffer], and every thread then combines the partials itself
/// along blockReduce's tree (the pairs its shuffles form in the first
/// warp), so every thread has blockReduce's result. Consecutive calls must
/// alternate `buffer` (BlockTeam does): a call's partials are overwritten
/// two calls later, by threads that have passed the barrier of the call
/// between, which every thread reaches only once it has read them.
template <int Warps, typename Real, typename Combine>
__device__ Real blockReduceAlternating(Real value, Combine combine,
                                       unsigned buffer) {
  static_assert(Warps >= 1 && Warps <= 32, "a block of 1 to 32 warps");
  __shared__ Real partial[2][32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (unsigned offset = 16; offset > 0; offset /= 2)
    value = combine(value, __shfl_down_sync(0xffffffffu, value, offset));
  if (lane == 0)
    partial[buffer][warp] = value;
  __syncthreads();
  Real tree[Warps];
#pragma unroll
  for (int w = 0; w < Warps; ++w)
    tree[w] = partial[buffer][w];
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
#pragma unroll
    for (int w = 0; w < offset && w + offset < Warps; ++w)
      tree[w] = combine(tree[w], tree[w + offset]);
  return tree[0];
}

/// Dynamic shared memory, as bytes (its element type varies by kernel).
__device__ inline unsigned char *sharedBytes() {
  extern __shared__ __align__(16) unsigned char dynamicShared[];
  return dynamicShared;
}

} // namespace detail

//===----------------------------------------------------------------------===//
// Fused kernels (fp.kernel; see Fused.h)
//===----------------------------------------------------------------------===//

/// Threads of the block that computes a token of a fused kernel; fpc's
/// choice of the scans that keep their state in registers assumes it.
inline constexpr int kTeamSize = detail::kThreads;

/// How many of a member's passes over a token's elements the element loops
/// of a fused kernel unroll (FP_TEAM_FOR in Fused.h). Unrolled, the loads of
/// a member's elements are issued together rather than each after the last
/// one's value was used, so a token waits for memory about once per
/// operation instead of once per element; the loads stay in registers
/// meanwhile. Token kernels (one token per block) take kUnrolledPasses, at
/// config LM's widths (1536 to 3112 elements, 6 to 13 passes) every pass.
/// Kernels that run a sample's tokens in time order keep their scans' state
/// in registers, up to ptxas's 128 a thread, and unrolled they spill (config
/// LM's fused kernels 60 to 116 bytes a thread, config S's backward kernel
/// 8 to 120 where its forward ones fit): they take kRolledPasses.
inline constexpr int kUnrolledPasses = 16;
inline constexpr int kRolledPasses = 1;

/// The 32 threads of one warp computing a part of a token together (a
/// group of BlockTeam): its reductions are shuffles, its barrier the warp's.
template <int kUnroll> struct WarpTeam {
  static constexpr int kSize = 32;
  static constexpr int kUnrollPasses = kUnroll;
  FP_HOST_DEVICE int rank() const {
#ifdef __CUDA_ARCH__
    return int(threadIdx.x % kSize);
#else
    return 0;
#endif
  }
  FP_HOST_DEVICE static constexpr int size() {
#ifdef __CUDA_ARCH__
    return kSize;
#else
    return 1;
#endif
  }
  FP_HOST_DEVICE void sync() const {
#ifdef __CUDA_ARCH__
    __syncwarp();
#endif
  }
  template <typename Real> FP_HOST_DEVICE Real sum(Real partial) const {
#ifdef __CUDA_ARCH__
    return detail::warpReduce(partial, detail::SumOp());
#else
    return partial;
#endif
  }
  template <typename Real> FP_HOST_DEVICE Real max(Real partial) const {
#ifdef __CUDA_ARCH__
    return detail::warpReduce(partial, detail::MaxOp());
#else
    return partial;
#endif
  }
  FP_HOST_DEVICE static constexpr int groups() { return 1; }
  FP_HOST_DEVICE static constexpr int groupIndex() { return 0; }
  FP_HOST_DEVICE WarpTeam group() const { return *this; }
};

/// The kTeamSize threads of one block computing a token together; its
/// groups are its warps. Each thread holds one, which counts its reductions
/// (they alternate between two buffers), so it is not copied. Its size is a
/// constant, so an element loop's passes are counted at compile time.
template <int kUnroll> struct BlockTeam {
  static constexpr int kUnrollPasses = kUnroll;
  using Group = WarpTeam<kUnroll>;

  BlockTeam() = default;
  BlockTeam(const BlockTeam &) = delete;
  BlockTeam &operator=(const BlockTeam &) = delete;

  FP_HOST_DEVICE int rank() const {
#ifdef __CUDA_ARCH__
    const int rank = int(threadIdx.x);
    if constexpr (kUnroll > 1)
      __builtin_assume(rank < kTeamSize); // every fused launch's block size
    return rank;
#else
    return 0;
#endif
  }
  /// kTeamSize, as a constant where the element loops unroll; elsewhere
  /// read from blockDim (the register-bound kernels' loops as ptxas
  /// allocates them best: with the constant, config LM's chunk-carry
  /// kernels spill 52 to 76 bytes a thread).
  FP_HOST_DEVICE int size() const {
#ifdef __CUDA_ARCH__
    if constexpr (kUnroll > 1)
      return kTeamSize;
    else
      return int(blockDim.x);
#else
    return 1;
#endif
  }
  FP_HOST_DEVICE void sync() const {
#ifdef __CUDA_ARCH__
    __syncthreads();
#endif
  }
  /// Every thread of the block calls each reduction (one barrier each,
  /// blockReduceAlternating), in the same order.
  template <typename Real> FP_HOST_DEVICE Real sum(Real partial) const {
#ifdef __CUDA_ARCH__
    return detail::blockReduceAlternating<kTeamSize / Group::kSize>(
        partial, detail::SumOp(), reductions++ & 1u);
#else
    return partial;
#endif
  }
  template <typename Real> FP_HOST_DEVICE Real max(Real partial) const {
#ifdef __CUDA_ARCH__
    return detail::blockReduceAlternating<kTeamSize / Group::kSize>(
        partial, detail::MaxOp(), reductions++ & 1u);
#else
    return partial;
#endif
  }
  /// A constant (fused kernels run in blocks of kTeamSize threads), so that
  /// forEachRow's choice folds where the rows' shape is constant.
  FP_HOST_DEVICE int groups() const {
#ifdef __CUDA_ARCH__
    return kTeamSize / Group::kSize;
#else
    return 1;
#endif
  }
  FP_HOST_DEVICE int groupIndex() const {
#ifdef __CUDA_ARCH__
    return int(threadIdx.x) / Group::kSize;
#else
    return 0;
#endif
  }
  FP_HOST_DEVICE Group group() const { return {}; }

private:
  mutable unsigned reductions = 0;
};

namespace detail {

/// Dynamic shared memory every launch may use; a kernel opts in to more.
inline constexpr size_t kDefaultSharedBytes = 48 * 1024;

/// Whether a block of `kernel` can have `bytes` of dynamic shared memory on
/// the current device, opting the kernel in where its static and dynamic
/// shared memory together exceed the default 48 KiB
/// (cudaFuncAttributeMaxDynamicSharedMemorySize, up to the device's opt-in
/// limit less the kernel's static shared memory: 227 KiB in all on an
/// H100). Without the opt-in a launch may have 48 KiB less the static
/// shared memory (the block reductions' partials), and one asking for more
/// fails as an invalid argument. A fused kernel's scratch goes to shared
/// memory where it fits, else to global memory. None of these calls is
/// stream-ordered, so this may run while a step is captured.
template <typename... Params>
inline bool allowSharedBytes(void (*kernel)(Params...), size_t bytes) {
  if (bytes == 0)
    return true;
  const void *entry = reinterpret_cast<const void *>(kernel);
  cudaFuncAttributes attributes{};
  check(cudaFuncGetAttributes(&attributes, entry),
        "fused kernel (shared memory)");
  const size_t total = bytes + attributes.sharedSizeBytes;
  if (total <= kDefaultSharedBytes)
    return true;
  int device = 0, optIn = 0;
  check(cudaGetDevice(&device), "fused kernel (shared memory)");
  check(cudaDeviceGetAttribute(&optIn, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                               device),
        "fused kernel (shared memory)");
  if (total > size_t(optIn))
    return false;
  check(cudaFuncSetAttribute(entry, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             int(bytes)),
        "fused kernel (shared memory)");
  return true;
}

/// Has the current device's memory pool (its default one unless someone set
/// another), which the launches' scratch comes from (cudaMallocAsync on the
/// device's stream), keep the memory it holds across
/// synchronisations. By default a pool returns all its unused memory to the
/// OS at every synchronisation, so a training step that follows one (a
/// timed call, a loss read on the host) maps its scratch afresh: at
/// config S the scan adjoint's 570 MB of states alone. A release threshold
/// of "unlimited" keeps the pool at its high-water mark instead, as the CUDA
/// Programming Guide advises where calls into the OS cost more than the
/// footprint (and as PyTorch's cudaMallocAsync allocator sets it). Once per
/// device and library; left alone where the threshold is not the default 0
/// (someone chose one) or FP_CUDA_KEEP_SCRATCH=0.
inline void keepPoolAcrossSyncs() {
  constexpr int kDevices = 64;
  static std::atomic<bool> settled[kDevices] = {};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 ||
      device >= kDevices) {
    (void)cudaGetLastError();
    return;
  }
  if (settled[device].exchange(true))
    return;
  if (const char *keep = std::getenv("FP_CUDA_KEEP_SCRATCH"))
    if (std::string(keep) == "0")
      return;
  cudaMemPool_t pool = nullptr;
  uint64_t threshold = 0; // the attribute's cuuint64_t
  if (cudaDeviceGetMemPool(&pool, device) != cudaSuccess ||
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold,
                              &threshold) != cudaSuccess) {
    (void)cudaGetLastError(); // no pools on this device: nothing to keep
    return;
  }
  if (threshold != 0)
    return;
  threshold = ~uint64_t(0);
  if (cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold,
                              &threshold) != cudaSuccess)
    (void)cudaGetLastError();
}

/// While a solver captures its step into a graph (Solver::loop), the
/// launch buffers of the step cannot be graph nodes: a loop body admits
/// only kernels, copies and memsets. They are allocated instead on the
/// stream the graph will run on, ahead of it, and freed there after it.
class CaptureArena {
public:
  explicit CaptureArena(cudaStream_t stream) : stream(stream) {}
  CaptureArena(const CaptureArena &) = delete;
  CaptureArena &operator=(const CaptureArena &) = delete;
  ~CaptureArena() { release(); }

  /// `bytes` of device memory that stays valid until release().
  void *allocate(size_t bytes) {
    void *memory = nullptr;
    keepPoolAcrossSyncs();
    cudaError_t status = cudaMallocAsync(&memory, bytes, stream);
    bool isPooled = true;
    if (status == cudaErrorNotSupported) {
      (void)cudaGetLastError();
      isPooled = false;
      status = cudaMalloc(&memory, bytes);
    }
    check(status, "fused kernel (allocating scratch for a captured step)");
    blocks.push_back({memory, isPooled});
    return memory;
  }

  /// Frees every block in stream order after the work queued so far.
  void release() noexcept {
    for (const Block &block : blocks)
      if ((block.pooled ? cudaFreeAsync(block.memory, stream)
                        : cudaFree(block.memory)) != cudaSuccess)
        (void)cudaGetLastError();
    blocks.clear();
  }

  /// The arena of the capture in progress on this thread, if any.
  static CaptureArena *&active() {
    static thread_local CaptureArena *arena = nullptr;
    return arena;
  }

private:
  struct Block {
    void *memory;
    bool pooled;
  };
  cudaStream_t stream;
  std::vector<Block> blocks;
};

/// Device memory for one launch, allocated and freed in stream order (or
/// taken from the capture's arena while a step is captured).
class LaunchBuffer {
public:
  LaunchBuffer(size_t bytes, cudaStream_t stream) : stream(stream) {
    if (bytes == 0)
      return;
    if (CaptureArena *arena = CaptureArena::active()) {
      memory = arena->allocate(bytes);
      owned = false;
      return;
    }
    keepPoolAcrossSyncs();
    cudaError_t status = cudaMallocAsync(&memory, bytes, stream);
    if (status == cudaErrorNotSupported) {
      (void)cudaGetLastError();
      pooled = false;
      status = cudaMalloc(&memory, bytes);
    }
    check(status, "fused kernel (allocating scratch)");
  }
  LaunchBuffer(const LaunchBuffer &) = delete;
  LaunchBuffer &operator=(const LaunchBuffer &) = delete;
  ~LaunchBuffer() {
    if (!memory || !owned)
      return;
    if ((pooled ? cudaFreeAsync(memory, stream) : cudaFree(memory)) !=
        cudaSuccess)
      (void)cudaGetLastError();
  }
  template <typename Real> Real *as() const {
    return static_cast<Real *>(memory);
  }

private:
  cudaStream_t stream;
  void *memory = nullptr;
  bool pooled = true;
  bool owned = true;
};

/// Block `blockIdx.x` computes rows blockIdx.x, + gridDim.x, ... of samples
/// of `length` tokens with its scratch (of the arithmetic type C) in shared
/// memory (kSharedScratch), or at global + blockIdx.x · scratch. A variant
/// each, so that the scratch's accesses are shared-memory ones in the first,
/// which the compiler may order freely against the loads of a token's rows:
/// from a pointer that may be either, each load would wait for the stores
/// before it.
template <typename C, typename Kernel, bool kSharedScratch>
__global__ void tokenKernel(Kernel kernel, int64_t rows, int64_t length,
                            int64_t scratch, C *global) {
  C *buffer;
  if constexpr (kSharedScratch)
    buffer = reinterpret_cast<C *>(sharedBytes());
  else
    buffer = global + int64_t(blockIdx.x) * scratch;
  BlockTeam<kUnrolledPasses> team;
  typename Kernel::Registers registers;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    kernel(team, r, r % length, buffer, static_cast<C *>(nullptr), registers);
    team.sync(); // the next row reuses the scratch
  }
}

/// Blocks per SM that sampleKernel and chunkCarryKernel ask ptxas to fit
/// (__launch_bounds__), so that it keeps them within 128 registers per
/// thread: two where the scans' register state is at most config LM's
/// (1536 channels of 16 states, 96 values per thread) in 32-bit values, one
/// above (f64 counts twice), where two would spill. Without the bound ptxas
/// takes more registers where it finds a use for them (the chunk-carry
/// kernel at config LM 146, the Householder kernel reading Aᵀ 141), and one
/// block per SM is left.
inline constexpr int64_t kTwoBlockRegisterState = 2 * 1536 * 16 + 1536;
template <typename C, typename Kernel>
constexpr int fusedBlocksPerMultiprocessor() {
  const int64_t words = Kernel::kRegisterState * int64_t(sizeof(C) / 4);
  return words <= kTwoBlockRegisterState ? 2 : 1;
}

/// Block i computes chunk k = i mod chunks of sample b = i / chunks (the
/// tokens [k · span, (k + 1) · span) of it, in time order), its `state`
/// elements of scan state in memory zeroed first; the scans that keep
/// theirs in `registers` start them at t = 0. A chunk after the first
/// starts its scans from the carries of the chunks before it (Fused.h,
/// "Chunked execution"). One chunk: the whole sample.
template <typename C, typename Kernel>
__global__ void __launch_bounds__(kTeamSize,
                                  fusedBlocksPerMultiprocessor<C, Kernel>())
    sampleKernel(Kernel kernel, int64_t length, int64_t span, int64_t chunks,
                 int64_t scratch, C *global, int64_t state, C *states,
                 const C *carries) {
  const int64_t i = blockIdx.x, b = i / chunks, k = i % chunks;
  C *buffer =
      global ? global + i * scratch : reinterpret_cast<C *>(sharedBytes());
  C *own = states + i * state;
  for (int64_t e = threadIdx.x; e < state; e += blockDim.x)
    own[e] = C(0);
  BlockTeam<kRolledPasses> team;
  typename Kernel::Registers registers;
  team.sync();
  if constexpr (Kernel::kChunkable) {
    if (k > 0) {
      kernel.loadCarry(team, own, registers,
                       carries + b * chunks * Kernel::kCarry, k);
      team.sync();
    }
  }
  fused::runTokens(team, kernel, b * length, k * span,
                   std::min(length, (k + 1) * span), buffer, own, registers);
}

/// Pass 1 of a chunked kernel: block i computes the carry of chunk
/// k = i mod (chunks − 1) of sample b = i / (chunks − 1), every chunk of a
/// sample but its last, into carries[b · chunks + k].
template <typename C, typename Kernel>
__global__ void __launch_bounds__(kTeamSize,
                                  fusedBlocksPerMultiprocessor<C, Kernel>())
    chunkCarryKernel(Kernel kernel, int64_t length, int64_t span,
                     int64_t chunks, int64_t scratch, C *global, int64_t state,
                     C *states, C *carries) {
  const int64_t i = blockIdx.x, b = i / (chunks - 1), k = i % (chunks - 1);
  C *buffer =
      global ? global + i * scratch : reinterpret_cast<C *>(sharedBytes());
  C *own = states + i * state;
  for (int64_t e = threadIdx.x; e < state; e += blockDim.x)
    own[e] = C(0);
  BlockTeam<kRolledPasses> team;
  typename Kernel::Registers registers;
  team.sync();
  for (int64_t t = k * span; t < (k + 1) * span; ++t)
    kernel.summarize(team, b * length + t, t, t == k * span, buffer, own,
                     registers); // ends with a team synchronisation
  kernel.saveCarry(team, own, registers,
                   carries + (b * chunks + k) * Kernel::kCarry);
}

/// Blocks of `kernel` (kTeamSize threads, `shared` bytes of dynamic shared
/// memory) the current device runs at once.
template <typename... Params>
inline int64_t residentBlocks(void (*kernel)(Params...), size_t shared) {
  int device = 0, multiprocessors = 0, perMultiprocessor = 0;
  check(cudaGetDevice(&device), "forEachSample");
  check(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount,
                               device),
        "forEachSample");
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &perMultiprocessor, kernel, kTeamSize, shared),
        "forEachSample");
  return int64_t(multiprocessors) * std::max(perMultiprocessor, 1);
}

} // namespace detail

namespace detail {

/// Static shared memory a fused launch has besides its scratch (the block
/// reductions' partials, 512 bytes in f64), with room to spare.
inline constexpr size_t kFusedStaticSharedBytes = 1024;

template <typename Kernel, typename = void>
struct DeclaresScratch : std::false_type {};
template <typename Kernel>
struct DeclaresScratch<Kernel, std::void_t<decltype(Kernel::kScratch)>>
    : std::true_type {};

/// Whether `Kernel` declares its scratch (kScratch, which fpc emits) and it
/// fits the shared memory that every launch may have without opting in, on
/// every device: then forEachToken compiles only the shared-scratch variant
/// of tokenKernel (each variant is a copy of the kernel's body to compile).
template <typename C, typename Kernel> constexpr bool scratchAlwaysShared() {
  if constexpr (DeclaresScratch<Kernel>::value)
    return size_t(Kernel::kScratch) * sizeof(C) + kFusedStaticSharedBytes <=
           kDefaultSharedBytes;
  else
    return false;
}

} // namespace detail

/// Runs `kernel` for every token of `batch` samples of `length` tokens: one
/// block of threads per token.
template <typename Real, typename Kernel>
inline void forEachToken(int64_t batch, int64_t length, int64_t scratch,
                         int64_t cost, const Kernel &kernel) {
  using C = Compute<Real>;
  (void)cost;
  const int64_t rows = batch * length;
  if (rows <= 0)
    return;
  const int64_t blocks = std::min(rows, detail::kMaxBlocks);
  const size_t bytes = size_t(scratch) * sizeof(C);
  auto inShared = [&] {
    detail::launch("forEachToken", &detail::tokenKernel<C, Kernel, true>,
                   blocks, kTeamSize, bytes, detail::stream(), kernel, rows,
                   length, scratch, static_cast<C *>(nullptr));
  };
  if constexpr (detail::scratchAlwaysShared<C, Kernel>()) {
    if (scratch > Kernel::kScratch)
      throw DeviceError(
          "fp::cuda::forEachToken: a scratch of " + std::to_string(scratch) +
          " values exceeds the kernel's " + std::to_string(Kernel::kScratch));
    inShared();
  } else if (detail::allowSharedBytes(&detail::tokenKernel<C, Kernel, true>,
                                      bytes)) {
    inShared();
  } else {
    detail::LaunchBuffer global(bytes * size_t(blocks), detail::stream());
    detail::launch("forEachToken", &detail::tokenKernel<C, Kernel, false>,
                   blocks, kTeamSize, 0, detail::stream(), kernel, rows, length,
                   scratch, global.as<C>());
  }
}

namespace detail {

/// How forEachSample runs `Kernel` at a call shape: whether its scratch
/// lies in shared memory, and in how many chunks of `span` tokens each
/// sample's tokens run; `filling` is the chunks timeChunks asks for, which
/// a kernel that cannot run in chunks does not take.
struct SamplePlan {
  bool shared = false;
  size_t bytes = 0;
  int64_t chunks = 1, span = 0, filling = 1;
};

template <typename Real, typename Kernel>
SamplePlan planSamples(int64_t batch, int64_t length, int64_t scratch) {
  using C = Compute<Real>;
  SamplePlan plan;
  plan.bytes = size_t(scratch) * sizeof(C);
  plan.shared = allowSharedBytes(&sampleKernel<C, Kernel>, plan.bytes);
  if constexpr (Kernel::kChunkable)
    plan.shared = plan.shared &&
                  allowSharedBytes(&chunkCarryKernel<C, Kernel>, plan.bytes);
  plan.filling = timeChunks(
      batch, length,
      residentBlocks(&sampleKernel<C, Kernel>, plan.shared ? plan.bytes : 0));
  if constexpr (Kernel::kChunkable)
    plan.chunks = plan.filling;
  plan.span = (length + plan.chunks - 1) / plan.chunks;
  plan.chunks = (length + plan.span - 1) / plan.span;
  return plan;
}

} // namespace detail

/// The chunks of each sample's tokens that fill the current device at this
/// call shape, as forEachSample computes them: 1 unless one block per
/// sample leaves the device's blocks idle. forEachSample runs them where
/// the kernel is Kernel::kChunkable; one that is not runs one block per
/// sample all the same.
template <typename Real, typename Kernel>
inline int64_t sampleChunks(int64_t batch, int64_t length, int64_t scratch) {
  if (batch <= 0 || length <= 0)
    return 1;
  return detail::planSamples<Real, Kernel>(batch, length, scratch).filling;
}

/// Runs a kernel whose body holds scans: one block per sample, its tokens
/// in time order, with `state` elements of scan state per sample, zero at
/// t = 0. The last Kernel::kRegisterState of them are held in the threads'
/// registers and get no memory. When the batch leaves the device's blocks
/// idle and the kernel is Kernel::kChunkable, each sample's tokens run in
/// chunks, one block each, after a launch that computes the chunks'
/// carries (timeChunks; Fused.h, "Chunked execution").
template <typename Real, typename Kernel>
inline void forEachSample(int64_t batch, int64_t length, int64_t scratch,
                          int64_t state, int64_t cost, const Kernel &kernel) {
  (void)cost;
  if (batch <= 0 || length <= 0)
    return;
  using C = Compute<Real>;
  const detail::SamplePlan plan =
      detail::planSamples<Real, Kernel>(batch, length, scratch);
  const bool shared = plan.shared;
  const size_t bytes = plan.bytes, sharedBytes = shared ? bytes : 0;
  const int64_t chunks = plan.chunks, span = plan.span;
  const int64_t blocks = batch * chunks;
  if (blocks > detail::kMaxBlocks)
    throw DeviceError("fp::cuda::forEachSample: " + std::to_string(batch) +
                      " samples in " + std::to_string(chunks) +
                      " chunks exceed the grid limit");
  detail::LaunchBuffer global(shared ? 0 : bytes * size_t(blocks),
                              detail::stream());
  // In chunks, a scan held in registers is started from memory: its slots
  // are allocated too.
  const int64_t inMemory = chunks > 1 ? state : state - Kernel::kRegisterState;
  detail::LaunchBuffer states(size_t(inMemory) * sizeof(C) * size_t(blocks),
                              detail::stream());
  detail::LaunchBuffer carries(
      chunks > 1 ? size_t(Kernel::kCarry) * sizeof(C) * size_t(blocks) : 0,
      detail::stream());
  if constexpr (Kernel::kChunkable) {
    if (chunks > 1)
      detail::launch("forEachSample (chunk carries)",
                     &detail::chunkCarryKernel<C, Kernel>, batch * (chunks - 1),
                     kTeamSize, sharedBytes, detail::stream(), kernel, length,
                     span, chunks, scratch, global.as<C>(), inMemory,
                     states.as<C>(), carries.as<C>());
  }
  detail::launch("forEachSample", &detail::sampleKernel<C, Kernel>, blocks,
                 kTeamSize, sharedBytes, detail::stream(), kernel, length, span,
                 chunks, scratch, global.as<C>(), inMemory, states.as<C>(),
                 static_cast<const C *>(carries.as<C>()));
}

//===----------------------------------------------------------------------===//
// Elementwise kernels and copies
//===----------------------------------------------------------------------===//

namespace detail {

template <typename Op, typename Real>
__global__ void unaryKernel(Op op, int64_t n, const Real *x, Real *out) {
  using C = Compute<Real>;
  for (int64_t i = firstThread(); i < n; i += allThreads())
    out[i] = Real(op(C(x[i])));
}

template <typename Op, typename Real>
__global__ void binaryKernel(Op op, int64_t n, const Real *x, const Real *y,
                             Real *out) {
  using C = Compute<Real>;
  for (int64_t i = firstThread(); i < n; i += allThreads())
    out[i] = Real(op(C(x[i]), C(y[i])));
}

template <typename Real>
__global__ void fillKernel(Real *out, int64_t n, Real value) {
  for (int64_t i = firstThread(); i < n; i += allThreads())
    out[i] = value;
}

template <typename Real>
__global__ void fillFromKernel(Real *out, int64_t n, const Real *scalar) {
  const Real value = scalar[0];
  for (int64_t i = firstThread(); i < n; i += allThreads())
    out[i] = value;
}

} // namespace detail

/// out[i] = op(x[i]) for i < n; one thread per element.
template <typename Op, typename Real>
inline void unary(Op op, int64_t n, In<Real> x, Real *out) {
  detail::launch("unary", detail::unaryKernel<Op, Real>, detail::blocksFor(n),
                 detail::kThreads, 0, detail::stream(), op, n, x, out);
}

/// out[i] = op(x[i], y[i]) for i < n; one thread per element.
template <typename Op, typename Real>
inline void binary(Op op, int64_t n, In<Real> x, In<Real> y, Real *out) {
  detail::launch("binary", detail::binaryKernel<Op, Real>, detail::blocksFor(n),
                 detail::kThreads, 0, detail::stream(), op, n, x, y, out);
}

/// out[i] = value; one thread per element.
template <typename Real>
inline void fill(Real *out, int64_t n, Compute<Real> value) {
  detail::launch("fill", detail::fillKernel<Real>, detail::blocksFor(n),
                 detail::kThreads, 0, detail::stream(), out, n, Real(value));
}

/// out[i] = scalar[0], read on the device: a broadcast scalar that lives in
/// a buffer. One thread per element.
template <typename Real>
inline void fillFrom(Real *out, int64_t n, In<Real> scalar) {
  detail::launch("fillFrom", detail::fillFromKernel<Real>, detail::blocksFor(n),
                 detail::kThreads, 0, detail::stream(), out, n, scalar);
}

/// Copies constants of the generated code (host memory, in the arithmetic
/// type) into a device buffer, ordered on the current stream. bf16 values
/// are rounded into a host buffer first; a copy from pageable memory has
/// read its source when it returns.
template <typename Real>
inline void upload(const Compute<Real> *values, int64_t n, Real *out) {
  if (n <= 0)
    return;
  std::vector<Real> rounded;
  const void *source = values;
  if constexpr (!std::is_same_v<Compute<Real>, Real>) {
    rounded.assign(size_t(n), Real(0));
    for (int64_t i = 0; i < n; ++i)
      rounded[size_t(i)] = Real(values[i]);
    source = rounded.data();
  }
  detail::check(cudaMemcpyAsync(out, source, sizeof(Real) * size_t(n),
                                cudaMemcpyHostToDevice, detail::stream()),
                "upload");
}

/// Device-to-device copy on the current stream (nothing when in == out).
template <typename Real> inline void copy(In<Real> in, int64_t n, Real *out) {
  if (n <= 0 || in == out)
    return;
  detail::check(cudaMemcpyAsync(out, in, sizeof(Real) * size_t(n),
                                cudaMemcpyDeviceToDevice, detail::stream()),
                "copy");
}

//===----------------------------------------------------------------------===//
// Linear maps
//===----------------------------------------------------------------------===//

namespace detail {

/// Column-major C[m×n] = op(A) · B[k×n], where op(A) is A[k×m]ᵀ when
/// `transposeA`, else A[m×k]; `lda` and `ldb` are the leading dimensions of
/// A and B (C's is m). Row-major: C[n×m] = B[n×k] · A[m×k]ᵀ, or
/// B[n×k] · A[k×m], with the rows of B and A starting ldb and lda apart.
inline cublasStatus_t gemm(bool transposeA, int m, int n, int k, const float *a,
                           int lda, const float *b, int ldb, float *c) {
  const float one = 1.0f, zero = 0.0f;
  return cublasSgemm(blas(), transposeA ? CUBLAS_OP_T : CUBLAS_OP_N,
                     CUBLAS_OP_N, m, n, k, &one, a, lda, b, ldb, &zero, c, m);
}
inline cublasStatus_t gemm(bool transposeA, int m, int n, int k,
                           const double *a, int lda, const double *b, int ldb,
                           double *c) {
  const double one = 1.0, zero = 0.0;
  return cublasDgemm(blas(), transposeA ? CUBLAS_OP_T : CUBLAS_OP_N,
                     CUBLAS_OP_N, m, n, k, &one, a, lda, b, ldb, &zero, c, m);
}
/// bf16 operands on tensor cores, f32 accumulation, one rounding of
/// op(A)·B + beta·C (beta 0 or 1).
inline cublasStatus_t gemm(bool transposeA, int m, int n, int k, const bf16 *a,
                           int lda, const bf16 *b, int ldb, bf16 *c,
                           float beta = 0.0f) {
  const float one = 1.0f;
  return cublasGemmEx(blas(), transposeA ? CUBLAS_OP_T : CUBLAS_OP_N,
                      CUBLAS_OP_N, m, n, k, &one, a, CUDA_R_16BF, lda, b,
                      CUDA_R_16BF, ldb, &beta, c, CUDA_R_16BF, m,
                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

template <typename Real>
__global__ void addBiasKernel(Real *out, int64_t n, int64_t width,
                              const Real *bias) {
  using C = Compute<Real>;
  for (int64_t i = firstThread(); i < n; i += allThreads())
    out[i] = Real(C(out[i]) + C(bias[i % width]));
}

/// out[r, o] = bias[o]: the C operand of a GEMM that adds the bias before
/// its one rounding.
template <typename Real>
__global__ void broadcastBiasKernel(Real *out, int64_t n, int64_t width,
                                    const Real *bias) {
  for (int64_t i = firstThread(); i < n; i += allThreads())
    out[i] = bias[i % width];
}

template <typename Real>
__global__ void weightNormKernel(const Real *weight, const Real *gain,
                                 int64_t rows, int64_t cols, Real *out) {
  using C = Compute<Real>;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const Real *v = weight + r * cols;
    C sum = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      sum += C(v[c]) * C(v[c]);
    sum = blockReduce(sum, SumOp());
    const C scale = C(gain[r]) / std::sqrt(sum);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      out[r * cols + c] = Real(C(v[c]) * scale);
  }
}

template <typename Real>
__global__ void matmulKernel(const Real *lhs, const Real *rhs, int64_t batch,
                             int64_t m, int64_t n, int64_t k, bool transposeLhs,
                             bool transposeRhs, Real *out) {
  using C = Compute<Real>;
  const int64_t total = batch * m * n;
  for (int64_t index = firstThread(); index < total; index += allThreads()) {
    const int64_t b = index / (m * n), i = index / n % m, j = index % n;
    const Real *l = lhs + b * m * k, *r = rhs + b * k * n;
    C sum = 0;
    for (int64_t p = 0; p < k; ++p) {
      const C lip = C(transposeLhs ? l[p * m + i] : l[i * k + p]);
      const C rpj = C(transposeRhs ? r[j * k + p] : r[p * n + j]);
      sum += lip * rpj;
    }
    out[index] = Real(sum);
  }
}

} // namespace detail

namespace detail {

/// linear, linearTransposed and linearStrided: `weight` is out × in, or
/// in × out when `transposed`; the rows of `in` and `weight` start
/// `inStride` and `weightStride` elements apart.
template <typename Real>
inline void linear(In<Real> in, int64_t inStride, int64_t rows,
                   int64_t inFeatures, In<Real> weight, int64_t weightStride,
                   bool transposed, int64_t outFeatures, In<Real> bias,
                   Real *out) {
  if (rows == 0 || outFeatures == 0)
    return;
  const int64_t n = rows * outFeatures;
  if (inFeatures == 0) {
    fill(out, n, Compute<Real>(0));
  } else {
    if (rows > INT_MAX || inStride > INT_MAX || weightStride > INT_MAX ||
        outFeatures > INT_MAX)
      throw DeviceError("fp::cuda::linear: a dimension exceeds cuBLAS's "
                        "32-bit sizes");
    // Column-major, out is outFeatures × rows and `weight` is the A operand:
    // in × out row-major is out × in column-major, so a transposed weight
    // needs no transposition. A row stride is a leading dimension.
    const bool transposeA = !transposed;
    if constexpr (std::is_same_v<Real, bf16>) {
      if (bias)
        launch("linear (bias)", broadcastBiasKernel<Real>, blocksFor(n),
               kThreads, 0, stream(), out, n, outFeatures, bias);
      checkBlas(gemm(transposeA, int(outFeatures), int(rows), int(inFeatures),
                     weight, int(weightStride), in, int(inStride), out,
                     bias ? 1.0f : 0.0f),
                "linear (cublasGemmEx, bf16)");
      return;
    }
    checkBlas(gemm(transposeA, int(outFeatures), int(rows), int(inFeatures),
                   weight, int(weightStride), in, int(inStride), out),
              std::is_same_v<Real, float> ? "linear (cublasSgemm)"
                                          : "linear (cublasDgemm)");
  }
  if (bias)
    launch("linear (bias)", addBiasKernel<Real>, blocksFor(n), kThreads, 0,
           stream(), out, n, outFeatures, bias);
}

} // namespace detail

/// out[r, o] = Σ_i weight[o, i] · in[r, i] + bias[o] (bias may be null),
/// with `weight` in PyTorch's out × in layout: one cuBLAS GEMM, then the
/// bias added by one thread per element (the host's order of rounding). A
/// bf16 GEMM instead starts from the bias broadcast into `out` and adds it
/// in f32, so that each output is rounded once, as on the host.
template <typename Real>
inline void linear(In<Real> in, int64_t rows, int64_t inFeatures,
                   In<Real> weight, int64_t outFeatures, In<Real> bias,
                   Real *out) {
  detail::linear<Real>(in, inFeatures, rows, inFeatures, weight, inFeatures,
                       false, outFeatures, bias, out);
}

/// linear with the weight given transposed (in × out): the GEMM reads it
/// as it lies, so that `fp.linear(x, fp.transpose(W))` needs no transpose.
template <typename Real>
inline void linearTransposed(In<Real> in, int64_t rows, int64_t inFeatures,
                             In<Real> weightT, int64_t outFeatures,
                             In<Real> bias, Real *out) {
  detail::linear<Real>(in, inFeatures, rows, inFeatures, weightT, outFeatures,
                       true, outFeatures, bias, out);
}

/// linear (or linearTransposed) of operands whose rows start `inStride` and
/// `weightStride` elements apart: column ranges of wider matrices (fp.slice
/// read in place), which cuBLAS reads as they lie.
template <typename Real>
inline void linearStrided(In<Real> in, int64_t inStride, int64_t rows,
                          int64_t inFeatures, In<Real> weight,
                          int64_t weightStride, bool transposed,
                          int64_t outFeatures, In<Real> bias, Real *out) {
  detail::linear<Real>(in, inStride, rows, inFeatures, weight, weightStride,
                       transposed, outFeatures, bias, out);
}

/// out[i, :] = gain[i] · weight[i, :] / ‖weight[i, :]‖₂ (PyTorch's
/// weight_norm over dim 0: no epsilon). One block per row.
template <typename Real>
inline void weightNorm(In<Real> weight, In<Real> gain, int64_t rows,
                       int64_t cols, Real *out) {
  detail::launch("weightNorm", detail::weightNormKernel<Real>, rows,
                 detail::rowThreads(cols), 0, detail::stream(), weight, gain,
                 rows, cols, out);
}

/// Batched products of small matrices: out[b] = op(lhs[b]) · op(rhs[b]) with
/// op(L) of shape m×k and op(R) of shape k×n. One thread per output element,
/// summing over p in order as Host.h does.
template <typename Real>
inline void matmul(In<Real> lhs, In<Real> rhs, int64_t batch, int64_t m,
                   int64_t n, int64_t k, bool transposeLhs, bool transposeRhs,
                   Real *out) {
  detail::launch("matmul", detail::matmulKernel<Real>,
                 detail::blocksFor(batch * m * n), detail::kThreads, 0,
                 detail::stream(), lhs, rhs, batch, m, n, k, transposeLhs,
                 transposeRhs, out);
}

//===----------------------------------------------------------------------===//
// Layout: slices, concatenation, broadcasts, reductions
//===----------------------------------------------------------------------===//

namespace detail {

template <typename Real>
__global__ void sliceColumnsKernel(const Real *in, int64_t rows,
                                   int64_t inWidth, int64_t start,
                                   int64_t width, Real *out) {
  for (int64_t i = firstThread(); i < rows * width; i += allThreads())
    out[i] = in[i / width * inWidth + start + i % width];
}

template <typename Real>
__global__ void insertColumnsKernel(const Real *in, int64_t rows, int64_t width,
                                    int64_t start, int64_t outWidth,
                                    Real *out) {
  for (int64_t i = firstThread(); i < rows * width; i += allThreads())
    out[i / width * outWidth + start + i % width] = in[i];
}

/// How output elements of a broadcast find their input element.
struct BroadcastMap {
  enum Mode { General, Leading, Trailing };
  int mode;
  int rank;
  int64_t extent[kMaxRank];
  int64_t inStride[kMaxRank]; // 0 for broadcast dimensions
  int64_t inner; // Leading: repeats of each input element; Trailing: size
};

template <typename Real>
__global__ void broadcastKernel(const Real *in, BroadcastMap map, int64_t n,
                                Real *out) {
  for (int64_t index = firstThread(); index < n; index += allThreads()) {
    if (map.mode == BroadcastMap::Leading) {
      out[index] = in[index / map.inner];
    } else if (map.mode == BroadcastMap::Trailing) {
      out[index] = in[index % map.inner];
    } else {
      int64_t rest = index, offset = 0;
      for (int d = map.rank - 1; d >= 0; --d) {
        offset += rest % map.extent[d] * map.inStride[d];
        rest /= map.extent[d];
      }
      out[index] = in[offset];
    }
  }
}

/// The dimensions of a reduction's input, and which are reduced.
struct ReduceMap {
  int rank;
  int64_t extent[kMaxRank];
  int64_t inStride[kMaxRank]; // row-major strides of the input
  bool reduced[kMaxRank];
  int64_t outCount;     // product of the kept extents
  int64_t reducedCount; // product of the reduced extents
};

/// The ReduceMap of `inShape` reduced over the dimensions flagged in
/// `reduced` (a host array).
inline ReduceMap reduceMapFor(const Shape &inShape, const bool *reduced) {
  ReduceMap map = {};
  map.rank = inShape.rank;
  map.outCount = 1;
  map.reducedCount = 1;
  int64_t stride = 1;
  for (int d = inShape.rank - 1; d >= 0; --d) {
    map.extent[d] = inShape.extent[d];
    map.inStride[d] = stride;
    map.reduced[d] = reduced[d];
    stride *= inShape.extent[d];
    (reduced[d] ? map.reducedCount : map.outCount) *= inShape.extent[d];
  }
  return map;
}

/// Input offset of `index` counted row-major over the dimensions whose
/// `reduced` flag is `which`.
__device__ inline int64_t reduceOffset(const ReduceMap &map, int64_t index,
                                       bool which) {
  int64_t offset = 0;
  for (int d = map.rank - 1; d >= 0; --d)
    if (map.reduced[d] == which) {
      offset += index % map.extent[d] * map.inStride[d];
      index /= map.extent[d];
    }
  return offset;
}

/// One thread per output element, accumulating in input index order.
template <typename Real, typename Combine>
__global__ void reduceKernel(const Real *in, ReduceMap map, Compute<Real> init,
                             Combine combine, Real *out) {
  using C = Compute<Real>;
  for (int64_t o = firstThread(); o < map.outCount; o += allThreads()) {
    const int64_t base = reduceOffset(map, o, false);
    C acc = init;
    for (int64_t k = 0; k < map.reducedCount; ++k)
      acc = combine(acc, C(in[base + reduceOffset(map, k, true)]));
    out[o] = Real(acc);
  }
}

/// One block per output element, for long reductions.
template <typename Real, typename Combine>
__global__ void reduceBlockKernel(const Real *in, ReduceMap map,
                                  Compute<Real> init, Combine combine,
                                  Real *out) {
  using C = Compute<Real>;
  for (int64_t o = blockIdx.x; o < map.outCount; o += gridDim.x) {
    const int64_t base = reduceOffset(map, o, false);
    C acc = init;
    for (int64_t k = threadIdx.x; k < map.reducedCount; k += blockDim.x)
      acc = combine(acc, C(in[base + reduceOffset(map, k, true)]));
    acc = blockReduce(acc, combine);
    if (threadIdx.x == 0)
      out[o] = Real(acc);
  }
}

/// Reductions over at least this many elements per output use a block.
inline constexpr int64_t kBlockReduction = 256;

template <typename Real, typename Combine>
inline void launchReduce(const Real *in, const ReduceMap &map,
                         Compute<Real> init, Combine combine, Real *out) {
  if (map.reducedCount >= kBlockReduction)
    launch("reduce", reduceBlockKernel<Real, Combine>, map.outCount, kThreads,
           0, stream(), in, map, init, combine, out);
  else
    launch("reduce", reduceKernel<Real, Combine>, blocksFor(map.outCount),
           kThreads, 0, stream(), in, map, init, combine, out);
}

template <typename Real>
__global__ void sumRowsKernel(const Real *in, int64_t rows, int64_t width,
                              Real *out) {
  using C = Compute<Real>;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const Real *row = in + r * width;
    C sum = 0;
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
      sum += C(row[j]);
    sum = blockReduce(sum, SumOp());
    if (threadIdx.x == 0)
      out[r] = Real(sum);
  }
}

template <typename Real>
__global__ void triuKernel(const Real *in, int64_t rows, int64_t m, Real *out) {
  const int64_t packed = m * (m + 1) / 2;
  for (int64_t index = firstThread(); index < rows * m * m;
       index += allThreads()) {
    const int64_t r = index / (m * m), i = index / m % m, j = index % m;
    // Row i of the triangle starts after Σ_{i' < i} (m − i') entries.
    out[index] =
        j >= i ? in[r * packed + i * m - i * (i - 1) / 2 + (j - i)] : Real(0);
  }
}

} // namespace detail

/// out[r, j] = in[r, start + j] for j < width; `in` has `inWidth` columns.
/// One thread per output element.
template <typename Real>
inline void sliceColumns(In<Real> in, int64_t rows, int64_t inWidth,
                         int64_t start, int64_t width, Real *out) {
  detail::launch("sliceColumns", detail::sliceColumnsKernel<Real>,
                 detail::blocksFor(rows * width), detail::kThreads, 0,
                 detail::stream(), in, rows, inWidth, start, width, out);
}

/// Writes `in` (rows × width) into the columns [start, start + width) of
/// `out`, which has `outWidth` columns. One thread per input element.
template <typename Real>
inline void insertColumns(In<Real> in, int64_t rows, int64_t width,
                          int64_t start, int64_t outWidth, Real *out) {
  detail::launch("insertColumns", detail::insertColumnsKernel<Real>,
                 detail::blocksFor(rows * width), detail::kThreads, 0,
                 detail::stream(), in, rows, width, start, outWidth, out);
}

/// Replicates `in` to `outShape`: input dimension i is output dimension
/// dims[i] (a host array); every other output dimension is broadcast. One
/// thread per output element.
template <typename Real>
inline void broadcast(In<Real> in, const Shape &outShape, const int *dims,
                      int inRank, Real *out) {
  detail::BroadcastMap map = {};
  map.rank = outShape.rank;
  for (int d = 0; d < outShape.rank; ++d)
    map.extent[d] = outShape.extent[d];
  int64_t stride = 1;
  for (int i = inRank - 1; i >= 0; --i) {
    map.inStride[dims[i]] = stride;
    stride *= outShape.extent[dims[i]];
  }
  const int64_t n = outShape.numElements();
  bool leading = true, trailing = true;
  for (int i = 0; i < inRank; ++i) {
    leading &= dims[i] == i;
    trailing &= dims[i] == outShape.rank - inRank + i;
  }
  map.mode = detail::BroadcastMap::General;
  if (leading) {
    map.mode = detail::BroadcastMap::Leading;
    map.inner = std::max<int64_t>(n / std::max<int64_t>(stride, 1), 1);
  } else if (trailing) {
    map.mode = detail::BroadcastMap::Trailing;
    map.inner = std::max<int64_t>(stride, 1);
  }
  detail::launch("broadcast", detail::broadcastKernel<Real>,
                 detail::blocksFor(n), detail::kThreads, 0, detail::stream(),
                 in, map, n, out);
}

/// Reduces `in` of `inShape` over the dimensions flagged in `reduced` (a
/// host array). One thread per output element accumulating in input index
/// order (as Host.h), or one block per output element when each reduces at
/// least kBlockReduction inputs.
template <typename Real>
inline void reduce(In<Real> in, const Shape &inShape, const bool *reduced,
                   Reduction kind, Real *out) {
  using C = Compute<Real>;
  const detail::ReduceMap map = detail::reduceMapFor(inShape, reduced);
  if (kind == Reduction::Sum)
    detail::launchReduce<Real>(in, map, C(0), detail::SumOp(), out);
  else
    detail::launchReduce<Real>(in, map, -std::numeric_limits<C>::infinity(),
                               detail::MaxOp(), out);
}

/// Sums each row of `in` (rows × width): one block per row.
template <typename Real>
inline void sumRows(In<Real> in, int64_t rows, int64_t width, Real *out) {
  detail::launch("sumRows", detail::sumRowsKernel<Real>, rows,
                 detail::rowThreads(width), 0, detail::stream(), in, rows,
                 width, out);
}

/// Unpacks the m(m+1)/2 trailing entries of each row into an upper
/// triangular m×m matrix, row-major over the triangle. One thread per
/// output element.
template <typename Real>
inline void triu(In<Real> in, int64_t rows, int64_t m, Real *out) {
  detail::launch("triu", detail::triuKernel<Real>,
                 detail::blocksFor(rows * m * m), detail::kThreads, 0,
                 detail::stream(), in, rows, m, out);
}

//===----------------------------------------------------------------------===//
// Time-coupling ops on [B, T, F] buffers
//===----------------------------------------------------------------------===//

namespace detail {

template <typename Real>
__global__ void shiftKernel(const Real *in, int64_t batch, int64_t length,
                            int64_t features, int64_t offset, Real *out) {
  const int64_t n = batch * length * features;
  for (int64_t index = firstThread(); index < n; index += allThreads()) {
    const int64_t source = index / features % length - offset;
    out[index] = source < 0 || source >= length ? Real(0)
                                                : in[index - offset * features];
  }
}

/// One thread per (sample, feature), its state h in a register.
template <typename Real>
__global__ void scanKernel(const Real *coeff, const Real *input, int64_t batch,
                           int64_t length, int64_t features, bool reverse,
                           Real *out) {
  using C = Compute<Real>;
  for (int64_t index = firstThread(); index < batch * features;
       index += allThreads()) {
    const int64_t base = index / features * length * features,
                  f = index % features;
    C h = 0;
    for (int64_t s = 0; s < length; ++s) {
      const int64_t t = reverse ? length - 1 - s : s;
      const int64_t at = base + t * features + f;
      h = s == 0 ? C(input[at]) : C(coeff[at]) * h + C(input[at]);
      out[at] = Real(h);
    }
  }
}

/// Per thread (one channel of one sample), the state S[:, c] and A[c, :]
/// live in dynamic shared memory as Compute<Real>, element n at
/// [n · blockDim.x].
template <typename Real>
__global__ void
selectiveScanKernel(const Real *u, const Real *delta, const Real *a,
                    const Real *bm, const Real *cm, const Real *skip,
                    int64_t batch, int64_t length, int64_t channels,
                    int64_t state, Real *out) {
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
      st[n * stride] = C(0);
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

template <typename Real>
__global__ void causalConvKernel(const Real *in, int64_t inStride,
                                 const Real *weight, const Real *bias,
                                 int64_t batch, int64_t length,
                                 int64_t channels, int64_t width, Real *out) {
  using C = Compute<Real>;
  const int64_t n = batch * length * channels;
  for (int64_t index = firstThread(); index < n; index += allThreads()) {
    const int64_t c = index % channels, bt = index / channels;
    const int64_t t = bt % length;
    C sum = bias ? C(bias[c]) : C(0);
    for (int64_t k = 0; k < width; ++k) {
      const int64_t source = t - width + 1 + k;
      if (source >= 0)
        sum +=
            C(weight[c * width + k]) * C(in[(bt - t + source) * inStride + c]);
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
                 0, detail::stream(), in, batch, length, features, offset, out);
}

/// h_t = coeff_t ⊙ h_{t∓1} + input_t along time, from zero. One thread per
/// (sample, feature), sequential over time.
template <typename Real>
inline void scan(In<Real> coeff, In<Real> input, int64_t batch, int64_t length,
                 int64_t features, bool reverse, Real *out) {
  detail::launch("scan", detail::scanKernel<Real>,
                 detail::blocksFor(batch * features), detail::kThreads, 0,
                 detail::stream(), coeff, input, batch, length, features,
                 reverse, out);
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
                 detail::stream(), u, delta, a, bm, cm, skip, batch, length,
                 channels, state, out);
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
                 0, detail::stream(), in, inStride, weight, bias, batch, length,
                 channels, width, out);
}

/// causalConvStrided of packed rows.
template <typename Real>
inline void causalConv(In<Real> in, In<Real> weight, In<Real> bias,
                       int64_t batch, int64_t length, int64_t channels,
                       int64_t width, Real *out) {
  causalConvStrided<Real>(in, channels, weight, bias, batch, length, channels,
                          width, out);
}

//===----------------------------------------------------------------------===//
// Normalisations over the last dimension
//===----------------------------------------------------------------------===//

namespace detail {

template <typename Real>
__global__ void l2normKernel(const Real *in, int64_t rows, int64_t width,
                             Compute<Real> eps, Real *out) {
  using C = Compute<Real>;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const Real *x = in + r * width;
    C sum = 0;
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
      sum += C(x[j]) * C(x[j]);
    const C norm = MaxOp()(std::sqrt(blockReduce(sum, SumOp())), eps);
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
      out[r * width + j] = Real(C(x[j]) / norm);
  }
}

template <typename Real>
__global__ void layerNormKernel(const Real *in, const Real *weight,
                                const Real *bias, int64_t rows, int64_t width,
                                Compute<Real> eps, Real *out) {
  using C = Compute<Real>;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const Real *x = in + r * width;
    C sum = 0;
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
      sum += C(x[j]);
    const C mean = blockReduce(sum, SumOp()) / C(width);
    C squares = 0;
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
      squares += (C(x[j]) - mean) * (C(x[j]) - mean);
    const C var = blockReduce(squares, SumOp()) / C(width);
    const C inv = C(1) / std::sqrt(var + eps);
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
      out[r * width + j] =
          Real((C(x[j]) - mean) * inv * C(weight[j]) + C(bias[j]));
  }
}

template <typename Real>
__global__ void rmsNormKernel(const Real *in, const Real *weight, int64_t rows,
                              int64_t width, Compute<Real> eps, Real *out) {
  using C = Compute<Real>;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const Real *x = in + r * width;
    C sum = 0;
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
      sum += C(x[j]) * C(x[j]);
    sum = blockReduce(sum, SumOp());
    const C inv = C(1) / std::sqrt(sum / C(width) + eps);
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
      out[r * width + j] = Real(C(x[j]) * inv * C(weight[j]));
  }
}

} // namespace detail

/// in / max(‖in‖₂, eps) per row (PyTorch's F.normalize). One block per row.
template <typename Real>
inline void l2norm(In<Real> in, int64_t rows, int64_t width, Compute<Real> eps,
                   Real *out) {
  detail::launch("l2norm", detail::l2normKernel<Real>, rows,
                 detail::rowThreads(width), 0, detail::stream(), in, rows,
                 width, eps, out);
}

/// (in − mean) / sqrt(var + eps) · weight + bias per row, biased variance;
/// weight and bias are required, as in Host.h. One block per row.
template <typename Real>
inline void layerNorm(In<Real> in, In<Real> weight, In<Real> bias, int64_t rows,
                      int64_t width, Compute<Real> eps, Real *out) {
  detail::launch("layerNorm", detail::layerNormKernel<Real>, rows,
                 detail::rowThreads(width), 0, detail::stream(), in, weight,
                 bias, rows, width, eps, out);
}

/// in / sqrt(mean(in²) + eps) · weight per row. One block per row.
template <typename Real>
inline void rmsNorm(In<Real> in, In<Real> weight, int64_t rows, int64_t width,
                    Compute<Real> eps, Real *out) {
  detail::launch("rmsNorm", detail::rmsNormKernel<Real>, rows,
                 detail::rowThreads(width), 0, detail::stream(), in, weight,
                 rows, width, eps, out);
}

//===----------------------------------------------------------------------===//
// The fixed-point solver (docs/spec.md §3)
//===----------------------------------------------------------------------===//

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
  int64_t below, above; // sorted positions around the quantile's rank
  Real weight;          // its interpolation weight
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
                                  C &scale) {
  const MaxOp maxOf;
  const auto relax = [&](Real &y, Real f) {
    const C yv = C(y), fv = C(f);
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
/// goes into rho[b] by an exact atomic max. The arithmetic, and the
/// solver's state, is Compute<Real>.
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
    for (int64_t base = first; base < end; base += groups) {
      const int64_t t = base + groupIndex;
      C diff = 0, scale = 0;
      if (t < end)
        relaxToken(y + (b * length + t) * tokenSize,
                   fy + (b * length + t) * tokenSize, tokenSize, lane, group, e,
                   keep, diff, scale);
      for (int offset = group / 2; offset > 0; offset /= 2) {
        diff = maxOf(diff, __shfl_xor_sync(0xffffffffu, diff, offset));
        scale = maxOf(scale, __shfl_xor_sync(0xffffffffu, scale, offset));
      }
      if (t < end)
        worst = maxOf(worst, diff / (scale + C(1e-8)));
    }
    worst = blockReduce(worst, maxOf);
    if (threadIdx.x == 0)
      atomicMaxNonNegative(state.rho + b, worst);
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
/// step (Host.h's shouldContinue), which it publishes to the host. Reads ρ
/// from L2 (`__ldcg`): other blocks of the same launch may have written it.
template <typename Real>
__device__ void decideStep(const SolverRule<Real> &rule,
                           const SolverState<Real> &state) {
  SolverControl *control = state.control;
  const int32_t steps = control->steps + 1;
  Real *sorted = state.sortScratch ? state.sortScratch
                                   : reinterpret_cast<Real *>(sharedBytes());
  bool moving = false;
  for (int64_t b = threadIdx.x; b < state.batch; b += blockDim.x) {
    const Real rho = __ldcg(state.rho + b), best = state.best[b];
    state.rho[b] = Real(0);
    const bool improved = rho < best;
    const Real newBest = rho < best ? rho : best; // std::min(best, rho)
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
    sorted[b] = newBest;
  }
  for (int64_t i = state.batch + threadIdx.x; i < state.sortSize;
       i += blockDim.x)
    sorted[i] = Real(HUGE_VAL);
  moving = __syncthreads_or(moving);
  bool running;
  if (rule.fixedIters > 0) {
    running = steps < rule.fixedIters;
  } else if (!moving || steps >= rule.cap) {
    running = false;
  } else {
    // The q-quantile of ρ* with linear interpolation (torch.quantile) and
    // torch.lerp's two-sided formula.
    bitonicSort(sorted, state.sortSize);
    const Real lo = sorted[rule.below], hi = sorted[rule.above];
    const Real w = rule.weight;
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

/// The fixed-point solver of docs/spec.md §3 with Host.h's Solver API and
/// results, its state on the device: per sample best residual ρ*, step size η
/// and patience, and the step counter and "running" flag of the continue rule.
///
/// A step queues, per iterate, relax(): residual and relaxation (one chunk
/// of tokens of one sample per block); then update(): one block of
/// bookkeeping that also evaluates the continue rule for the next step and
/// publishes (steps, running) to mapped pinned memory. relaxAndUpdate()
/// does the last relax() and the update() in one launch. All do nothing
/// once running is cleared, so steps queued after the device decided to
/// stop are no-ops and the result is that of Host.h's sequential rule.
///
/// loop(step) runs the steps. It captures one step into the body of a CUDA
/// graph's while node, whose condition the bookkeeping kernel sets, and
/// launches the graph once: the device runs every step and the host does
/// not wait (the launch buffers of the step come from a CaptureArena; the
/// step holds no other solver, as codegen emits one loop per layer). Where
/// the graph cannot be built (a driver without conditional nodes, an
/// uncapturable step, FP_CUDA_GRAPHS=0) it queues steps from the host, and
/// says why once per process on stderr unless FP_CUDA_GRAPHS=0 asked for it:
/// shouldContinue() never waits for the stream: it answers false once the
/// device published a stop or the cap (or fixed_iters) steps are queued, and
/// true while fewer than kLookahead queued steps are unobserved; otherwise
/// it spins until the device catches up, polling the stream for errors.
/// With fixed_iters it never looks at the device.
template <typename Real> class Solver {
  /// The arithmetic type of the iterates, and of the solver's state.
  using C = Compute<Real>;

public:
  Solver(int64_t batch, const SolverSettings &settings, bool training,
         const fp_solver_overrides *overrides)
      : samples(batch), stream(detail::current.stream) {
    if (batch < 1)
      throw std::invalid_argument("fp::cuda::Solver: batch must be >= 1");
    double tolerance = settings.tolerance;
    double quantile = training ? settings.trainQuantile : 1.0;
    int32_t cap = training ? settings.maxIterTrain : settings.maxIterEval;
    int32_t fixedIters = 0;
    if (overrides) {
      if (overrides->max_iter >= 0)
        cap = overrides->max_iter;
      if (overrides->fixed_iters > 0)
        fixedIters = overrides->fixed_iters;
      if (!std::isnan(overrides->tolerance))
        tolerance = overrides->tolerance;
      if (!std::isnan(overrides->quantile))
        quantile = overrides->quantile;
    }
    rule.tolerance = tolerance;
    rule.cap = cap;
    rule.fixedIters = fixedIters;
    rule.relaxPatience = settings.relaxPatience;
    rule.relaxDecay = C(settings.relaxDecay);
    // The quantile's rank, its neighbours and weight, in C as Host.h.
    const C rank = C(quantile) * C(batch - 1);
    const C below = std::floor(rank), above = std::ceil(rank);
    rule.weight = rank - below;
    rule.below = clampIndex(below);
    rule.above = clampIndex(above);
    // The first step always runs; then at most the cap.
    limit = fixedIters > 0 ? fixedIters : std::max(cap, 1);

    int64_t sortSize = 1;
    while (sortSize < batch)
      sortSize *= 2;
    const bool sortShared =
        size_t(sortSize) * sizeof(C) <= detail::kMaxSortSharedBytes;
    sortSharedBytes = sortShared ? size_t(sortSize) * sizeof(C) : 0;

    // [control | best | eta | rho | patience | sort scratch]
    const size_t reals = size_t(batch) * sizeof(C);
    const size_t bestOffset = detail::alignUp(sizeof(detail::SolverControl));
    const size_t etaOffset = detail::alignUp(bestOffset + reals);
    const size_t rhoOffset = detail::alignUp(etaOffset + reals);
    const size_t patienceOffset = detail::alignUp(rhoOffset + reals);
    const size_t sortOffset =
        detail::alignUp(patienceOffset + size_t(batch) * sizeof(int32_t));
    const size_t bytes =
        sortOffset + (sortShared ? 0 : size_t(sortSize) * sizeof(C));

    cudaError_t status = cudaMallocAsync(&memory, bytes, stream);
    if (status == cudaErrorNotSupported) { // no stream-ordered allocator
      (void)cudaGetLastError();
      pooled = false;
      status = cudaMalloc(&memory, bytes);
    }
    detail::check(status, "Solver (allocating its state)");
    try {
      word = detail::ProgressWords::instance().acquire();
      char *base = static_cast<char *>(memory);
      state.control = reinterpret_cast<detail::SolverControl *>(base);
      state.best = reinterpret_cast<C *>(base + bestOffset);
      state.eta = reinterpret_cast<C *>(base + etaOffset);
      state.rho = reinterpret_cast<C *>(base + rhoOffset);
      state.patience = reinterpret_cast<int32_t *>(base + patienceOffset);
      state.sortScratch =
          sortShared ? nullptr : reinterpret_cast<C *>(base + sortOffset);
      state.published = word.device;
      state.generation = generation = detail::nextGeneration();
      state.batch = batch;
      state.sortSize = sortSize;
      detail::launch("Solver (init)", detail::solverInitKernel<C>,
                     detail::blocksFor(batch), detail::kThreads, 0, stream,
                     state, C(settings.relaxStart), settings.relaxPatience);
    } catch (...) {
      release();
      throw;
    }
  }

  Solver(const Solver &) = delete;
  Solver &operator=(const Solver &) = delete;
  ~Solver() { release(); }

  /// Runs `step` (the loop body, ending with relax() and update()) until the
  /// continue rule stops: as a graph where possible, else step by step from
  /// the host.
  template <typename Step> void loop(Step &&step) {
    if (detail::graphLoopsEnabled() && launched == 0 && runAsGraph(step))
      return;
    while (shouldContinue())
      step();
  }

  /// Checked before every step: the first step always runs; then some
  /// quantile of ρ* is at least the tolerance, some η ≥ 1e-3, and the cap
  /// is not reached (as the device last decided).
  bool shouldContinue() {
    if (launched >= limit)
      return false;
    if (rule.fixedIters > 0 || launched == 0)
      return true;
    return waitFor([&](const Progress &p) {
             return !p.running || launched - p.steps < kLookahead;
           })
        .running;
  }

  /// Residual and relaxation of one iterate after the body computed
  /// fy = f(y) (Host.h's Solver::relax): one chunk of tokens of one sample
  /// per block, ρ accumulated by an exact atomic max. `y` and `fy` are
  /// [B, T, F] with `tokenSize` = F elements per token.
  void relax(Real *y, In<Real> fy, int64_t length, int64_t tokenSize) {
    if (length <= 0 || tokenSize <= 0)
      return;
    const RelaxGrid grid(length, tokenSize);
    detail::launch("Solver::relax", detail::solverRelaxKernel<Real>,
                   samples * grid.chunks, detail::kThreads, 0, detail::stream(),
                   y, fy, length, tokenSize, grid.tokensPerChunk, grid.chunks,
                   grid.group, state);
  }

  /// Ends a step (Host.h's Solver::update): one block of bookkeeping that
  /// also evaluates the continue rule for the next step and publishes it.
  void update() {
    detail::launch("Solver::update", detail::solverDecideKernel<C>, 1,
                   detail::kDecideThreads, sortSharedBytes, detail::stream(),
                   rule, state);
    ++launched;
  }

  /// relax() of a step's last iterate, then update(), in one launch: the
  /// block that finishes its share of the relaxation last does the
  /// bookkeeping.
  void relaxAndUpdate(Real *y, In<Real> fy, int64_t length, int64_t tokenSize) {
    if (length <= 0 || tokenSize <= 0) {
      update();
      return;
    }
    const RelaxGrid grid(length, tokenSize);
    detail::launch("Solver::relaxAndUpdate",
                   detail::solverRelaxAndDecideKernel<Real>,
                   samples * grid.chunks, detail::kThreads, sortSharedBytes,
                   detail::stream(), y, fy, length, tokenSize,
                   grid.tokensPerChunk, grid.chunks, grid.group, rule, state);
    ++launched;
  }

  /// Writes the statistics of the finished solve: per sample steps + 1
  /// (the differentiable step counts, docs/spec.md §3.6) and ρ*, and adds the
  /// solve's waits to host_waits. With `device`, one launch writes them
  /// there and nothing waits for the device (of `stats`, only host_waits
  /// is written); without it, the host arrays of `stats` are filled after
  /// one wait for the stream. Nothing without either.
  void report(fp_solver_stats *stats,
              const fp_device_stats *device = nullptr) const {
    if (device) {
      if (device->iterations || device->residuals || device->steps)
        detail::launch("Solver::report", detail::solverReportKernel<C>,
                       detail::blocksFor(samples), detail::kThreads, 0, stream,
                       state.control, state.best, samples, device->iterations,
                       device->residuals, device->steps);
      if (stats)
        stats->host_waits += waits;
      return;
    }
    if (!stats)
      return;
    detail::SolverControl control = {};
    std::vector<C> best(stats->residuals ? size_t(samples) : 0);
    detail::check(cudaMemcpyAsync(&control, state.control, sizeof control,
                                  cudaMemcpyDeviceToHost, stream),
                  "Solver::report");
    if (stats->residuals)
      detail::check(cudaMemcpyAsync(best.data(), state.best,
                                    best.size() * sizeof(C),
                                    cudaMemcpyDeviceToHost, stream),
                    "Solver::report");
    detail::check(cudaStreamSynchronize(stream), "Solver::report");
    stats->steps = control.steps;
    stats->host_waits += waits;
    for (int64_t b = 0; b < samples; ++b) {
      if (stats->iterations)
        stats->iterations[b] = control.steps + 1;
      if (stats->residuals)
        stats->residuals[b] = float(best[b]);
    }
  }

  /// Whether loop() ran its steps as a CUDA graph (else from the host).
  bool ranAsGraph() const { return graphRan; }

  /// Steps taken; waits (without a blocking CUDA call) until the device has
  /// processed the queued ones.
  int32_t numSteps() const {
    if (launched == 0)
      return 0;
    return waitFor([&](const Progress &p) {
             return !p.running || p.steps >= launched;
           })
        .steps;
  }

private:
  /// Steps the host may queue ahead of what it has seen the device decide.
  static constexpr int32_t kLookahead = 4;

  /// How relax() spreads an iterate over blocks: `chunks` chunks of
  /// `tokensPerChunk` tokens per sample, a group of `group` lanes per token.
  /// A chunk holds at most about kRelaxChunk elements, and the chunks of a
  /// sample are as even as that count allows (config S's 17 tokens of 512
  /// go 9 + 8, not 16 + 1: every block runs at once there, so the longest
  /// chunk is the launch's time).
  struct RelaxGrid {
    RelaxGrid(int64_t length, int64_t tokenSize) {
      const int64_t most = std::min(
          length, std::max<int64_t>(1, detail::kRelaxChunk / tokenSize));
      chunks = ceilDiv(length, most);
      tokensPerChunk = ceilDiv(length, chunks);
      chunks = ceilDiv(length, tokensPerChunk);
      while (group < 32 && group < tokenSize)
        group *= 2;
    }
    static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
    int64_t tokensPerChunk = 1, chunks = 1;
    int group = 1;
  };

  struct Progress {
    int32_t steps;
    bool running;
  };

  /// What the device last published for this solve.
  Progress progress() const {
    const unsigned long long value = *word.host;
    if (uint32_t(value >> 32) != generation)
      return {0, true}; // no step decided yet
    return {int32_t(uint32_t(value) >> 1), (value & 1) != 0};
  }

  /// Spins until `done(progress())`, counting a wait in `waits` unless it
  /// holds at once. Every so often it asks the stream, without waiting,
  /// whether it failed or went idle without publishing.
  template <typename Done> Progress waitFor(const Done &done) const {
    for (uint32_t spins = 1;; ++spins) {
      Progress p = progress();
      if (done(p))
        return p;
      if (spins == 1)
        ++waits;
      if (spins % 1024 == 0) {
        cudaError_t status = cudaStreamQuery(stream);
        if (status == cudaErrorNotReady) {
          (void)cudaGetLastError();
        } else if (status == cudaSuccess) {
          p = progress();
          if (done(p))
            return p;
          throw DeviceError("fp::cuda::Solver: the stream is idle but the "
                            "solver's progress was not published");
        } else {
          detail::check(status, "Solver (waiting for the device)");
        }
      }
      std::this_thread::yield();
    }
  }

  /// Captures one step into the body of a while node on a stream of its
  /// own and launches the graph on the solver's stream. False, with nothing
  /// run and the step's host state undone, where any part fails.
  template <typename Step> bool runAsGraph(Step &step) {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    detail::CaptureArena arena(stream);
    auto giveUp = [&](const std::string &what) {
      (void)cudaGetLastError();
      arena.release();
      if (exec)
        (void)cudaGraphExecDestroy(exec);
      if (graph)
        (void)cudaGraphDestroy(graph);
      (void)cudaGetLastError();
      state.inGraph = 0;
      launched = 0;
      detail::warnGraphFallback(what);
      return false;
    };
    auto failed = [&](const char *call, cudaError_t status) {
      return giveUp(std::string(call) + ": " + cudaGetErrorString(status));
    };
    int device = 0;
    cudaError_t status = cudaGetDevice(&device);
    if (status != cudaSuccess)
      return failed("cudaGetDevice", status);
    status = cudaGraphCreate(&graph, 0);
    if (status != cudaSuccess)
      return failed("cudaGraphCreate", status);
    cudaGraphConditionalHandle condition = 0;
    status = cudaGraphConditionalHandleCreate(&condition, graph, 1,
                                              cudaGraphCondAssignDefault);
    if (status != cudaSuccess)
      return failed("cudaGraphConditionalHandleCreate", status);
    cudaGraphNodeParams params = {};
    params.type = cudaGraphNodeTypeConditional;
    params.conditional.handle = condition;
    params.conditional.type = cudaGraphCondTypeWhile;
    params.conditional.size = 1;
    cudaGraphNode_t node = nullptr;
    status = cudaGraphAddNode(&node, graph, nullptr, nullptr, 0, &params);
    if (status != cudaSuccess)
      return failed("cudaGraphAddNode (while node)", status);
    cudaGraph_t body = params.conditional.phGraph_out[0];

    cudaStream_t capture = nullptr;
    try {
      capture = detail::captureStream(device);
    } catch (const DeviceError &error) {
      return giveUp(error.what());
    }
    status = cudaStreamBeginCaptureToGraph(capture, body, nullptr, nullptr, 0,
                                           cudaStreamCaptureModeRelaxed);
    if (status != cudaSuccess)
      return failed("cudaStreamBeginCaptureToGraph", status);
    state.loopCondition = condition;
    state.inGraph = 1;
    std::string stepError;
    {
      detail::CaptureArena *&active = detail::CaptureArena::active();
      detail::CaptureArena *outer = active;
      active = &arena;
      try {
        Scope scope(capture);
        // cuBLAS must not allocate its workspace inside the body; the
        // Scope's end binds the handle back to its stream and default
        // workspace.
        if (cublasSetWorkspace(
                detail::blas(), arena.allocate(detail::kCaptureBlasWorkspace),
                detail::kCaptureBlasWorkspace) != CUBLAS_STATUS_SUCCESS)
          throw DeviceError("cublasSetWorkspace");
        step();
      } catch (const std::exception &error) {
        // Replayed by the host loop, which reports a real error again.
        stepError = std::string("capturing the step: ") + error.what();
      } catch (...) {
        stepError = "capturing the step: an unknown exception";
      }
      active = outer;
    }
    cudaGraph_t ended = nullptr;
    status = cudaStreamEndCapture(capture, &ended);
    if (!stepError.empty())
      return giveUp(stepError);
    if (status != cudaSuccess)
      return failed("cudaStreamEndCapture", status);
    status = cudaGraphInstantiate(&exec, graph, 0);
    if (status != cudaSuccess)
      return failed("cudaGraphInstantiate", status);
    status = cudaGraphLaunch(exec, stream);
    if (status != cudaSuccess)
      return failed("cudaGraphLaunch", status);
    // Both are released once the launched work completes.
    (void)cudaGraphExecDestroy(exec);
    (void)cudaGraphDestroy(graph);
    arena.release();
    state.inGraph = 0;
    launched = limit;
    graphRan = true;
    return true;
  }

  int64_t clampIndex(C position) const {
    if (!(position >= C(0)))
      return 0;
    return position >= C(samples - 1) ? samples - 1 : int64_t(position);
  }

  /// Frees the state and returns the progress word, ordered after the
  /// queued steps; never throws.
  void release() noexcept {
    if (memory) {
      cudaError_t status =
          pooled ? cudaFreeAsync(memory, stream) : cudaFree(memory);
      if (status != cudaSuccess)
        (void)cudaGetLastError();
      memory = nullptr;
    }
    if (word.host) {
      detail::ProgressWords::instance().release(word, stream);
      word = {};
    }
  }

  int64_t samples;
  cudaStream_t stream;
  detail::SolverRule<C> rule = {};
  detail::SolverState<C> state = {};
  detail::ProgressWords::Word word;
  uint32_t generation = 0;
  void *memory = nullptr;
  bool pooled = true;
  size_t sortSharedBytes = 0;
  int32_t limit = 1, launched = 0;
  bool graphRan = false;
  /// Times the host waited for the device's progress (fp_solver_stats).
  mutable int32_t waits = 0;
};

} // namespace fp::cuda

#endif // FP_RUNTIME_KERNELS_DEVICE_CUH
