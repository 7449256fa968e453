//===- HoistInvariants.cpp - Move invariant work out of fixed points ------===//
//
// fp-hoist-invariants: makes weight normalisation explicit, splits linear
// maps of partly invariant concatenations by column blocks and of partly
// invariant sums and differences by terms, and hoists every operation of a
// fixed-point body that does not depend on the iterate.
//
//===----------------------------------------------------------------------===//

#include "fp/Dialect/FpOps.h"
#include "fp/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "fp-hoist-invariants"

namespace mlir::fp {
#define GEN_PASS_DEF_FPHOISTINVARIANTS
#include "fp/Transforms/Passes.h.inc"
} // namespace mlir::fp

using namespace mlir;
using namespace mlir::fp;

namespace {

/// fp.linear %x, %v gain %g  →  %w = fp.weight_norm %v, %g; fp.linear %x, %w
struct MaterializeWeightNorm : public OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LinearOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getGain())
      return failure();
    Value weight = WeightNormOp::create(rewriter, op.getLoc(), op.getWeight(),
                                        op.getGain());
    rewriter.replaceOpWithNewOp<LinearOp>(op, op.getType(), op.getInput(),
                                          weight, /*gain=*/Value(),
                                          op.getBias());
    return success();
  }
};

/// Inside a fixed-point body,
///   fp.linear (fp.concat %x, %ybar), %w bias %b
/// with %x defined outside the loop and %ybar inside becomes
///   fp.linear %x, %w[:, 0:n] bias %b  +  fp.linear %ybar, %w[:, n:]
/// so that the first term can be hoisted. Invariant blocks are summed
/// first so their sum is invariant too.
struct SplitInvariantConcat : public OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LinearOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getGain())
      return failure();
    auto concat = op.getInput().getDefiningOp<ConcatOp>();
    if (!concat)
      return failure();
    auto loop = op->getParentOfType<FixedPointOp>();
    if (!loop || !loop->isProperAncestor(concat))
      return failure();
    auto loopLike = cast<LoopLikeOpInterface>(loop.getOperation());
    bool anyInvariant = false, anyVariant = false;
    for (Value part : concat.getInputs()) {
      bool invariant = loopLike.isDefinedOutsideOfLoop(part);
      anyInvariant |= invariant;
      anyVariant |= !invariant;
    }
    if (!anyInvariant || !anyVariant)
      return rewriter.notifyMatchFailure(
          op, "the concatenation is not partly loop-invariant");

    Location loc = op.getLoc();
    auto weightType = cast<RankedTensorType>(op.getWeight().getType());
    auto resultType = cast<RankedTensorType>(op.getType());
    // One partial product per block, invariant blocks first.
    SmallVector<Value> invariantTerms, variantTerms;
    int64_t offset = 0;
    for (Value part : concat.getInputs()) {
      auto partType = cast<RankedTensorType>(part.getType());
      int64_t width = partType.getShape().back();
      auto blockType = RankedTensorType::get({weightType.getDimSize(0), width},
                                             weightType.getElementType());
      Value block = SliceOp::create(rewriter, loc, blockType, op.getWeight(),
                                    offset, offset + width);
      offset += width;
      bool invariant = loopLike.isDefinedOutsideOfLoop(part);
      Value bias = invariant && invariantTerms.empty() ? op.getBias() : Value();
      Value term = LinearOp::create(rewriter, loc, resultType, part, block,
                                    /*gain=*/Value(), bias);
      (invariant ? invariantTerms : variantTerms).push_back(term);
    }
    Value sum;
    for (Value term : llvm::concat<Value>(invariantTerms, variantTerms))
      sum = sum ? arith::AddFOp::create(rewriter, loc, sum, term).getResult()
                : term;
    rewriter.replaceOp(op, sum);
    return success();
  }
};

/// Inside a fixed-point body,
///   fp.linear (arith.addf %x, %ybar), %w bias %b
/// with %x defined outside the loop and %ybar inside becomes
///   fp.linear %x, %w bias %b  +  fp.linear %ybar, %w
/// so that the first term can be hoisted and the sum joins the per-token
/// work after the GEMM (FP-Mamba's symmetric mixer input x + ȳ). A
/// difference splits alike, the bias staying with its left term: FP-Mamba's
/// mixer applied to x − y by a fixed matrix (the nonselective mixer) is
/// W x, hoisted, minus W y, whose GEMM on the iterate merges with the
/// loop's others.
struct SplitInvariantSum : public OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LinearOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getGain())
      return failure();
    Operation *combine = op.getInput().getDefiningOp();
    if (!isa_and_nonnull<arith::AddFOp, arith::SubFOp>(combine) ||
        combine->getOperand(0).getType() != combine->getOperand(1).getType())
      return failure();
    auto loop = op->getParentOfType<FixedPointOp>();
    if (!loop || !loop->isProperAncestor(combine))
      return failure();
    auto loopLike = cast<LoopLikeOpInterface>(loop.getOperation());
    Value lhs = combine->getOperand(0), rhs = combine->getOperand(1);
    if (loopLike.isDefinedOutsideOfLoop(lhs) ==
        loopLike.isDefinedOutsideOfLoop(rhs))
      return rewriter.notifyMatchFailure(
          op, "the sum is not partly loop-invariant");

    Location loc = op.getLoc();
    auto apply = [&](Value input, Value bias) -> Value {
      return LinearOp::create(rewriter, loc, op.getType(), input,
                              op.getWeight(), /*gain=*/Value(), bias);
    };
    if (isa<arith::SubFOp>(combine)) {
      rewriter.replaceOpWithNewOp<arith::SubFOp>(op, apply(lhs, op.getBias()),
                                                 apply(rhs, Value()));
      return success();
    }
    Value invariant = loopLike.isDefinedOutsideOfLoop(lhs) ? lhs : rhs;
    Value variant = invariant == lhs ? rhs : lhs;
    rewriter.replaceOpWithNewOp<arith::AddFOp>(
        op, apply(invariant, op.getBias()), apply(variant, Value()));
    return success();
  }
};

struct FpHoistInvariantsPass
    : public fp::impl::FpHoistInvariantsBase<FpHoistInvariantsPass> {
  using FpHoistInvariantsBase::FpHoistInvariantsBase;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMaterializeWeightNormPatterns(patterns);
    if (splitConcat)
      populateSplitInvariantConcatPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();

    // Hoist what no longer depends on the iterate, innermost loops first
    // (the walk is post-order).
    getOperation()->walk([&](FixedPointOp loop) {
      size_t moved =
          moveLoopInvariantCode(cast<LoopLikeOpInterface>(loop.getOperation()));
      LLVM_DEBUG(llvm::dbgs() << "hoisted " << moved << " ops out of "
                              << loop.getLoc() << "\n");
      (void)moved;
    });
  }
};

} // namespace

void mlir::fp::populateMaterializeWeightNormPatterns(
    RewritePatternSet &patterns) {
  patterns.add<MaterializeWeightNorm>(patterns.getContext());
}

void mlir::fp::populateSplitInvariantConcatPatterns(
    RewritePatternSet &patterns) {
  patterns.add<SplitInvariantConcat, SplitInvariantSum>(patterns.getContext());
}
