//===- Autocast.cpp - Eager ops in reduced precision ------------*- C++ -*-===//
//
// AutocastGuard over ATen's autocast state. PyTorch 2.4 replaced the
// per-device functions (set_cpu_enabled, set_autocast_gpu_dtype, ...) by
// ones that take the device type; both are used where they exist.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Reference/Autocast.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <stdexcept>
#include <string>

using namespace fp::rt::ref;

#if TORCH_VERSION_MAJOR > 2 ||                                                 \
    (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define FP_AUTOCAST_PER_DEVICE_TYPE 1
#else
#define FP_AUTOCAST_PER_DEVICE_TYPE 0
#endif

namespace {

void checkDevice(torch::DeviceType device) {
  if (device != torch::kCPU && device != torch::kCUDA)
    throw std::invalid_argument(
        "autocast is supported on cpu and cuda here, not " +
        c10::DeviceTypeName(device, /*lower_case=*/true));
}

bool isEnabled(torch::DeviceType device) {
#if FP_AUTOCAST_PER_DEVICE_TYPE
  return at::autocast::is_autocast_enabled(device);
#else
  return device == torch::kCUDA ? at::autocast::is_enabled()
                                : at::autocast::is_cpu_enabled();
#endif
}

void setEnabled(torch::DeviceType device, bool enabled) {
#if FP_AUTOCAST_PER_DEVICE_TYPE
  at::autocast::set_autocast_enabled(device, enabled);
#else
  if (device == torch::kCUDA)
    at::autocast::set_enabled(enabled);
  else
    at::autocast::set_cpu_enabled(enabled);
#endif
}

torch::Dtype dtypeOf(torch::DeviceType device) {
#if FP_AUTOCAST_PER_DEVICE_TYPE
  return at::autocast::get_autocast_dtype(device);
#else
  return device == torch::kCUDA ? at::autocast::get_autocast_gpu_dtype()
                                : at::autocast::get_autocast_cpu_dtype();
#endif
}

void setDtype(torch::DeviceType device, torch::Dtype dtype) {
#if FP_AUTOCAST_PER_DEVICE_TYPE
  at::autocast::set_autocast_dtype(device, dtype);
#else
  if (device == torch::kCUDA)
    at::autocast::set_autocast_gpu_dtype(dtype);
  else
    at::autocast::set_autocast_cpu_dtype(dtype);
#endif
}

} // namespace

AutocastGuard::AutocastGuard(torch::DeviceType device, torch::Dtype dtype)
    : device((checkDevice(device), device)), wasEnabled(isEnabled(device)),
      previousDtype(dtypeOf(device)) {
  setEnabled(device, true);
  setDtype(device, dtype);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (at::autocast::decrement_nesting() == 0)
    at::autocast::clear_cache();
  setEnabled(device, wasEnabled);
  setDtype(device, previousDtype);
}
