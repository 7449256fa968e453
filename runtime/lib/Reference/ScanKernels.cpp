//===- ScanKernels.cpp - Selective scan kernels under autograd --*- C++ -*-===//
//-*-===//
//
// selectiveScanKernels: the reference code runs Mamba's selective scan as one
// CUDA kernel forward and one backward (mamba_ssm's selective_scan_cuda), not
// as a loop of LibTorch ops over time; at T = 2048 the loop would be ~8000
// launches per scan, which no fair baseline spends. This wraps the runtime's
// kernels of fp.selective_scan (HostGradients.h's formulas) in an autograd
// function: fp::host's on CPU tensors, where tests check the wrapper against
// selectiveScanLoop, and fp::cuda's (ScanKernels.cu) on CUDA tensors.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Reference/Primitives.h"

#include "ScanKernels.h"

#include "fp/Runtime/Kernels/HostGradients.h"

#include <torch/autograd.h>

#if FP_REF_CUDA_SCAN
#include <c10/cuda/CUDAStream.h>
#endif

#include <stdexcept>
#include <string>

using namespace fp::rt::ref;

namespace {

/// The CUDA stream LibTorch enqueues on for `tensor`'s device.
void *streamOf(const torch::Tensor &tensor) {
#if FP_REF_CUDA_SCAN
  return c10::cuda::getCurrentCUDAStream(tensor.device().index()).stream();
#else
  (void)tensor;
  throw std::runtime_error(
      "selectiveScanKernels: this build has no CUDA kernels for the "
      "reference's selective scan (LibTorch without CUDA, or no nvcc)");
#endif
}

/// Extents of a scan: u [B, T, d], A [d, N].
struct Extents {
  int64_t batch, length, channels, state;
};

Extents extentsOf(const torch::Tensor &u, const torch::Tensor &A) {
  return {u.size(0), u.size(1), u.size(2), A.size(1)};
}

template <typename Real> const Real *in(const torch::Tensor &t) {
  return t.data_ptr<Real>();
}

template <typename Real>
void scanForward(const torch::Tensor &u, const torch::Tensor &delta,
                 const torch::Tensor &A, const torch::Tensor &Bm,
                 const torch::Tensor &Cm, torch::Tensor &out) {
  const Extents e = extentsOf(u, A);
  Real *y = out.data_ptr<Real>();
  if (u.is_cuda())
    fp::rt::ref::cuda::selectiveScan<Real>(
        in<Real>(u), in<Real>(delta), in<Real>(A), in<Real>(Bm), in<Real>(Cm),
        e.batch, e.length, e.channels, e.state, y, streamOf(u));
  else
    fp::host::selectiveScan<Real>(in<Real>(u), in<Real>(delta), in<Real>(A),
                                  in<Real>(Bm), in<Real>(Cm), nullptr, e.batch,
                                  e.length, e.channels, e.state, y);
}

template <typename Real>
void scanBackward(const torch::Tensor &u, const torch::Tensor &delta,
                  const torch::Tensor &A, const torch::Tensor &Bm,
                  const torch::Tensor &Cm, const torch::Tensor &grad,
                  torch::autograd::variable_list &out) {
  const Extents e = extentsOf(u, A);
  Real *du = out[0].data_ptr<Real>(), *dDelta = out[1].data_ptr<Real>(),
       *dA = out[2].data_ptr<Real>(), *dB = out[3].data_ptr<Real>(),
       *dC = out[4].data_ptr<Real>();
  if (u.is_cuda())
    fp::rt::ref::cuda::selectiveScanGrad<Real>(
        in<Real>(u), in<Real>(delta), in<Real>(A), in<Real>(Bm), in<Real>(Cm),
        in<Real>(grad), e.batch, e.length, e.channels, e.state, du, dDelta, dA,
        dB, dC, streamOf(u));
  else
    fp::host::selectiveScanGrad<Real>(
        in<Real>(u), in<Real>(delta), in<Real>(A), in<Real>(Bm), in<Real>(Cm),
        in<Real>(grad), e.batch, e.length, e.channels, e.state, du, dDelta, dA,
        dB, dC);
}

/// y = the recurrence's output S_t C_t (no skip term), its cotangents from
/// one recomputing backward kernel.
class SelectiveScanFunction
    : public torch::autograd::Function<SelectiveScanFunction> {
public:
  static torch::Tensor forward(torch::autograd::AutogradContext *ctx,
                               const torch::Tensor &u,
                               const torch::Tensor &delta,
                               const torch::Tensor &A, const torch::Tensor &Bm,
                               const torch::Tensor &Cm) {
    torch::Tensor out = torch::empty_like(u);
    if (u.scalar_type() == torch::kDouble)
      scanForward<double>(u, delta, A, Bm, Cm, out);
    else
      scanForward<float>(u, delta, A, Bm, Cm, out);
    ctx->save_for_backward({u, delta, A, Bm, Cm});
    return out;
  }

  static torch::autograd::variable_list
  backward(torch::autograd::AutogradContext *ctx,
           torch::autograd::variable_list grads) {
    torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor &u = saved[0], &delta = saved[1], &A = saved[2],
                        &Bm = saved[3], &Cm = saved[4];
    torch::Tensor grad = grads[0].contiguous();
    torch::autograd::variable_list out = {
        torch::empty_like(u), torch::empty_like(delta), torch::empty_like(A),
        torch::empty_like(Bm), torch::empty_like(Cm)};
    if (u.scalar_type() == torch::kDouble)
      scanBackward<double>(u, delta, A, Bm, Cm, grad, out);
    else
      scanBackward<float>(u, delta, A, Bm, Cm, grad, out);
    return out;
  }
};

void checkShapes(const torch::Tensor &u, const torch::Tensor &delta,
                 const torch::Tensor &A, const torch::Tensor &Bm,
                 const torch::Tensor &Cm) {
  const bool ok = u.dim() == 3 && delta.sizes() == u.sizes() && A.dim() == 2 &&
                  A.size(0) == u.size(2) && Bm.dim() == 3 &&
                  Bm.size(0) == u.size(0) && Bm.size(1) == u.size(1) &&
                  Bm.size(2) == A.size(1) && Cm.sizes() == Bm.sizes();
  if (!ok)
    throw std::invalid_argument(
        "selectiveScanKernels: expected u and delta [B, T, d], A [d, N], B "
        "and C [B, T, N]; got u " +
        std::string(c10::str(u.sizes())) + ", delta " +
        c10::str(delta.sizes()) + ", A " + c10::str(A.sizes()) + ", B " +
        c10::str(Bm.sizes()) + ", C " + c10::str(Cm.sizes()));
}

} // namespace

bool fp::rt::ref::haveCudaScanKernels() {
#if FP_REF_CUDA_SCAN
  return true;
#else
  return false;
#endif
}

torch::Tensor fp::rt::ref::selectiveScanKernels(
    const torch::Tensor &u, const torch::Tensor &delta, const torch::Tensor &A,
    const torch::Tensor &Bm, const torch::Tensor &Cm, const torch::Tensor &D) {
  checkShapes(u, delta, A, Bm, Cm);
  // One compute type for every operand: double if they all are, else f32.
  const bool wide = u.scalar_type() == torch::kDouble &&
                    delta.scalar_type() == torch::kDouble &&
                    A.scalar_type() == torch::kDouble &&
                    Bm.scalar_type() == torch::kDouble &&
                    Cm.scalar_type() == torch::kDouble;
  const torch::Dtype compute = wide ? torch::kDouble : torch::kFloat;
  auto prepare = [&](const torch::Tensor &t) {
    return t.to(compute).contiguous();
  };
  torch::Tensor y = SelectiveScanFunction::apply(
      prepare(u), prepare(delta), prepare(A), prepare(Bm), prepare(Cm));
  if (D.defined())
    y = y + D * u;
  return y.to(u.scalar_type());
}
