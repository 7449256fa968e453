//===- Kernels.h - The kernel library as generated code sees it -*- C++ -*-===//
//
// The one header of the kernel library that generated code includes, and the
// contract between the library and fpc's emitters (codegen/lib/
// HostEmitter.cpp, KernelEmitter.cpp). A model library has two units:
//
//   - the host unit, which fpc compiles with the host compiler (c++, never
//     nvcc): here this header is HostEntry.h and HostGradients.h, the host
//     kernels (fp::host) with their gradients and the entry points' logic;
//   - the CUDA unit, which fpc compiles with nvcc (__CUDACC__ defined): here
//     it is DeviceGradients.cuh, the CUDA kernels (fp::cuda) with their
//     gradients.
//
// Everything generated code names from the library is listed below; the rest
// of it (the parts under Host/, Device/ and Fused/ and whatever they hold
// besides these names) may change without touching the emitters.
// utils/check-kernel-api.py checks the emitted code of every model against
// the list (test/Codegen/kernel-api.test): a name the emitters start to use
// is added here first. An entry is one line, `NAME  what it is`, under the
// file that defines it: host part, then device part where the name is in
// both.
//
// Namespaces
// ----------
// A layer's namespace opens `namespace kernels = fp::host;` in the host unit
// or `namespace kernels = fp::cuda;` in the CUDA unit and names the kernels
// through the alias, so that one emitted body compiles for either target.
//
//   fp::host  the host kernels and the entry points' logic
//   fp::cuda  the CUDA kernels, under the names and with the template
//             parameters and arguments of fp::host's, on device buffers
//
// kernels::
// ---------
// Each name is in fp::host and in fp::cuda, which takes Common.h's from
// fp::host by using-declarations (Device/Context.cuh), but those marked CUDA
// only, which the host unit names only under #ifdef __CUDA_ARCH__.
//
// Common.h: elementwise function objects (for unary and binary) and types
//   kernels::Add                    a + b
//   kernels::Sub                    a - b
//   kernels::Mul                    a * b
//   kernels::Div                    a / b
//   kernels::Neg                    -a
//   kernels::Exp                    e^a (CUDA's expf unless FP_DEVICE_HOST_EXP)
//   kernels::Sqrt                   the square root
//   kernels::Sigmoid                1 / (1 + e^-a)
//   kernels::Silu                   a * sigmoid(a)
//   kernels::Softplus               log(1 + e^a), as PyTorch computes it
//   kernels::Shape                  a shape of at most kMaxRank extents
//   kernels::Reduction::Sum         reduce's rule: a sum
//   kernels::Reduction::Max         reduce's rule: a maximum
//   kernels::GradientSum            one out += in for accumulateAll
//   kernels::layoutBuffers          the byte offsets of a workspace's buffers
// Host/Context.h, Device/Context.cuh
//   kernels::Scope                  a forward's execution context (its stream)
// Host/Elementwise.h, Device/Elementwise.cuh
//   kernels::unary                  out[i] = op(x[i])
//   kernels::binary                 out[i] = op(x[i], y[i])
//   kernels::fill                   out[i] = a constant
//   kernels::fillFrom               out[i] = a scalar held in a buffer
//   kernels::copy                   a buffer copied
// Host/FusedKernels.h, Device/FusedKernels.cuh
//   kernels::forEachToken           runs a fused kernel on every token
//   kernels::forEachSample          runs one on each sample's tokens in order
//   kernels::kTeamSize              a fused kernel's block size; CUDA only
//   kernels::sampleChunks           a call's chunks per sample; CUDA only
// Host/Linear.h, Device/Linear.cuh
//   kernels::linear                 x * W^T + b over rows, a GEMM
//   kernels::linearTransposed       linear with W given as in x out
//   kernels::linearStrided          linear of column ranges, read in place
//   kernels::weightNorm             gain * W / |W| per row
//   kernels::matmul                 batched products of small matrices
//   kernels::matrixExp              e^A of a square matrix
// Host/Layout.h, Device/Layout.cuh
//   kernels::sliceColumns           a range of columns
//   kernels::insertColumns          rows written into a range of columns
//   kernels::broadcast              a tensor replicated to a larger shape
//   kernels::reduce                 a sum or max over the flagged dimensions
//   kernels::sumRows                each row's sum
//   kernels::triu                   packed rows unpacked to upper triangles
// Host/TimeCoupling.h, Device/TimeCoupling.cuh
//   kernels::shift                  tokens shifted in time, zeros where none
//   kernels::scan                   h_t = a_t * h_t-1 + x_t along time
//   kernels::selectiveScan          Mamba-1's selective scan
//   kernels::causalConvStrided      a depthwise causal convolution
//   kernels::shiftFrom              shift continuing a sequence (a chunk's)
//   kernels::scanFrom               scan from a carried state
//   kernels::selectiveScanFrom      selectiveScan from a carried state
//   kernels::causalConvFrom         causalConvStrided continuing a sequence
// Host/Norms.h, Device/Norms.cuh
//   kernels::l2norm                 x / max(|x|, eps) per row
//   kernels::layerNorm              layer normalisation per row
//   kernels::rmsNorm                RMS normalisation per row
// Host/Solver.h, Device/Solver.cuh
//   kernels::Solver                 the solver of one fp.fixed_point
// HostGradients.h, DeviceGradients.cuh: the derived backward's adjoints
//   kernels::accumulateAll          every GradientSum of a backward at once
//   kernels::transpose              out = in^T
//   kernels::sumColumns             each column's sum over all tokens
//   kernels::triuPack               upper triangles packed (triu's adjoint)
//   kernels::reduceMaxGrad          the cotangent of a max reduction
//   kernels::l2normGrad             the cotangent of l2norm
//   kernels::weightNormGrad         the cotangents of weightNorm
//   kernels::weightGrad             a linear map's weight gradient, a GEMM
//   kernels::weightGradStrided      weightGrad of column ranges, in place
//   kernels::causalConvGradStrided  the cotangents of causalConvStrided
//   kernels::selectiveScanGrad      the cotangents of selectiveScan
//
// fp::fused::
// -----------
// The per-token building blocks an emitted fused kernel calls with its team,
// the same on both targets (Fused.h).
//
// Fused/Team.h
//   fp::fused::Wide                      the type a team's row sums take
//   fp::fused::input                     element i of a kernel's input
// Fused/Elementwise.h
//   fp::fused::forEachElement            body(i) for the member's elements
//   fp::fused::forEachElementInOrder     the same, in order of i
//   fp::fused::unary                     out[i] = op(x[i])
//   fp::fused::binary                    out[i] = op(x[i], y[i])
//   fp::fused::copy                      out[i] = x[i]
//   fp::fused::fill                      out[i] = a constant
//   fp::fused::shifted                   an earlier token's row, or zeros
// Fused/Layout.h
//   fp::fused::slice                     a range of columns
//   fp::fused::insert                    rows written into columns
//   fp::fused::broadcast                 a broadcast to the token's shape
//   fp::fused::triu                      packed rows to upper triangles
// Fused/Reductions.h
//   fp::fused::sumRows                   each row's sum
//   fp::fused::reduce                    a sum or max over dimensions
//   fp::fused::l2norm                    x / max(|x|, eps) per row
//   fp::fused::layerNorm                 layer normalisation per row
//   fp::fused::rmsNorm                   RMS normalisation per row
// Fused/Matmul.h
//   fp::fused::matmul                    a token's small matrix products
// Fused/Scans.h
//   fp::fused::ScanRegisters             scan state in registers (CUDA)
//   fp::fused::scanStep                  one step of an fp.scan
//   fp::fused::selectiveScanStep         one step of a selective scan
// Fused/Staging.h
//   fp::fused::stageRow                  an input row copied to scratch
//   fp::fused::stageShifted              an earlier token's row, staged
// Fused/Chunks.h
//   fp::fused::scanSummaryStep           a chunk's step, carry only
//   fp::fused::saveScanCarry             a chunk's carry stored
//   fp::fused::loadScanCarry             the carries before a chunk folded
//   fp::fused::selectiveScanSummaryStep  scanSummaryStep of a selective scan
//   fp::fused::saveSelectiveScanCarry    saveScanCarry of a selective scan
//   fp::fused::loadSelectiveScanCarry    loadScanCarry of a selective scan
//
// fp::host::, the entry points
// ----------------------------
// The host unit's C entry points (docs/abi.md) hand each call to these.
//
// Common.h
//   fp::host::BufferSpec            one workspace buffer's size
//   fp::host::SolverSettings        the constants of one fp.fixed_point
// HostEntry.h
//   fp::host::LayerDescriptor       what the entry points know of a layer
//   fp::host::SplitSchedule         a layer's second CUDA schedule
//   fp::host::ChunkSchedule         a layer's chunked forward
//   fp::host::forward               fp_<layer>_forward
//   fp::host::backward              fp_<layer>_backward
//   fp::host::backwardNotCompiled   fp_<layer>_backward without --backward
//   fp::host::forwardChunk          fp_<layer>_forward_chunk
//   fp::host::bufferSizes           fp_<layer>_buffer_sizes
//   fp::host::scheduleName          fp_<layer>_schedule
//   fp::host::lastError             fp_model_last_error's message
//
// fp::, types
// -----------
// BFloat16.h
//   fp::Compute                     the arithmetic type of an element type
//   fp::bf16                        bfloat16 storage
//
// Macros (not checked)
// --------------------
//   FP_HOST_DEVICE       __host__ __device__ under nvcc (BFloat16.h)
//   FP_MODEL_EXPORT      marks the C entry points (HostEntry.h)
//   FP_DEVICE_HOST_EXP   defined by a CUDA unit before this header
//                        (`fpc --no-cuda-expf`): e^x as the host computes it
//
// The C ABI's own names (fp_*, FP_* of ModelABI.h) are docs/abi.md's.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_KERNELS_H
#define FP_RUNTIME_KERNELS_KERNELS_H

#ifdef __CUDACC__
#include "fp/Runtime/Kernels/DeviceGradients.cuh"
#else
#include "fp/Runtime/Kernels/HostEntry.h"
#include "fp/Runtime/Kernels/HostGradients.h"
#endif

#endif // FP_RUNTIME_KERNELS_KERNELS_H
