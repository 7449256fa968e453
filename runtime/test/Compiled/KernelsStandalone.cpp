//===- KernelsStandalone.cpp - Kernels.h with nothing but CBLAS -*- C++ -*-===//
//
// The kernel library as a model library's host unit sees it: Kernels.h alone,
// built against FpKernels and a CBLAS, without LibTorch or any runtime
// library, as fpc builds model libraries. It runs one kernel of each kind
// generated code calls (a GEMM through kernels::, a fused building block, the
// workspace layout) so that they are instantiated and linked: a header that
// came to need more fails this build, not a model's.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Kernels/Kernels.h"

#include <cstdio>

namespace kernels = fp::host;

int main() {
  int failures = 0;
  auto expect = [&](const char *what, double got, double want) {
    if (got != want) {
      std::fprintf(stderr, "%s: %g, expected %g\n", what, got, want);
      ++failures;
    }
  };

  // y = x · Wᵀ + b for one row of two features.
  const float x[] = {1, 2}, weight[] = {1, 0, 0, 3}, bias[] = {0.5f, -1};
  float y[2] = {};
  kernels::linear<float>(x, 1, 2, weight, 2, bias, y);
  expect("linear y[0]", y[0], 1.5);
  expect("linear y[1]", y[1], 5);

  // A fused kernel's row sum, on the host's team of one thread.
  fp::fused::SerialTeam team;
  double sum = 0;
  fp::fused::sumRows(team, y, 1, 2, &sum);
  expect("fp::fused::sumRows", sum, 6.5);

  // Two buffers, the second aligned after the first.
  const fp::host::BufferSpec specs[] = {{3, true, false}, {1, false, true}};
  size_t offsets[2] = {};
  size_t total =
      kernels::layoutBuffers(specs, 2, /*batch=*/2, /*length=*/5, 4, offsets);
  expect("layoutBuffers offsets[1]", double(offsets[1]),
         double(kernels::kBufferAlignment));
  expect("layoutBuffers total", double(total),
         double(kernels::kBufferAlignment + 5 * 4));
  return failures == 0 ? 0 : 1;
}
