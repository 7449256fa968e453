//===- IterationCost.cpp - Work and traffic of a layer's launches ---------===//
//
// Walks the step of a lowered fixed-point loop, or a layer function outside
// it, launch by launch and counts FLOPs and elements moved, as
// IterationCost.h describes.
//
//===----------------------------------------------------------------------===//

#include "fp/Codegen/IterationCost.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <utility>

using namespace mlir;
using namespace mlir::fp;
using namespace mlir::fp::codegen;

/// The elements of a value of `type`: a dynamic extent 0 is B, a dynamic
/// extent 1 after it is T (LayerPlan's convention). Values of other types
/// hold none; dynamic extents elsewhere are not modelled.
static FailureOr<CostTerms> elementsOf(Type type, int64_t dropTrailing = 0) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return CostTerms{};
  ArrayRef<int64_t> shape = tensor.getShape().drop_back(dropTrailing);
  int64_t statics = 1;
  bool batch = false, steps = false;
  for (auto [index, extent] : llvm::enumerate(shape)) {
    if (!ShapedType::isDynamic(extent)) {
      statics *= extent;
      continue;
    }
    if (index == 0)
      batch = true;
    else if (index == 1 && batch)
      steps = true;
    else
      return failure();
  }
  if (steps)
    return CostTerms{statics, 0, 0};
  if (batch)
    return CostTerms{0, statics, 0};
  return CostTerms{0, 0, statics};
}

static FailureOr<CostTerms> elementsOf(Value value, int64_t dropTrailing = 0) {
  return elementsOf(value.getType(), dropTrailing);
}

/// The static size of the last extent of `value`'s tensor type.
static int64_t lastExtent(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape().back();
}

/// `perElement` FLOPs per element of `value`.
static FailureOr<CostTerms> per(Value value, int64_t perElement) {
  FailureOr<CostTerms> elements = elementsOf(value);
  if (failed(elements))
    return failure();
  return perElement * *elements;
}

/// The FLOPs of one op, by its definition in FpOps.td: one per arithmetic
/// operation or elementary function. Fails for an op not modelled.
static FailureOr<CostTerms> flopsOf(Operation *op) {
  if (isa_and_nonnull<arith::ArithDialect, math::MathDialect>(
          op->getDialect())) {
    if (isa<arith::ConstantOp>(op) || op->getNumResults() != 1)
      return CostTerms{};
    return per(op->getResult(0), 1);
  }
  return llvm::TypeSwitch<Operation *, FailureOr<CostTerms>>(op)
      .Case<ShiftOp, SliceOp, ConcatOp, BroadcastOp, ReshapeOp, TriuOp,
            TransposeOp, TriuPackOp, YieldOp, BarrierOp, SolverUpdateOp,
            tensor::DimOp, tensor::SplatOp>(
          [](Operation *) { return CostTerms{}; })
      .Case([](LinearOp linear) -> FailureOr<CostTerms> {
        // A multiply and an add per input feature, the bias, and the weight
        // normalisation of a gain (square, add, scale per weight).
        FailureOr<CostTerms> flops =
            per(linear.getResult(),
                2 * lastExtent(linear.getInput()) + (linear.getBias() ? 1 : 0));
        if (failed(flops) || !linear.getGain())
          return flops;
        FailureOr<CostTerms> weight = per(linear.getWeight(), 3);
        if (failed(weight))
          return failure();
        return *flops += *weight;
      })
      .Case([](MatmulOp matmul) {
        auto lhs = cast<RankedTensorType>(matmul.getLhs().getType());
        int64_t inner =
            lhs.getShape()[lhs.getRank() - (matmul.getTransposeLhs() ? 2 : 1)];
        return per(matmul.getResult(), 2 * inner);
      })
      .Case([](MatrixExpOp exp) {
        // The f64 Taylor polynomial's 17 products of n × n matrices (2n
        // FLOPs per element each); the squarings depend on the norm and
        // are not counted.
        auto type = cast<RankedTensorType>(exp.getType());
        return per(exp.getResult(), 2 * type.getDimSize(0) * 17);
      })
      .Case([](SiluOp silu) { return per(silu.getResult(), 5); })
      .Case([](SigmoidOp sigmoid) { return per(sigmoid.getResult(), 4); })
      .Case([](SoftplusOp softplus) { return per(softplus.getResult(), 3); })
      .Case([](L2NormOp norm) -> FailureOr<CostTerms> {
        // Square and add per element, a sqrt, max and reciprocal per row,
        // a multiply per element.
        FailureOr<CostTerms> elements = per(norm.getResult(), 3);
        FailureOr<CostTerms> rows = elementsOf(norm.getResult(), 1);
        if (failed(elements) || failed(rows))
          return failure();
        return *elements += 3 * *rows;
      })
      .Case([](LayerNormOp norm) { return per(norm.getResult(), 7); })
      .Case([](RMSNormOp norm) { return per(norm.getResult(), 4); })
      .Case<ReduceSumOp, ReduceMaxOp>(
          [](Operation *reduce) { return per(reduce->getOperand(0), 1); })
      .Case([](ScanOp scan) { return per(scan.getResult(), 2); })
      .Case([](SelectiveScanOp scan) {
        // Per (token, channel, state): Δ·A, exp, ·S, Δu·B, add, C·S, sum;
        // per (token, channel): Δ·u and the skip's multiply-add.
        auto a = cast<RankedTensorType>(scan.getA().getType());
        return per(scan.getResult(),
                   7 * a.getShape().back() + 1 + (scan.getD() ? 2 : 0));
      })
      .Case([](CausalConvOp conv) {
        auto weight = cast<RankedTensorType>(conv.getWeight().getType());
        return per(conv.getResult(),
                   2 * weight.getShape().back() + (conv.getBias() ? 1 : 0));
      })
      .Case([](WeightNormOp norm) { return per(norm.getResult(), 3); })
      // The adjoints (derived backward functions).
      .Case([](WeightGradOp grad) {
        // A multiply and an add per (token, output, input feature).
        return per(grad.getGrad(), 2 * lastExtent(grad.getInput()));
      })
      .Case([](WeightNormGradOp grad) -> FailureOr<CostTerms> {
        // Per weight: square and add for the norm, multiply and add for
        // ⟨G, v⟩, the projection's multiply and subtract, the scale.
        return per(grad.getWeight(), 7);
      })
      .Case([](L2NormGradOp grad) -> FailureOr<CostTerms> {
        // Per element: the norm's square and add, y = x / n, ⟨y, g⟩'s
        // multiply and add, g − y·⟨y, g⟩ and the division; per row the
        // sqrt, max and reciprocal.
        FailureOr<CostTerms> elements = per(grad.getResult(), 8);
        FailureOr<CostTerms> rows = elementsOf(grad.getResult(), 1);
        if (failed(elements) || failed(rows))
          return failure();
        return *elements += 3 * *rows;
      })
      .Case([](SelectiveScanGradOp grad) -> FailureOr<CostTerms> {
        // Per (token, channel, state): the recomputed state (Δ·A, exp, the
        // decay's multiply, Δu·B, add), the adjoint state (multiply, g·C,
        // add), dC's and dB's multiply-adds, Σ λ·B for du and Δ, and dΔ's
        // and dA's terms (A·e^{ΔA}·h and Δ·e^{ΔA}·h times λ, each added);
        // per (token, channel): Δ·u, du's multiply, dΔ's multiply-add.
        auto a = cast<RankedTensorType>(grad.getA().getType());
        return per(grad.getDu(), 22 * a.getShape().back() + 4);
      })
      .Case([](CausalConvGradOp grad) {
        // A multiply and an add per tap for the input's and for the
        // weight's cotangent.
        auto weight = cast<RankedTensorType>(grad.getWeight().getType());
        return per(grad.getInput(), 4 * weight.getShape().back());
      })
      .Case([](ReduceMaxGradOp grad) { return per(grad.getInput(), 1); })
      // |y − f|, |f|, two maxima, and y + η (f − y) as two products and a sum.
      .Case([](SolverRelaxOp relax) { return per(relax.getResult(), 8); })
      .Default([](Operation *) { return failure(); });
}

/// The elements a fused kernel reads of `input`, bound to `argument` in its
/// body: only the columns its slices take when slices are all it does with
/// the input (its extents, read by tensor.dim, are not data).
static FailureOr<CostTerms> kernelRead(Value input, BlockArgument argument) {
  if (argument.use_empty())
    return CostTerms{};
  SmallVector<std::pair<int64_t, int64_t>> ranges;
  for (Operation *user : argument.getUsers()) {
    if (isa<tensor::DimOp>(user))
      continue;
    auto slice = dyn_cast<SliceOp>(user);
    if (!slice)
      return elementsOf(input);
    ranges.emplace_back(slice.getStart(), slice.getEnd());
  }
  llvm::sort(ranges);
  int64_t columns = 0, end = 0;
  for (auto [first, last] : ranges) {
    first = std::max(first, end);
    if (last > first)
      columns += last - first;
    end = std::max(end, last);
  }
  FailureOr<CostTerms> rows = elementsOf(input, 1);
  if (failed(rows))
    return failure();
  return columns * *rows;
}

/// The cost of one launch: a fused kernel, or a top-level op of the step.
static FailureOr<LaunchCost> launchCost(Operation *op) {
  LaunchCost cost;
  cost.op = op->getName().getStringRef().str();
  for (Value result : op->getResults()) {
    FailureOr<CostTerms> written = elementsOf(result);
    if (failed(written))
      return failure();
    cost.elements += *written;
  }
  if (auto kernel = dyn_cast<KernelOp>(op)) {
    Block &body = kernel.getBody().front();
    for (auto [input, argument] :
         llvm::zip_equal(kernel.getInputs(), body.getArguments())) {
      FailureOr<CostTerms> read = kernelRead(input, argument);
      if (failed(read))
        return failure();
      cost.elements += *read;
    }
    for (Operation &inner : body) {
      FailureOr<CostTerms> flops = flopsOf(&inner);
      if (failed(flops))
        return failure();
      cost.flops += *flops;
    }
    return cost;
  }
  // A slice copied out of a wider value reads only its columns.
  ValueRange operands =
      isa<SliceOp>(op) ? ValueRange(op->getResults()) : op->getOperands();
  for (Value operand : operands) {
    FailureOr<CostTerms> read = elementsOf(operand);
    if (failed(read))
      return failure();
    cost.elements += *read;
  }
  FailureOr<CostTerms> flops = flopsOf(op);
  if (failed(flops))
    return failure();
  cost.flops = *flops;
  return cost;
}

/// Whether `op`, at the top level of a step, is a launch of its own: the
/// solver's bookkeeping unless the relaxation before it does it
/// (relaxEndingStep), or an op that computes a tensor (not a reshape, which
/// is a view, or a constant).
static bool isLaunch(Operation *op) {
  if (auto update = dyn_cast<SolverUpdateOp>(op))
    return !relaxEndingStep(update);
  if (isa<ReshapeOp, arith::ConstantOp>(op))
    return false;
  return llvm::any_of(op->getResultTypes(),
                      [](Type type) { return isa<TensorType>(type); });
}

/// A copy of `elements`: read once, written once.
static LaunchCost copyCost(StringRef op, CostTerms elements) {
  return {op.str(), CostTerms{}, 2 * elements};
}

/// Whether two values lie in the same memory.
static bool sameStorage(const LayerPlan &plan, Value a, Value b) {
  const Storage &first = plan.storage(a), &second = plan.storage(b);
  return first.kind == second.kind && first.index == second.index &&
         first.aliasOf == second.aliasOf;
}

/// The launches of a function's return (emitReturn in the host emitter).
static LogicalResult returnCost(const LayerPlan &plan, func::ReturnOp ret,
                                SmallVectorImpl<LaunchCost> &launches) {
  StringRef op = ret->getName().getStringRef();
  auto copy = [&](unsigned index) -> LogicalResult {
    if (plan.computedInPlace(index))
      return success();
    FailureOr<CostTerms> elements = elementsOf(ret.getOperand(index));
    if (failed(elements))
      return failure();
    launches.push_back(copyCost(op, *elements));
    return success();
  };
  if (failed(copy(0)))
    return failure();
  if (plan.isBackward) {
    // Every parameter gradient added into the caller's, in one launch.
    if (plan.gradientParams.empty())
      return success();
    LaunchCost sum{op.str(), CostTerms{}, CostTerms{}};
    for (Value grad : ret.getOperands().drop_front()) {
      FailureOr<CostTerms> elements = elementsOf(grad);
      if (failed(elements))
        return failure();
      sum.flops += *elements;
      sum.elements += 3 * *elements;
    }
    launches.push_back(std::move(sum));
    return success();
  }
  for (unsigned i = 1; i < ret.getNumOperands(); ++i)
    if (plan.layer.getResultAttr(i, "fp.saved") && failed(copy(i)))
      return failure();
  return success();
}

FailureOr<SmallVector<LaunchCost>>
mlir::fp::codegen::callCost(const LayerPlan &plan) {
  SmallVector<LaunchCost> launches;
  for (Operation &op : plan.layer.getBody().front()) {
    // What the emitters run no launch for.
    if (isa<ParamOp, ReshapeOp, tensor::DimOp, SolverInitOp,
            SolverIterationsOp>(op))
      continue;
    if (auto slice = dyn_cast<SliceOp>(op); slice && slice.isReadInPlace())
      continue;
    if (auto transpose = dyn_cast<TransposeOp>(op);
        transpose && transpose.isReadOnlyAsLinearWeight())
      continue;
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (failed(returnCost(plan, ret, launches)))
        return failure();
      continue;
    }
    if (auto loop = dyn_cast<scf::WhileOp>(op)) {
      // The steps are iterationCost; the initial iterate is copied into the
      // iterate's buffer unless it is computed there.
      if (loop != plan.loop)
        return failure();
      for (auto [init, iterate] :
           llvm::zip_equal(loop.getInits(), loop.getBeforeArguments())) {
        if (sameStorage(plan, init, iterate))
          continue;
        FailureOr<CostTerms> elements = elementsOf(init);
        if (failed(elements))
          return failure();
        launches.push_back(copyCost(op.getName().getStringRef(), *elements));
      }
      continue;
    }
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      // A tensor is filled or uploaded; a scalar is a literal in the code.
      if (!isa<RankedTensorType>(constant.getType()))
        continue;
      FailureOr<CostTerms> elements = elementsOf(constant.getResult());
      if (failed(elements))
        return failure();
      launches.push_back(
          {op.getName().getStringRef().str(), CostTerms{}, *elements});
      continue;
    }
    if (auto concat = dyn_cast<ConcatOp>(op)) {
      // Each input is copied into its columns by a launch of its own.
      for (Value input : concat.getInputs()) {
        FailureOr<CostTerms> elements = elementsOf(input);
        if (failed(elements))
          return failure();
        launches.push_back(copyCost(op.getName().getStringRef(), *elements));
      }
      continue;
    }
    if (auto splat = dyn_cast<tensor::SplatOp>(op)) {
      FailureOr<CostTerms> elements = elementsOf(splat.getResult());
      if (failed(elements))
        return failure();
      launches.push_back(
          {op.getName().getStringRef().str(), CostTerms{}, *elements});
      continue;
    }
    if (!isLaunch(&op))
      continue;
    FailureOr<LaunchCost> cost = launchCost(&op);
    if (failed(cost))
      return failure();
    launches.push_back(std::move(*cost));
  }
  return launches;
}

FailureOr<SmallVector<LaunchCost>>
mlir::fp::codegen::iterationCost(const LayerPlan &plan) {
  if (!plan.loop)
    return failure();
  SmallVector<LaunchCost> launches;
  for (Operation &op : plan.loop.getAfter().front()) {
    if (!isLaunch(&op))
      continue;
    FailureOr<LaunchCost> cost = launchCost(&op);
    if (failed(cost))
      return failure();
    launches.push_back(std::move(*cost));
  }
  return launches;
}
