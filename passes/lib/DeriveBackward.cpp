//===- DeriveBackward.cpp - Reverse-mode differentiation of layers --------===//
//
// fp-derive-backward: for every layer function, the values its backward
// needs become extra results of the forward (fp.saved), and a backward
// function recomputes the rest and differentiates the layer op by op
// through DifferentiableOpInterface, with the adjoint of each fixed-point
// loop chosen by its backward mode. With save-products the forward also
// saves the token-wise GEMM products the backward would recompute.
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
#include "llvm/ADT/PointerUnion.h"
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

/// Reverse-mode differentiation of a sequence of ops: cotangents of
/// values, accumulated where a value is read more than once.
struct Sweep {
  Sweep(OpBuilder &b, const llvm::DenseSet<Value> &constants,
        llvm::MapVector<StringRef, Value> *params)
      : b(b), constants(constants), params(params) {}

  OpBuilder &b;
  /// Values whose cotangent is dropped (constants of the derivative).
  const llvm::DenseSet<Value> &constants;
  /// Where parameter cotangents go; null to drop them.
  llvm::MapVector<StringRef, Value> *params;
  llvm::DenseMap<Value, Value> cotangents;

  void accumulate(Location loc, Value value, Value cotangent) {
    if (!cotangent || constants.contains(value))
      return;
    Value &slot = cotangents[value];
    slot = slot ? arith::AddFOp::create(b, loc, slot, cotangent).getResult()
                : cotangent;
  }

  /// Visits `op` in the reverse sweep.
  LogicalResult visit(Operation *op) {
    SmallVector<Value> resultCotangents;
    bool any = false;
    for (Value result : op->getResults()) {
      resultCotangents.push_back(cotangents.lookup(result));
      any |= bool(resultCotangents.back());
    }
    if (!any)
      return success();
    if (auto param = dyn_cast<ParamOp>(op)) {
      if (!params)
        return success();
      Value &slot = (*params)[param.getName()];
      Value g = resultCotangents.front();
      slot = slot ? arith::AddFOp::create(b, op->getLoc(), slot, g).getResult()
                  : g;
      return success();
    }
    auto differentiable = dyn_cast<DifferentiableOpInterface>(op);
    if (!differentiable) {
      if (llvm::any_of(op->getOperands(), isFloatTensor))
        return op->emitOpError("has no vector-Jacobian product rule; "
                               "fp-derive-backward cannot differentiate it");
      return success();
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
        accumulate(op->getLoc(), operand, cotangent);
    return success();
  }

  LogicalResult run(ArrayRef<Operation *> ops) {
    for (Operation *op : llvm::reverse(ops))
      if (failed(visit(op)))
        return failure();
    return success();
  }
};

/// One application of a loop body, cloned into the backward function with
/// its iterates bound to given values.
struct BodyClone {
  SmallVector<Operation *> ops;
  SmallVector<Value> outputs;
};

BodyClone cloneBody(OpBuilder &b, FixedPointOp loop, ValueRange iterates,
                    IRMapping &mapping) {
  BodyClone clone;
  for (auto [arg, value] :
       llvm::zip_equal(loop.getBodyBlock()->getArguments(), iterates))
    mapping.map(arg, value);
  for (Operation &op : loop.getBodyBlock()->without_terminator())
    clone.ops.push_back(b.clone(op, mapping));
  for (Value next : loop.getYield().getValues())
    clone.outputs.push_back(mapping.lookup(next));
  return clone;
}

/// The adjoint of one fixed-point loop in the reverse sweep (neumann and
/// implicit modes): the body applied once at the saved fixed points.
struct LoopAdjoint {
  FixedPointOp loop;
  SmallVector<Value> fixedPoints; // the saved arguments
  BodyClone body;
};

/// Erases ops nothing reads, innermost regions first.
void eraseDeadOps(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block))) {
    for (Region &region : op.getRegions())
      for (Block &inner : region)
        eraseDeadOps(inner);
    if (isOpTriviallyDead(&op))
      op.erase();
  }
}

/// Derives the backward of one layer function.
class LayerDerivation {
public:
  LayerDerivation(func::FuncOp forward, bool saveProducts)
      : forward(forward), saveProducts(saveProducts) {}

  LogicalResult run();

private:
  func::FuncOp forward;
  const bool saveProducts;
  SmallVector<FixedPointOp> loops;
  /// Values whose cotangent is dropped: the saved fixed points, except
  /// where the loop's adjoint uses it (neumann, implicit).
  llvm::DenseSet<Value> constants;
  llvm::MapVector<StringRef, Value> paramGradients;

  /// Backward copies of forward `fp.linear`s whose operands the backward
  /// recomputes exactly as the forward computed them (not through a
  /// truncated chain), with the forward's product.
  llvm::DenseMap<Operation *, Value> recomputedProducts;

  LogicalResult checkLoops();
  SmallVector<Value> readSavedProducts(Block &body, unsigned position);
  void saveValues(ArrayRef<Value> values);
  FailureOr<SmallVector<Value>> vjpOfBody(OpBuilder &b, const BodyClone &body,
                                          ValueRange fixedPoints,
                                          ValueRange seeds);
  LogicalResult adjointOfLoop(OpBuilder &b, Sweep &sweep,
                              const LoopAdjoint &adjoint);
};

LogicalResult LayerDerivation::checkLoops() {
  WalkResult walk = forward.walk([&](FixedPointOp loop) {
    if (loop->getParentOp() != forward)
      return loop.emitOpError("cannot be differentiated inside another "
                              "region"),
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

/// Makes the backward read the forward's products instead of recomputing
/// the ones it still needs: each becomes a new argument of `body` from
/// `position` on. Returns the forward values to save, in order.
SmallVector<Value> LayerDerivation::readSavedProducts(Block &body,
                                                      unsigned position) {
  auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
  SmallVector<Value> products;
  // Only live ops are looked up: the map's keys erased as dead are never
  // met again, and nothing is created before this walk.
  for (Operation &op : llvm::make_early_inc_range(body)) {
    Value product = recomputedProducts.lookup(&op);
    if (!product || llvm::is_contained(ret.getOperands(), product) ||
        cast<RankedTensorType>(product.getType()).hasStaticShape())
      continue;
    Value saved =
        body.insertArgument(position++, product.getType(), product.getLoc());
    op.getResult(0).replaceAllUsesWith(saved);
    op.erase();
    products.push_back(product);
  }
  return products;
}

void LayerDerivation::saveValues(ArrayRef<Value> values) {
  auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
  SmallVector<Value> results(ret.getOperands());
  SmallVector<Type> types(forward.getFunctionType().getResults());
  unsigned first = results.size();
  for (Value value : values) {
    results.push_back(value);
    types.push_back(value.getType());
  }
  ret->setOperands(results);
  forward.setFunctionType(FunctionType::get(
      forward.getContext(), forward.getFunctionType().getInputs(), types));
  OpBuilder b(forward);
  for (unsigned i = first; i < results.size(); ++i)
    forward.setResultAttr(i, "fp.saved", b.getUnitAttr());
}

/// J_yᵀ · seeds for the body at the fixed points: the cotangents of its
/// iterates, built at the builder's insertion point. Everything else the
/// sweep computes (cotangents of captured values and parameters) is
/// dropped and later erased.
FailureOr<SmallVector<Value>> LayerDerivation::vjpOfBody(OpBuilder &b,
                                                         const BodyClone &body,
                                                         ValueRange fixedPoints,
                                                         ValueRange seeds) {
  llvm::DenseSet<Value> none;
  Sweep local(b, none, nullptr);
  for (auto [output, seed] : llvm::zip_equal(body.outputs, seeds))
    local.accumulate(seed.getLoc(), output, seed);
  if (failed(local.run(body.ops)))
    return failure();
  SmallVector<Value> result;
  for (Value y : fixedPoints) {
    Value g = local.cotangents.lookup(y);
    result.push_back(g ? g : zerosLike(b, y.getLoc(), y));
  }
  return result;
}

LogicalResult LayerDerivation::adjointOfLoop(OpBuilder &b, Sweep &sweep,
                                             const LoopAdjoint &adjoint) {
  FixedPointOp loop = adjoint.loop;
  Location loc = loop.getLoc();
  // ḡ: the cotangents that reached the fixed points.
  SmallVector<Value> reached;
  bool any = false;
  for (Value y : adjoint.fixedPoints) {
    Value g = sweep.cotangents.lookup(y);
    any |= bool(g);
    reached.push_back(g ? g : zerosLike(b, loc, y));
  }
  if (!any)
    return success();

  // w = (I − J_yᵀ)⁻¹ ḡ, by the loop's mode.
  BackwardAttr mode = loop.getBackward();
  SmallVector<Value> w(reached);
  if (mode.getMode() == BackwardMode::Neumann) {
    // Horner: w ← ḡ + J_yᵀ w, k − 1 times, from w = ḡ.
    for (int64_t j = 1; j < mode.getSteps(); ++j) {
      FailureOr<SmallVector<Value>> product =
          vjpOfBody(b, adjoint.body, adjoint.fixedPoints, w);
      if (failed(product))
        return failure();
      for (auto [wi, gi, pi] : llvm::zip_equal(w, reached, *product))
        wi = arith::AddFOp::create(b, loc, gi, pi);
    }
  } else {
    // implicit: w = ḡ + J_yᵀ w as a fixed point, from ḡ, solved to the
    // mode's tolerance for every sample.
    SolverAttr forwardSolver = loop.getSolver();
    auto solver =
        SolverAttr::get(b.getContext(), mode.getTolerance().convertToDouble(),
                        /*quantile=*/1.0, forwardSolver.getMaxIterEval(),
                        forwardSolver.getMaxIterEval(), /*relaxStart=*/1.0,
                        /*relaxDecay=*/1.0, forwardSolver.getRelaxPatience());
    LogicalResult built = success();
    auto adjointLoop = FixedPointOp::create(
        b, loc, reached, solver,
        BackwardAttr::get(b.getContext(), BackwardMode::OneStep),
        [&](OpBuilder &inner, Location, ValueRange iterates) {
          FailureOr<SmallVector<Value>> product =
              vjpOfBody(inner, adjoint.body, adjoint.fixedPoints, iterates);
          SmallVector<Value> next;
          if (failed(product)) {
            built = failure();
            next.assign(iterates.begin(), iterates.end());
          } else {
            for (auto [gi, pi] : llvm::zip_equal(reached, *product))
              next.push_back(arith::AddFOp::create(inner, loc, gi, pi));
          }
          YieldOp::create(inner, loc, next);
        });
    if (failed(built))
      return failure();
    w.assign(adjointLoop.getFixedPoints().begin(),
             adjointLoop.getFixedPoints().end());
  }

  // The body's VJP at the fixed points with seed w, into the layer's
  // cotangents: what flows into the inputs and parameters the loop reads.
  for (auto [output, wi] : llvm::zip_equal(adjoint.body.outputs, w))
    sweep.accumulate(loc, output, wi);
  return sweep.run(adjoint.body.ops);
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

  // The primal: every op of the forward outside its loops, recomputed from
  // the input. Each loop's results stand for the saved fixed points, as
  // constants, except in truncated mode, where they are k − 1 further
  // applications of the body from them. In neumann and implicit modes the
  // reverse sweep also meets the loop's adjoint at its place.
  using Step = llvm::PointerUnion<Operation *, LoopAdjoint *>;
  SmallVector<Step> steps;
  std::vector<std::unique_ptr<LoopAdjoint>> adjoints;
  IRMapping primal;
  primal.map(input, body->getArgument(0));
  // Forward values the backward recomputes as they are.
  llvm::DenseSet<Value> exact = {input};
  unsigned next = 1;
  for (Operation &op : forward.getBody().front()) {
    if (isa<func::ReturnOp>(op))
      continue;
    auto loop = dyn_cast<FixedPointOp>(op);
    if (!loop) {
      Operation *copy = b.clone(op, primal);
      steps.push_back(copy);
      if (llvm::all_of(op.getOperands(),
                       [&](Value v) { return exact.contains(v); })) {
        exact.insert(op.result_begin(), op.result_end());
        if (isa<LinearOp>(op))
          recomputedProducts[copy] = op.getResult(0);
      }
      continue;
    }
    BackwardAttr mode = loop.getBackward();
    const bool throughAdjoint = mode.getMode() == BackwardMode::Neumann ||
                                mode.getMode() == BackwardMode::Implicit;
    SmallVector<Value> fixedPoints;
    for (unsigned i = 0; i < loop.getNumIterates(); ++i) {
      fixedPoints.push_back(body->getArgument(next++));
      if (!throughAdjoint)
        constants.insert(fixedPoints.back());
    }
    SmallVector<Value> results(fixedPoints);
    switch (mode.getMode()) {
    case BackwardMode::OneStep:
      break;
    case BackwardMode::Truncated:
      for (int64_t j = 1; j < mode.getSteps(); ++j) {
        IRMapping chain(primal);
        BodyClone step = cloneBody(b, loop, results, chain);
        for (Operation *cloned : step.ops)
          steps.push_back(cloned);
        results = step.outputs;
      }
      break;
    case BackwardMode::Neumann:
    case BackwardMode::Implicit: {
      auto adjoint = std::make_unique<LoopAdjoint>();
      adjoint->loop = loop;
      adjoint->fixedPoints = fixedPoints;
      IRMapping atFixedPoint(primal);
      adjoint->body = cloneBody(b, loop, fixedPoints, atFixedPoint);
      steps.push_back(adjoint.get());
      adjoints.push_back(std::move(adjoint));
      break;
    }
    }
    for (auto [fixedPoint, value] :
         llvm::zip_equal(loop.getFixedPoints(), results))
      primal.map(fixedPoint, value);
    if (results == fixedPoints)
      exact.insert(loop.getFixedPoints().begin(), loop.getFixedPoints().end());
  }
  Value outputCotangent = body->getArgument(next);

  // Frozen parameters are not trained: nothing flows back to them, and
  // their gradient is zeros.
  body->walk([&](ParamOp param) {
    if (param.getFrozen())
      constants.insert(param.getResult());
  });

  // The reverse sweep; the builder appends the adjoint ops at the end.
  Sweep sweep(b, constants, &paramGradients);
  sweep.cotangents[primal.lookup(output)] = outputCotangent;
  for (Step step : llvm::reverse(steps)) {
    if (auto *op = dyn_cast<Operation *>(step)) {
      if (failed(sweep.visit(op)))
        return failure();
    } else if (failed(adjointOfLoop(b, sweep, *cast<LoopAdjoint *>(step)))) {
      return failure();
    }
  }

  // Results: the input's cotangent, then one gradient per parameter in
  // the order of first appearance in the forward.
  SmallVector<Value> results;
  Value inputCotangent = sweep.cotangents.lookup(body->getArgument(0));
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
  backward->setAttr("fp.backward_of",
                    FlatSymbolRefAttr::get(forward.getSymNameAttr()));
  backward->setAttr("fp.param_gradients", b.getArrayAttr(names));

  // Drop what nothing reads: recomputation the gradient does not need, and
  // cotangents of constants and of the values an adjoint product only
  // passes through.
  eraseDeadOps(*body);

  // The saved values: the fixed points, then (save-products) the products
  // the backward still recomputes, whose recomputation then goes.
  SmallVector<Value> saved;
  for (FixedPointOp loop : loops)
    llvm::append_range(saved, loop.getFixedPoints());
  if (saveProducts) {
    llvm::append_range(saved, readSavedProducts(*body, next));
    eraseDeadOps(*body);
  }
  backward.setFunctionType(FunctionType::get(b.getContext(),
                                             body->getArgumentTypes(),
                                             ValueRange(results).getTypes()));
  saveValues(saved);
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
      if (failed(LayerDerivation(layer, saveProducts).run()))
        return signalPassFailure();
  }
};

} // namespace
