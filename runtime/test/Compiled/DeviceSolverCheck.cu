//===- DeviceSolverCheck.cu - A solve on fp::cuda::Solver -------*- C++ -*-===//
//
// The CUDA half of DeviceSolverTest: uploads a SolveProblem, runs it with
// the device solver (SolverCheck.h's runSolve, the map as two elementwise
// kernels) on a stream of its own, and reads back the iterates and the
// statistics.
//
//===----------------------------------------------------------------------===//

#include "DeviceArray.cuh"
#include "SolverCheck.h"

#include "fp/Runtime/Kernels/Device.cuh"

#include <string>

namespace fp::rt::test {

namespace {

void check(cudaError_t status, const char *what) {
  checkCuda(status, "DeviceSolverCheck", what);
}

/// A stream of its own, so that the solve does not run on the legacy
/// default stream that synchronises with everything.
class OwnStream {
public:
  OwnStream() {
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
          "cudaStreamCreate");
  }
  OwnStream(const OwnStream &) = delete;
  OwnStream &operator=(const OwnStream &) = delete;
  ~OwnStream() { (void)cudaStreamDestroy(stream); }
  cudaStream_t get() const { return stream; }

private:
  cudaStream_t stream = nullptr;
};

} // namespace

bool haveCudaDevice() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return devices > 0;
}

template <typename Real>
SolveOutcome<Real> solveOnDevice(const SolveProblem<Real> &problem,
                                 const fp::host::SolverSettings &settings,
                                 const SolveSchedule &schedule) {
  const int64_t n = problem.elements();
  std::vector<DeviceArray<Real>> y, a, c;
  std::vector<Real *> iterates;
  for (size_t k = 0; k < problem.y0.size(); ++k) {
    y.emplace_back(problem.y0[k]);
    a.emplace_back(problem.a[k]);
    c.emplace_back(problem.c[k]);
    iterates.push_back(y.back().get());
  }
  const size_t count = size_t(n);
  DeviceArray<Real> fy(count), product(count);

  OwnStream stream;
  SolveOutcome<Real> outcome;
  outcome.iterations.assign(size_t(problem.batch), -1);
  outcome.residuals.assign(size_t(problem.batch), -1.0f);
  fp_solver_stats stats = {};
  stats.iterations = outcome.iterations.data();
  stats.residuals = outcome.residuals.data();
  fp_device_stats device = {};
  DeviceArray<int64_t> deviceIterations(size_t(problem.batch)), deviceSteps(1);
  DeviceArray<float> deviceResiduals(size_t(problem.batch));
  // Poisoned: -1 steps, NaN residuals, unless the report writes them.
  check(cudaMemset(deviceIterations.get(), 0xff,
                   size_t(problem.batch) * sizeof(int64_t)),
        "cudaMemset");
  check(cudaMemset(deviceSteps.get(), 0xff, sizeof(int64_t)), "cudaMemset");
  check(cudaMemset(deviceResiduals.get(), 0xff,
                   size_t(problem.batch) * sizeof(float)),
        "cudaMemset");
  {
    fp::cuda::Scope scope(stream.get());
    fp::cuda::Solver<Real> solver(problem.batch, settings, schedule.training,
                                  &schedule.overrides);
    runSolve(
        solver, iterates, fy.get(), problem.length, problem.tokenSize, schedule,
        [&](size_t k, const Real *in, Real *out) {
          fp::cuda::binary(fp::cuda::Mul(), n, a[k].get(), in, product.get());
          fp::cuda::binary(fp::cuda::Add(), n, product.get(), c[k].get(), out);
        });
    // Into device memory first: that report must not wait for the device,
    // so the host one after it reads the same finished solve.
    device.iterations = deviceIterations.get();
    device.residuals = deviceResiduals.get();
    device.steps = deviceSteps.get();
    solver.report(nullptr, &device);
    solver.report(&stats);
    outcome.ranAsGraph = solver.ranAsGraph();
  }
  check(cudaStreamSynchronize(stream.get()), "the solve");
  outcome.steps = stats.steps;
  outcome.hostWaits = stats.host_waits;
  outcome.deviceIterations = deviceIterations.read();
  outcome.deviceResiduals = deviceResiduals.read();
  outcome.deviceSteps = deviceSteps.read()[0];
  for (const DeviceArray<Real> &iterate : y)
    outcome.y.push_back(iterate.read());
  return outcome;
}

template SolveOutcome<float>
solveOnDevice<float>(const SolveProblem<float> &,
                     const fp::host::SolverSettings &, const SolveSchedule &);
template SolveOutcome<double>
solveOnDevice<double>(const SolveProblem<double> &,
                      const fp::host::SolverSettings &, const SolveSchedule &);

} // namespace fp::rt::test
