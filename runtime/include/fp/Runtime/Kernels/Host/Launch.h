//===- Host/Launch.h - How host kernels spread their work -------*- C++ -*-===//
//
// parallelFor and forEach: the loops over OpenMP threads (and SIMD lanes) that
// the host kernels run their work in.
//
// Counterpart: Device/Launch.cuh (grids, launches and block reductions).
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_HOST_LAUNCH_H
#define FP_RUNTIME_KERNELS_HOST_LAUNCH_H

#include "fp/Runtime/Kernels/Host/Context.h"

namespace fp::host {

/// Calls body(i) for 0 ≤ i < n, in parallel when n · cost is large.
template <typename Body>
inline void parallelFor(int64_t n, int64_t cost, const Body &body) {
#pragma omp parallel for schedule(static) if (n * cost >= kParallelGrain &&    \
                                              n > 1)
  for (int64_t i = 0; i < n; ++i)
    body(i);
}

/// Elementwise loop: body(i) for every element index. The calls must be
/// independent of each other (they run in any order, and in SIMD lanes).
template <typename Body> inline void forEach(int64_t n, const Body &body) {
  constexpr int64_t kChunk = 4096;
  int64_t chunks = (n + kChunk - 1) / kChunk;
  parallelFor(chunks, kChunk, [&](int64_t c) {
    int64_t end = std::min(n, (c + 1) * kChunk);
#pragma omp simd
    for (int64_t i = c * kChunk; i < end; ++i)
      body(i);
  });
}

} // namespace fp::host

#endif // FP_RUNTIME_KERNELS_HOST_LAUNCH_H
