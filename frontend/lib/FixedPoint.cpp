//===- FixedPoint.cpp - The fixed_point builtin ---------------------------===//
//
// Part of fpc. `fixed_point(map, init, ...)`, the one solver loop of a layer:
// its settings and backward mode, checked as their attributes' verifiers check
// them, and the fp.fixed_point op whose body calls the map.
//
//===----------------------------------------------------------------------===//

#include "MLIRGenInternals.h"

#include "fp/Dialect/FpOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::fp;
using namespace mlir::fp::frontend;

Val Elaborator::evalFixedPoint(const Expr &expr, ArrayRef<const Expr *> a) {
  if (ctx->decl->kind != FunctionDecl::Kind::Layer)
    return fail(expr.loc, "fixed_point belongs in a layer's body, not in a "
                          "mixer or map");
  ++ctx->numFixedPoints;
  Val map = eval(*a[0]);
  if (map.isError())
    return map;
  if (map.kind != Val::Kind::Map)
    return fail(a[0]->loc,
                "fixed_point iterates a map ('fn'), got " + describe(map));
  const FunctionDecl &decl = *map.map;
  if (decl.arguments.size() != 1)
    return fail(a[0]->loc, "fixed_point needs a map of one argument; '" +
                               decl.name + "' takes " +
                               Twine(decl.arguments.size()));

  // Solver settings: the reference FP-Mamba's unless given.
  SolverAttr defaults = SolverAttr::getReferenceDefaults(builder.getContext());
  double tolerance = defaults.getTolerance().convertToDouble();
  double quantile = defaults.getQuantile().convertToDouble();
  int64_t maxIterTrain = defaults.getMaxIterTrain();
  int64_t maxIterEval = defaults.getMaxIterEval();
  double relaxStart = defaults.getRelaxStart().convertToDouble();
  double relaxDecay = defaults.getRelaxDecay().convertToDouble();
  int64_t relaxPatience = defaults.getRelaxPatience();
  bool ok = true;
  auto setFloat = [&](const Expr *e, double &out) {
    if (!e)
      return;
    std::optional<double> v = evalFloat(*e, "a solver setting");
    ok &= v.has_value();
    if (v)
      out = *v;
  };
  auto setInt = [&](const Expr *e, int64_t &out) {
    if (!e)
      return;
    std::optional<int64_t> v = evalInt(*e, "a solver setting");
    ok &= v.has_value();
    if (v)
      out = *v;
  };
  setFloat(a[2], tolerance);
  setFloat(a[3], quantile);
  setInt(a[4], maxIterTrain);
  setInt(a[5], maxIterEval);
  setFloat(a[6], relaxStart);
  setFloat(a[7], relaxDecay);
  setInt(a[8], relaxPatience);
  if (!ok)
    return Val::error();
  auto emitAt = [&] {
    ++numErrors;
    return locator.emitError(expr.loc);
  };
  if (failed(SolverAttr::verify(emitAt, APFloat(tolerance), APFloat(quantile),
                                maxIterTrain, maxIterEval, APFloat(relaxStart),
                                APFloat(relaxDecay), relaxPatience)))
    return Val::error();
  auto solver =
      SolverAttr::get(builder.getContext(), tolerance, quantile, maxIterTrain,
                      maxIterEval, relaxStart, relaxDecay, relaxPatience);

  BackwardMode mode = BackwardMode::OneStep;
  int64_t steps = 0;
  double backwardTolerance = 0;
  if (const Expr *b = a[9]) {
    std::optional<BackwardMode> parsed;
    if (b->kind == ExprKind::Name || b->kind == ExprKind::Call)
      parsed = symbolizeBackwardMode(b->name);
    if (!parsed)
      return fail(b->loc, "unknown backward mode; expected one_step, "
                          "truncated(k), neumann(k) or implicit(tol)");
    mode = *parsed;
    bool takesSteps =
        mode == BackwardMode::Truncated || mode == BackwardMode::Neumann;
    bool takesTolerance = mode == BackwardMode::Implicit;
    unsigned wanted = takesSteps || takesTolerance ? 1 : 0;
    if (b->kind != ExprKind::Call ? wanted != 0 : b->operands.size() != wanted)
      return fail(b->loc, "backward mode '" + b->name + "' takes " +
                              (takesSteps ? "a step count: " + b->name + "(k)"
                               : takesTolerance ? "a tolerance: implicit(tol)"
                                                : std::string("no argument")));
    if (takesSteps) {
      std::optional<int64_t> k = evalInt(*b->operands[0], "a step count");
      if (!k)
        return Val::error();
      steps = *k;
    } else if (takesTolerance) {
      std::optional<double> tol = evalFloat(*b->operands[0], "a tolerance");
      if (!tol)
        return Val::error();
      backwardTolerance = *tol;
    }
    auto emitAtMode = [&] {
      ++numErrors;
      return locator.emitError(b->loc);
    };
    if (failed(BackwardAttr::verify(emitAtMode, mode, steps,
                                    APFloat(backwardTolerance))))
      return Val::error();
  }
  auto backward =
      BackwardAttr::get(builder.getContext(), mode, steps, backwardTolerance);

  // The iterate's shape, from the map's signature.
  SmallVector<int64_t> shape;
  {
    Scope *saved = scope;
    scope = map.closure;
    for (const ExprPtr &dim : decl.arguments[0].shape) {
      std::optional<int64_t> size = evalSize(*dim, "a dimension");
      if (!size) {
        scope = saved;
        return Val::error();
      }
      shape.push_back(*size);
    }
    scope = saved;
  }
  {
    Scope *saved = scope;
    scope = map.closure;
    SmallVector<int64_t> resultShape;
    for (const ExprPtr &dim : decl.resultShape)
      resultShape.push_back(evalSize(*dim, "a dimension").value_or(-1));
    scope = saved;
    if (resultShape != shape)
      return fail(a[0]->loc, "fixed_point needs a map from a shape to the "
                             "same shape; '" +
                                 decl.name + "' maps " + formatShape(shape) +
                                 " to " + formatShape(resultShape));
  }
  Location l = loc(expr.loc);
  Value init;
  Val initVal = materialise(eval(*a[1]));
  if (initVal.isError())
    return initVal;
  if (initVal.isNumber()) {
    // A constant initial iterate, shaped like the layer's input in batch
    // and time.
    Value scalar = arith::ConstantOp::create(
        builder, l, builder.getFloatAttr(elementType, initVal.asDouble()));
    SmallVector<Value> dynamicSizes;
    for (int64_t dim = 0; dim < 2; ++dim)
      dynamicSizes.push_back(
          tensor::DimOp::create(builder, l, ctx->input, dim));
    init = tensor::SplatOp::create(builder, l, scalar, activationType(shape),
                                   dynamicSizes);
  } else if (initVal.kind == Val::Kind::Tensor && initVal.activation &&
             initVal.shape == shape) {
    init = initVal.value;
  } else {
    return fail(a[1]->loc, "the initial iterate must be a number or an "
                           "activation of shape " +
                               formatShape(shape) + ", got " +
                               describe(initVal));
  }

  Val result = Val::error();
  unsigned errors = numErrors;
  auto op = FixedPointOp::create(
      builder, l, ValueRange{init}, solver, backward,
      [&](OpBuilder &b, Location bodyLoc, ValueRange iterates) {
        Val y = Val::ofTensor(iterates[0], true, shape);
        Val next = callMap(map, {y}, expr.loc);
        if (!next.isError())
          YieldOp::create(b, bodyLoc, ValueRange{next.value});
      });
  if (numErrors != errors) {
    op->erase();
    return Val::error();
  }
  ctx->iterations = op.getIterations();
  return Val::ofTensor(op.getFixedPoints()[0], true, shape);
}
