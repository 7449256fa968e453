//===- Passes.h - fp transformation passes ----------------------*- C++ -*-===//
//
// Declarations and registration of the passes in Passes.td, and the
// pattern-population entry points they are built from.
//
//===----------------------------------------------------------------------===//

#ifndef FP_TRANSFORMS_PASSES_H
#define FP_TRANSFORMS_PASSES_H

#include "fp/Dialect/FpDialect.h"
#include "fp/Dialect/FpOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;

namespace fp {

#define GEN_PASS_DECL
#include "fp/Transforms/Passes.h.inc"

/// Rewrites weight-normalised linear maps into fp.weight_norm + fp.linear.
void populateMaterializeWeightNormPatterns(RewritePatternSet &patterns);

/// Splits linear maps of concatenations and sums inside fixed-point bodies
/// whose operands are partly loop-invariant.
void populateSplitInvariantConcatPatterns(RewritePatternSet &patterns);

/// Whether `a` and `b` hold the same data: the same value (both null
/// included), or the same result of two equivalent side-effect-free ops on
/// operands that do (what CSE would merge, such as the weight
/// normalisations of one parameter that a loop body and the step after the
/// solve each compute).
bool holdSameData(Value a, Value b);

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

#define GEN_PASS_REGISTRATION
#include "fp/Transforms/Passes.h.inc"

} // namespace fp
} // namespace mlir

#endif // FP_TRANSFORMS_PASSES_H
