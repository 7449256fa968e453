//===- NarrowToSlices.cpp - Compute only the columns a slice reads --------===//
//
// fp-narrow-to-slices: an fp.slice moves towards the values it reads, so
// that what only the slice reads is computed on the slice's columns alone:
// through elementwise ops, into the weight of a linear map whose weight is
// transposed, into a concatenation's inputs, constants and other slices.
//
//===----------------------------------------------------------------------===//

#include "fp/Dialect/FpOps.h"
#include "fp/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::fp {
#define GEN_PASS_DEF_FPNARROWTOSLICES
#include "fp/Transforms/Passes.h.inc"
} // namespace mlir::fp

using namespace mlir;
using namespace mlir::fp;

namespace {

/// The base of every pattern: slices outside fixed-point bodies only (the
/// loop bodies are shaped by fp-hoist-invariants and fp-merge-linears).
template <typename Derived>
struct SlicePattern : public OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SliceOp slice,
                                PatternRewriter &rewriter) const final {
    if (slice->getParentOfType<FixedPointOp>())
      return failure();
    return static_cast<const Derived *>(this)->narrow(slice, rewriter);
  }
};

/// The columns [start, end) of `value`: a new fp.slice, or `value` itself
/// when that is all of them.
Value sliceOf(PatternRewriter &rewriter, Location loc, Value value,
              int64_t start, int64_t end) {
  auto type = cast<RankedTensorType>(value.getType());
  if (start == 0 && end == type.getShape().back())
    return value;
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = end - start;
  return SliceOp::create(rewriter, loc,
                         RankedTensorType::get(shape, type.getElementType()),
                         value, start, end);
}

/// A slice of all the columns is its input; a slice of a slice, one slice.
struct ComposeSlices : public SlicePattern<ComposeSlices> {
  using SlicePattern::SlicePattern;

  LogicalResult narrow(SliceOp slice, PatternRewriter &rewriter) const {
    int64_t start = slice.getStart(), end = slice.getEnd();
    Value input = slice.getInput();
    if (auto inner = input.getDefiningOp<SliceOp>()) {
      input = inner.getInput();
      start += inner.getStart();
      end += inner.getStart();
    } else if (start != 0 ||
               end !=
                   cast<RankedTensorType>(input.getType()).getShape().back()) {
      return failure();
    }
    rewriter.replaceOp(slice,
                       sliceOf(rewriter, slice.getLoc(), input, start, end));
    return success();
  }
};

/// A slice within one input of an fp.concat is a slice of that input.
struct SliceOfConcat : public SlicePattern<SliceOfConcat> {
  using SlicePattern::SlicePattern;

  LogicalResult narrow(SliceOp slice, PatternRewriter &rewriter) const {
    auto concat = slice.getInput().getDefiningOp<ConcatOp>();
    if (!concat)
      return failure();
    int64_t offset = 0;
    for (Value input : concat.getInputs()) {
      int64_t width = cast<RankedTensorType>(input.getType()).getShape().back();
      if (ShapedType::isDynamic(width))
        return failure();
      if (int64_t(slice.getStart()) >= offset &&
          int64_t(slice.getEnd()) <= offset + width) {
        rewriter.replaceOp(slice, sliceOf(rewriter, slice.getLoc(), input,
                                          slice.getStart() - offset,
                                          slice.getEnd() - offset));
        return success();
      }
      offset += width;
    }
    return failure();
  }
};

/// A slice of a splat (tensor.splat, or a dense splat constant) is a
/// splat of the slice's shape.
struct SliceOfSplat : public SlicePattern<SliceOfSplat> {
  using SlicePattern::SlicePattern;

  LogicalResult narrow(SliceOp slice, PatternRewriter &rewriter) const {
    auto type = cast<RankedTensorType>(slice.getType());
    Value input = slice.getInput();
    if (auto splat = input.getDefiningOp<tensor::SplatOp>()) {
      // The sizes are those of the leading dimensions, which the slice
      // keeps, unless the last dimension is dynamic too.
      if (splat.getType().isDynamicDim(splat.getType().getRank() - 1))
        return failure();
      rewriter.replaceOpWithNewOp<tensor::SplatOp>(
          slice, type, splat.getInput(), splat.getDynamicSizes());
      return success();
    }
    DenseElementsAttr dense;
    if (matchPattern(input, m_Constant(&dense)) && dense.isSplat() &&
        type.hasStaticShape()) {
      rewriter.replaceOpWithNewOp<arith::ConstantOp>(slice, type,
                                                     dense.resizeSplat(type));
      return success();
    }
    return failure();
  }
};

/// A slice of an elementwise op that only the slice reads is the op of its
/// operands' slices.
struct SliceOfElementwise : public SlicePattern<SliceOfElementwise> {
  using SlicePattern::SlicePattern;

  LogicalResult narrow(SliceOp slice, PatternRewriter &rewriter) const {
    Operation *op = slice.getInput().getDefiningOp();
    if (!op || op->getNumResults() != 1 || !op->hasOneUse() ||
        op->getNumRegions() != 0 ||
        !(OpTrait::hasElementwiseMappableTraits(op) ||
          isa<SiluOp, SigmoidOp, SoftplusOp>(op)))
      return failure();
    Type type = op->getResult(0).getType();
    if (llvm::any_of(op->getOperandTypes(),
                     [&](Type operand) { return operand != type; }))
      return failure();
    // One slice per distinct operand, so that `x * x` reads one.
    OperationState state(op->getLoc(), op->getName());
    llvm::SmallDenseMap<Value, Value> sliced;
    for (Value operand : op->getOperands()) {
      Value &part = sliced[operand];
      if (!part)
        part = sliceOf(rewriter, slice.getLoc(), operand, slice.getStart(),
                       slice.getEnd());
      state.addOperands(part);
    }
    state.addTypes(slice.getType());
    state.addAttributes(op->getAttrs());
    rewriter.replaceOp(slice, rewriter.create(state)->getResults());
    return success();
  }
};

/// A slice of `x · Wᵀ-given-transposed + b` that only the slice reads,
///   fp.linear %x, (fp.transpose %w) bias %b
/// multiplies by the weight's columns alone: the output's columns are the
/// rows of the transposed weight, the columns of %w.
struct SliceOfTransposedLinear : public SlicePattern<SliceOfTransposedLinear> {
  using SlicePattern::SlicePattern;

  LogicalResult narrow(SliceOp slice, PatternRewriter &rewriter) const {
    auto linear = slice.getInput().getDefiningOp<LinearOp>();
    if (!linear || linear.getGain() || !linear->hasOneUse())
      return failure();
    auto transpose = linear.getWeight().getDefiningOp<TransposeOp>();
    if (!transpose)
      return failure();
    const int64_t start = slice.getStart(), end = slice.getEnd();
    Location loc = linear.getLoc();
    Value columns = sliceOf(rewriter, loc, transpose.getInput(), start, end);
    auto columnsType = cast<RankedTensorType>(columns.getType());
    Value weight = TransposeOp::create(
        rewriter, transpose.getLoc(),
        RankedTensorType::get({end - start, columnsType.getDimSize(0)},
                              columnsType.getElementType()),
        columns);
    Value bias = linear.getBias()
                     ? sliceOf(rewriter, loc, linear.getBias(), start, end)
                     : Value();
    rewriter.replaceOpWithNewOp<LinearOp>(slice, slice.getType(),
                                          linear.getInput(), weight,
                                          /*gain=*/Value(), bias);
    return success();
  }
};

struct FpNarrowToSlicesPass
    : public fp::impl::FpNarrowToSlicesBase<FpNarrowToSlicesPass> {
  using FpNarrowToSlicesBase::FpNarrowToSlicesBase;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ComposeSlices, SliceOfConcat, SliceOfSplat, SliceOfElementwise,
                 SliceOfTransposedLinear>(&getContext());
    // Only the slices move: constants stay where they are and nothing is
    // folded.
    GreedyRewriteConfig config;
    config.enableFolding(false)
        .enableConstantCSE(false)
        .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
  }
};

} // namespace
