//===- KernelEmitter.h - Function objects for fp.kernel ops -----*- C++ -*-===//
//
// Emits an fp.kernel as a function object over the per-token building
// blocks of fp/Runtime/Kernels/Fused.h: a call computes one token with a
// team of threads, keeping the body's intermediate values in a scratch
// buffer. The same text compiles for the host (one thread per token) and
// for CUDA (one block per token). Also the helpers both the layer and the
// kernel emitters use.
//
//===----------------------------------------------------------------------===//

#ifndef FP_CODEGEN_KERNELEMITTER_H
#define FP_CODEGEN_KERNELEMITTER_H

#include "fp/Analysis/KernelBody.h"
#include "fp/Codegen/CodeWriter.h"
#include "fp/Dialect/FpOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Location.h"

#include <optional>
#include <string>

namespace mlir::fp::codegen {

/// What the forward needs to launch an emitted kernel.
struct KernelLaunch {
  /// The function object's template name.
  std::string name;
  /// Scratch elements per token team, scan state elements per sample.
  int64_t scratch = 0, state = 0;
  /// Elements computed per token: the launcher's parallelisation grain.
  int64_t cost = 0;
  /// Whether tokens run in time order (the body holds a scan).
  bool sequential = false;
  /// Whether the body reads inputs at other tokens (fp.shift): the function
  /// object then ends with the sample length.
  bool shifted = false;
};

/// Emits `template <typename Real> struct <name> { ... };` for `kernel`;
/// reports ops it cannot emit with located errors.
/// The kernel must be scheduled (fp-schedule-kernels).
FailureOr<KernelLaunch> emitKernelFunctor(CodeWriter &w, KernelOp kernel,
                                          StringRef name);

/// A C++ expression of type Scalar (the arithmetic type of the call's element
/// type) for a floating-point constant, exact for doubles.
std::string realLiteral(double value);

/// `file:line:col` of the first file location in `loc`, or "".
std::string locationComment(Location loc);

/// The Common.h function object of an elementwise op, or "" when there is
/// none.
StringRef elementwiseFunctor(Operation *op);

} // namespace mlir::fp::codegen

#endif // FP_CODEGEN_KERNELEMITTER_H
