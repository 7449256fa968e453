//===- DeriveBackward.cpp - Reverse-mode differentiation of layers -*- C++
//-*-===//
//
// fp-derive-backward: for every layer function, the values its backward
// needs become extra results of the forward (fp.saved), and a backward
// function recomputes the rest and differentiates the layer op by op
// through DifferentiableOpInterface, with the adjoint of each fixed-point
// loop chosen by its backward mode.
//
//===----------------------------------------------------------------------===//

#include "fp/Dialect/FpInterfaces.h"
#include "fp/Dialect/FpOps.h"
#include "fp/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::fp {
#define GEN_PASS_DEF_FPDERIVEBACKWARD
#include "fp/Transforms/Passes.h.inc"
} // namespace mlir::fp

using namespace mlir;
using namespace mlir::fp;

namespace {

bool isFloatTensor(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && isa<FloatType>(type.getElementType());
}

/// Zeros of a value's type, with its dynamic sizes.
Value zerosLike(OpBuilder &b, Location loc, Value like) {
  auto type = cast<RankedTensorType>(like.getType());
  auto element = cast<FloatType>(type.getElementType());
  if (type.hasStaticShape())
    return arith::ConstantOp::create(
        b, loc, type,
        DenseElementsAttr::get(type, b.getFloatAttr(element, 0.0)));
  Value scalar =
      arith::ConstantOp::create(b, loc, element, b.getFloatAttr(element, 0.0));
  SmallVector<Value> sizes;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      sizes.push_back(tensor::DimOp::create(b, loc, like, i));
  return tensor::SplatOp::create(b, loc, type, scalar, sizes);
}

/// Derives the backward of one layer function.
class LayerDerivation {
public:
  explicit LayerDerivation(func::FuncOp forward) : forward(forward) {}

  LogicalResult run();

private:
  func::FuncOp forward;
  SmallVector<FixedPointOp> loops;
  /// Values whose cotangent is dropped (one_step fixed points).
  llvm::DenseSet<Value> constants;
  llvm::DenseMap<Value, Value> cotangents;
  llvm::MapVector<StringRef, Value> paramGradients;

  LogicalResult checkLoops();
  void saveFixedPoints();
  void accumulate(OpBuilder &b, Location loc, Value value, Value cotangent);
};

LogicalResult LayerDerivation::checkLoops() {
  WalkResult walk = forward.walk([&](FixedPointOp loop) {
    if (loop->getParentOp() != forward)
      return loop.emitOpError("cannot be differentiated inside another "
                              "region"),
             WalkResult::interrupt();
    if (loop.getBackward().getMode() != BackwardMode::OneStep)
      return loop.emitOpError("has backward mode '")
                 << stringifyBackwardMode(loop.getBackward().getMode())
                 << "', which fp-derive-backward does not derive yet (only "
                    "one_step)",
             WalkResult::interrupt();
    for (Operation *user : loop.getIterations().getUsers())
      if (!isa<func::ReturnOp>(user))
        return user->emitOpError("cannot be differentiated: it reads the "
                                 "iteration counts of a fixed-point loop"),
               WalkResult::interrupt();
    loops.push_back(loop);
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

void LayerDerivation::saveFixedPoints() {
  auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
  SmallVector<Value> results(ret.getOperands());
  SmallVector<Type> types(forward.getFunctionType().getResults());
  unsigned first = results.size();
  for (FixedPointOp loop : loops)
    for (Value fixedPoint : loop.getFixedPoints()) {
      results.push_back(fixedPoint);
      types.push_back(fixedPoint.getType());
    }
  ret->setOperands(results);
  forward.setFunctionType(FunctionType::get(
      forward.getContext(), forward.getFunctionType().getInputs(), types));
  OpBuilder b(forward);
  for (unsigned i = first; i < results.size(); ++i)
    forward.setResultAttr(i, "fp.saved", b.getUnitAttr());
}

void LayerDerivation::accumulate(OpBuilder &b, Location loc, Value value,
                                 Value cotangent) {
  if (!cotangent || constants.contains(value))
    return;
  Value &slot = cotangents[value];
  slot = slot ? arith::AddFOp::create(b, loc, slot, cotangent).getResult()
              : cotangent;
}

LogicalResult LayerDerivation::run() {
  if (failed(checkLoops()))
    return failure();
  auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
  if (ret.getNumOperands() < 1 || forward.getNumArguments() != 1)
    return forward.emitOpError("cannot derive the backward of a layer that is "
                               "not (input) -> (output, ...)");
  Value output = ret.getOperand(0);

  // The backward function, after the forward.
  OpBuilder b(forward.getContext());
  b.setInsertionPointAfter(forward);
  Location loc = forward.getLoc();
  Value input = forward.getArgument(0);
  SmallVector<Type> argTypes = {input.getType()};
  for (FixedPointOp loop : loops)
    llvm::append_range(argTypes, loop.getFixedPoints().getTypes());
  argTypes.push_back(output.getType());
  auto backward =
      func::FuncOp::create(b, loc, (forward.getSymName() + "_backward").str(),
                           FunctionType::get(b.getContext(), argTypes, {}));
  Block *body = backward.addEntryBlock();
  b.setInsertionPointToStart(body);

  // The primal: every op of the forward outside its loops, the fixed points
  // read from the saved arguments.
  IRMapping primal;
  primal.map(input, body->getArgument(0));
  unsigned next = 1;
  for (FixedPointOp loop : loops)
    for (Value fixedPoint : loop.getFixedPoints()) {
      primal.map(fixedPoint, body->getArgument(next));
      constants.insert(body->getArgument(next++));
    }
  Value outputCotangent = body->getArgument(next);
  SmallVector<Operation *> recomputed;
  for (Operation &op : forward.getBody().front()) {
    if (isa<FixedPointOp, func::ReturnOp>(op))
      continue;
    recomputed.push_back(b.clone(op, primal));
  }

  // The reverse sweep.
  cotangents[primal.lookup(output)] = outputCotangent;
  for (Operation *op : llvm::reverse(recomputed)) {
    SmallVector<Value> resultCotangents;
    bool any = false;
    for (Value result : op->getResults()) {
      resultCotangents.push_back(cotangents.lookup(result));
      any |= bool(resultCotangents.back());
    }
    if (!any)
      continue;
    if (auto param = dyn_cast<ParamOp>(op)) {
      Value &slot = paramGradients[param.getName()];
      Value g = resultCotangents.front();
      slot = slot ? arith::AddFOp::create(b, op->getLoc(), slot, g).getResult()
                  : g;
      continue;
    }
    auto differentiable = dyn_cast<DifferentiableOpInterface>(op);
    if (!differentiable) {
      if (llvm::any_of(op->getOperands(), isFloatTensor))
        return op->emitOpError("has no vector-Jacobian product rule; "
                               "fp-derive-backward cannot differentiate it");
      continue;
    }
    SmallVector<Value> operandCotangents;
    if (failed(differentiable.buildVJP(b, resultCotangents, operandCotangents)))
      return failure();
    if (operandCotangents.size() != op->getNumOperands())
      return op->emitOpError("vector-Jacobian product rule gave ")
             << operandCotangents.size() << " cotangents for "
             << op->getNumOperands() << " operands";
    for (auto [operand, cotangent] :
         llvm::zip_equal(op->getOperands(), operandCotangents))
      if (isFloatTensor(operand))
        accumulate(b, op->getLoc(), operand, cotangent);
  }

  // Results: the input's cotangent, then one gradient per parameter in
  // the order of first appearance in the forward.
  SmallVector<Value> results;
  Value inputCotangent = cotangents.lookup(body->getArgument(0));
  results.push_back(inputCotangent ? inputCotangent
                                   : zerosLike(b, loc, body->getArgument(0)));
  SmallVector<Attribute> names;
  llvm::StringSet<> seen;
  for (ParamOp param : forward.getBody().front().getOps<ParamOp>()) {
    if (!seen.insert(param.getName()).second)
      continue;
    Value g = paramGradients.lookup(param.getName());
    results.push_back(g ? g : zerosLike(b, param.getLoc(), param));
    names.push_back(param.getNameAttr());
  }
  func::ReturnOp::create(b, loc, results);
  backward.setFunctionType(FunctionType::get(b.getContext(), argTypes,
                                             ValueRange(results).getTypes()));
  backward->setAttr("fp.backward_of",
                    FlatSymbolRefAttr::get(forward.getSymNameAttr()));
  backward->setAttr("fp.param_gradients", b.getArrayAttr(names));

  // Drop what nothing reads: recomputation the gradient does not need, and
  // cotangents of constants (one_step fixed points).
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*body)))
    if (isOpTriviallyDead(&op))
      op.erase();

  saveFixedPoints();
  return success();
}

struct FpDeriveBackwardPass
    : public mlir::fp::impl::FpDeriveBackwardBase<FpDeriveBackwardPass> {
  using FpDeriveBackwardBase::FpDeriveBackwardBase;

  void runOnOperation() override {
    SmallVector<func::FuncOp> layers;
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (fn->hasAttr("fp.layer") && !fn.isExternal())
        layers.push_back(fn);
    for (func::FuncOp layer : layers)
      if (failed(LayerDerivation(layer).run()))
        return signalPassFailure();
  }
};

} // namespace
