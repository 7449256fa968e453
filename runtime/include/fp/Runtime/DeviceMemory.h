//===- DeviceMemory.h - Peak device memory of a region ----------*- C++ -*-===//
//
// Device memory on CUDA has two owners in a run: LibTorch's caching
// allocator (tensors, the workspaces CompiledLayer allocates) and the
// device's default stream-ordered pool, from which model libraries take
// short-lived scratch (cudaMallocAsync). DevicePeakMemory reads the high-water
// marks of both over a region that begin() opens. Built without a CUDA
// LibTorch, or on a CPU device, it measures nothing and says so.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_DEVICEMEMORY_H
#define FP_RUNTIME_DEVICEMEMORY_H

#include <torch/types.h>

#include <cstdint>

namespace fp::rt {

class DevicePeakMemory {
public:
  explicit DevicePeakMemory(const torch::Device &device);

  /// True on a CUDA device with a CUDA LibTorch: begin() and the peaks
  /// measure something.
  bool available() const;

  /// Opens a region: resets both high-water marks and records what the
  /// caching allocator holds now.
  void begin();

  /// The most bytes allocated at once since begin(), counting what was
  /// allocated when it was called: the caching allocator's peak plus the
  /// pool's. Synchronises the device first, so work still queued counts.
  double peakBytes();

  /// peakBytes() less what the caching allocator held at begin(): the
  /// memory the region itself needed.
  double peakBytesBeyondStart() { return peakBytes() - double(start); }

private:
  torch::Device device;
  int64_t start = 0;
  void *pool = nullptr; ///< cudaMemPool_t, where the device has one
};

} // namespace fp::rt

#endif // FP_RUNTIME_DEVICEMEMORY_H
