//===- FpDerivatives.cpp - Vector-Jacobian product rules --------*- C++ -*-===//
//
// The DifferentiableOpInterface of every differentiable fp op, and external
// models for the arith and math ops that fp programs use. Each rule builds
// the cotangents of an op's operands from those of its results with fp,
// arith and math ops at the builder's insertion point, located at the op.
//
//===----------------------------------------------------------------------===//

#include "fp/Dialect/FpDialect.h"
#include "fp/Dialect/FpInterfaces.h"
#include "fp/Dialect/FpOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectRegistry.h"

#include <numeric>

using namespace mlir;
using namespace mlir::fp;

#include "fp/Dialect/FpInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// Building blocks
//===----------------------------------------------------------------------===//

namespace {

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// `type` without the dimensions `dims` (increasing).
RankedTensorType withoutDims(RankedTensorType type, ArrayRef<int64_t> dims) {
  SmallVector<int64_t> shape;
  for (auto [i, size] : llvm::enumerate(type.getShape()))
    if (!llvm::is_contained(dims, int64_t(i)))
      shape.push_back(size);
  return RankedTensorType::get(shape, type.getElementType());
}

SmallVector<int64_t> range(int64_t begin, int64_t end) {
  SmallVector<int64_t> values(std::max<int64_t>(0, end - begin));
  std::iota(values.begin(), values.end(), begin);
  return values;
}

/// Arithmetic on same-typed tensors, located at the rule's op.
struct Math {
  OpBuilder &b;
  Location loc;

  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value neg(Value x) { return arith::NegFOp::create(b, loc, x); }
  Value sqrt(Value x) { return math::SqrtOp::create(b, loc, x); }
  Value sigmoid(Value x) { return SigmoidOp::create(b, loc, x); }

  /// Sums `x` over `dims` (increasing), which disappear.
  Value sum(Value x, ArrayRef<int64_t> dims) {
    if (dims.empty())
      return x;
    return ReduceSumOp::create(b, loc, withoutDims(tensorType(x), dims), x,
                               b.getDenseI64ArrayAttr(dims));
  }
  /// Sums over every dimension but the last.
  Value sumLeading(Value x) {
    return sum(x, range(0, tensorType(x).getRank() - 1));
  }
  /// Sums over the last dimension.
  Value sumLast(Value x) {
    int64_t rank = tensorType(x).getRank();
    return sum(x, {rank - 1});
  }
  /// Replicates `x` to the shape of `like`, `x`'s dimensions mapping to
  /// `dims` of the result.
  Value broadcast(Value x, Value like, ArrayRef<int64_t> dims) {
    return BroadcastOp::create(b, loc, like.getType(), x, like,
                               b.getDenseI64ArrayAttr(dims));
  }
  /// Replicates a value with one dimension less than `like` (the last) along
  /// `like`'s last dimension.
  Value broadcastLast(Value x, Value like) {
    return broadcast(x, like, range(0, tensorType(like).getRank() - 1));
  }
  /// Replicates a vector along every dimension of `like` but the last.
  Value broadcastLeading(Value x, Value like) {
    int64_t rank = tensorType(like).getRank();
    return broadcast(x, like, {rank - 1});
  }
  /// A scalar constant of `like`'s element type, broadcast to its shape.
  Value splat(double value, Value like) {
    RankedTensorType type = tensorType(like);
    auto element = cast<FloatType>(type.getElementType());
    auto scalar = arith::ConstantOp::create(b, loc, element,
                                            b.getFloatAttr(element, value));
    // The exact value, for code instantiated for a wider type.
    scalar->setAttr(FPDialect::getLiteralAttrName(), b.getF64FloatAttr(value));
    if (type.hasStaticShape()) {
      auto constant = arith::ConstantOp::create(
          b, loc, type,
          DenseElementsAttr::get(type, b.getFloatAttr(element, value)));
      constant->setAttr(FPDialect::getLiteralAttrName(),
                        b.getF64FloatAttr(value));
      return constant;
    }
    SmallVector<Value> sizes;
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (type.isDynamicDim(i))
        sizes.push_back(tensor::DimOp::create(b, loc, like, i));
    return tensor::SplatOp::create(b, loc, type, scalar, sizes);
  }
  /// Zeros of `type`, whose dynamic sizes are those of `like`.
  Value zeros(RankedTensorType type, Value like) {
    auto element = cast<FloatType>(type.getElementType());
    if (type.hasStaticShape())
      return arith::ConstantOp::create(
          b, loc, type,
          DenseElementsAttr::get(type, b.getFloatAttr(element, 0.0)));
    Value scalar = arith::ConstantOp::create(b, loc, element,
                                             b.getFloatAttr(element, 0.0));
    SmallVector<Value> sizes;
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (type.isDynamicDim(i))
        sizes.push_back(tensor::DimOp::create(b, loc, like, i));
    return tensor::SplatOp::create(b, loc, type, scalar, sizes);
  }
};

/// The rules of single-result ops get their result's cotangent, never
/// null: the caller asks only for ops with a cotangent.
Value onlyCotangent(ValueRange cotangents) { return cotangents.front(); }

/// The rule of a linear op whose adjoint is one op of kind `AdjointOp`
/// from the result's cotangent back to the type of `input` (reshape and
/// transpose are their own, triu and triu_pack each other's).
template <typename AdjointOp>
LogicalResult adjointByOp(OpBuilder &b, Location loc, Value input,
                          ValueRange cotangents, SmallVectorImpl<Value> &out) {
  out.push_back(
      AdjointOp::create(b, loc, input.getType(), onlyCotangent(cotangents)));
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Parameters and linear maps
//===----------------------------------------------------------------------===//

LogicalResult WeightNormOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                                     SmallVectorImpl<Value> &out) {
  // One op for the row-wise formulas (its description), which as
  // elementwise ops and row sums would be a dozen launches per weight.
  auto grad = WeightNormGradOp::create(b, getLoc(), getWeight().getType(),
                                       getGain().getType(), getWeight(),
                                       getGain(), onlyCotangent(cotangents));
  out.append({grad.getDweight(), grad.getDgain()});
  return success();
}

LogicalResult LinearOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                                 SmallVectorImpl<Value> &out) {
  if (getGain())
    return emitOpError("cannot be differentiated with its weight "
                       "normalisation inline; run fp-hoist-invariants first");
  Math m{b, getLoc()};
  Value g = onlyCotangent(cotangents), w = getWeight();
  RankedTensorType wType = tensorType(w);
  auto wtType = RankedTensorType::get(
      {wType.getDimSize(1), wType.getDimSize(0)}, wType.getElementType());
  Value wt = TransposeOp::create(b, getLoc(), wtType, w);
  Value dx = LinearOp::create(b, getLoc(), getInput().getType(), g, wt,
                              /*gain=*/Value(), /*bias=*/Value());
  Value dw = WeightGradOp::create(b, getLoc(), wType, g, getInput());
  out.append({dx, dw});
  if (getBias())
    out.push_back(m.sumLeading(g));
  return success();
}

//===----------------------------------------------------------------------===//
// Time-coupling ops
//===----------------------------------------------------------------------===//

LogicalResult ShiftOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                                SmallVectorImpl<Value> &out) {
  out.push_back(
      ShiftOp::create(b, getLoc(), onlyCotangent(cotangents), -getOffset()));
  return success();
}

LogicalResult ScanOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                               SmallVectorImpl<Value> &out) {
  // Forward: h_t = a_t h_{t−1} + b_t. The adjoint λ_t = g_t + a_{t+1} λ_{t+1}
  // is the scan in the other direction with the coefficients moved one
  // step; db = λ, da_t = λ_t h_{t−1}. Reverse scans mirror it.
  Math m{b, getLoc()};
  Value g = onlyCotangent(cotangents);
  const int64_t toPrevious = getReverse() ? -1 : 1;
  Value coeff = ShiftOp::create(b, getLoc(), getCoeff(), -toPrevious);
  Value lambda = ScanOp::create(b, getLoc(), coeff, g, !getReverse());
  Value previous = ShiftOp::create(b, getLoc(), getResult(), toPrevious);
  out.append({m.mul(lambda, previous), lambda});
  return success();
}

LogicalResult SelectiveScanOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                                        SmallVectorImpl<Value> &out) {
  // The recurrence by its gradient op; the skip term D ⊙ u around it:
  // du += g ⊙ D, dD = Σ_tokens g ⊙ u.
  Math m{b, getLoc()};
  Value g = onlyCotangent(cotangents), u = getU();
  auto grad = SelectiveScanGradOp::create(
      b, getLoc(), u.getType(), u.getType(), getA().getType(), getB().getType(),
      getB().getType(), u, getDelta(), getA(), getB(), getC(), g);
  Value du = grad.getDu();
  if (getD())
    du = m.add(du, m.mul(g, m.broadcastLeading(getD(), u)));
  out.append({du, grad.getDdelta(), grad.getDA(), grad.getDB(), grad.getDC()});
  if (getD())
    out.push_back(m.sumLeading(m.mul(g, u)));
  return success();
}

LogicalResult CausalConvOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                                     SmallVectorImpl<Value> &out) {
  Math m{b, getLoc()};
  Value g = onlyCotangent(cotangents);
  auto grad = CausalConvGradOp::create(b, getLoc(), getInput().getType(),
                                       getWeight().getType(), getInput(),
                                       getWeight(), g);
  out.append({grad.getDinput(), grad.getDweight()});
  if (getBias())
    out.push_back(m.sumLeading(g));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalisations
//===----------------------------------------------------------------------===//

LogicalResult L2NormOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                                 SmallVectorImpl<Value> &out) {
  out.push_back(L2NormGradOp::create(b, getLoc(), getInput().getType(),
                                     getInput(), onlyCotangent(cotangents),
                                     getEpsAttr()));
  return success();
}

LogicalResult LayerNormOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                                    SmallVectorImpl<Value> &out) {
  // x̂ = (x − μ) · r with r = 1/sqrt(var + eps), y = x̂ ⊙ w + β. With
  // ĝ = g ⊙ w: dx = r · (ĝ − mean(ĝ) − x̂ · mean(ĝ ⊙ x̂)),
  // dw = Σ_tokens g ⊙ x̂, dβ = Σ_tokens g.
  Math m{b, getLoc()};
  Value g = onlyCotangent(cotangents), x = getInput();
  RankedTensorType type = tensorType(x);
  const double width = double(type.getShape().back());
  Value rowLike = m.sumLast(x);
  Value invWidth = m.splat(1.0 / width, rowLike);
  Value mean = m.mul(m.sumLast(x), invWidth);
  Value centred = m.sub(x, m.broadcastLast(mean, x));
  Value var = m.mul(m.sumLast(m.mul(centred, centred)), invWidth);
  Value rstd =
      m.div(m.splat(1.0, rowLike),
            m.sqrt(m.add(var, m.splat(getEps().convertToDouble(), rowLike))));
  Value xhat = m.mul(centred, m.broadcastLast(rstd, x));
  Value gw = m.mul(g, m.broadcastLeading(getWeight(), x));
  Value meanG = m.mul(m.sumLast(gw), invWidth);
  Value meanGX = m.mul(m.sumLast(m.mul(gw, xhat)), invWidth);
  Value inner = m.sub(m.sub(gw, m.broadcastLast(meanG, x)),
                      m.mul(xhat, m.broadcastLast(meanGX, x)));
  Value dx = m.mul(inner, m.broadcastLast(rstd, x));
  out.append({dx, m.sumLeading(m.mul(g, xhat)), m.sumLeading(g)});
  return success();
}

LogicalResult RMSNormOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                                  SmallVectorImpl<Value> &out) {
  // r = 1/sqrt(mean(x²) + eps), y = x · r ⊙ w. With ĝ = g ⊙ w:
  // dx = r · (ĝ − x · r² · mean(ĝ ⊙ x)), dw = Σ_tokens g ⊙ x · r.
  Math m{b, getLoc()};
  Value g = onlyCotangent(cotangents), x = getInput();
  const double width = double(tensorType(x).getShape().back());
  Value rowLike = m.sumLast(x);
  Value invWidth = m.splat(1.0 / width, rowLike);
  Value meanSquare = m.mul(m.sumLast(m.mul(x, x)), invWidth);
  Value rstd = m.div(
      m.splat(1.0, rowLike),
      m.sqrt(m.add(meanSquare, m.splat(getEps().convertToDouble(), rowLike))));
  Value rstdAll = m.broadcastLast(rstd, x);
  Value gw = m.mul(g, m.broadcastLeading(getWeight(), x));
  Value meanGX = m.mul(m.sumLast(m.mul(gw, x)), invWidth);
  Value along = m.broadcastLast(m.mul(m.mul(rstd, rstd), meanGX), x);
  Value dx = m.mul(rstdAll, m.sub(gw, m.mul(x, along)));
  out.append({dx, m.sumLeading(m.mul(g, m.mul(x, rstdAll)))});
  return success();
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

LogicalResult SiluOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                               SmallVectorImpl<Value> &out) {
  // silu'(x) = σ(x) + silu(x) · σ(−x).
  Math m{b, getLoc()};
  Value x = getInput();
  Value slope = m.add(m.sigmoid(x), m.mul(getResult(), m.sigmoid(m.neg(x))));
  out.push_back(m.mul(onlyCotangent(cotangents), slope));
  return success();
}

LogicalResult SigmoidOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                                  SmallVectorImpl<Value> &out) {
  // σ'(x) = σ(x) · σ(−x).
  Math m{b, getLoc()};
  Value slope = m.mul(getResult(), m.sigmoid(m.neg(getInput())));
  out.push_back(m.mul(onlyCotangent(cotangents), slope));
  return success();
}

LogicalResult SoftplusOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                                   SmallVectorImpl<Value> &out) {
  Math m{b, getLoc()};
  out.push_back(m.mul(onlyCotangent(cotangents), m.sigmoid(getInput())));
  return success();
}

//===----------------------------------------------------------------------===//
// Shapes, reductions and small matrices
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                                    SmallVectorImpl<Value> &out) {
  // Sum over the replicated dimensions; `like` only gives the shape.
  Math m{b, getLoc()};
  SmallVector<int64_t> replicated;
  for (int64_t i = 0; i < tensorType(getResult()).getRank(); ++i)
    if (!llvm::is_contained(getDims(), i))
      replicated.push_back(i);
  out.push_back(m.sum(onlyCotangent(cotangents), replicated));
  if (getLike())
    out.push_back(Value());
  return success();
}

LogicalResult ReduceSumOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                                    SmallVectorImpl<Value> &out) {
  Math m{b, getLoc()};
  SmallVector<int64_t> kept;
  for (int64_t i = 0; i < tensorType(getInput()).getRank(); ++i)
    if (!llvm::is_contained(getDims(), i))
      kept.push_back(i);
  out.push_back(m.broadcast(onlyCotangent(cotangents), getInput(), kept));
  return success();
}

LogicalResult ReduceMaxOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                                    SmallVectorImpl<Value> &out) {
  out.push_back(ReduceMaxGradOp::create(b, getLoc(), getInput().getType(),
                                        getInput(), onlyCotangent(cotangents),
                                        getDimsAttr()));
  return success();
}

LogicalResult SliceOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                                SmallVectorImpl<Value> &out) {
  // The cotangent in place, zeros around it.
  Math m{b, getLoc()};
  RankedTensorType in = tensorType(getInput());
  const int64_t width = in.getShape().back();
  const int64_t start = getStart(), end = getEnd();
  auto piece = [&](int64_t size) {
    SmallVector<int64_t> shape(in.getShape());
    shape.back() = size;
    return m.zeros(RankedTensorType::get(shape, in.getElementType()),
                   getInput());
  };
  SmallVector<Value> parts;
  if (start > 0)
    parts.push_back(piece(start));
  parts.push_back(onlyCotangent(cotangents));
  if (end < width)
    parts.push_back(piece(width - end));
  out.push_back(parts.size() == 1
                    ? parts.front()
                    : ConcatOp::create(b, getLoc(), in, parts).getResult());
  return success();
}

LogicalResult ConcatOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                                 SmallVectorImpl<Value> &out) {
  Value g = onlyCotangent(cotangents);
  int64_t start = 0;
  for (Value input : getInputs()) {
    RankedTensorType type = tensorType(input);
    int64_t end = start + type.getShape().back();
    out.push_back(SliceOp::create(b, getLoc(), type, g, start, end));
    start = end;
  }
  return success();
}

LogicalResult ReshapeOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                                  SmallVectorImpl<Value> &out) {
  return adjointByOp<ReshapeOp>(b, getLoc(), getInput(), cotangents, out);
}

LogicalResult MatmulOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                                 SmallVectorImpl<Value> &out) {
  // C = op(L) · op(R): d op(L) = G · op(R)ᵀ and d op(R) = op(L)ᵀ · G, each
  // transposed back where the operand was used transposed.
  Value g = onlyCotangent(cotangents), l = getLhs(), r = getRhs();
  const bool tl = getTransposeLhs(), tr = getTransposeRhs();
  auto matmul = [&](Type type, Value lhs, Value rhs, bool transposeLhs,
                    bool transposeRhs) -> Value {
    return MatmulOp::create(b, getLoc(), type, lhs, rhs, transposeLhs,
                            transposeRhs);
  };
  Value dl = tl ? matmul(l.getType(), r, g, tr, true)
                : matmul(l.getType(), g, r, false, !tr);
  Value dr = tr ? matmul(r.getType(), g, l, true, tl)
                : matmul(r.getType(), l, g, !tl, false);
  out.append({dl, dr});
  return success();
}

LogicalResult TriuOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                               SmallVectorImpl<Value> &out) {
  return adjointByOp<TriuPackOp>(b, getLoc(), getInput(), cotangents, out);
}

LogicalResult TriuPackOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                                   SmallVectorImpl<Value> &out) {
  return adjointByOp<TriuOp>(b, getLoc(), getInput(), cotangents, out);
}

LogicalResult TransposeOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                                    SmallVectorImpl<Value> &out) {
  return adjointByOp<TransposeOp>(b, getLoc(), getInput(), cotangents, out);
}

LogicalResult MatrixExpOp::buildVJP(OpBuilder &b, ValueRange cotangents,
                                    SmallVectorImpl<Value> &out) {
  // dA = L(Aᵀ, G), the upper-right block of exp([[Aᵀ, G], [0, Aᵀ]]). The
  // block matrix is built row-major from its two halves of rows, each the
  // concatenation of two blocks, flattened; the block is read back the
  // same way.
  Math m{b, getLoc()};
  RankedTensorType type = tensorType(getInput());
  const int64_t n = type.getDimSize(0);
  Type element = type.getElementType();
  auto shaped = [&](ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, element);
  };
  auto reshape = [&](Value x, ArrayRef<int64_t> shape) -> Value {
    return ReshapeOp::create(b, getLoc(), shaped(shape), x);
  };
  auto concat = [&](ArrayRef<int64_t> shape, ValueRange parts) -> Value {
    return ConcatOp::create(b, getLoc(), shaped(shape), parts);
  };
  Value g = onlyCotangent(cotangents);
  Value at = TransposeOp::create(b, getLoc(), type, getInput());
  Value top = concat({n, 2 * n}, {at, g});
  Value bottom = concat({n, 2 * n}, {m.zeros(type, getInput()), at});
  Value block = reshape(concat({4 * n * n}, {reshape(top, {2 * n * n}),
                                             reshape(bottom, {2 * n * n})}),
                        {2 * n, 2 * n});
  Value exp = MatrixExpOp::create(b, getLoc(), block.getType(), block);
  Value right = SliceOp::create(b, getLoc(), shaped({2 * n, n}), exp, n, 2 * n);
  Value upper = SliceOp::create(b, getLoc(), shaped({n * n}),
                                reshape(right, {2 * n * n}), 0, n * n);
  out.push_back(reshape(upper, {n, n}));
  return success();
}

//===----------------------------------------------------------------------===//
// arith and math
//===----------------------------------------------------------------------===//

namespace {

/// The rule of an upstream elementwise op: `rule(math, op, g, out)`.
template <typename OpT, auto Rule>
struct ElementwiseVJP
    : public DifferentiableOpInterface::ExternalModel<ElementwiseVJP<OpT, Rule>,
                                                      OpT> {
  LogicalResult buildVJP(Operation *op, OpBuilder &b, ValueRange cotangents,
                         SmallVectorImpl<Value> &out) const {
    Math m{b, op->getLoc()};
    Rule(m, cast<OpT>(op), cotangents.front(), out);
    return success();
  }
};

void addRule(Math &, arith::AddFOp, Value g, SmallVectorImpl<Value> &out) {
  out.append({g, g});
}
void subRule(Math &m, arith::SubFOp, Value g, SmallVectorImpl<Value> &out) {
  out.append({g, m.neg(g)});
}
void mulRule(Math &m, arith::MulFOp op, Value g, SmallVectorImpl<Value> &out) {
  out.append({m.mul(g, op.getRhs()), m.mul(g, op.getLhs())});
}
void divRule(Math &m, arith::DivFOp op, Value g, SmallVectorImpl<Value> &out) {
  // d(a/b) = da/b − (a/b)·db/b.
  Value overB = m.div(g, op.getRhs());
  out.append({overB, m.neg(m.mul(overB, op.getResult()))});
}
void negRule(Math &m, arith::NegFOp, Value g, SmallVectorImpl<Value> &out) {
  out.push_back(m.neg(g));
}
void expRule(Math &m, math::ExpOp op, Value g, SmallVectorImpl<Value> &out) {
  out.push_back(m.mul(g, op.getResult()));
}
void logRule(Math &m, math::LogOp op, Value g, SmallVectorImpl<Value> &out) {
  out.push_back(m.div(g, op.getOperand()));
}
void sqrtRule(Math &m, math::SqrtOp op, Value g, SmallVectorImpl<Value> &out) {
  Value root = op.getResult();
  out.push_back(m.div(g, m.add(root, root)));
}
void tanhRule(Math &m, math::TanhOp op, Value g, SmallVectorImpl<Value> &out) {
  Value y = op.getResult();
  out.push_back(m.sub(g, m.mul(g, m.mul(y, y))));
}

} // namespace

void mlir::fp::registerDifferentiableExternalModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, arith::ArithDialect *) {
    arith::AddFOp::attachInterface<ElementwiseVJP<arith::AddFOp, addRule>>(
        *context);
    arith::SubFOp::attachInterface<ElementwiseVJP<arith::SubFOp, subRule>>(
        *context);
    arith::MulFOp::attachInterface<ElementwiseVJP<arith::MulFOp, mulRule>>(
        *context);
    arith::DivFOp::attachInterface<ElementwiseVJP<arith::DivFOp, divRule>>(
        *context);
    arith::NegFOp::attachInterface<ElementwiseVJP<arith::NegFOp, negRule>>(
        *context);
  });
  registry.addExtension(+[](MLIRContext *context, math::MathDialect *) {
    math::ExpOp::attachInterface<ElementwiseVJP<math::ExpOp, expRule>>(
        *context);
    math::LogOp::attachInterface<ElementwiseVJP<math::LogOp, logRule>>(
        *context);
    math::SqrtOp::attachInterface<ElementwiseVJP<math::SqrtOp, sqrtRule>>(
        *context);
    math::TanhOp::attachInterface<ElementwiseVJP<math::TanhOp, tanhRule>>(
        *context);
  });
}
