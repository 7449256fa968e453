//===- Passes.h - fp transformation passes ----------------------*- C++ -*-===//
//
// Declarations and registration of the passes in Passes.td, and the
// pattern-population entry points they are built from.
//
//===----------------------------------------------------------------------===//

#ifndef FP_TRANSFORMS_PASSES_H
#define FP_TRANSFORMS_PASSES_H

#include "fp/Analysis/Matchers.h"
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

#define GEN_PASS_REGISTRATION
#include "fp/Transforms/Passes.h.inc"

} // namespace fp
} // namespace mlir

#endif // FP_TRANSFORMS_PASSES_H
