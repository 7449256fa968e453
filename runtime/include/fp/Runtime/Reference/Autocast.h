//===- Autocast.h - Eager ops in reduced precision --------------*- C++ -*-===//
//
// The reference code runs its toy tasks under `torch.autocast` with bf16
// (docs/spec.md §1.9): projections in bf16, the scan's inputs in bf16 with its
// state in f32, the iterate in f32. AutocastGuard is that context for the eager
// reference in C++, for LibTorch 1.13 and 2.x alike.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_REFERENCE_AUTOCAST_H
#define FP_RUNTIME_REFERENCE_AUTOCAST_H

#include <torch/torch.h>

namespace fp::rt::ref {

/// While alive, LibTorch runs the ops it dispatches on `device` under
/// autocast to `dtype` (Python's `with torch.autocast(device, dtype)`); the
/// previous state comes back when it ends, and the cache of cast weights is
/// cleared when the outermost guard ends.
class AutocastGuard {
public:
  AutocastGuard(torch::DeviceType device, torch::Dtype dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard &) = delete;
  AutocastGuard &operator=(const AutocastGuard &) = delete;

private:
  torch::DeviceType device;
  bool wasEnabled;
  torch::Dtype previousDtype;
};

} // namespace fp::rt::ref

#endif // FP_RUNTIME_REFERENCE_AUTOCAST_H
