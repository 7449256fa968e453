//===- device_compile_check.cu - Instantiates every CUDA kernel -*- C++ -*-===//
//
// A translation unit that only has to compile: it calls every function of
// Device.cuh and the Solver for float and double, through the same
// `kernels::` alias generated code uses, so that nvcc instantiates all
// templates. Nothing here is ever run.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Kernels/Device.cuh"

namespace kernels = fp::cuda;

namespace {

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

  kernels::fill(out, 8, Real(0.5));
  kernels::fillFrom(out, 8, in);
  static const Real constants[] = {Real(1), Real(2), Real(3)};
  kernels::upload(constants, 3, out);
  kernels::copy(in, 8, out);

  kernels::linear(in, B * T, 16, in, 32, in, out);
  kernels::linear(in, B * T, 16, in, 32, nullptr, out);
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

  kernels::l2norm(in, B * T, 16, Real(1e-12), out);
  kernels::layerNorm(in, in, in, B * T, 16, Real(1e-5), out);
  kernels::rmsNorm(in, in, B * T, 16, Real(1e-5), out);

  const fp::host::SolverSettings kSolver = {0.1,  0.75, 100, 1000,
                                            0.99, 0.9,  15};
  kernels::Solver<Real> solver(B, kSolver, args.training != 0, args.solver);
  kernels::copy(in, B * T * 16, out);
  while (solver.shouldContinue())
    solver.step(out, in, T, 16);
  solver.report(args.stats);
  (void)solver.numSteps();
}

} // namespace

/// Never called; it only makes the templates above instantiate.
void fpDeviceCompileCheck(float *f32, double *f64,
                          const fp_forward_args &args) {
  instantiateAll(f32, args);
  instantiateAll(f64, args);
}
