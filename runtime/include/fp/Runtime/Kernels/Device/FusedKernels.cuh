//===- Device/FusedKernels.cuh - Launchers of fused kernels -----*- C++ -*-===//
//
// The launchers of fused kernels (fp.kernel): the CUDA teams that run Fused.h's
// blocks (kTeamSize, WarpTeam, BlockTeam), the shared-memory opt-in and the
// launch buffers of a kernel's scratch, the token, sample and chunk-carry
// kernels, and forEachToken, sampleChunks and forEachSample.
//
// Counterpart: Host/FusedKernels.h.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_DEVICE_FUSEDKERNELS_CUH
#define FP_RUNTIME_KERNELS_DEVICE_FUSEDKERNELS_CUH

#include "fp/Runtime/Kernels/Device/Context.cuh"
#include "fp/Runtime/Kernels/Device/Launch.cuh"

namespace fp::cuda {

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

} // namespace fp::cuda

#endif // FP_RUNTIME_KERNELS_DEVICE_FUSEDKERNELS_CUH
