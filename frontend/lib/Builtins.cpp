//===- Builtins.cpp - The built-in functions ------------------------------===//
//
// Part of fpc. The built-in functions, one small function each. A single
// table gives each builtin's name, its parameters (how many of them a call
// must give) and whether it may be called outside a function body; a call is
// looked up there, its arguments are bound, and the builtin's own function
// runs. fixed_point, the largest, lives in FixedPoint.cpp.
//
//===----------------------------------------------------------------------===//

#include "MLIRGenInternals.h"

#include "fp/Dialect/FpOps.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <iterator>

using namespace mlir;
using namespace mlir::fp;
using namespace mlir::fp::frontend;

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

struct Elaborator::BuiltinInfo {
  StringRef name;
  BuiltinHandler handler;
  /// Whether it may be called outside a function body (configurations,
  /// model fields), where it computes on numbers; the others compute
  /// tensors.
  bool anywhere;
  /// Its parameter names, which the call's arguments are bound to (bindArgs)
  /// before the handler runs; the first `required` of them must be given.
  /// None: the handler reads the call's arguments itself.
  SmallVector<StringRef, 4> params;
  unsigned required;
};

const Elaborator::BuiltinInfo *Elaborator::lookupBuiltin(StringRef name) {
  constexpr bool anywhere = true, inBody = false;
  static const BuiltinInfo builtins[] = {
      // Elementwise.
      {"silu", &Elaborator::builtinSilu, inBody, {"x"}, 1},
      {"sigmoid", &Elaborator::builtinSigmoid, inBody, {"x"}, 1},
      {"softplus", &Elaborator::builtinSoftplus, inBody, {"x"}, 1},
      {"exp", &Elaborator::builtinExp, anywhere, {"x"}, 1},
      {"tanh", &Elaborator::builtinTanh, anywhere, {"x"}, 1},
      {"sqrt", &Elaborator::builtinSqrt, anywhere, {"x"}, 1},
      {"log", &Elaborator::builtinLog, anywhere, {"x"}, 1},
      // Normalisations.
      {"l2norm", &Elaborator::builtinL2Norm, inBody, {"x", "eps"}, 1},
      {"layer_norm",
       &Elaborator::builtinLayerNorm,
       inBody,
       {"x", "weight", "bias", "eps"},
       3},
      {"rms_norm",
       &Elaborator::builtinRMSNorm,
       inBody,
       {"x", "weight", "eps"},
       2},
      // Time.
      {"shift", &Elaborator::builtinShift, inBody, {"x", "by"}, 1},
      {"scan",
       &Elaborator::builtinScan,
       inBody,
       {"coeff", "input", "reverse"},
       2},
      {"selective_scan",
       &Elaborator::builtinSelectiveScan,
       inBody,
       {"u", "delta", "A", "B", "C", "D"},
       5},
      {"ssd_scan",
       &Elaborator::builtinSsdScan,
       inBody,
       {"x", "dt", "A", "B", "C", "D", "groups"},
       5},
      {"causal_conv",
       &Elaborator::builtinCausalConv,
       inBody,
       {"x", "weight", "bias"},
       2},
      // Linear algebra.
      {"linear",
       &Elaborator::builtinLinear,
       inBody,
       {"x", "weight", "bias"},
       2},
      {"wn_linear",
       &Elaborator::builtinWNLinear,
       inBody,
       {"x", "weight", "gain", "bias"},
       3},
      {"dot", &Elaborator::builtinDot, inBody, {"a", "b"}, 2},
      {"sum", &Elaborator::builtinSum, inBody, {"x"}, 1},
      {"max", &Elaborator::builtinMax, anywhere, {"a", "b"}, 1},
      {"min", &Elaborator::builtinMin, anywhere, {"a", "b"}, 1},
      {"matmul", &Elaborator::builtinMatmul, inBody, {"a", "b"}, 2},
      {"matvec", &Elaborator::builtinMatvec, inBody, {"m", "v"}, 2},
      {"t", &Elaborator::builtinTranspose, inBody, {}, 0},
      {"triu", &Elaborator::builtinTriu, inBody, {"x"}, 1},
      {"tril", &Elaborator::builtinTril, inBody, {"x"}, 1},
      {"matrix_exp", &Elaborator::builtinMatrixExp, inBody, {"x"}, 1},
      {"reshape", &Elaborator::builtinReshape, inBody, {"x", "shape"}, 2},
      {"concat", &Elaborator::builtinConcat, inBody, {}, 0},
      {"fill", &Elaborator::builtinFill, inBody, {"value", "like"}, 2},
      {"fixed_point",
       &Elaborator::evalFixedPoint,
       inBody,
       {"map", "init", "tolerance", "quantile", "max_iter_train",
        "max_iter_eval", "relax_start", "relax_decay", "relax_patience",
        "backward"},
       2},
      // Configuration arithmetic.
      {"ceil_div", &Elaborator::builtinCeilDiv, anywhere, {"a", "b"}, 2},
      {"floor_div", &Elaborator::builtinFloorDiv, anywhere, {"a", "b"}, 2},
      {"isqrt", &Elaborator::builtinISqrt, anywhere, {"n"}, 1},
      {"divisor_le",
       &Elaborator::builtinDivisorLe,
       anywhere,
       {"n", "bound"},
       2},
      {"is_pow2", &Elaborator::builtinIsPow2, anywhere, {"n"}, 1},
      {"float", &Elaborator::builtinFloat, anywhere, {"x"}, 1},
  };
  const BuiltinInfo *it = llvm::find_if(
      builtins, [&](const BuiltinInfo &b) { return b.name == name; });
  return it == std::end(builtins) ? nullptr : it;
}

Val Elaborator::evalBuiltin(const Expr &expr) {
  const BuiltinInfo *builtin = lookupBuiltin(expr.name);
  if (!builtin) {
    auto diag = emitError(expr.loc) << "unknown function '" << expr.name << "'";
    std::string best = closestName(expr.name);
    if (!best.empty())
      diag << "; did you mean '" << best << "'?";
    return Val::error();
  }

  // Outside a function body (configurations, model fields) only
  // compile-time arithmetic is possible.
  if (!ctx->func && !builtin->anywhere)
    return fail(expr.loc, "'" + expr.name +
                              "' computes a tensor; a configuration value is "
                              "a number, a boolean, or a mixer or layer");

  SmallVector<const Expr *> a;
  if (!builtin->params.empty() &&
      failed(bindArgs(expr, builtin->params, builtin->required, a)))
    return Val::error();
  return (this->*builtin->handler)(expr, a);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

Val Elaborator::evalMathBuiltin(const Expr &expr, ArrayRef<const Expr *> a,
                                function_ref<Val(double)> fold,
                                function_ref<Value(Location, Value)> create) {
  Val x = materialise(eval(*a[0]));
  if (x.isError())
    return x;
  if (fold && x.isNumber())
    return fold(x.asDouble());
  if (x.kind != Val::Kind::Tensor)
    return fail(a[0]->loc,
                "'" + expr.name + "' expects a tensor, got " + describe(x));
  Val result = x;
  result.value = create(loc(expr.loc), x.value);
  return result;
}

Val Elaborator::builtinSilu(const Expr &expr, ArrayRef<const Expr *> a) {
  return evalMathBuiltin(expr, a, /*fold=*/nullptr,
                         [&](Location l, Value x) -> Value {
                           return SiluOp::create(builder, l, x);
                         });
}

Val Elaborator::builtinSigmoid(const Expr &expr, ArrayRef<const Expr *> a) {
  return evalMathBuiltin(expr, a, /*fold=*/nullptr,
                         [&](Location l, Value x) -> Value {
                           return SigmoidOp::create(builder, l, x);
                         });
}

Val Elaborator::builtinSoftplus(const Expr &expr, ArrayRef<const Expr *> a) {
  return evalMathBuiltin(expr, a, /*fold=*/nullptr,
                         [&](Location l, Value x) -> Value {
                           return SoftplusOp::create(builder, l, x);
                         });
}

Val Elaborator::builtinExp(const Expr &expr, ArrayRef<const Expr *> a) {
  return evalMathBuiltin(
      expr, a, [](double v) { return Val::ofFloat(std::exp(v)); },
      [&](Location l, Value x) -> Value {
        return math::ExpOp::create(builder, l, x);
      });
}

Val Elaborator::builtinTanh(const Expr &expr, ArrayRef<const Expr *> a) {
  return evalMathBuiltin(
      expr, a, [](double v) { return Val::ofFloat(std::tanh(v)); },
      [&](Location l, Value x) -> Value {
        return math::TanhOp::create(builder, l, x);
      });
}

Val Elaborator::builtinSqrt(const Expr &expr, ArrayRef<const Expr *> a) {
  return evalMathBuiltin(
      expr, a,
      [&](double v) {
        if (v < 0)
          return fail(expr.loc, "sqrt of a negative number");
        return Val::ofFloat(std::sqrt(v));
      },
      [&](Location l, Value x) -> Value {
        return math::SqrtOp::create(builder, l, x);
      });
}

Val Elaborator::builtinLog(const Expr &expr, ArrayRef<const Expr *> a) {
  return evalMathBuiltin(
      expr, a,
      [&](double v) {
        if (v <= 0)
          return fail(expr.loc, "log of a non-positive number");
        return Val::ofFloat(std::log(v));
      },
      [&](Location l, Value x) -> Value {
        return math::LogOp::create(builder, l, x);
      });
}

//===----------------------------------------------------------------------===//
// Normalisations
//===----------------------------------------------------------------------===//

Val Elaborator::builtinL2Norm(const Expr &expr, ArrayRef<const Expr *> a) {
  Val x = materialise(eval(*a[0]));
  if (x.isError())
    return x;
  std::optional<double> eps =
      a[1] ? evalFloat(*a[1], "eps") : std::optional<double>(1e-5);
  if (!eps)
    return Val::error();
  if (x.kind != Val::Kind::Tensor || x.shape.empty())
    return fail(a[0]->loc, "'l2norm' expects a tensor with at least one "
                           "feature dimension, got " +
                               describe(x));
  auto op = L2NormOp::create(builder, loc(expr.loc), x.value,
                             builder.getF64FloatAttr(*eps));
  Val r = x;
  r.value = op;
  return r;
}

Val Elaborator::builtinLayerNorm(const Expr &expr, ArrayRef<const Expr *> a) {
  return evalNormBuiltin(expr, a, /*layerNorm=*/true);
}

Val Elaborator::builtinRMSNorm(const Expr &expr, ArrayRef<const Expr *> a) {
  return evalNormBuiltin(expr, a, /*layerNorm=*/false);
}

Val Elaborator::evalNormBuiltin(const Expr &expr, ArrayRef<const Expr *> a,
                                bool layerNorm) {
  std::optional<Val> x = evalTensor(*a[0], "the normalised input", true);
  if (!x)
    return Val::error();
  if (x->shape.empty())
    return fail(a[0]->loc, "'" + expr.name + "' needs a feature dimension");
  SmallVector<int64_t> width = {x->shape.back()};
  std::optional<Val> w = evalStatic(*a[1], "the weight", width);
  std::optional<Val> b;
  if (layerNorm)
    b = evalStatic(*a[2], "the bias", width);
  const Expr *epsExpr = a[layerNorm ? 3 : 2];
  std::optional<double> eps =
      epsExpr ? evalFloat(*epsExpr, "eps") : std::optional<double>(1e-5);
  if (!w || (layerNorm && !b) || !eps)
    return Val::error();
  Location l = loc(expr.loc);
  Value r =
      layerNorm
          ? Value(LayerNormOp::create(builder, l, x->value, w->value, b->value,
                                      builder.getF64FloatAttr(*eps)))
          : Value(RMSNormOp::create(builder, l, x->value, w->value,
                                    builder.getF64FloatAttr(*eps)));
  return Val::ofTensor(r, true, x->shape);
}

//===----------------------------------------------------------------------===//
// Time
//===----------------------------------------------------------------------===//

Val Elaborator::builtinShift(const Expr &expr, ArrayRef<const Expr *> a) {
  std::optional<Val> x = evalTensor(*a[0], "the shifted activation", true);
  std::optional<int64_t> by =
      a[1] ? evalInt(*a[1], "the shift") : std::optional<int64_t>(1);
  if (!x || !by)
    return Val::error();
  auto op = ShiftOp::create(builder, loc(expr.loc), x->value,
                            builder.getI64IntegerAttr(*by));
  return Val::ofTensor(op, true, x->shape);
}

Val Elaborator::builtinScan(const Expr &expr, ArrayRef<const Expr *> a) {
  std::optional<Val> c = evalTensor(*a[0], "the scan coefficient", true);
  std::optional<Val> u = evalTensor(*a[1], "the scan input", true);
  std::optional<bool> reverse =
      a[2] ? evalBool(*a[2], "reverse") : std::optional<bool>(false);
  if (!c || !u || !reverse)
    return Val::error();
  if (c->shape != u->shape)
    return fail(expr.loc, "scan coefficient " + formatShape(c->shape) +
                              " and input " + formatShape(u->shape) +
                              " must have the same shape");
  auto op = ScanOp::create(builder, loc(expr.loc), c->value, u->value,
                           *reverse ? builder.getUnitAttr() : UnitAttr());
  return Val::ofTensor(op, true, u->shape);
}

Val Elaborator::builtinSelectiveScan(const Expr &expr,
                                     ArrayRef<const Expr *> a) {
  std::optional<Val> u = evalTensor(*a[0], "the scan input u", true);
  if (!u)
    return Val::error();
  if (u->shape.size() != 1)
    return fail(a[0]->loc, "selective_scan's input must be a per-token "
                           "vector, got shape " +
                               formatShape(u->shape));
  int64_t d = u->shape[0];
  std::optional<Val> delta = evalTensor(*a[1], "the step delta", true);
  std::optional<Val> aMat = evalTensor(*a[2], "the state matrix A", false);
  std::optional<Val> b = evalTensor(*a[3], "B", true);
  std::optional<Val> c = evalTensor(*a[4], "C", true);
  if (!delta || !aMat || !b || !c)
    return Val::error();
  if (delta->shape != u->shape)
    return fail(a[1]->loc, "delta must have the shape of u " +
                               formatShape(u->shape) + ", got " +
                               formatShape(delta->shape));
  if (aMat->shape.size() != 2 || aMat->shape[0] != d)
    return fail(a[2]->loc, "A must have shape [" + Twine(d) + ", N], got " +
                               formatShape(aMat->shape));
  int64_t n = aMat->shape[1];
  if (b->shape != ArrayRef<int64_t>{n} || c->shape != ArrayRef<int64_t>{n})
    return fail(expr.loc, "B and C must have shape [" + Twine(n) +
                              "] (A's state size), got " +
                              formatShape(b->shape) + " and " +
                              formatShape(c->shape));
  Value skip;
  if (a[5]) {
    std::optional<Val> dSkip = evalStatic(*a[5], "the skip D", {d});
    if (!dSkip)
      return Val::error();
    skip = dSkip->value;
  }
  auto op =
      SelectiveScanOp::create(builder, loc(expr.loc), u->value, delta->value,
                              aMat->value, b->value, c->value, skip);
  return Val::ofTensor(op, true, u->shape);
}

/// Mamba-2's scan (docs/spec.md §5.1) is the selective scan of each group's
/// channels with the group's B and C, each head's step, decay and skip
/// repeated over its P channels (and the decay over the N states). The
/// frontend writes it so: every pass and kernel of fp.selective_scan serves
/// it (docs/dsl.md).
Val Elaborator::builtinSsdScan(const Expr &expr, ArrayRef<const Expr *> a) {
  std::optional<Val> x = evalTensor(*a[0], "the scan input x", true);
  std::optional<Val> dt = evalTensor(*a[1], "the step dt", true);
  if (!x || !dt)
    return Val::error();
  if (x->shape.size() != 1)
    return fail(a[0]->loc, "ssd_scan's input must be a per-token vector, got "
                           "shape " +
                               formatShape(x->shape));
  if (dt->shape.size() != 1)
    return fail(a[1]->loc, "dt must be a per-token vector of one step per "
                           "head, got shape " +
                               formatShape(dt->shape));
  const int64_t d = x->shape[0], heads = dt->shape[0];
  if (d % heads != 0)
    return fail(a[1]->loc, "dt has " + Twine(heads) +
                               " heads, which do not divide x's " + Twine(d) +
                               " channels");
  const int64_t headDim = d / heads;
  std::optional<Val> decay = evalStatic(*a[2], "the decay A", {heads});
  std::optional<Val> b = evalTensor(*a[3], "B", true);
  std::optional<Val> c = evalTensor(*a[4], "C", true);
  if (!decay || !b || !c)
    return Val::error();
  std::optional<Val> skip;
  if (a[5] && !(skip = evalStatic(*a[5], "the skip D", {heads})))
    return Val::error();
  int64_t groups = 1;
  if (a[6]) {
    std::optional<int64_t> g = evalSize(*a[6], "the number of groups");
    if (!g)
      return Val::error();
    groups = *g;
  }
  if (heads % groups != 0)
    return fail(a[6] ? a[6]->loc : expr.loc, Twine(groups) +
                                                 " groups do not divide the " +
                                                 Twine(heads) + " heads");
  if (b->shape.size() != 1 || b->shape[0] % groups != 0 || b->shape != c->shape)
    return fail(expr.loc, "B and C must have shape [G * N] for the " +
                              Twine(groups) + " groups, got " +
                              formatShape(b->shape) + " and " +
                              formatShape(c->shape));
  const int64_t states = b->shape[0] / groups;
  const int64_t groupHeads = heads / groups, groupWidth = d / groups;

  Location l = loc(expr.loc);
  auto sliceOf = [&](const Val &v, int64_t group, int64_t width) {
    return slice(v, group * width, (group + 1) * width, l);
  };
  // A head's value [h] for each of its channels (and states): [h, P, ...],
  // flattened to `shape`.
  auto perChannel = [&](const Val &perHead, ArrayRef<int64_t> shape) {
    SmallVector<int64_t> expanded = {groupHeads, headDim};
    expanded.append(shape.begin() + 1, shape.end());
    auto op =
        BroadcastOp::create(builder, l, staticType(expanded), perHead.value,
                            Value(), builder.getDenseI64ArrayAttr({0}));
    return reshape(Val::ofTensor(op, false, expanded), shape, l);
  };

  SmallVector<Value> results;
  for (int64_t g = 0; g < groups; ++g) {
    Val u = sliceOf(*x, g, groupWidth);
    Val step = sliceOf(*dt, g, groupHeads);
    Val uHeads = reshape(u, {groupHeads, headDim}, l);
    auto stepHeads = BroadcastOp::create(
        builder, l, uHeads.value.getType(), step.value, uHeads.value,
        builder.getDenseI64ArrayAttr({0, 1, 2}));
    Val delta =
        reshape(Val::ofTensor(stepHeads, true, uHeads.shape), {groupWidth}, l);
    Val aMat = perChannel(sliceOf(*decay, g, groupHeads), {groupWidth, states});
    Value dVec;
    if (skip)
      dVec = perChannel(sliceOf(*skip, g, groupHeads), {groupWidth}).value;
    Val bg = sliceOf(*b, g, states), cg = sliceOf(*c, g, states);
    results.push_back(SelectiveScanOp::create(builder, l, u.value, delta.value,
                                              aMat.value, bg.value, cg.value,
                                              dVec));
  }
  if (groups == 1)
    return Val::ofTensor(results[0], true, x->shape);
  auto op = ConcatOp::create(builder, l, activationType(x->shape), results);
  return Val::ofTensor(op, true, x->shape);
}

Val Elaborator::builtinCausalConv(const Expr &expr, ArrayRef<const Expr *> a) {
  std::optional<Val> x = evalTensor(*a[0], "the convolved activation", true);
  if (!x)
    return Val::error();
  if (x->shape.size() != 1)
    return fail(a[0]->loc, "causal_conv's input must be a per-token "
                           "vector, got shape " +
                               formatShape(x->shape));
  std::optional<Val> w = evalTensor(*a[1], "the kernel", false);
  if (!w)
    return Val::error();
  if (w->shape.size() != 2 || w->shape[0] != x->shape[0])
    return fail(a[1]->loc, "the kernel must have shape [" + Twine(x->shape[0]) +
                               ", K], got " + formatShape(w->shape));
  Value bias;
  if (a[2]) {
    std::optional<Val> b = evalStatic(*a[2], "the bias", {x->shape[0]});
    if (!b)
      return Val::error();
    bias = b->value;
  }
  auto op =
      CausalConvOp::create(builder, loc(expr.loc), x->value, w->value, bias);
  return Val::ofTensor(op, true, x->shape);
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

Val Elaborator::builtinLinear(const Expr &expr, ArrayRef<const Expr *> a) {
  return evalLinearBuiltin(expr, a, /*weightNorm=*/false);
}

Val Elaborator::builtinWNLinear(const Expr &expr, ArrayRef<const Expr *> a) {
  return evalLinearBuiltin(expr, a, /*weightNorm=*/true);
}

Val Elaborator::evalLinearBuiltin(const Expr &expr, ArrayRef<const Expr *> a,
                                  bool weightNorm) {
  std::optional<Val> x = evalTensor(*a[0], "the input", true);
  std::optional<Val> w = evalTensor(*a[1], "the weight", false);
  if (!x || !w)
    return Val::error();
  if (x->shape.empty() || w->shape.size() != 2 ||
      w->shape[1] != x->shape.back())
    return fail(expr.loc, "a weight of shape [out, " +
                              Twine(x->shape.empty() ? 0 : x->shape.back()) +
                              "] is needed for an input of shape " +
                              formatShape(x->shape) + ", got " +
                              formatShape(w->shape));
  int64_t out = w->shape[0];
  Value gain, bias;
  if (weightNorm) {
    std::optional<Val> g = evalStatic(*a[2], "the gain", {out});
    if (!g)
      return Val::error();
    gain = g->value;
  }
  if (const Expr *b = a[weightNorm ? 3 : 2]) {
    std::optional<Val> bv = evalStatic(*b, "the bias", {out});
    if (!bv)
      return Val::error();
    bias = bv->value;
  }
  SmallVector<int64_t> shape = x->shape;
  shape.back() = out;
  auto op = LinearOp::create(builder, loc(expr.loc), activationType(shape),
                             x->value, w->value, gain, bias);
  return Val::ofTensor(op, true, shape);
}

Val Elaborator::builtinDot(const Expr &expr, ArrayRef<const Expr *> a) {
  return evalSumBuiltin(expr, a, /*dot=*/true);
}

Val Elaborator::builtinSum(const Expr &expr, ArrayRef<const Expr *> a) {
  return evalSumBuiltin(expr, a, /*dot=*/false);
}

Val Elaborator::evalSumBuiltin(const Expr &expr, ArrayRef<const Expr *> a,
                               bool dot) {
  std::optional<Val> x = evalTensor(*a[0], "the operand", true);
  if (!x)
    return Val::error();
  Val product = *x;
  if (dot) {
    std::optional<Val> y = evalTensor(*a[1], "the operand", true);
    if (!y)
      return Val::error();
    if (x->shape != y->shape)
      return fail(expr.loc, "dot of shapes " + formatShape(x->shape) + " and " +
                                formatShape(y->shape));
    product = elementwise(TokenKind::star, *x, *y, expr.loc);
  }
  if (product.isError())
    return product;
  if (product.shape.empty())
    return fail(expr.loc, "'" + expr.name + "' needs a feature dimension");
  SmallVector<int64_t> shape(ArrayRef<int64_t>(product.shape).drop_back());
  int64_t last = product.shape.size() + 1;
  auto op =
      ReduceSumOp::create(builder, loc(expr.loc), activationType(shape),
                          product.value, builder.getDenseI64ArrayAttr({last}));
  return Val::ofTensor(op, true, shape);
}

Val Elaborator::builtinMax(const Expr &expr, ArrayRef<const Expr *> a) {
  return evalExtremumBuiltin(expr, a, /*isMax=*/true);
}

Val Elaborator::builtinMin(const Expr &expr, ArrayRef<const Expr *> a) {
  return evalExtremumBuiltin(expr, a, /*isMax=*/false);
}

Val Elaborator::evalExtremumBuiltin(const Expr &expr, ArrayRef<const Expr *> a,
                                    bool isMax) {
  Val x = materialise(eval(*a[0]));
  if (x.isError())
    return x;
  if (!a[1]) {
    if (!isMax || x.kind != Val::Kind::Tensor || !x.activation ||
        x.shape.empty())
      return fail(expr.loc, "'" + expr.name +
                                "' of one argument reduces the last "
                                "dimension of an activation ('max' only)");
    SmallVector<int64_t> shape(ArrayRef<int64_t>(x.shape).drop_back());
    int64_t last = x.shape.size() + 1;
    auto op =
        ReduceMaxOp::create(builder, loc(expr.loc), activationType(shape),
                            x.value, builder.getDenseI64ArrayAttr({last}));
    return Val::ofTensor(op, true, shape);
  }
  Val y = materialise(eval(*a[1]));
  if (y.isError())
    return y;
  if (!x.isNumber() || !y.isNumber())
    return fail(expr.loc, "'" + expr.name +
                              "' of two arguments compares "
                              "numbers");
  if (x.kind == Val::Kind::Int && y.kind == Val::Kind::Int)
    return Val::ofInt(isMax ? std::max(x.intValue, y.intValue)
                            : std::min(x.intValue, y.intValue));
  return Val::ofFloat(isMax ? std::max(x.asDouble(), y.asDouble())
                            : std::min(x.asDouble(), y.asDouble()));
}

Value Elaborator::transposeMatrix(Value x, Location l) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(x.getType()).getShape();
  return TransposeOp::create(builder, l, staticType({shape[1], shape[0]}), x);
}

Value Elaborator::lowerTriangle(Value x, Location l) {
  // tril(X) = triu(Xᵀ)ᵀ, the upper triangle taken by packing and
  // unpacking it.
  const int64_t n = cast<RankedTensorType>(x.getType()).getDimSize(0);
  Value packed = TriuPackOp::create(builder, l, staticType({n * (n + 1) / 2}),
                                    transposeMatrix(x, l));
  return transposeMatrix(TriuOp::create(builder, l, staticType({n, n}), packed),
                         l);
}

Value Elaborator::productOfMatrices(Value lhs, Value rhs, bool transposeLhs,
                                    bool transposeRhs, Location l) {
  // op(L) · op(R) = fp.linear(op(L), op(R)ᵀ), one GEMM: a transposed weight
  // is read as it lies.
  Value input = transposeLhs ? transposeMatrix(lhs, l) : lhs;
  Value weight = transposeRhs ? rhs : transposeMatrix(rhs, l);
  int64_t rows = cast<RankedTensorType>(input.getType()).getDimSize(0);
  int64_t cols = cast<RankedTensorType>(weight.getType()).getDimSize(0);
  return LinearOp::create(builder, l, staticType({rows, cols}), input, weight,
                          Value(), Value());
}

Val Elaborator::builtinTranspose(const Expr &expr, ArrayRef<const Expr *>) {
  if (expr.operands.size() != 1 || !expr.argNames[0].empty())
    return fail(expr.loc, "'t' takes one argument");
  Val x = materialise(eval(*expr.operands[0]));
  if (x.isError())
    return x;
  if (x.kind == Val::Kind::Tensor && !x.activation) {
    if (x.shape.size() != 2)
      return fail(expr.operands[0]->loc,
                  "'t' transposes matrices, got " + describe(x));
    SmallVector<int64_t> shape = {x.shape[1], x.shape[0]};
    return Val::ofTensor(transposeMatrix(x.value, loc(expr.loc)), false, shape);
  }
  return fail(expr.loc, "'t(x)' is only allowed as an operand of matmul");
}

std::optional<Val> Elaborator::evalSquareMatrix(const Expr &expr,
                                                StringRef what) {
  std::optional<Val> x = evalTensor(expr, what, /*activation=*/false);
  if (x && (x->shape.size() != 2 || x->shape[0] != x->shape[1])) {
    emitError(expr.loc) << what << " takes a square matrix, got shape "
                        << formatShape(x->shape);
    return std::nullopt;
  }
  return x;
}

Val Elaborator::builtinTril(const Expr &expr, ArrayRef<const Expr *> a) {
  std::optional<Val> x = evalSquareMatrix(*a[0], "tril");
  if (!x)
    return Val::error();
  return Val::ofTensor(lowerTriangle(x->value, loc(expr.loc)), false, x->shape);
}

Val Elaborator::builtinMatrixExp(const Expr &expr, ArrayRef<const Expr *> a) {
  std::optional<Val> x = evalSquareMatrix(*a[0], "matrix_exp");
  if (!x)
    return Val::error();
  auto op =
      MatrixExpOp::create(builder, loc(expr.loc), x->value.getType(), x->value);
  return Val::ofTensor(op, false, x->shape);
}

Val Elaborator::builtinMatmul(const Expr &expr, ArrayRef<const Expr *> a) {
  std::optional<Val> ops[2];
  bool transposed[2] = {false, false};
  for (unsigned i = 0; i < 2; ++i) {
    const Expr *operand = a[i];
    if (operand->kind == ExprKind::Call && operand->name == "t" &&
        !scope->lookup("t")) {
      if (operand->operands.size() != 1 || !operand->argNames[0].empty())
        return fail(operand->loc, "'t' takes one argument");
      transposed[i] = true;
      operand = operand->operands[0].get();
    }
    Val v = materialise(eval(*operand));
    if (v.isError())
      return v;
    if (v.kind != Val::Kind::Tensor)
      return fail(operand->loc,
                  "expected a tensor for a matmul operand, got " + describe(v));
    ops[i] = std::move(v);
    if (ops[i]->shape.size() < 2)
      return fail(operand->loc, "matmul takes per-token matrices, got "
                                "shape " +
                                    formatShape(ops[i]->shape));
  }
  if (ops[0]->activation != ops[1]->activation)
    return fail(expr.loc, "matmul multiplies two activations or two parameter "
                          "tensors, got " +
                              describe(*ops[0]) + " and " + describe(*ops[1]));
  ArrayRef<int64_t> lhs = ops[0]->shape, rhs = ops[1]->shape;
  const bool parameters = !ops[0]->activation;
  if (parameters && (lhs.size() != 2 || rhs.size() != 2))
    return fail(expr.loc, "matmul of parameter tensors takes matrices, got " +
                              formatShape(lhs) + " and " + formatShape(rhs));
  if (lhs.drop_back(2) != rhs.drop_back(2))
    return fail(expr.loc, "matmul operands " + formatShape(lhs) + " and " +
                              formatShape(rhs) +
                              " differ in their leading dimensions");
  int64_t rows = transposed[0] ? lhs.back() : lhs[lhs.size() - 2];
  int64_t inner = transposed[0] ? lhs[lhs.size() - 2] : lhs.back();
  int64_t innerR = transposed[1] ? rhs.back() : rhs[rhs.size() - 2];
  int64_t cols = transposed[1] ? rhs[rhs.size() - 2] : rhs.back();
  if (inner != innerR)
    return fail(expr.loc, "matmul of " + Twine(rows) + "x" + Twine(inner) +
                              " by " + Twine(innerR) + "x" + Twine(cols));
  SmallVector<int64_t> shape(lhs.drop_back(2));
  shape.push_back(rows);
  shape.push_back(cols);
  if (parameters)
    return Val::ofTensor(productOfMatrices(ops[0]->value, ops[1]->value,
                                           transposed[0], transposed[1],
                                           loc(expr.loc)),
                         false, shape);
  auto op = MatmulOp::create(builder, loc(expr.loc), activationType(shape),
                             ops[0]->value, ops[1]->value, transposed[0],
                             transposed[1]);
  return Val::ofTensor(op, true, shape);
}

Val Elaborator::builtinMatvec(const Expr &expr, ArrayRef<const Expr *> a) {
  std::optional<Val> m = evalTensor(*a[0], "the matrix", true);
  std::optional<Val> v = evalTensor(*a[1], "the vector", true);
  if (!m || !v)
    return Val::error();
  ArrayRef<int64_t> ms = m->shape, vs = v->shape;
  if (ms.size() < 2 || vs.size() != ms.size() - 1 ||
      vs.drop_back() != ms.drop_back(2) || vs.back() != ms.back())
    return fail(expr.loc, "matvec of a " + formatShape(ms) + " matrix and a " +
                              formatShape(vs) + " vector");
  Location l = loc(expr.loc);
  SmallVector<int64_t> column(vs);
  column.push_back(1);
  Val col = reshape(*v, column, l);
  SmallVector<int64_t> shape(ms.drop_back());
  shape.push_back(1);
  auto op = MatmulOp::create(builder, l, activationType(shape), m->value,
                             col.value, false, false);
  SmallVector<int64_t> outShape(ms.drop_back());
  return reshape(Val::ofTensor(op, true, shape), outShape, l);
}

Val Elaborator::builtinTriu(const Expr &expr, ArrayRef<const Expr *> a) {
  std::optional<Val> x = evalTensor(*a[0], "the packed triangle", true);
  if (!x)
    return Val::error();
  if (x->shape.empty())
    return fail(a[0]->loc, "triu needs a feature dimension");
  int64_t packed = x->shape.back(), m = 0;
  while (m * (m + 1) / 2 < packed)
    ++m;
  if (m * (m + 1) / 2 != packed)
    return fail(a[0]->loc, "triu needs m(m+1)/2 entries for some m; " +
                               Twine(packed) + " is not such a number");
  SmallVector<int64_t> shape(ArrayRef<int64_t>(x->shape).drop_back());
  shape.push_back(m);
  shape.push_back(m);
  auto op =
      TriuOp::create(builder, loc(expr.loc), activationType(shape), x->value);
  return Val::ofTensor(op, true, shape);
}

Val Elaborator::builtinReshape(const Expr &expr, ArrayRef<const Expr *> a) {
  Val x = materialise(eval(*a[0]));
  if (x.isError())
    return x;
  if (x.kind != Val::Kind::Tensor)
    return fail(a[0]->loc, "reshape expects a tensor, got " + describe(x));
  if (a[1]->kind != ExprKind::List)
    return fail(a[1]->loc, "reshape's shape is a list: [a, b]");
  SmallVector<int64_t> shape;
  for (const ExprPtr &dim : a[1]->operands) {
    std::optional<int64_t> size = evalSize(*dim, "a dimension");
    if (!size)
      return Val::error();
    shape.push_back(*size);
  }
  if ((shape.empty() && !x.activation) || !checkShape(shape, a[1]->loc))
    return shape.empty() ? fail(a[1]->loc, "a parameter tensor keeps at "
                                           "least one dimension")
                         : Val::error();
  int64_t from = 1, to = 1;
  for (int64_t s : x.shape)
    from *= s;
  for (int64_t s : shape)
    to *= s;
  if (from != to)
    return fail(expr.loc, "cannot reshape " + formatShape(x.shape) + " (" +
                              Twine(from) + " elements) to " +
                              formatShape(shape) + " (" + Twine(to) + ")");
  return reshape(x, shape, loc(expr.loc));
}

Val Elaborator::builtinConcat(const Expr &expr, ArrayRef<const Expr *>) {
  if (expr.operands.size() < 2)
    return fail(expr.loc, "concat joins at least two activations");
  SmallVector<Value> inputs;
  SmallVector<int64_t> shape;
  for (auto [i, arg] : llvm::enumerate(expr.operands)) {
    if (!expr.argNames[i].empty())
      return fail(expr.argNameLocs[i], "concat takes no named arguments");
    std::optional<Val> x = evalTensor(*arg, "a concat operand", true);
    if (!x)
      return Val::error();
    if (x->shape.empty())
      return fail(arg->loc, "concat needs a feature dimension");
    if (i == 0) {
      shape = x->shape;
    } else {
      if (ArrayRef<int64_t>(x->shape).drop_back() !=
          ArrayRef<int64_t>(shape).drop_back())
        return fail(arg->loc, "concat operands differ before their last "
                              "dimension: " +
                                  formatShape(shape) + " and " +
                                  formatShape(x->shape));
      shape.back() += x->shape.back();
    }
    inputs.push_back(x->value);
  }
  if (!checkShape(shape, expr.loc))
    return Val::error();
  auto op =
      ConcatOp::create(builder, loc(expr.loc), activationType(shape), inputs);
  return Val::ofTensor(op, true, shape);
}

Val Elaborator::builtinFill(const Expr &expr, ArrayRef<const Expr *> a) {
  std::optional<double> value = evalFloat(*a[0], "the fill value");
  Val like = materialise(eval(*a[1]));
  if (!value || like.isError())
    return Val::error();
  if (like.kind != Val::Kind::Tensor)
    return fail(a[1]->loc,
                "fill takes its shape from a tensor, got " + describe(like));
  return Val::ofTensor(splat(*value, like, loc(expr.loc)), like.activation,
                       like.shape);
}

//===----------------------------------------------------------------------===//
// Configuration arithmetic
//===----------------------------------------------------------------------===//

Val Elaborator::builtinCeilDiv(const Expr &expr, ArrayRef<const Expr *> a) {
  return evalDivisionBuiltin(expr, a, /*floor=*/false);
}

Val Elaborator::builtinFloorDiv(const Expr &expr, ArrayRef<const Expr *> a) {
  return evalDivisionBuiltin(expr, a, /*floor=*/true);
}

Val Elaborator::evalDivisionBuiltin(const Expr &expr, ArrayRef<const Expr *> a,
                                    bool floor) {
  std::optional<int64_t> x = evalInt(*a[0], "a dividend");
  std::optional<int64_t> y = evalInt(*a[1], "a divisor");
  if (!x || !y)
    return Val::error();
  if (*y <= 0 || *x < 0)
    return fail(expr.loc, "'" + expr.name +
                              "' takes a non-negative "
                              "dividend and a positive "
                              "divisor");
  return Val::ofInt(floor ? *x / *y : *x / *y + (*x % *y != 0));
}

Val Elaborator::builtinISqrt(const Expr &expr, ArrayRef<const Expr *> a) {
  std::optional<int64_t> n = evalInt(*a[0], "isqrt's argument");
  if (!n)
    return Val::error();
  if (*n < 0)
    return fail(expr.loc, "isqrt of a negative number");
  int64_t r = static_cast<int64_t>(std::sqrt(static_cast<double>(*n)));
  // Correct the floating-point estimate without overflowing.
  while (r > 0 && r > *n / r)
    --r;
  while (r + 1 <= *n / (r + 1))
    ++r;
  return Val::ofInt(r);
}

Val Elaborator::builtinDivisorLe(const Expr &expr, ArrayRef<const Expr *> a) {
  std::optional<int64_t> n = evalInt(*a[0], "a number");
  std::optional<int64_t> bound = evalInt(*a[1], "a bound");
  if (!n || !bound)
    return Val::error();
  if (*n < 1 || *bound < 1 || *n > kMaxElements)
    return fail(expr.loc, "divisor_le takes positive arguments (n at most " +
                              Twine(kMaxElements) + ")");
  for (int64_t k = std::min(*n, *bound); k >= 1; --k)
    if (*n % k == 0)
      return Val::ofInt(k);
  return Val::ofInt(1);
}

Val Elaborator::builtinIsPow2(const Expr &expr, ArrayRef<const Expr *> a) {
  std::optional<int64_t> n = evalInt(*a[0], "a number");
  if (!n)
    return Val::error();
  return Val::ofBool(*n > 0 && (*n & (*n - 1)) == 0);
}

Val Elaborator::builtinFloat(const Expr &expr, ArrayRef<const Expr *> a) {
  std::optional<double> x = evalFloat(*a[0], "float's argument");
  return x ? Val::ofFloat(*x) : Val::error();
}
