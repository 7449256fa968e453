//===- Matchers.cpp - Queries on fp IR for passes and codegen -------------===//
//
// The matchers that fp's passes and its emitters both ask: whether two values
// hold the same data, whether an op is per-token, and the parts of a lowered
// fixed-point loop.
//
//===----------------------------------------------------------------------===//

#include "fp/Analysis/Matchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fp;

//===----------------------------------------------------------------------===//
// Values that hold the same data
//===----------------------------------------------------------------------===//

bool mlir::fp::holdSameData(Value a, Value b) {
  if (a == b)
    return true;
  auto ra = dyn_cast_or_null<OpResult>(a);
  auto rb = dyn_cast_or_null<OpResult>(b);
  if (!ra || !rb || ra.getResultNumber() != rb.getResultNumber())
    return false;
  Operation *x = ra.getOwner(), *y = rb.getOwner();
  if (x->getNumRegions() != 0 || !isMemoryEffectFree(x) ||
      !isMemoryEffectFree(y))
    return false;
  return OperationEquivalence::isEquivalentTo(
      x, y, [](Value l, Value r) { return success(holdSameData(l, r)); },
      /*markEquivalent=*/nullptr, OperationEquivalence::IgnoreLocations);
}

//===----------------------------------------------------------------------===//
// Which operations are per-token
//===----------------------------------------------------------------------===//

bool mlir::fp::isPerTokenType(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || tensor.getRank() < 2 || !tensor.isDynamicDim(0) ||
      !tensor.isDynamicDim(1))
    return false;
  return llvm::all_of(tensor.getShape().drop_front(2), [](int64_t size) {
    return !ShapedType::isDynamic(size);
  });
}

/// A tensor the same for every token: a parameter or a constant.
static bool isUniform(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape();
}

static bool excludesTokenDims(ArrayRef<int64_t> dims) {
  return llvm::none_of(dims, [](int64_t d) { return d < 2; });
}

bool mlir::fp::isPerTokenOp(Operation *op, bool withScans) {
  if (op->getNumResults() == 0 || op->getNumRegions() != 0)
    return false;
  if (!llvm::all_of(op->getResultTypes(), isPerTokenType))
    return false;
  if (!llvm::all_of(op->getOperandTypes(),
                    [](Type t) { return isPerTokenType(t) || isUniform(t); }))
    return false;
  auto allPerToken = [&] {
    return llvm::all_of(op->getOperandTypes(), isPerTokenType);
  };
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
            arith::MaximumFOp, arith::MinimumFOp, arith::NegFOp, math::ExpOp,
            math::LogOp, math::SqrtOp, math::TanhOp, math::AbsFOp, SiluOp,
            SigmoidOp, SoftplusOp>([&](Operation *) { return allPerToken(); })
      .Case<L2NormOp, SliceOp, ConcatOp, ReshapeOp, TriuOp, MatmulOp>(
          [&](Operation *) { return allPerToken(); })
      .Case<LayerNormOp, RMSNormOp>([&](Operation *op) {
        return isPerTokenType(op->getOperand(0).getType());
      })
      .Case([&](BroadcastOp broadcast) {
        // A per-token input keeps its batch and time dimensions in place.
        if (isPerTokenType(broadcast.getInput().getType())) {
          ArrayRef<int64_t> dims = broadcast.getDims();
          return dims.size() >= 2 && dims[0] == 0 && dims[1] == 1 &&
                 excludesTokenDims(dims.drop_front(2));
        }
        return excludesTokenDims(broadcast.getDims());
      })
      .Case([&](ReduceSumOp reduce) {
        return isPerTokenType(reduce.getInput().getType()) &&
               excludesTokenDims(reduce.getDims());
      })
      .Case([&](ReduceMaxOp reduce) {
        return isPerTokenType(reduce.getInput().getType()) &&
               excludesTokenDims(reduce.getDims());
      })
      .Case([&](ScanOp scan) { return withScans && !scan.getReverse(); })
      .Case([&](SelectiveScanOp scan) {
        return withScans && isPerTokenType(scan.getU().getType()) &&
               isPerTokenType(scan.getDelta().getType()) &&
               isPerTokenType(scan.getB().getType()) &&
               isPerTokenType(scan.getC().getType());
      })
      .Default([](Operation *) { return false; });
}

//===----------------------------------------------------------------------===//
// Lowered fixed-point loops
//===----------------------------------------------------------------------===//

FailureOr<LoweredLoop> mlir::fp::matchLoweredLoop(scf::WhileOp loop) {
  auto mismatch = [&](const Twine &why) {
    return loop.emitOpError("is not a fixed-point loop in the form "
                            "fp-lower-fixed-point produces: ")
               << why,
           failure();
  };
  LoweredLoop parts;
  parts.loop = loop;

  Block &before = loop.getBefore().front();
  auto condition = dyn_cast<scf::ConditionOp>(before.getTerminator());
  auto test = condition
                  ? condition.getCondition().getDefiningOp<SolverContinueOp>()
                  : SolverContinueOp();
  if (!test || before.getOperations().size() != 2)
    return mismatch("its condition is not only fp.solver_continue");
  if (condition.getArgs() != ValueRange(before.getArguments()))
    return mismatch("its condition does not pass the iterates through");
  parts.solver = test.getState().getDefiningOp<SolverInitOp>();
  if (!parts.solver)
    return mismatch("its solver state is not from fp.solver_init");

  Block &step = loop.getAfter().front();
  auto yield = cast<scf::YieldOp>(step.getTerminator());
  for (auto [index, iterate, next] :
       llvm::enumerate(step.getArguments(), yield.getResults())) {
    auto relax = next.getDefiningOp<SolverRelaxOp>();
    if (!relax || relax->getBlock() != &step ||
        relax.getState() != parts.solver.getResult() ||
        relax.getCurrent() != iterate)
      return mismatch("iterate #" + Twine(index) +
                      " is not updated by fp.solver_relax of its solver");
    // The relaxation overwrites the iterate's storage, which reshapes and
    // slices read in place share.
    SmallVector<Value> sharing = {iterate};
    for (size_t i = 0; i < sharing.size(); ++i) {
      for (Operation *user : sharing[i].getUsers()) {
        Operation *inStep = step.findAncestorOpInBlock(*user);
        if (inStep != relax && relax->isBeforeInBlock(inStep))
          return mismatch("iterate #" + Twine(index) +
                          " is read after its fp.solver_relax");
        if (isa<ReshapeOp>(user) ||
            (isa<SliceOp>(user) && cast<SliceOp>(user).isReadInPlace()))
          sharing.push_back(user->getResult(0));
      }
    }
    parts.relaxes.push_back(relax);
  }
  for (Operation &op : step)
    if (auto update = dyn_cast<SolverUpdateOp>(op))
      if (update.getState() == parts.solver.getResult()) {
        if (parts.update)
          return mismatch("its step has two fp.solver_update");
        parts.update = update;
      }
  if (!parts.update)
    return mismatch("its step has no fp.solver_update");
  for (SolverRelaxOp relax : parts.relaxes)
    if (parts.update->isBeforeInBlock(relax))
      return mismatch("fp.solver_update comes before an fp.solver_relax");
  return parts;
}
