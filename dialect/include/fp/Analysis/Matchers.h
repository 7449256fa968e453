//===- Matchers.h - Queries on fp IR for passes and codegen -----*- C++ -*-===//
//
// The matchers that fp's passes and its emitters both ask, in a library of
// their own (FpAnalysis) so that the emitters need not link the passes.
//
//===----------------------------------------------------------------------===//

#ifndef FP_ANALYSIS_MATCHERS_H
#define FP_ANALYSIS_MATCHERS_H

#include "fp/Dialect/FpOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"

namespace mlir::fp {

/// Whether `a` and `b` hold the same data: the same value (both null
/// included), or the same result of two equivalent side-effect-free ops on
/// operands that do (what CSE would merge, such as the weight
/// normalisations of one parameter that a loop body and the step after the
/// solve each compute).
bool holdSameData(Value a, Value b);

/// Whether `type` is a tensor of one row per token: (batch, time, static
/// features...), batch and time dynamic.
bool isPerTokenType(Type type);

/// Whether fp-fuse-mix-scan may put `op` into an fp.kernel: it computes
/// each token of its per-token results from that token of its per-token
/// operands and from uniform (static) operands. Forward scans qualify only
/// `withScans`.
bool isPerTokenOp(Operation *op, bool withScans);

/// The parts of a loop in the form fp-lower-fixed-point produces: an
/// scf.while whose condition is `fp.solver_continue` of `solver` passing the
/// iterates through, and whose step ends with one `fp.solver_relax` per
/// iterate (yielded in order, each the last reader of its iterate) and one
/// `fp.solver_update` after them.
struct LoweredLoop {
  scf::WhileOp loop;
  SolverInitOp solver;
  SmallVector<SolverRelaxOp> relaxes;
  SolverUpdateOp update;
};

/// Matches `loop` against the lowered form; on mismatch, emits an error at
/// the loop that says why and fails.
FailureOr<LoweredLoop> matchLoweredLoop(scf::WhileOp loop);

} // namespace mlir::fp

#endif // FP_ANALYSIS_MATCHERS_H
