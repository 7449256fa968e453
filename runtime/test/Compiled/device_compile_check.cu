//===- device_compile_check.cu - Instantiates every CUDA kernel -*- C++ -*-===//
//
// A translation unit that only has to compile: it calls every function of
// Device.cuh, DeviceGradients.cuh and the Solver for float, double and bf16,
// through the same `kernels::` alias generated code uses, so that nvcc
// instantiates all templates. Nothing here is ever run.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Kernels/DeviceGradients.cuh"

namespace kernels = fp::cuda;

namespace {

/// Calls every Fused.h building block from `x` (and the uniform operand
/// `uniform`) into `y`: fused kernels read their inputs (of the call's
/// element type) and scratch values (of the arithmetic type) and write
/// either.
template <typename Team, typename From, typename To, typename State,
          typename Registers>
FP_HOST_DEVICE void everyBlock(Team &team, bool first, const From *x,
                               const From *uniform, To *y, State *state,
                               Registers &registers) {
  using Scalar = fp::Compute<To>;
  fp::fused::unary(team, kernels::Silu(), 16, x, y);
  fp::fused::forEachElement(team, 16, [&](int64_t i) {
    const Scalar silu = kernels::Silu()(Scalar(x[i]));
    y[i] = To(kernels::Mul()(silu, Scalar(uniform[i])));
  });
  fp::fused::binary(team, kernels::Mul(), 16, x, uniform, y);
  fp::fused::copy(team, 16, x, y);
  fp::fused::fill(team, 16, x[0], y);
  fp::fused::fill(team, 16, Scalar(0.5), y);
  fp::fused::shifted(team, uniform, 1, 1, 4, 1, 16, y);
  fp::fused::slice(team, x, 2, 8, 2, 4, y);
  fp::fused::insert(team, x, 2, 4, 2, 8, y);
  const int64_t extents[] = {4, 4};
  const int dims[] = {1};
  fp::fused::broadcast(team, x, 2, extents, dims, 1, y);
  fp::fused::triu(team, x, 1, 4, y);
  fp::fused::sumRows(team, x, 2, 8, y);
  const bool reduced[] = {true, false};
  fp::fused::reduce(team, x, 2, extents, reduced, true, y);
  fp::fused::reduce(team, x, 2, extents, reduced, false, y);
  fp::fused::l2norm(team, x, 2, 8, Scalar(1e-12), y);
  fp::fused::layerNorm(team, x, uniform, uniform, 2, 8, Scalar(1e-5), y);
  fp::fused::rmsNorm(team, x, uniform, 2, 8, Scalar(1e-5), y);
  fp::fused::matmul(team, x, x, 1, 4, 4, 4, false, true, y);
  Scalar staging[4 * 5];
  fp::fused::matmul(team, x, x, 1, 4, 4, 4, false, true, y, staging,
                    fp::fused::stagingSize(1, 4, 4, 4 * 5));
  fp::fused::matmul(team, x, uniform, 1, 4, 4, 4, true, false, y);
  fp::fused::scanStep(team, state, x, x, 16, y);
  fp::fused::selectiveScanStep(team, first, state, x, x, uniform, x, x, uniform,
                               16, 4, y);
  fp::fused::selectiveScanStep(team, first, state, x, x, uniform, x, x, nullptr,
                               16, 4, y);
  fp::fused::selectiveScanStep(team, first, registers.scan, x, x, uniform, x, x,
                               uniform, y);
  fp::fused::selectiveScanStep(team, first, registers.scan, x, x, uniform, x, x,
                               nullptr, y);
}

/// Calls the building blocks of chunked execution (Fused.h): summary steps,
/// and a carry stored and loaded, for scans with their state in memory and
/// in registers.
template <typename Team, typename From, typename State, typename Registers>
FP_HOST_DEVICE void everyChunkBlock(Team &team, bool first, const From *x,
                                    const From *uniform, State *state,
                                    Registers &registers, State *carry,
                                    int64_t count) {
  fp::fused::scanSummaryStep(team, first, state, x, x, 16);
  fp::fused::saveScanCarry(team, state, 16, carry);
  fp::fused::loadScanCarry(team, state, 16, carry, 32, count);
  fp::fused::selectiveScanSummaryStep(team, first, state, x, x, uniform, x, 16,
                                      4);
  fp::fused::saveSelectiveScanCarry(team, state, 16, 4, carry);
  fp::fused::loadSelectiveScanCarry(team, state, uniform, 16, 4, carry, 80,
                                    count);
  fp::fused::selectiveScanSummaryStep(team, first, registers.scan, x, x,
                                      uniform, x);
  fp::fused::saveSelectiveScanCarry(team, registers.scan, carry);
  fp::fused::loadSelectiveScanCarry(team, registers.scan, state, uniform, carry,
                                    80, count);
}

/// A kernel function object that calls every Fused.h building block, as
/// fpc's fp.kernel functors do: from the inputs into scratch, and from
/// scratch into the results.
template <typename Real> struct AllFused {
  using Scalar = fp::Compute<Real>;
  struct Registers {
    fp::fused::ScanRegisters<Scalar, 16, 4, kernels::kTeamSize> scan;
  };
  static constexpr int64_t kRegisterState = 0;
  const Real *in;
  Real *out;

  template <typename Team>
  FP_HOST_DEVICE void operator()(Team &team, int64_t row, int64_t step,
                                 Scalar *scratch, Scalar *state,
                                 Registers &registers) const {
    const Real *x = stageBuffer(scratch, step);
    Real *y = out + row * 16;
    everyBlock(team, step == 0, x, in, scratch, state, registers);
    team.sync();
    everyBlock(team, step == 0, static_cast<const Scalar *>(scratch),
               static_cast<const Scalar *>(scratch + 16), y, state, registers);
    team.sync();
  }

  // Staged inputs, as fpc's functors run in time order have them: the
  // token's row read from one of two buffers after 32 values of scratch.
  static constexpr int64_t kStage = 16;
  static constexpr int64_t kStageOffset = 32;
  FP_HOST_DEVICE static Real *stageBuffer(Scalar *scratch, int64_t step) {
    return reinterpret_cast<Real *>(scratch + kStageOffset) +
           (step & 1) * kStage;
  }
  template <typename Team>
  FP_HOST_DEVICE void stage(Team &team, int64_t row, int64_t step,
                            Real *to) const {
    (void)step;
    fp::fused::stageRow(team, in + row * 16, 16, to);
  }

  // Chunked execution, as fpc's chunkable functors have it.
  static constexpr bool kChunkable = true;
  static constexpr int64_t kCarry = 80;
  template <typename Team>
  FP_HOST_DEVICE void summarize(Team &team, int64_t row, int64_t step,
                                bool first, Scalar *scratch, Scalar *state,
                                Registers &registers) const {
    (void)step;
    everyChunkBlock(team, first, in + row * 16, in, state, registers, scratch,
                    1);
    team.sync();
  }
  template <typename Team>
  FP_HOST_DEVICE void saveCarry(Team &team, const Scalar *state,
                                const Registers &registers,
                                Scalar *carry) const {
    fp::fused::saveSelectiveScanCarry(team, state, 16, 4, carry);
    fp::fused::saveSelectiveScanCarry(team, registers.scan, carry);
  }
  template <typename Team>
  FP_HOST_DEVICE void loadCarry(Team &team, Scalar *state, Registers &registers,
                                const Scalar *carries, int64_t count) const {
    fp::fused::loadSelectiveScanCarry(team, state, in, 16, 4, carries, kCarry,
                                      count);
    fp::fused::loadSelectiveScanCarry(team, registers.scan, state, in, carries,
                                      kCarry, count);
  }
};

template <typename Real>
void instantiateAll(Real *buffer, const fp_forward_args &args) {
  kernels::Scope scope(args.stream);
  const int64_t B = args.batch, T = args.seq_len;
  const Real *in = buffer;
  Real *out = buffer + 1024;

  kernels::unary(kernels::Neg(), 8, in, out);
  kernels::unary(kernels::Exp(), 8, in, out);
  kernels::unary(kernels::Log(), 8, in, out);
  kernels::unary(kernels::Sqrt(), 8, in, out);
  kernels::unary(kernels::Tanh(), 8, in, out);
  kernels::unary(kernels::Abs(), 8, in, out);
  kernels::unary(kernels::Silu(), 8, in, out);
  kernels::unary(kernels::Sigmoid(), 8, in, out);
  kernels::unary(kernels::Softplus(), 8, in, out);
  kernels::binary(kernels::Add(), 8, in, in, out);
  kernels::binary(kernels::Sub(), 8, in, in, out);
  kernels::binary(kernels::Mul(), 8, in, in, out);
  kernels::binary(kernels::Div(), 8, in, in, out);
  kernels::binary(kernels::Max(), 8, in, in, out);
  kernels::binary(kernels::Min(), 8, in, in, out);

  using Scalar = fp::Compute<Real>;
  kernels::fill(out, 8, Scalar(0.5));
  kernels::fillFrom(out, 8, in);
  static const Scalar constants[] = {Scalar(1), Scalar(2), Scalar(3)};
  kernels::upload(constants, 3, out);
  kernels::copy(in, 8, out);

  kernels::linear(in, B * T, 16, in, 32, in, out);
  kernels::linear(in, B * T, 16, in, 32, nullptr, out);
  kernels::linearTransposed(in, B * T, 16, in, 32, nullptr, out);
  kernels::linearStrided(in + 4, 24, B * T, 16, in, 16, false, 32, in, out);
  kernels::weightNorm(in, in, 32, 16, out);
  kernels::matmul(in, in, B * T, 4, 4, 4, false, true, out);

  kernels::sliceColumns(in, B * T, 16, 4, 8, out);
  kernels::insertColumns(in, B * T, 8, 4, 16, out);
  static const int dims[] = {0, 2};
  kernels::broadcast(in, kernels::Shape{3, {B, T, 16}}, dims, 2, out);
  static const bool reduced[] = {false, true, true};
  kernels::reduce(in, kernels::Shape{3, {B, T, 16}}, reduced,
                  kernels::Reduction::Sum, out);
  kernels::reduce(in, kernels::Shape{3, {B, T, 16}}, reduced,
                  kernels::Reduction::Max, out);
  kernels::sumRows(in, B * T, 16, out);
  kernels::triu(in, B * T, 4, out);

  kernels::shift(in, B, T, 16, 1, out);
  kernels::scan(in, in, B, T, 16, false, out);
  kernels::selectiveScan(in, in, in, in, in, in, B, T, 16, 4, out);
  kernels::selectiveScan(in, in, in, in, in, nullptr, B, T, 16, 4, out);
  kernels::causalConv(in, in, in, B, T, 16, 4, out);
  kernels::causalConv(in, in, nullptr, B, T, 16, 4, out);
  kernels::causalConvStrided(in + 2, 20, in, in, B, T, 16, 4, out);

  kernels::forEachToken<Real>(B, T, 16, 16, AllFused<Real>{in, out});
  kernels::forEachSample<Real>(B, T, 64, 128, 16, AllFused<Real>{in, out});

  kernels::l2norm(in, B * T, 16, Scalar(1e-12), out);
  kernels::layerNorm(in, in, in, B * T, 16, Scalar(1e-5), out);
  kernels::rmsNorm(in, in, B * T, 16, Scalar(1e-5), out);

  const fp::host::SolverSettings kSolver = {0.1,  0.75, 100, 1000,
                                            0.99, 0.9,  15};
  kernels::Solver<Real> solver(B, kSolver, args.training != 0, args.solver);
  kernels::copy(in, B * T * 16, out);
  solver.loop([&] {
    solver.relax(out, in, T, 16);
    solver.update();
  });
  solver.report(args.stats, args.device_stats);
  (void)solver.numSteps();
  kernels::Solver<Real> merged(B, kSolver, args.training != 0, args.solver);
  merged.loop([&] { merged.relaxAndUpdate(out, in, T, 16); });

  // DeviceGradients.cuh
  kernels::accumulate(in, 8, out);
  const kernels::GradientSum<Real> sums[] = {{in, 8, out}, {in, 2000, out + 8}};
  kernels::accumulateAll(sums, 2);
  kernels::transpose(in, 4, 8, out);
  kernels::weightGrad(in, in, B * T, 32, 16, out);
  kernels::weightGradStrided(in + 2, 40, in + 4, 24, B * T, 32, 16, out);
  kernels::sumColumns(in, B * T, 16, out);
  kernels::triuPack(in, B * T, 4, out);
  kernels::reduceMaxGrad(in, in, kernels::Shape{3, {B, T, 16}}, reduced, out);
  kernels::l2normGrad(in, in, B * T, 16, Scalar(1e-12), out);
  kernels::weightNormGrad(in, in, in, 32, 16, out, out + 512);
  kernels::causalConvGrad(in, in, in, B, T, 16, 4, out, out + 512);
  kernels::causalConvGradStrided(in + 2, 20, in, in, B, T, 16, 4, out,
                                 out + 512);
  kernels::selectiveScanGrad(in, in, in, in, in, in, B, T, 16, 4, out, out + 64,
                             out + 128, out + 192, out + 256);
}

} // namespace

/// Never called; it only makes the templates above instantiate.
void fpDeviceCompileCheck(float *f32, double *f64, fp::bf16 *bf16,
                          const fp_forward_args &args) {
  instantiateAll(f32, args);
  instantiateAll(f64, args);
  instantiateAll(bf16, args);
}
