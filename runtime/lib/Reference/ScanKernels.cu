//===- ScanKernels.cu - The reference's CUDA selective scan -----*- C++ -*-===//
//
// The eager reference on CUDA runs Mamba's selective scan as the reference
// code does, as one kernel forward and one backward (mamba_ssm's
// selective_scan_cuda there): here the runtime's own kernels of
// fp.selective_scan, behind the raw-pointer interface of ScanKernels.h.
//
//===----------------------------------------------------------------------===//

#include "ScanKernels.h"

#include "fp/Runtime/Kernels/DeviceGradients.cuh"

namespace fp::rt::ref::cuda {

template <typename Real>
void selectiveScan(const Real *u, const Real *delta, const Real *a,
                   const Real *bm, const Real *cm, int64_t batch,
                   int64_t length, int64_t channels, int64_t state, Real *out,
                   void *stream) {
  fp::cuda::Scope scope(stream);
  fp::cuda::selectiveScan<Real>(u, delta, a, bm, cm, nullptr, batch, length,
                                channels, state, out);
}

template <typename Real>
void selectiveScanGrad(const Real *u, const Real *delta, const Real *a,
                       const Real *bm, const Real *cm, const Real *grad,
                       int64_t batch, int64_t length, int64_t channels,
                       int64_t state, Real *du, Real *dDelta, Real *dA,
                       Real *dB, Real *dC, void *stream) {
  fp::cuda::Scope scope(stream);
  fp::cuda::selectiveScanGrad<Real>(u, delta, a, bm, cm, grad, batch, length,
                                    channels, state, du, dDelta, dA, dB, dC);
}

#define FP_INSTANTIATE(Real)                                                   \
  template void selectiveScan<Real>(                                           \
      const Real *, const Real *, const Real *, const Real *, const Real *,    \
      int64_t, int64_t, int64_t, int64_t, Real *, void *);                     \
  template void selectiveScanGrad<Real>(                                       \
      const Real *, const Real *, const Real *, const Real *, const Real *,    \
      const Real *, int64_t, int64_t, int64_t, int64_t, Real *, Real *,        \
      Real *, Real *, Real *, void *);
FP_INSTANTIATE(float)
FP_INSTANTIATE(double)
#undef FP_INSTANTIATE

} // namespace fp::rt::ref::cuda
