//===- ScanKernels.cpp - Selective scan kernels under autograd ------------===//
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

Extents extentsOf(const torch::Tensor &u, const torch::Tensor &a) {
  return {u.size(0), u.size(1), u.size(2), a.size(1)};
}

template <typename Real> const Real *in(const torch::Tensor &t) {
  return t.data_ptr<Real>();
}

template <typename Real>
void scanForward(const torch::Tensor &u, const torch::Tensor &delta,
                 const torch::Tensor &a, const torch::Tensor &bm,
                 const torch::Tensor &cm, torch::Tensor &out) {
  const Extents e = extentsOf(u, a);
  Real *y = out.data_ptr<Real>();
  if (u.is_cuda())
    fp::rt::ref::cuda::selectiveScan<Real>(
        in<Real>(u), in<Real>(delta), in<Real>(a), in<Real>(bm), in<Real>(cm),
        e.batch, e.length, e.channels, e.state, y, streamOf(u));
  else
    fp::host::selectiveScan<Real>(in<Real>(u), in<Real>(delta), in<Real>(a),
                                  in<Real>(bm), in<Real>(cm), nullptr, e.batch,
                                  e.length, e.channels, e.state, y);
}

template <typename Real>
void scanBackward(const torch::Tensor &u, const torch::Tensor &delta,
                  const torch::Tensor &a, const torch::Tensor &bm,
                  const torch::Tensor &cm, const torch::Tensor &grad,
                  torch::autograd::variable_list &out) {
  const Extents e = extentsOf(u, a);
  Real *du = out[0].data_ptr<Real>(), *dDelta = out[1].data_ptr<Real>(),
       *dA = out[2].data_ptr<Real>(), *dB = out[3].data_ptr<Real>(),
       *dC = out[4].data_ptr<Real>();
  if (u.is_cuda())
    fp::rt::ref::cuda::selectiveScanGrad<Real>(
        in<Real>(u), in<Real>(delta), in<Real>(a), in<Real>(bm), in<Real>(cm),
        in<Real>(grad), e.batch, e.length, e.channels, e.state, du, dDelta, dA,
        dB, dC, streamOf(u));
  else
    fp::host::selectiveScanGrad<Real>(
        in<Real>(u), in<Real>(delta), in<Real>(a), in<Real>(bm), in<Real>(cm),
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
                               const torch::Tensor &a, const torch::Tensor &bm,
                               const torch::Tensor &cm) {
    torch::Tensor out = torch::empty_like(u);
    if (u.scalar_type() == torch::kDouble)
      scanForward<double>(u, delta, a, bm, cm, out);
    else
      scanForward<float>(u, delta, a, bm, cm, out);
    ctx->save_for_backward({u, delta, a, bm, cm});
    return out;
  }

  static torch::autograd::variable_list
  backward(torch::autograd::AutogradContext *ctx,
           torch::autograd::variable_list grads) {
    torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor &u = saved[0], &delta = saved[1], &a = saved[2],
                        &bm = saved[3], &cm = saved[4];
    torch::Tensor grad = grads[0].contiguous();
    torch::autograd::variable_list out = {
        torch::empty_like(u), torch::empty_like(delta), torch::empty_like(a),
        torch::empty_like(bm), torch::empty_like(cm)};
    if (u.scalar_type() == torch::kDouble)
      scanBackward<double>(u, delta, a, bm, cm, grad, out);
    else
      scanBackward<float>(u, delta, a, bm, cm, grad, out);
    return out;
  }
};

void checkShapes(const torch::Tensor &u, const torch::Tensor &delta,
                 const torch::Tensor &a, const torch::Tensor &bm,
                 const torch::Tensor &cm) {
  const bool ok = u.dim() == 3 && delta.sizes() == u.sizes() && a.dim() == 2 &&
                  a.size(0) == u.size(2) && bm.dim() == 3 &&
                  bm.size(0) == u.size(0) && bm.size(1) == u.size(1) &&
                  bm.size(2) == a.size(1) && cm.sizes() == bm.sizes();
  if (!ok)
    throw std::invalid_argument(
        "selectiveScanKernels: expected u and delta [B, T, d], A [d, N], B "
        "and C [B, T, N]; got u " +
        std::string(c10::str(u.sizes())) + ", delta " +
        c10::str(delta.sizes()) + ", A " + c10::str(a.sizes()) + ", B " +
        c10::str(bm.sizes()) + ", C " + c10::str(cm.sizes()));
}

} // namespace

bool fp::rt::ref::haveCudaScanKernels() {
#if FP_REF_CUDA_SCAN
  return true;
#else
  return false;
#endif
}

torch::Tensor fp::rt::ref::selectiveScanKernels(const torch::Tensor &u,
                                                const torch::Tensor &delta,
                                                const torch::Tensor &a,
                                                const torch::Tensor &bm,
                                                const torch::Tensor &cm,
                                                const torch::Tensor &skip) {
  checkShapes(u, delta, a, bm, cm);
  // One compute type for every operand: double if they all are, else f32.
  const bool wide = u.scalar_type() == torch::kDouble &&
                    delta.scalar_type() == torch::kDouble &&
                    a.scalar_type() == torch::kDouble &&
                    bm.scalar_type() == torch::kDouble &&
                    cm.scalar_type() == torch::kDouble;
  const torch::Dtype compute = wide ? torch::kDouble : torch::kFloat;
  auto prepare = [&](const torch::Tensor &t) {
    return t.to(compute).contiguous();
  };
  torch::Tensor y = SelectiveScanFunction::apply(
      prepare(u), prepare(delta), prepare(a), prepare(bm), prepare(cm));
  if (skip.defined())
    y = y + skip * u;
  return y.to(u.scalar_type());
}
