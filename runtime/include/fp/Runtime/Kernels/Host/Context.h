//===- Host/Context.h - What every host kernel builds on --------*- C++ -*-===//
//
// The first part of Host.h: the headers the host kernels share, Scope (the
// execution context a generated forward opens, which the host kernels do not
// need), FP_KERNEL (kernels are not inlined into the generated forward) and
// the threads of a parallel region.
//
// Counterpart: Device/Context.cuh.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_HOST_CONTEXT_H
#define FP_RUNTIME_KERNELS_HOST_CONTEXT_H

#include "fp/Runtime/Kernels/Common.h"
#include "fp/Runtime/Kernels/Fused.h"
#ifdef FP_HOST_TEAM_SIZE
#include "fp/Runtime/Kernels/ThreadTeam.h"
#ifndef FP_HOST_TEAM_GROUP
#define FP_HOST_TEAM_GROUP FP_HOST_TEAM_SIZE
#endif
#endif

#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace fp::host {

/// The execution context of a forward. Host kernels need none; the CUDA
/// kernels' Scope makes the call's stream current.
class Scope {
public:
  explicit Scope(void *stream, bool allowTF32 = false) {
    (void)stream;
    (void)allowTF32; // host GEMMs are exact f32
  }
};

/// Kernels are not inlined into the generated forward: a layer calls
/// hundreds of them, and each body is compiled once per scalar type.
#define FP_KERNEL __attribute__((noinline)) inline

/// Work below this many scalar operations stays on the calling thread.
inline constexpr int64_t kParallelGrain = 1 << 15;

/// The threads a parallel region runs on.
inline int64_t maxThreads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

} // namespace fp::host

#endif // FP_RUNTIME_KERNELS_HOST_CONTEXT_H
