//===- ScanKernels.h - The reference's CUDA selective scan ------*- C++ -*-===//
//
// The boundary between the reference's LibTorch code and ScanKernels.cu,
// which nvcc compiles: raw device pointers and extents, no LibTorch types.
// Instantiated for float and double; each call enqueues on `stream` (a
// cudaStream_t) and throws std::runtime_error on a CUDA failure.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_LIB_REFERENCE_SCANKERNELS_H // NOLINT(llvm-header-guard)
#define FP_RUNTIME_LIB_REFERENCE_SCANKERNELS_H

#include <cstdint>

namespace fp::rt::ref::cuda {

/// fp::cuda::selectiveScan without the skip term: out [B, T, d].
template <typename Real>
void selectiveScan(const Real *u, const Real *delta, const Real *a,
                   const Real *bm, const Real *cm, int64_t batch,
                   int64_t length, int64_t channels, int64_t state, Real *out,
                   void *stream);

/// fp::cuda::selectiveScanGrad: the cotangents of u, Δ, A, B and C for the
/// output cotangent `grad`.
template <typename Real>
void selectiveScanGrad(const Real *u, const Real *delta, const Real *a,
                       const Real *bm, const Real *cm, const Real *grad,
                       int64_t batch, int64_t length, int64_t channels,
                       int64_t state, Real *du, Real *dDelta, Real *dA,
                       Real *dB, Real *dC, void *stream);

} // namespace fp::rt::ref::cuda

#endif // FP_RUNTIME_LIB_REFERENCE_SCANKERNELS_H
