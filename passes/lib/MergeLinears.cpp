//===- MergeLinears.cpp - One GEMM per input in fixed-point bodies --------===//
//
// fp-merge-linears: inside a fixed-point body, the plain linear maps of one
// input with loop-invariant weights become one linear map with the weights
// stacked by rows, followed by a slice per original result; after the loop,
// maps of one input with the same weights read the same stacked weight.
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

/// A merged group: its members' weights and biases (null where a member
/// has none), in order, and their stacked weight and bias, built before
/// `loop`.
struct Merged {
  Operation *loop;
  SmallVector<Value> weights, biases;
  Value weight, bias;
};

/// Replaces `members` (same input, same block, in block order) by one
/// linear map of the stacked `weight` and `bias` at the first member and a
/// slice per member.
void replaceByStacked(ArrayRef<LinearOp> members, Value weight, Value bias,
                      Location loc) {
  LinearOp first = members.front();
  OpBuilder builder(first);
  auto firstType = cast<RankedTensorType>(first.getType());
  SmallVector<int64_t> shape(firstType.getShape());
  shape.back() = cast<RankedTensorType>(weight.getType()).getDimSize(0);
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

/// A constant of zeros of `type`, built with `builder`.
Value zeros(OpBuilder &builder, Location loc, RankedTensorType type) {
  return arith::ConstantOp::create(
      builder, loc, type,
      DenseElementsAttr::get(
          type, builder.getFloatAttr(type.getElementType(), 0.0).getValue()));
}

/// Replaces `members` (same input, same block, in block order) by one
/// linear map at the first member and a slice per member; the stacked
/// weight and bias are built before `loop`, with zero rows (and zero
/// biases) up to a multiple of `rowMultiple` rows. When some members have a
/// bias, the others contribute zeros to the stacked one.
Merged merge(ArrayRef<LinearOp> members, Operation *loop, int64_t rowMultiple) {
  Merged merged{loop, {}, {}, {}, {}};
  for (LinearOp op : members) {
    merged.weights.push_back(op.getWeight());
    merged.biases.push_back(op.getBias());
  }
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
    biases.push_back(zeros(builder, op.getLoc(),
                           RankedTensorType::get({weightType.getDimSize(0)},
                                                 weightType.getElementType())));
  }
  Location loc = FusedLoc::get(loop->getContext(), locations);
  int64_t rows = 0;
  for (Value weight : weights)
    rows += cast<RankedTensorType>(weight.getType()).getDimSize(0);
  int64_t padded = rowMultiple > 1
                       ? (rows + rowMultiple - 1) / rowMultiple * rowMultiple
                       : rows;
  if (int64_t pad = padded - rows) {
    auto weightType = cast<RankedTensorType>(weights.front().getType());
    Type element = weightType.getElementType();
    weights.push_back(
        zeros(builder, loc,
              RankedTensorType::get({pad, weightType.getDimSize(1)}, element)));
    if (anyBias)
      biases.push_back(
          zeros(builder, loc, RankedTensorType::get({pad}, element)));
  }
  merged.weight = stackRows(builder, loc, weights);
  merged.bias = anyBias ? stackRows(builder, loc, biases) : Value();
  replaceByStacked(members, merged.weight, merged.bias, loc);
  return merged;
}

/// Whether `members`, outside every loop, map one input by the weights and
/// biases of `merged`, in order, after its loop in the loop's block.
bool matches(ArrayRef<LinearOp> members, const Merged &merged) {
  if (members.size() != merged.weights.size())
    return false;
  for (auto [i, member] : llvm::enumerate(members)) {
    LinearOp op = member;
    if (op->getBlock() != merged.loop->getBlock() ||
        !merged.loop->isBeforeInBlock(op) ||
        !holdSameData(op.getWeight(), merged.weights[i]) ||
        !holdSameData(op.getBias(), merged.biases[i]))
      return false;
  }
  return true;
}

struct FpMergeLinearsPass
    : public fp::impl::FpMergeLinearsBase<FpMergeLinearsPass> {
  using FpMergeLinearsBase::FpMergeLinearsBase;

  void runOnOperation() override {
    SmallVector<Merged> merged;
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
        merged.push_back(merge(members, loop, rowMultiple));
      }
    });

    // Outside the loops: the maps of one input with a merged group's
    // weights, as the step after a solve has them, read its stacked weight.
    llvm::MapVector<Value, SmallVector<LinearOp>> outside;
    getOperation()->walk([&](LinearOp op) {
      if (!op.getGain() && !op->getParentOfType<FixedPointOp>())
        outside[op.getInput()].push_back(op);
    });
    for (auto &entry : outside) {
      ArrayRef<LinearOp> members = entry.second;
      const Merged *group = llvm::find_if(
          merged, [&](const Merged &m) { return matches(members, m); });
      if (group == merged.end())
        continue;
      SmallVector<Location> locations;
      for (LinearOp op : members)
        locations.push_back(op.getLoc());
      replaceByStacked(members, group->weight, group->bias,
                       FusedLoc::get(&getContext(), locations));
    }
  }
};

} // namespace
