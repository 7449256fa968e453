//===- Device.cuh - CUDA kernels of compiled model libraries ---*- C++ -*-===//
//
// The CUDA counterpart of Host.h: the same functions, with the same names,
// template parameters and argument lists, in namespace fp::cuda, so that one
// generated forward body compiles against either header through
// `namespace kernels = fp::host;` or `namespace kernels = fp::cuda;`. Buffers
// are device pointers; constants of the generated code (upload) and the
// shape, dimension and flag arrays are host memory.
//
// Every kernel is launched on the stream of the calling thread's current
// Scope, which the generated forward opens first. A failed launch or CUDA or
// cuBLAS call throws DeviceError with the kernel's name and the CUDA message.
//
// Kernels are simple: one thread per element, per independent recurrence or
// per output, and one block per row where a row is reduced, with a fixed
// shuffle tree so that results never depend on scheduling. Where one thread
// accumulates, it does so in Host.h's order, so that with -fmad=false those
// kernels round exactly as the host ones, but for e^x in single precision,
// which is CUDA's expf here (Common.h). GEMMs go to cuBLAS; bf16 ones run
// on tensor cores with f32 accumulation (cublasGemmEx, CUBLAS_COMPUTE_32F).
// As in Host.h, a kernel on bf16 buffers computes in Compute<Real> (float):
// intermediate values, recurrence states, block reductions and the solver's
// state are float, and every stored result is rounded once.
//
// The solver keeps its state on the device and never waits for the device
// per step; see Solver (Device/Solver.cuh).
//
// Depends on Common.h, the CUDA runtime and cuBLAS.
//
// The kernels live in the parts under Device/, one per kind of op, which
// mirror those under Host/ part for part (Device/Linear.cuh and Host/Linear.h,
// ...; Device/SolverKernels.cuh, the device side of Solver, has no host
// counterpart); this header includes them in order.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_DEVICE_CUH
#define FP_RUNTIME_KERNELS_DEVICE_CUH

// The parts in order, each after the ones it builds on (clang-format would
// sort them).
// clang-format off
#include "fp/Runtime/Kernels/Device/Context.cuh"
#include "fp/Runtime/Kernels/Device/Launch.cuh"
#include "fp/Runtime/Kernels/Device/FusedKernels.cuh"
#include "fp/Runtime/Kernels/Device/Elementwise.cuh"
#include "fp/Runtime/Kernels/Device/Linear.cuh"
#include "fp/Runtime/Kernels/Device/Layout.cuh"
#include "fp/Runtime/Kernels/Device/TimeCoupling.cuh"
#include "fp/Runtime/Kernels/Device/Norms.cuh"
#include "fp/Runtime/Kernels/Device/SolverKernels.cuh"
#include "fp/Runtime/Kernels/Device/Solver.cuh"
// clang-format on

#endif // FP_RUNTIME_KERNELS_DEVICE_CUH
