//===- Fused.h - Per-token building blocks of fused kernels -----*- C++ -*-===//
//
// The operations of an fp.kernel body, at the level of one token. fpc emits
// each fp.kernel as a function object whose call computes one token: it
// calls these functions on that token's rows, in the body's order, with
// intermediate values in a scratch buffer that never leaves the kernel. The
// launchers (forEachToken and forEachSample in Host.h and Device.cuh) run
// it over all tokens, sample by sample in time order when the body holds a
// scan, whose state lives between tokens in a per-sample state buffer (or,
// for a selective scan on CUDA, in the registers of the threads that own
// its channels: ScanRegisters), or with a sample's tokens in chunks that
// run in parallel (Fused/Chunks.h).
//
// A token is computed by a team of threads: one on the host
// (SerialTeam), the threads of a block on CUDA. Every function splits its
// elements over the team, `for (i = rank; i < n; i += size)`; reductions
// combine per-thread partial results with team.sum / team.max, which every
// member calls and whose result every member gets; row-wise operations
// may give rows to the team's groups instead (forEachRow). The caller
// synchronises the team between operations. With the serial team every element
// and every reduction is computed in exactly the order of the unfused kernels
// of Host.h, so fusion does not change the host's results.
//
// Shapes are per token: `rows` × `width` is the token's part of a
// (B, T, rows..., width) tensor. Uniform operands (parameters, constants)
// are the same for every token.
//
// Operands are the kernel's inputs and outputs, in the call's element type
// `Real`, and intermediate values in the scratch buffer, which (like the scan
// state) holds Compute<Real>: every function takes each operand in its own
// type, computes in the arithmetic type of its output and rounds once when it
// stores. For float and double, every operand is of one type.
//
// The functions live in the parts under Fused/, one per kind of operation;
// this header includes them in order and then #undefs the element-loop
// macros that Fused/Team.h defines for them.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_FUSED_H
#define FP_RUNTIME_KERNELS_FUSED_H

// The parts in order, each after the ones it builds on (clang-format would
// sort them).
// clang-format off
#include "fp/Runtime/Kernels/Fused/Team.h"
#include "fp/Runtime/Kernels/Fused/Elementwise.h"
#include "fp/Runtime/Kernels/Fused/Layout.h"
#include "fp/Runtime/Kernels/Fused/Reductions.h"
#include "fp/Runtime/Kernels/Fused/Matmul.h"
#include "fp/Runtime/Kernels/Fused/Scans.h"
#include "fp/Runtime/Kernels/Fused/Staging.h"
#include "fp/Runtime/Kernels/Fused/Chunks.h"
#include "fp/Runtime/Kernels/Fused/SelectiveScan.h"
// clang-format on

#undef FP_TEAM_FOR
#undef FP_TEAM_ACCUMULATE
#undef FP_TEAM_FOR_ROLLED
#undef FP_TEAM_ACCUMULATE_ROLLED
#undef FP_TEAM_PASSES
#undef FP_TEAM_SIMD
#undef FP_UNROLL

#endif // FP_RUNTIME_KERNELS_FUSED_H
