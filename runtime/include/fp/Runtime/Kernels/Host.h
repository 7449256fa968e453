//===- Host.h - Host kernels of compiled model libraries -------*- C++ -*-===//
//
// The fixed helper code that fpc's host C++ emitter calls: one function per
// fp op that is not a plain elementwise expression, the fixed-point solver of
// docs/spec.md §3, and the workspace layout. Generated files include this
// header; nothing here is generated.
//
// Every kernel works on dense row-major buffers of one element type `Real`
// (float, double or bf16) and computes in Compute<Real> (BFloat16.h): it
// loads into C = Compute<Real>, keeps intermediate values and recurrence
// states in C, and rounds once when it stores a result. For float and double
// C is Real. Shapes are passed as extents; a "row" is the trailing feature
// dimension and `rows` the product of everything before it. Work is spread
// over threads with OpenMP when the library is compiled with -fopenmp; GEMMs
// go to CBLAS (OpenBLAS on Debian), bf16 ones widened to float.
//
// The header depends only on the C++17 standard library, <cblas.h> and the
// model ABI header, never on LibTorch or LLVM.
//
// The kernels live in the parts under Host/, one per kind of op, which mirror
// those under Device/ part for part (Host/Linear.h and Device/Linear.cuh, ...);
// this header includes them in order.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_HOST_H
#define FP_RUNTIME_KERNELS_HOST_H

// The parts in order, each after the ones it builds on (clang-format would
// sort them).
// clang-format off
#include "fp/Runtime/Kernels/Host/Context.h"
#include "fp/Runtime/Kernels/Host/Launch.h"
#include "fp/Runtime/Kernels/Host/Elementwise.h"
#include "fp/Runtime/Kernels/Host/FusedKernels.h"
#include "fp/Runtime/Kernels/Host/Linear.h"
#include "fp/Runtime/Kernels/Host/Layout.h"
#include "fp/Runtime/Kernels/Host/TimeCoupling.h"
#include "fp/Runtime/Kernels/Host/Norms.h"
#include "fp/Runtime/Kernels/Host/Solver.h"
// clang-format on

#endif // FP_RUNTIME_KERNELS_HOST_H
