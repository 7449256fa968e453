//===- Expressions.cpp - Expressions and tensor ops -----------------------===//
//
// Part of fpc. Expressions evaluate to compile-time values (numbers,
// booleans, instances, maps) or to tensors, emitted as ops; the emission
// helpers make operands agree in shape (docs/dsl.md §3.3) and materialise
// parameters where they are first read. Calls of built-in functions go on to
// Builtins.cpp.
//
//===----------------------------------------------------------------------===//

#include "MLIRGenInternals.h"

#include "fp/Dialect/FpDialect.h"
#include "fp/Dialect/FpOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::fp;
using namespace mlir::fp::frontend;

Val Elaborator::eval(const Expr &expr) {
  switch (expr.kind) {
  case ExprKind::Integer:
    return Val::ofInt(expr.intValue);
  case ExprKind::Float:
    return Val::ofFloat(expr.floatValue);
  case ExprKind::Bool:
    return Val::ofBool(expr.boolValue);
  case ExprKind::Name:
    return evalName(expr);
  case ExprKind::Unary:
    return evalUnary(expr);
  case ExprKind::Binary:
    return evalBinary(expr);
  case ExprKind::Call:
    return evalCall(expr);
  case ExprKind::Index:
    return evalIndex(expr);
  case ExprKind::Slice:
    return evalSlice(expr);
  case ExprKind::List:
    return fail(expr.loc, "a list '[...]' is only allowed as the shape of "
                          "reshape");
  }
  return Val::error();
}

Val Elaborator::evalName(const Expr &expr) {
  if (Binding *binding = scope->lookup(expr.name))
    return capture(binding->value);
  if (const FunctionDecl *decl = findFunction(expr.name))
    return makeInstance(*decl, nullptr, expr.loc);
  auto diag = emitError(expr.loc) << "undefined name '" << expr.name << "'";
  std::string best = closestName(expr.name);
  if (!best.empty())
    diag << "; did you mean '" << best << "'?";
  return Val::error();
}

std::string Elaborator::closestName(StringRef name) {
  std::string best;
  unsigned bestDistance = 3;
  auto consider = [&](StringRef candidate) {
    unsigned distance = name.edit_distance(candidate);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate.str();
    }
  };
  for (Scope *s = scope; s; s = s->parent)
    for (const auto &entry : s->names)
      consider(entry.getKey());
  for (const auto &entry : functions)
    consider(entry.getKey());
  return best;
}

std::optional<int64_t> Elaborator::evalInt(const Expr &expr, StringRef what) {
  Val v = eval(expr);
  if (v.isError())
    return std::nullopt;
  if (v.kind != Val::Kind::Int) {
    emitError(expr.loc) << "expected an integer for " << what << ", got "
                        << describe(v);
    return std::nullopt;
  }
  return v.intValue;
}

std::optional<int64_t> Elaborator::evalSize(const Expr &expr, StringRef what) {
  std::optional<int64_t> v = evalInt(expr, what);
  if (!v)
    return std::nullopt;
  if (*v < 1 || *v > kMaxDim) {
    emitError(expr.loc) << what << " must lie in [1, " << kMaxDim << "], got "
                        << *v;
    return std::nullopt;
  }
  return v;
}

std::optional<double> Elaborator::evalFloat(const Expr &expr, StringRef what) {
  Val v = eval(expr);
  if (v.isError())
    return std::nullopt;
  if (!v.isNumber()) {
    emitError(expr.loc) << "expected a number for " << what << ", got "
                        << describe(v);
    return std::nullopt;
  }
  return v.asDouble();
}

std::optional<bool> Elaborator::evalBool(const Expr &expr, StringRef what) {
  Val v = eval(expr);
  if (v.isError())
    return std::nullopt;
  if (v.kind != Val::Kind::Bool) {
    emitError(expr.loc) << "expected a boolean for " << what << ", got "
                        << describe(v);
    return std::nullopt;
  }
  return v.boolValue;
}

std::optional<Val> Elaborator::evalTensor(const Expr &expr, StringRef what,
                                          bool activation) {
  Val v = materialise(eval(expr));
  if (v.isError())
    return std::nullopt;
  if (v.kind != Val::Kind::Tensor || v.activation != activation) {
    emitError(expr.loc) << "expected "
                        << (activation ? "an activation"
                                       : "a "
                                         "parameter tensor")
                        << " for " << what << ", got " << describe(v);
    return std::nullopt;
  }
  return v;
}

std::optional<Val> Elaborator::evalStatic(const Expr &expr, StringRef what,
                                          ArrayRef<int64_t> shape) {
  std::optional<Val> v = evalTensor(expr, what, /*activation=*/false);
  if (!v)
    return std::nullopt;
  if (ArrayRef<int64_t>(v->shape) != shape) {
    emitError(expr.loc) << what << " must have shape " << formatShape(shape)
                        << ", got " << formatShape(v->shape);
    return std::nullopt;
  }
  return v;
}

Val Elaborator::evalUnary(const Expr &expr) {
  Val v = materialise(eval(*expr.operands[0]));
  if (v.isError())
    return v;
  if (expr.op == TokenKind::bang) {
    if (v.kind != Val::Kind::Bool)
      return fail(expr.loc, "'!' expects a boolean, got " + describe(v));
    return Val::ofBool(!v.boolValue);
  }
  switch (v.kind) {
  case Val::Kind::Int:
    if (v.intValue == INT64_MIN)
      return fail(expr.loc, "integer overflow");
    return Val::ofInt(-v.intValue);
  case Val::Kind::Float:
    return Val::ofFloat(-v.floatValue);
  case Val::Kind::Tensor: {
    auto op = arith::NegFOp::create(builder, loc(expr.loc), v.value);
    Val r = v;
    r.value = op;
    return r;
  }
  default:
    return fail(expr.loc,
                "'-' expects a number or a tensor, got " + describe(v));
  }
}

Val Elaborator::evalBinary(const Expr &expr) {
  TokenKind op = expr.op;
  if (op == TokenKind::ampAmp || op == TokenKind::pipePipe) {
    std::optional<bool> lhs = evalBool(*expr.operands[0], "a logical operand");
    if (!lhs)
      return Val::error();
    // Short-circuit, so `d % r == 0 && d / r > 1` is safe.
    if ((op == TokenKind::ampAmp) != *lhs)
      return Val::ofBool(*lhs);
    std::optional<bool> rhs = evalBool(*expr.operands[1], "a logical operand");
    return rhs ? Val::ofBool(*rhs) : Val::error();
  }
  Val lhs = materialise(eval(*expr.operands[0]));
  Val rhs = materialise(eval(*expr.operands[1]));
  if (lhs.isError() || rhs.isError())
    return Val::error();
  StringRef spelling = getTokenSpelling(op);

  if (lhs.kind == Val::Kind::Bool && rhs.kind == Val::Kind::Bool &&
      (op == TokenKind::equalEqual || op == TokenKind::bangEqual))
    return Val::ofBool((lhs.boolValue == rhs.boolValue) ==
                       (op == TokenKind::equalEqual));

  if (lhs.isNumber() && rhs.isNumber()) {
    bool ints = lhs.kind == Val::Kind::Int && rhs.kind == Val::Kind::Int;
    int64_t a = lhs.intValue, b = rhs.intValue, r = 0;
    double x = lhs.asDouble(), y = rhs.asDouble();
    switch (op) {
    case TokenKind::equalEqual:
      return Val::ofBool(ints ? a == b : x == y);
    case TokenKind::bangEqual:
      return Val::ofBool(ints ? a != b : x != y);
    case TokenKind::less:
      return Val::ofBool(ints ? a < b : x < y);
    case TokenKind::lessEqual:
      return Val::ofBool(ints ? a <= b : x <= y);
    case TokenKind::greater:
      return Val::ofBool(ints ? a > b : x > y);
    case TokenKind::greaterEqual:
      return Val::ofBool(ints ? a >= b : x >= y);
    case TokenKind::plus:
      if (!ints)
        return Val::ofFloat(x + y);
      if (__builtin_add_overflow(a, b, &r))
        return fail(expr.loc, "integer overflow in '+'");
      return Val::ofInt(r);
    case TokenKind::minus:
      if (!ints)
        return Val::ofFloat(x - y);
      if (__builtin_sub_overflow(a, b, &r))
        return fail(expr.loc, "integer overflow in '-'");
      return Val::ofInt(r);
    case TokenKind::star:
      if (!ints)
        return Val::ofFloat(x * y);
      if (__builtin_mul_overflow(a, b, &r))
        return fail(expr.loc, "integer overflow in '*'");
      return Val::ofInt(r);
    case TokenKind::slash:
      if (!ints) {
        if (y == 0)
          return fail(expr.loc, "division by zero");
        return Val::ofFloat(x / y);
      }
      if (b == 0)
        return fail(expr.loc, "division by zero");
      if (a % b != 0)
        return fail(expr.loc, Twine(a) + " / " + Twine(b) +
                                  " is not an integer; use floor_div or "
                                  "ceil_div, or a float operand");
      if (a == INT64_MIN && b == -1)
        return fail(expr.loc, "integer overflow in '/'");
      return Val::ofInt(a / b);
    case TokenKind::percent:
      if (!ints)
        return fail(expr.loc, "'%' expects integers");
      if (b == 0)
        return fail(expr.loc, "division by zero");
      if (a == INT64_MIN && b == -1)
        return Val::ofInt(0);
      return Val::ofInt(a % b);
    default:
      break;
    }
  }
  bool arithmetic = op == TokenKind::plus || op == TokenKind::minus ||
                    op == TokenKind::star || op == TokenKind::slash;
  if (arithmetic && (lhs.kind == Val::Kind::Tensor || lhs.isNumber()) &&
      (rhs.kind == Val::Kind::Tensor || rhs.isNumber()))
    return elementwise(op, lhs, rhs, expr.loc);
  return fail(expr.loc, "'" + spelling + "' cannot combine " + describe(lhs) +
                            " and " + describe(rhs));
}

Val Elaborator::elementwise(TokenKind op, Val lhs, Val rhs, llvm::SMLoc l) {
  Location location = loc(l);
  if (lhs.isNumber())
    lhs = Val::ofTensor(splat(lhs.asDouble(), rhs, location), rhs.activation,
                        rhs.shape);
  else if (rhs.isNumber())
    rhs = Val::ofTensor(splat(rhs.asDouble(), lhs, location), lhs.activation,
                        lhs.shape);
  // Make both operands the same shape (docs/dsl.md §3.3).
  auto isPrefix = [](ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
    return a.size() < b.size() && b.take_front(a.size()) == a;
  };
  auto isSuffix = [](ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
    return a.size() <= b.size() && b.take_back(a.size()) == a;
  };
  if (lhs.activation != rhs.activation) {
    Val &act = lhs.activation ? lhs : rhs;
    Val &stat = lhs.activation ? rhs : lhs;
    if (!isSuffix(stat.shape, act.shape))
      return fail(
          l, "cannot broadcast a tensor of shape " + formatShape(stat.shape) +
                 " over an activation of shape " + formatShape(act.shape) +
                 " (its shape must end the activation's)");
    stat = broadcastTo(stat, act, l);
  } else if (lhs.shape != rhs.shape) {
    if (lhs.activation && isPrefix(lhs.shape, rhs.shape))
      lhs = broadcastTo(lhs, rhs, l);
    else if (lhs.activation && isPrefix(rhs.shape, lhs.shape))
      rhs = broadcastTo(rhs, lhs, l);
    else
      return fail(l, "shape mismatch in '" + getTokenSpelling(op) +
                         "': " + formatShape(lhs.shape) + " vs " +
                         formatShape(rhs.shape));
  }
  Value result;
  switch (op) {
  case TokenKind::plus:
    result = arith::AddFOp::create(builder, location, lhs.value, rhs.value);
    break;
  case TokenKind::minus:
    result = arith::SubFOp::create(builder, location, lhs.value, rhs.value);
    break;
  case TokenKind::star:
    result = arith::MulFOp::create(builder, location, lhs.value, rhs.value);
    break;
  default:
    result = arith::DivFOp::create(builder, location, lhs.value, rhs.value);
    break;
  }
  return Val::ofTensor(result, lhs.activation, lhs.shape);
}

Val Elaborator::broadcastTo(const Val &v, const Val &like, llvm::SMLoc l) {
  SmallVector<int64_t> dims;
  int64_t rank = like.shape.size() + (like.activation ? 2 : 0);
  int64_t inputRank = v.shape.size() + (v.activation ? 2 : 0);
  if (v.activation) {
    // Leading alignment: batch, time, then the shorter feature shape.
    for (int64_t i = 0; i < inputRank; ++i)
      dims.push_back(i);
  } else {
    // Trailing alignment: a parameter shared by every token.
    for (int64_t i = rank - inputRank; i < rank; ++i)
      dims.push_back(i);
  }
  auto op = BroadcastOp::create(builder, loc(l), like.value.getType(), v.value,
                                like.value, builder.getDenseI64ArrayAttr(dims));
  return Val::ofTensor(op, like.activation, like.shape);
}

Value Elaborator::splat(double value, const Val &like, Location l) {
  auto scalarType = RankedTensorType::get({}, elementType);
  auto attr = DenseElementsAttr::get(
      scalarType, builder.getFloatAttr(elementType, value).getValue());
  auto constant = arith::ConstantOp::create(builder, l, scalarType, attr);
  // The tensor holds the literal rounded to the model's element type; a
  // library instantiated for a wider type needs the value as written.
  if (!elementType.isF64())
    constant->setAttr(FPDialect::getLiteralAttrName(),
                      builder.getF64FloatAttr(value));
  Value scalar = constant;
  return BroadcastOp::create(builder, l, like.value.getType(), scalar,
                             like.value, builder.getDenseI64ArrayAttr({}));
}

Val Elaborator::reshape(const Val &v, ArrayRef<int64_t> shape, Location l) {
  Type type =
      v.activation ? Type(activationType(shape)) : Type(staticType(shape));
  auto op = ReshapeOp::create(builder, l, type, v.value);
  return Val::ofTensor(op, v.activation, shape);
}

Val Elaborator::slice(const Val &v, int64_t start, int64_t end, Location l) {
  // The whole range is the value itself.
  if (start == 0 && end == v.shape.back())
    return v;
  SmallVector<int64_t> shape = v.shape;
  shape.back() = end - start;
  Type type =
      v.activation ? Type(activationType(shape)) : Type(staticType(shape));
  auto op = SliceOp::create(builder, l, type, v.value, start, end);
  return Val::ofTensor(op, v.activation, shape);
}

Val Elaborator::materialise(const Val &v) {
  if (v.kind != Val::Kind::Param)
    return v;
  return Val::ofTensor(getParam(*v.param), false, v.param->shape);
}

Value Elaborator::getParam(const ParamSpec &spec) {
  auto it = ctx->params.find(spec.name);
  if (it != ctx->params.end())
    return it->second;
  OpBuilder::InsertionGuard guard(builder);
  Block &entry = ctx->func.getBody().front();
  if (ctx->lastParam)
    builder.setInsertionPointAfter(ctx->lastParam);
  else
    builder.setInsertionPointToStart(&entry);
  auto op = ParamOp::create(
      builder, NameLoc::get(builder.getStringAttr(spec.name), loc(spec.loc)),
      staticType(spec.shape), builder.getStringAttr(spec.name), spec.init,
      spec.decay ? builder.getUnitAttr() : UnitAttr(),
      spec.frozen ? builder.getUnitAttr() : UnitAttr());
  ctx->lastParam = op;
  ctx->params[spec.name] = op;
  ctx->usedParams->insert(spec.name);
  return op;
}

Val Elaborator::evalIndex(const Expr &expr) {
  Val base = materialise(eval(*expr.operands[0]));
  if (base.isError())
    return base;
  std::optional<int64_t> index = evalInt(*expr.operands[1], "an index");
  if (!index)
    return Val::error();
  if (base.kind != Val::Kind::Tensor || !base.activation ||
      base.shape.size() != 1)
    return fail(expr.loc, "indexing 'x[i]' takes a per-token vector, got " +
                              describe(base) +
                              "; slice with 'x[a : b]' instead");
  if (*index < 0 || *index >= base.shape[0])
    return fail(expr.operands[1]->loc, "index " + Twine(*index) +
                                           " out of range [0, " +
                                           Twine(base.shape[0]) + ")");
  Location l = loc(expr.loc);
  return reshape(slice(base, *index, *index + 1, l), {}, l);
}

Val Elaborator::evalSlice(const Expr &expr) {
  Val base = materialise(eval(*expr.operands[0]));
  if (base.isError())
    return base;
  std::optional<int64_t> start = evalInt(*expr.operands[1], "a slice bound");
  std::optional<int64_t> end = evalInt(*expr.operands[2], "a slice bound");
  if (!start || !end)
    return Val::error();
  if (base.kind != Val::Kind::Tensor || base.shape.empty())
    return fail(expr.loc, "slicing 'x[a : b]' takes a tensor with at least "
                          "one feature dimension, got " +
                              describe(base));
  int64_t size = base.shape.back();
  if (*start < 0 || *start >= *end || *end > size)
    return fail(expr.loc, "slice [" + Twine(*start) + " : " + Twine(*end) +
                              "] out of range for a last dimension of " +
                              Twine(size));
  return slice(base, *start, *end, loc(expr.loc));
}

Val Elaborator::evalCall(const Expr &expr) {
  if (Binding *binding = scope->lookup(expr.name)) {
    Val callee = binding->value;
    if (callee.isError())
      return callee;
    if (callee.kind == Val::Kind::Module)
      return callModule(*callee.module, expr);
    if (callee.kind == Val::Kind::Map) {
      SmallVector<Val> args;
      for (auto [i, arg] : llvm::enumerate(expr.operands)) {
        if (!expr.argNames[i].empty())
          return fail(expr.argNameLocs[i], "maps take no named arguments");
        args.push_back(materialise(eval(*arg)));
        if (args.back().isError())
          return Val::error();
      }
      return callMap(callee, args, expr.loc);
    }
    return fail(expr.loc, "'" + expr.name + "' is " + describe(callee) +
                              ", which cannot be called");
  }
  if (const FunctionDecl *decl = findFunction(expr.name))
    return makeInstance(*decl, &expr, expr.loc);
  return evalBuiltin(expr);
}

LogicalResult Elaborator::bindArgs(const Expr &call, ArrayRef<StringRef> names,
                                   unsigned required,
                                   SmallVectorImpl<const Expr *> &bound) {
  bound.assign(names.size(), nullptr);
  unsigned position = 0;
  for (auto [i, arg] : llvm::enumerate(call.operands)) {
    const std::string &name = call.argNames[i];
    unsigned slot;
    if (name.empty()) {
      slot = position++;
      if (slot >= names.size()) {
        emitError(arg->loc) << "'" << call.name << "' takes at most "
                            << names.size() << " argument(s)";
        return failure();
      }
    } else {
      const auto *it = llvm::find(names, name);
      if (it == names.end()) {
        auto diag = emitError(call.argNameLocs[i])
                    << "'" << call.name << "' has no argument '" << name
                    << "'; it takes:";
        for (StringRef n : names)
          diag << " " << n;
        return failure();
      }
      slot = it - names.begin();
    }
    if (bound[slot]) {
      emitError(call.argNameLocs[i]) << "argument '" << names[slot] << "' of '"
                                     << call.name << "' given twice";
      return failure();
    }
    bound[slot] = arg.get();
  }
  for (unsigned i = 0; i < required; ++i) {
    if (!bound[i]) {
      emitError(call.loc) << "'" << call.name << "' needs argument '"
                          << names[i] << "'";
      return failure();
    }
  }
  return success();
}
