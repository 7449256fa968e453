//===- MergeLinears.cpp - One GEMM per input in fixed-point bodies -*- C++
//-*-===//
//
// fp-merge-linears: inside a fixed-point body, the plain linear maps of one
// input with loop-invariant weights become one linear map with the weights
// stacked by rows, followed by a slice per original result.
//
//===----------------------------------------------------------------------===//

#include "fp/Dialect/FpOps.h"
#include "fp/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "fp-merge-linears"

namespace mlir::fp {
#define GEN_PASS_DEF_FPMERGELINEARS
#include "fp/Transforms/Passes.h.inc"
} // namespace mlir::fp

using namespace mlir;
using namespace mlir::fp;

namespace {

/// Whether `op` may join a merged GEMM of the loop `loop`: a plain linear
/// map whose static weight (and bias) the loop does not define.
bool isMergeable(LinearOp op, LoopLikeOpInterface loop) {
  if (op.getGain())
    return false;
  auto weightType = cast<RankedTensorType>(op.getWeight().getType());
  if (!weightType.hasStaticShape())
    return false;
  if (!loop.isDefinedOutsideOfLoop(op.getWeight()))
    return false;
  Value bias = op.getBias();
  return !bias || loop.isDefinedOutsideOfLoop(bias);
}

/// The tensors stacked along their first dimension: each flattened, the
/// results concatenated, and reshaped back to `rows` rows when the inputs
/// are matrices. Vectors are concatenated directly.
Value stackRows(OpBuilder &builder, Location loc, ValueRange parts) {
  auto firstType = cast<RankedTensorType>(parts.front().getType());
  Type element = firstType.getElementType();
  int64_t rows = 0, total = 0;
  SmallVector<Value> flat;
  for (Value part : parts) {
    auto type = cast<RankedTensorType>(part.getType());
    rows += type.getDimSize(0);
    total += type.getNumElements();
    if (type.getRank() == 1) {
      flat.push_back(part);
      continue;
    }
    auto flatType = RankedTensorType::get({type.getNumElements()}, element);
    flat.push_back(ReshapeOp::create(builder, loc, flatType, part));
  }
  Value joined = ConcatOp::create(
      builder, loc, RankedTensorType::get({total}, element), flat);
  if (firstType.getRank() == 1)
    return joined;
  SmallVector<int64_t> shape(firstType.getShape());
  shape.front() = rows;
  return ReshapeOp::create(builder, loc, RankedTensorType::get(shape, element),
                           joined);
}

/// Replaces `members` (same input, same block, in block order) by one
/// linear map at the first member and a slice per member; the stacked
/// weight and bias are built before `loop`. When some members have a bias,
/// the others contribute zeros to the stacked one.
void merge(ArrayRef<LinearOp> members, Operation *loop) {
  LinearOp first = members.front();
  OpBuilder builder(loop);
  SmallVector<Value> weights, biases;
  SmallVector<Location> locations;
  bool anyBias = llvm::any_of(
      members, [](LinearOp op) { return static_cast<bool>(op.getBias()); });
  for (LinearOp op : members) {
    weights.push_back(op.getWeight());
    locations.push_back(op.getLoc());
    if (!anyBias)
      continue;
    if (op.getBias()) {
      biases.push_back(op.getBias());
      continue;
    }
    auto weightType = cast<RankedTensorType>(op.getWeight().getType());
    auto biasType = RankedTensorType::get({weightType.getDimSize(0)},
                                          weightType.getElementType());
    biases.push_back(arith::ConstantOp::create(
        builder, op.getLoc(), biasType,
        DenseElementsAttr::get(
            biasType, builder.getFloatAttr(weightType.getElementType(), 0.0)
                          .getValue())));
  }
  Location loc = FusedLoc::get(loop->getContext(), locations);
  Value weight = stackRows(builder, loc, weights);
  Value bias = anyBias ? stackRows(builder, loc, biases) : Value();

  auto firstType = cast<RankedTensorType>(first.getType());
  SmallVector<int64_t> shape(firstType.getShape());
  shape.back() = cast<RankedTensorType>(weight.getType()).getDimSize(0);
  builder.setInsertionPoint(first);
  Value all = LinearOp::create(
      builder, loc, RankedTensorType::get(shape, firstType.getElementType()),
      first.getInput(), weight, /*gain=*/Value(), bias);
  // The slices go between the merged map and the first member, which is
  // erased last: the insertion point is that member.
  int64_t offset = 0;
  for (LinearOp op : members) {
    int64_t width =
        cast<RankedTensorType>(op.getWeight().getType()).getDimSize(0);
    Value part = SliceOp::create(builder, op.getLoc(), op.getType(), all,
                                 offset, offset + width);
    offset += width;
    op.getResult().replaceAllUsesWith(part);
  }
  for (LinearOp op : llvm::reverse(members))
    op.erase();
}

struct FpMergeLinearsPass
    : public fp::impl::FpMergeLinearsBase<FpMergeLinearsPass> {
  using FpMergeLinearsBase::FpMergeLinearsBase;

  void runOnOperation() override {
    getOperation()->walk([&](FixedPointOp loop) {
      auto loopLike = cast<LoopLikeOpInterface>(loop.getOperation());
      // Members keyed by their input, in block order.
      llvm::MapVector<Value, SmallVector<LinearOp>> groups;
      for (Operation &op : loop.getBody().front())
        if (auto linear = dyn_cast<LinearOp>(op);
            linear && isMergeable(linear, loopLike))
          groups[linear.getInput()].push_back(linear);
      for (auto &[key, members] : groups) {
        if (members.size() < 2)
          continue;
        LLVM_DEBUG(llvm::dbgs() << "merging " << members.size()
                                << " linear maps at " << loop.getLoc() << "\n");
        merge(members, loop);
      }
    });
  }
};

} // namespace
