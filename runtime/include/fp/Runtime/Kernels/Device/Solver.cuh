//===- Device/Solver.cuh - The fixed-point solver (CUDA) --------*- C++ -*-===//
//
// Solver: the fixed-point solver of docs/spec.md §3 with Host.h's Solver API
// and results, its state on the device, its steps queued without waiting for
// the device or run as a CUDA graph.
//
// Counterpart: Host/Solver.h.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_DEVICE_SOLVER_CUH
#define FP_RUNTIME_KERNELS_DEVICE_SOLVER_CUH

#include "fp/Runtime/Kernels/Device/Context.cuh"
#include "fp/Runtime/Kernels/Device/FusedKernels.cuh"
#include "fp/Runtime/Kernels/Device/Launch.cuh"
#include "fp/Runtime/Kernels/Device/SolverKernels.cuh"

namespace fp::cuda {

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
    // torch.quantile refuses q outside [0, 1]; kept inside, the rank stays
    // within the sorted residuals.
    rule.quantile = C(std::min(std::max(quantile, 0.0), 1.0));
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

#endif // FP_RUNTIME_KERNELS_DEVICE_SOLVER_CUH
