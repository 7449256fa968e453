//===- DeviceCounters.h - Kernels and host syncs of a region ----*- C++ -*-===//
//
// Counts, with CUPTI, what a region of CUDA work costs: the kernels the
// device ran (every kernel, whoever launched it: LibTorch, cuBLAS or a model
// library), its memory copies and fills, and the CUDA runtime calls that
// block the host until the device is done (stream, event and device
// synchronisation, synchronous cudaMemcpy), and the device time of each
// kernel, summed by name. fp-bench counts one call of the compiled layer
// and one of the eager reference this way.
//
// Built with CUPTI when CMake finds it (FP_HAVE_CUPTI); otherwise create()
// says so and returns null.
//
//===----------------------------------------------------------------------===//

#ifndef FP_BENCH_DEVICECOUNTERS_H
#define FP_BENCH_DEVICECOUNTERS_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fp::bench {

/// The kernels of one name that a region ran, and their device time.
struct KernelTime {
  std::string name; ///< demangled, without its parameter list
  int64_t launches = 0;
  double ms = 0;
};

/// What one region ran.
struct DeviceCounts {
  int64_t kernels = 0;
  int64_t copies = 0; ///< memory copies and fills
  int64_t syncs = 0;  ///< CUDA calls that blocked the host
  /// Kernel time by kernel name, the longest total first.
  std::vector<KernelTime> kernelTimes;
};

/// One process-wide CUPTI subscription (CUPTI allows one).
class DeviceCounter {
public:
  /// The counter, or null with `why` saying why counting is unavailable.
  static std::unique_ptr<DeviceCounter> create(std::string &why);
  virtual ~DeviceCounter() = default;

  /// Starts counting.
  virtual void begin() = 0;
  /// Waits for the device, stops counting and returns what ran since
  /// begin(); its own wait is not counted.
  virtual DeviceCounts end() = 0;
};

} // namespace fp::bench

#endif // FP_BENCH_DEVICECOUNTERS_H
