//===- ReuseProducts.cpp - Reuse computed partial products ------*- C++ -*-===//
//
// fp-reuse-products: a linear map of a concatenation or a sum outside the
// fixed points whose partial products are already computed (the products
// fp-hoist-invariants moved out of a loop, when the layer applies the
// loop's body once more after the solve) is split into those products and
// the rest.
//
//===----------------------------------------------------------------------===//

#include "fp/Dialect/FpOps.h"
#include "fp/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::fp {
#define GEN_PASS_DEF_FPREUSEPRODUCTS
#include "fp/Transforms/Passes.h.inc"
} // namespace mlir::fp

using namespace mlir;
using namespace mlir::fp;

namespace {

/// Whether `weight` is the columns [start, end) of `full`.
bool isBlockOf(Value weight, Value full, int64_t start, int64_t end) {
  if (start == 0 &&
      end == cast<RankedTensorType>(full.getType()).getShape().back())
    return holdSameData(weight, full);
  auto slice = weight.getDefiningOp<SliceOp>();
  return slice && int64_t(slice.getStart()) == start &&
         int64_t(slice.getEnd()) == end && holdSameData(slice.getInput(), full);
}

/// An fp.linear before `op` in its block computing `input · weight + bias`
/// with `weight` the columns [start, end) of `full`, or null.
LinearOp findTerm(Operation *op, Value input, Value full, int64_t start,
                  int64_t end, Value bias) {
  for (Operation *user : input.getUsers()) {
    auto term = dyn_cast<LinearOp>(user);
    if (term && term != op && !term.getGain() && term.getInput() == input &&
        term.getType() == op->getResult(0).getType() &&
        term->getBlock() == op->getBlock() && term->isBeforeInBlock(op) &&
        holdSameData(term.getBias(), bias) &&
        isBlockOf(term.getWeight(), full, start, end))
      return term;
  }
  return {};
}

/// The columns [start, end) of `weight`: itself if that is all of them, an
/// fp.slice before `op` in its block if there is one, else a new one.
Value weightBlock(OpBuilder &builder, Operation *op, Value weight,
                  int64_t start, int64_t end) {
  auto type = cast<RankedTensorType>(weight.getType());
  if (start == 0 && end == type.getShape().back())
    return weight;
  for (Operation *user : weight.getUsers())
    if (auto slice = dyn_cast<SliceOp>(user);
        slice && int64_t(slice.getStart()) == start &&
        int64_t(slice.getEnd()) == end && slice->getBlock() == op->getBlock() &&
        slice->isBeforeInBlock(op))
      return slice;
  auto blockType = RankedTensorType::get({type.getDimSize(0), end - start},
                                         type.getElementType());
  return SliceOp::create(builder, op->getLoc(), blockType, weight, start, end);
}

/// Replaces `op`, a linear map of a concatenation or sum outside every
/// fixed point, by the sum of its partial products when some of them are
/// already computed before it; returns whether it did.
bool reuseTerms(LinearOp op) {
  if (op.getGain() || op->getParentOfType<FixedPointOp>())
    return false;
  OpBuilder builder(op);
  Location loc = op.getLoc();
  Value weight = op.getWeight();
  // The parts, each with its columns of the weight.
  struct Part {
    Value input;
    int64_t start, end;
  };
  SmallVector<Part> parts;
  if (auto concat = op.getInput().getDefiningOp<ConcatOp>()) {
    int64_t offset = 0;
    for (Value part : concat.getInputs()) {
      int64_t width = cast<RankedTensorType>(part.getType()).getShape().back();
      parts.push_back({part, offset, offset + width});
      offset += width;
    }
  } else if (auto sum = op.getInput().getDefiningOp<arith::AddFOp>();
             sum && sum.getLhs().getType() == sum.getRhs().getType()) {
    int64_t width = cast<RankedTensorType>(weight.getType()).getShape().back();
    parts.push_back({sum.getLhs(), 0, width});
    parts.push_back({sum.getRhs(), 0, width});
  } else {
    return false;
  }
  // Existing terms first, the first with the bias, as the split makes them.
  SmallVector<Value> shared;
  SmallVector<Part> rest;
  for (const Part &part : parts) {
    Value bias = shared.empty() ? op.getBias() : Value();
    if (LinearOp term =
            findTerm(op, part.input, weight, part.start, part.end, bias))
      shared.push_back(term);
    else
      rest.push_back(part);
  }
  if (shared.empty())
    return false;
  Value result;
  for (Value term : shared)
    result = result
                 ? arith::AddFOp::create(builder, loc, result, term).getResult()
                 : term;
  for (const Part &part : rest) {
    Value block = weightBlock(builder, op, weight, part.start, part.end);
    Value term = LinearOp::create(builder, loc, op.getType(), part.input, block,
                                  /*gain=*/Value(), /*bias=*/Value());
    result = arith::AddFOp::create(builder, loc, result, term);
  }
  op.replaceAllUsesWith(result);
  op.erase();
  return true;
}

struct FpReuseProductsPass
    : public fp::impl::FpReuseProductsBase<FpReuseProductsPass> {
  using FpReuseProductsBase::FpReuseProductsBase;

  void runOnOperation() override {
    SmallVector<LinearOp> linears;
    getOperation()->walk([&](LinearOp op) { linears.push_back(op); });
    for (LinearOp op : linears) {
      Value input = op.getInput();
      if (reuseTerms(op) && input.use_empty())
        input.getDefiningOp()->erase();
    }
  }
};

} // namespace
