//===- HostEmitter.cpp - Host C++ for compiled model libraries --*- C++ -*-===//
//
// One C++ translation unit per library: for every layer a forward templated
// on the element type `Real` that calls the kernels of fp/Runtime/Kernels/
// Host.h op by op, with the lowered fixed-point loop as a host loop whose
// solver steps (continue rule, relaxation, bookkeeping) run where the data
// is; then the C entry points and the manifest. Literals are of the
// arithmetic type `Scalar` (fp::Compute<Real>: float for bf16). The forward
// and backward are instantiated for every element type the library lists.
//
//===----------------------------------------------------------------------===//

#include "fp/Codegen/HostEmitter.h"
#include "fp/Codegen/KernelEmitter.h"

#include "fp/Codegen/CodeWriter.h"
#include "fp/Codegen/LayerPlan.h"
#include "fp/Codegen/Manifest.h"
#include "fp/Dialect/FpDialect.h"
#include "fp/Dialect/FpOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fp;
using namespace mlir::fp::codegen;

/// A C++ identifier fragment for a symbol name.
static std::string identifier(StringRef name) {
  std::string out;
  for (char c : name)
    out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

namespace {

/// Emits the forward, or the derived backward, of one layer.
class LayerEmitter {
public:
  LayerEmitter(CodeWriter &w, const LayerPlan &plan) : w(w), plan(plan) {}

  /// Emits `template <typename Real> <signature> { ... }`.
  LogicalResult emitFunction(StringRef signature);

  /// After emitFunction, on CUDA: emits `template <typename Real> int64_t
  /// sampleChunks(int64_t B, int64_t T)`, the most chunks of a sample's
  /// tokens any of the function's sample kernels needs to fill the device
  /// at a call shape (fp::cuda::sampleChunks).
  void emitSampleChunks();

private:
  CodeWriter &w;
  const LayerPlan &plan;
  /// Expressions for index values (B, T or a number).
  llvm::DenseMap<Value, std::string> indices;
  /// Expressions for scalar float values.
  llvm::DenseMap<Value, std::string> scalars;
  /// The emitted function object of every fp.kernel.
  llvm::DenseMap<Operation *, KernelLaunch> kernels;
  int64_t nextId = 0;
  /// The C++ object of the layer's solver (LayerPlan allows one).
  std::string solverName;

  std::string name(Value value) const;
  const Shape &shape(Value value) const { return plan.shape(value); }
  std::string rows(Value value) const {
    return shape(value).product(0, shape(value).rank() - 1);
  }
  int64_t width(Value value) const { return shape(value).extents.back().size; }
  std::string uniqueName(StringRef stem) {
    return (stem + llvm::Twine(nextId++)).str();
  }
  std::string shapeLiteral(const Shape &s) const;

  LogicalResult emitBlock(Block &block);
  LogicalResult emitOp(Operation *op);
  LogicalResult emitElementwise(Operation *op);
  LogicalResult emitConstant(arith::ConstantOp op);
  LogicalResult emitLoop(scf::WhileOp loop);
  LogicalResult emitReduce(Operation *op, Value input, ArrayRef<int64_t> dims,
                           bool isSum);
  LogicalResult emitReturn(func::ReturnOp ret);
};

} // namespace

std::string LayerEmitter::name(Value value) const {
  const Storage &s = plan.storage(value);
  switch (s.kind) {
  case Storage::Input:
    return "in";
  case Storage::Param:
    return "p" + std::to_string(s.index);
  case Storage::Buffer:
    return "s" + std::to_string(s.index);
  case Storage::Saved:
    return "saved" + std::to_string(s.index);
  case Storage::GradOutput:
    return "dy";
  case Storage::View:
    return s.index == 0
               ? name(s.aliasOf)
               : "(" + name(s.aliasOf) + " + " + std::to_string(s.index) + ")";
  case Storage::Alias:
  case Storage::Iterations:
    break;
  }
  llvm_unreachable("value without data");
}

std::string LayerEmitter::shapeLiteral(const Shape &s) const {
  std::string text = "kernels::Shape{" + std::to_string(s.rank()) + ", {";
  for (int64_t i = 0; i < s.rank(); ++i) {
    if (i)
      text += ", ";
    text += s.product(i, i + 1);
  }
  return text + "}}";
}

void LayerEmitter::emitSampleChunks() {
  w.text("template <typename Real>");
  auto fn = w.block("int64_t sampleChunks(int64_t B, int64_t T)");
  w.text("int64_t chunks = 1;");
  plan.layer.walk([&](KernelOp kernel) {
    const KernelLaunch &launch = kernels.find(kernel)->second;
    if (launch.sequential)
      w.line("chunks = std::max(chunks, kernels::sampleChunks<Real, "
             "{0}<Real>>(B, T, {1}));",
             launch.name, launch.scratch);
  });
  w.text("(void)B;");
  w.text("(void)T;");
  w.text("return chunks;");
}

LogicalResult LayerEmitter::emitFunction(StringRef signature) {
  // The kernels' function objects first, at namespace scope.
  const char *stem = plan.isBackward ? "BackwardKernel" : "Kernel";
  WalkResult walk = plan.layer.walk([&](KernelOp kernel) {
    FailureOr<KernelLaunch> launch =
        emitKernelFunctor(w, kernel, stem + std::to_string(kernels.size()));
    if (failed(launch))
      return WalkResult::interrupt();
    kernels[kernel] = std::move(*launch);
    w.blank();
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  w.text("template <typename Real>");
  auto fn = w.block("{0}", signature);
  w.text("using Scalar = fp::Compute<Real>;");
  w.text("kernels::Scope scope(args.stream);");
  w.text("const int64_t B = args.batch, T = args.seq_len;");
  w.text("(void)B;");
  w.text("(void)T;");
  w.text("const Real *in = static_cast<const Real *>(args.input);");
  if (!plan.saved.empty()) {
    // The saved values, laid out as buffer_sizes() sized them.
    w.line("size_t savedOffsets[{0}];", plan.saved.size());
    w.line("kernels::layoutBuffers(kSaved, {0}, B, T, sizeof(Real), "
           "savedOffsets);",
           plan.saved.size());
  }
  if (plan.isBackward) {
    w.text("const Real *dy = static_cast<const Real *>(args.grad_output);");
    for (size_t i = 0; i < plan.saved.size(); ++i)
      w.line("const Real *saved{0} = reinterpret_cast<const Real *>("
             "static_cast<const char *>(args.saved) + savedOffsets[{0}]);",
             i);
  }
  for (auto [i, param] : llvm::enumerate(plan.params))
    w.line("const Real *p{0} = static_cast<const Real *>(args.params[{0}]); "
           "// {1}",
           i, param.name);
  // Buffers in the caller's memory: the output (input cotangent), and a
  // saved value when the call saves.
  for (auto [i, slot] : llvm::enumerate(plan.slots)) {
    if (slot.result == 0) {
      w.line("Real *s{0} = static_cast<Real *>(args.{1});", i,
             plan.isBackward ? "grad_input" : "output");
    } else if (slot.result > 0) {
      w.line("Real *s{0} = args.saved ? reinterpret_cast<Real *>("
             "static_cast<char *>(args.saved) + savedOffsets[{1}]) : "
             "reinterpret_cast<Real *>(workspace + offsets[{0}]);",
             i, plan.savedIndex(slot.result));
    } else {
      w.line("Real *s{0} = reinterpret_cast<Real *>(workspace + offsets[{0}]);",
             i);
    }
  }
  if (!plan.slots.empty())
    w.line("(void)s0;");
  return emitBlock(plan.layer.getBody().front());
}

LogicalResult LayerEmitter::emitBlock(Block &block) {
  for (Operation &op : block)
    if (failed(emitOp(&op)))
      return failure();
  return success();
}

LogicalResult LayerEmitter::emitOp(Operation *op) {
  // Ops that produce no data of their own.
  if (isa<ParamOp, ReshapeOp>(op))
    return success();
  // Ops whose readers read their input where it lies.
  if (auto slice = dyn_cast<SliceOp>(op); slice && slice.isReadInPlace())
    return success();
  if (auto transpose = dyn_cast<TransposeOp>(op);
      transpose && transpose.isReadOnlyAsLinearWeight())
    return success();
  if (auto dim = dyn_cast<tensor::DimOp>(op)) {
    std::optional<int64_t> index = dim.getConstantIndex();
    if (!index)
      return op->emitOpError("cannot emit tensor.dim with a dynamic index");
    indices[dim] = shape(dim.getSource()).product(*index, *index + 1);
    return success();
  }
  if (auto constant = dyn_cast<arith::ConstantOp>(op))
    return emitConstant(constant);
  // Emitted with the relaxation before it (relaxAndUpdate).
  if (auto update = dyn_cast<SolverUpdateOp>(op);
      update && relaxEndingStep(update))
    return success();

  std::string where = locationComment(op->getLoc());
  w.line("// {0}{1}{2}", op->getName().getStringRef(),
         where.empty() ? "" : " at ", where);

  if (OpTrait::hasElementwiseMappableTraits(op) ||
      isa<SiluOp, SigmoidOp, SoftplusOp>(op))
    return emitElementwise(op);

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](LinearOp linear) -> LogicalResult {
        if (linear.getGain())
          return linear.emitOpError(
              "cannot emit a weight-normalised fp.linear; run "
              "fp-hoist-invariants, which makes the normalisation explicit");
        // A weight that is an unmaterialised fp.transpose is read as it
        // lies, by a GEMM that transposes the other way.
        Value weight = linear.getWeight();
        auto transpose = weight.getDefiningOp<TransposeOp>();
        const bool transposed =
            transpose && transpose.isReadOnlyAsLinearWeight();
        Value input = linear.getInput();
        Value read = transposed ? transpose.getInput() : weight;
        std::string bias =
            linear.getBias() ? name(linear.getBias()) : "nullptr";
        // Operands read in place in wider matrices (fp.slice) pass their
        // row strides.
        if (plan.rowStride(input) != width(input) ||
            plan.rowStride(read) != width(read)) {
          w.line("kernels::linearStrided({0}, {1}, {2}, {3}, {4}, {5}, {6}, "
                 "{7}, {8}, {9});",
                 name(input), plan.rowStride(input), rows(input), width(input),
                 name(read), plan.rowStride(read),
                 transposed ? "true" : "false", width(linear), bias,
                 name(linear));
          return success();
        }
        w.line("kernels::{0}({1}, {2}, {3}, {4}, {5}, {6}, {7});",
               transposed ? "linearTransposed" : "linear", name(input),
               rows(input), width(input), name(read), width(linear), bias,
               name(linear));
        return success();
      })
      .Case([&](WeightNormOp norm) {
        auto type = cast<RankedTensorType>(norm.getType());
        w.line("kernels::weightNorm({0}, {1}, {2}, {3}, {4});",
               name(norm.getWeight()), name(norm.getGain()), type.getDimSize(0),
               type.getDimSize(1), name(norm));
        return success();
      })
      .Case([&](WeightNormGradOp grad) {
        auto type = cast<RankedTensorType>(grad.getWeight().getType());
        w.line("kernels::weightNormGrad({0}, {1}, {2}, {3}, {4}, {5}, {6});",
               name(grad.getWeight()), name(grad.getGain()),
               name(grad.getGrad()), type.getDimSize(0), type.getDimSize(1),
               name(grad.getDweight()), name(grad.getDgain()));
        return success();
      })
      .Case([&](SliceOp slice) {
        w.line("kernels::sliceColumns({0}, {1}, {2}, {3}, {4}, {5});",
               name(slice.getInput()), rows(slice.getInput()),
               width(slice.getInput()), slice.getStart(),
               slice.getEnd() - slice.getStart(), name(slice));
        return success();
      })
      .Case([&](ConcatOp concat) {
        int64_t offset = 0;
        for (Value input : concat.getInputs()) {
          w.line("kernels::insertColumns({0}, {1}, {2}, {3}, {4}, {5});",
                 name(input), rows(input), width(input), offset, width(concat),
                 name(concat));
          offset += width(input);
        }
        return success();
      })
      .Case([&](BroadcastOp broadcast) {
        Value input = broadcast.getInput();
        const Shape &out = shape(broadcast);
        if (shape(input).rank() == 0) {
          w.line("kernels::fillFrom({0}, {1}, {2});", name(broadcast),
                 out.numElements(), name(input));
          return success();
        }
        std::string dims = uniqueName("dims");
        w.line("const int {0}[] = {{{1}};", dims,
               llvm::join(
                   llvm::map_range(broadcast.getDims(),
                                   [](int64_t d) { return std::to_string(d); }),
                   ", "));
        w.line("kernels::broadcast({0}, {1}, {2}, {3}, {4});", name(input),
               shapeLiteral(out), dims, shape(input).rank(), name(broadcast));
        return success();
      })
      .Case([&](ReduceSumOp reduce) {
        return emitReduce(reduce, reduce.getInput(), reduce.getDims(), true);
      })
      .Case([&](ReduceMaxOp reduce) {
        return emitReduce(reduce, reduce.getInput(), reduce.getDims(), false);
      })
      .Case([&](ShiftOp shift) {
        w.line("kernels::shift({0}, B, T, {1}, {2}, {3});",
               name(shift.getInput()), shape(shift).tokenSize(),
               static_cast<int64_t>(shift.getOffset()), name(shift));
        return success();
      })
      .Case([&](ScanOp scan) {
        w.line("kernels::scan({0}, {1}, B, T, {2}, {3}, {4});",
               name(scan.getCoeff()), name(scan.getInput()),
               shape(scan).tokenSize(), scan.getReverse() ? "true" : "false",
               name(scan));
        return success();
      })
      .Case([&](SelectiveScanOp scan) {
        auto a = cast<RankedTensorType>(scan.getA().getType());
        w.line("kernels::selectiveScan({0}, {1}, {2}, {3}, {4}, {5}, B, T, "
               "{6}, {7}, {8});",
               name(scan.getU()), name(scan.getDelta()), name(scan.getA()),
               name(scan.getB()), name(scan.getC()),
               scan.getD() ? name(scan.getD()) : "nullptr", a.getDimSize(0),
               a.getDimSize(1), name(scan));
        return success();
      })
      .Case([&](CausalConvOp conv) {
        auto weight = cast<RankedTensorType>(conv.getWeight().getType());
        Value input = conv.getInput();
        std::string bias = conv.getBias() ? name(conv.getBias()) : "nullptr";
        if (plan.rowStride(input) != width(input)) {
          w.line("kernels::causalConvStrided({0}, {1}, {2}, {3}, B, T, {4}, "
                 "{5}, {6});",
                 name(input), plan.rowStride(input), name(conv.getWeight()),
                 bias, weight.getDimSize(0), weight.getDimSize(1), name(conv));
          return success();
        }
        w.line("kernels::causalConv({0}, {1}, {2}, B, T, {3}, {4}, {5});",
               name(input), name(conv.getWeight()), bias, weight.getDimSize(0),
               weight.getDimSize(1), name(conv));
        return success();
      })
      .Case([&](L2NormOp norm) {
        w.line("kernels::l2norm({0}, {1}, {2}, {3}, {4});",
               name(norm.getInput()), rows(norm), width(norm),
               realLiteral(norm.getEps().convertToDouble()), name(norm));
        return success();
      })
      .Case([&](LayerNormOp norm) {
        w.line("kernels::layerNorm({0}, {1}, {2}, {3}, {4}, {5}, {6});",
               name(norm.getInput()), name(norm.getWeight()),
               name(norm.getBias()), rows(norm), width(norm),
               realLiteral(norm.getEps().convertToDouble()), name(norm));
        return success();
      })
      .Case([&](RMSNormOp norm) {
        w.line("kernels::rmsNorm({0}, {1}, {2}, {3}, {4}, {5});",
               name(norm.getInput()), name(norm.getWeight()), rows(norm),
               width(norm), realLiteral(norm.getEps().convertToDouble()),
               name(norm));
        return success();
      })
      .Case([&](MatmulOp matmul) {
        auto lhs = cast<RankedTensorType>(matmul.getLhs().getType());
        auto rhs = cast<RankedTensorType>(matmul.getRhs().getType());
        int64_t rank = lhs.getRank();
        int64_t l0 = lhs.getDimSize(rank - 2), l1 = lhs.getDimSize(rank - 1);
        int64_t r0 = rhs.getDimSize(rank - 2), r1 = rhs.getDimSize(rank - 1);
        bool tl = matmul.getTransposeLhs(), tr = matmul.getTransposeRhs();
        int64_t m = tl ? l1 : l0, k = tl ? l0 : l1, n = tr ? r0 : r1;
        w.line("kernels::matmul({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, "
               "{8});",
               name(matmul.getLhs()), name(matmul.getRhs()),
               shape(matmul).product(0, rank - 2), m, n, k,
               tl ? "true" : "false", tr ? "true" : "false", name(matmul));
        return success();
      })
      .Case([&](TriuOp triu) {
        auto type = cast<RankedTensorType>(triu.getType());
        w.line("kernels::triu({0}, {1}, {2}, {3});", name(triu.getInput()),
               rows(triu.getInput()), type.getShape().back(), name(triu));
        return success();
      })
      .Case([&](tensor::SplatOp splat) -> LogicalResult {
        const Shape &out = shape(splat);
        for (auto [i, size] : llvm::enumerate(splat.getDynamicSizes())) {
          auto it = indices.find(size);
          if (it == indices.end() || it->second != out.product(i, i + 1))
            return splat.emitOpError("cannot emit: dynamic size ")
                   << i << " is not the batch or time extent of its position";
        }
        auto it = scalars.find(splat.getInput());
        if (it == scalars.end())
          return splat.emitOpError("cannot emit a splat of a value that is "
                                   "not a constant");
        w.line("kernels::fill({0}, {1}, {2});", name(splat), out.numElements(),
               it->second);
        return success();
      })
      .Case([&](KernelOp kernel) {
        const KernelLaunch &launch = kernels.find(kernel)->second;
        SmallVector<std::string> fields;
        for (Value input : kernel.getInputs())
          fields.push_back(name(input));
        for (Value result : kernel.getResults())
          fields.push_back(name(result));
        if (launch.shifted)
          fields.push_back("T");
        std::string functor = llvm::formatv("{0}<Real>{{{1}}", launch.name,
                                            llvm::join(fields, ", "));
        if (launch.sequential)
          w.line("kernels::forEachSample<Real>(B, T, {0}, {1}, {2}, {3});",
                 launch.scratch, launch.state, launch.cost, functor);
        else
          w.line("kernels::forEachToken<Real>(B, T, {0}, {1}, {2});",
                 launch.scratch, launch.cost, functor);
        return success();
      })
      .Case([&](scf::WhileOp loop) { return emitLoop(loop); })
      .Case([&](SolverInitOp init) {
        solverName = uniqueName("solver");
        if (plan.isBackward)
          w.line("kernels::Solver<Real> {0}(B, kBackwardSolver, true, "
                 "nullptr);",
                 solverName);
        else
          w.line("kernels::Solver<Real> {0}(B, kSolver, args.training != 0, "
                 "args.solver);",
                 solverName);
        return success();
      })
      .Case([&](SolverRelaxOp relax) {
        Value iterate = relax.getCurrent();
        w.line("{0}.{1}({2}, {3}, {4}, {5});", solverName,
               endsStep(relax) ? "relaxAndUpdate" : "relax", name(iterate),
               name(relax.getNext()), shape(iterate).product(1, 2),
               shape(iterate).product(2, shape(iterate).rank()));
        return success();
      })
      .Case([&](SolverUpdateOp) {
        w.line("{0}.update();", solverName);
        return success();
      })
      .Case([&](SolverIterationsOp) {
        if (plan.isBackward)
          w.line("if (args.stats)\n  args.stats->backward_steps = "
                 "{0}.numSteps();",
                 solverName);
        else
          w.line("{0}.report(args.stats, args.device_stats);", solverName);
        return success();
      })
      .Case([&](func::ReturnOp ret) { return emitReturn(ret); })
      .Case([&](TransposeOp transpose) {
        auto type = cast<RankedTensorType>(transpose.getInput().getType());
        w.line("kernels::transpose({0}, {1}, {2}, {3});",
               name(transpose.getInput()), type.getDimSize(0),
               type.getDimSize(1), name(transpose));
        return success();
      })
      .Case([&](WeightGradOp grad) {
        Value dy = grad.getGrad(), input = grad.getInput();
        if (plan.rowStride(dy) != width(dy) ||
            plan.rowStride(input) != width(input)) {
          w.line("kernels::weightGradStrided({0}, {1}, {2}, {3}, {4}, {5}, "
                 "{6}, {7});",
                 name(dy), plan.rowStride(dy), name(input),
                 plan.rowStride(input), rows(dy), width(dy), width(input),
                 name(grad));
          return success();
        }
        w.line("kernels::weightGrad({0}, {1}, {2}, {3}, {4}, {5});", name(dy),
               name(input), rows(dy), width(dy), width(input), name(grad));
        return success();
      })
      .Case([&](TriuPackOp pack) {
        auto type = cast<RankedTensorType>(pack.getInput().getType());
        const int64_t m = type.getShape().back();
        w.line("kernels::triuPack({0}, {1}, {2}, {3});", name(pack.getInput()),
               shape(pack.getInput()).product(0, type.getRank() - 2), m,
               name(pack));
        return success();
      })
      .Case([&](L2NormGradOp grad) {
        w.line("kernels::l2normGrad({0}, {1}, {2}, {3}, {4}, {5});",
               name(grad.getInput()), name(grad.getGrad()), rows(grad),
               width(grad), realLiteral(grad.getEps().convertToDouble()),
               name(grad));
        return success();
      })
      .Case([&](ReduceMaxGradOp grad) {
        const Shape &in = shape(grad.getInput());
        std::string mask = uniqueName("reduced");
        SmallVector<std::string> flags;
        for (int64_t d = 0; d < in.rank(); ++d)
          flags.push_back(llvm::is_contained(grad.getDims(), d) ? "true"
                                                                : "false");
        w.line("const bool {0}[] = {{{1}};", mask, llvm::join(flags, ", "));
        w.line("kernels::reduceMaxGrad({0}, {1}, {2}, {3}, {4});",
               name(grad.getInput()), name(grad.getGrad()), shapeLiteral(in),
               mask, name(grad));
        return success();
      })
      .Case([&](SelectiveScanGradOp grad) {
        auto a = cast<RankedTensorType>(grad.getA().getType());
        w.line("kernels::selectiveScanGrad({0}, {1}, {2}, {3}, {4}, {5}, B, "
               "T, {6}, {7}, {8}, {9}, {10}, {11}, {12});",
               name(grad.getU()), name(grad.getDelta()), name(grad.getA()),
               name(grad.getB()), name(grad.getC()), name(grad.getGrad()),
               a.getDimSize(0), a.getDimSize(1), name(grad.getDu()),
               name(grad.getDdelta()), name(grad.getDA()), name(grad.getDB()),
               name(grad.getDC()));
        return success();
      })
      .Case([&](CausalConvGradOp grad) {
        auto weight = cast<RankedTensorType>(grad.getWeight().getType());
        Value input = grad.getInput();
        if (plan.rowStride(input) != width(input)) {
          w.line("kernels::causalConvGradStrided({0}, {1}, {2}, {3}, B, T, "
                 "{4}, {5}, {6}, {7});",
                 name(input), plan.rowStride(input), name(grad.getWeight()),
                 name(grad.getGrad()), weight.getDimSize(0),
                 weight.getDimSize(1), name(grad.getDinput()),
                 name(grad.getDweight()));
          return success();
        }
        w.line("kernels::causalConvGrad({0}, {1}, {2}, B, T, {3}, {4}, {5}, "
               "{6});",
               name(input), name(grad.getWeight()), name(grad.getGrad()),
               weight.getDimSize(0), weight.getDimSize(1),
               name(grad.getDinput()), name(grad.getDweight()));
        return success();
      })
      .Default([&](Operation *other) {
        return other->emitOpError("cannot emit this operation for the host");
      });
}

LogicalResult LayerEmitter::emitReturn(func::ReturnOp ret) {
  if (plan.isBackward) {
    // The input's cotangent, then every parameter gradient accumulated into
    // the caller's, all in one call (one launch on a GPU).
    Value dx = ret.getOperand(0);
    if (!plan.computedInPlace(0))
      w.line("kernels::copy({0}, {1}, static_cast<Real *>(args.grad_input));",
             name(dx), shape(dx).numElements());
    if (plan.gradientParams.empty())
      return success();
    std::string sums = uniqueName("gradients");
    {
      auto list = w.blockWithTrailer(
          ";", "const kernels::GradientSum<Real> {0}[] =", sums);
      for (auto [i, param] : llvm::enumerate(plan.gradientParams)) {
        Value grad = ret.getOperand(i + 1);
        w.line("{{{0}, {1}, static_cast<Real *>(args.grad_params[{2}])}, "
               "// {3}",
               name(grad), shape(grad).numElements(), param,
               plan.params[param].name);
      }
    }
    w.line("kernels::accumulateAll({0}, {1});", sums,
           plan.gradientParams.size());
    return success();
  }
  // What was not computed in the caller's memory is copied there; a
  // training forward (with `saved`) keeps what the backward reads.
  Value result = ret.getOperand(0);
  if (!plan.computedInPlace(0))
    w.line("kernels::copy({0}, {1}, static_cast<Real *>(args.output));",
           name(result), shape(result).numElements());
  for (unsigned i = 1; i < ret.getNumOperands(); ++i) {
    if (!plan.layer.getResultAttr(i, "fp.saved") || plan.computedInPlace(i))
      continue;
    Value value = ret.getOperand(i);
    w.line("if (args.saved)");
    w.line("  kernels::copy({0}, {1}, reinterpret_cast<Real *>("
           "static_cast<char *>(args.saved) + savedOffsets[{2}]));",
           name(value), shape(value).numElements(), plan.savedIndex(i));
  }
  return success();
}

LogicalResult LayerEmitter::emitReduce(Operation *op, Value input,
                                       ArrayRef<int64_t> dims, bool isSum) {
  const Shape &in = shape(input);
  Value result = op->getResult(0);
  if (isSum && dims.size() == 1 && dims[0] == in.rank() - 1) {
    w.line("kernels::sumRows({0}, {1}, {2}, {3});", name(input), rows(input),
           width(input), name(result));
    return success();
  }
  // A sum over every token (a parameter's gradient).
  if (isSum && int64_t(dims.size()) == in.rank() - 1 &&
      llvm::all_of(llvm::enumerate(dims), [](auto pair) {
        return int64_t(pair.index()) == pair.value();
      })) {
    w.line("kernels::sumColumns({0}, {1}, {2}, {3});", name(input), rows(input),
           width(input), name(result));
    return success();
  }
  std::string mask = uniqueName("reduced");
  SmallVector<std::string> flags;
  for (int64_t d = 0; d < in.rank(); ++d)
    flags.push_back(llvm::is_contained(dims, d) ? "true" : "false");
  w.line("const bool {0}[] = {{{1}};", mask, llvm::join(flags, ", "));
  w.line("kernels::reduce({0}, {1}, {2}, kernels::Reduction::{3}, {4});",
         name(input), shapeLiteral(in), mask, isSum ? "Sum" : "Max",
         name(result));
  return success();
}

LogicalResult LayerEmitter::emitConstant(arith::ConstantOp op) {
  Type type = op.getType();
  if (isa<IndexType>(type)) {
    indices[op] = std::to_string(cast<IntegerAttr>(op.getValue()).getInt());
    return success();
  }
  std::optional<double> splat = splatLiteral(op);
  if (splat && isa<FloatType>(type)) {
    scalars[op] = realLiteral(*splat);
    return success();
  }
  auto dense = dyn_cast<DenseFPElementsAttr>(op.getValue());
  if (!dense)
    return op.emitOpError("cannot emit a constant of type ") << type;
  std::string where = locationComment(op.getLoc());
  w.line("// arith.constant{0}{1}", where.empty() ? "" : " at ", where);
  const Shape &out = shape(op);
  if (splat) {
    w.line("kernels::fill({0}, {1}, {2});", name(op), out.numElements(),
           realLiteral(*splat));
    return success();
  }
  std::string values = uniqueName("values");
  SmallVector<std::string> literals;
  for (APFloat value : dense.getValues<APFloat>())
    literals.push_back(realLiteral(value.convertToDouble()));
  w.line("static const Scalar {0}[] = {{{1}};", values,
         llvm::join(literals, ", "));
  w.line("kernels::upload({0}, {1}, {2});", values, literals.size(), name(op));
  return success();
}

LogicalResult LayerEmitter::emitElementwise(Operation *op) {
  Value result = op->getResult(0);
  if (!isa<RankedTensorType>(result.getType()))
    return op->emitOpError("cannot emit a scalar operation");
  StringRef functor = elementwiseFunctor(op);
  if (functor.empty())
    return op->emitOpError("cannot emit this elementwise operation for the "
                           "host");
  SmallVector<std::string> operands;
  for (Value operand : op->getOperands())
    operands.push_back(name(operand));
  w.line("kernels::{0}(kernels::{1}(), {2}, {3}, {4});",
         operands.size() == 1 ? "unary" : "binary", functor,
         shape(result).numElements(), llvm::join(operands, ", "), name(result));
  return success();
}

LogicalResult LayerEmitter::emitLoop(scf::WhileOp loop) {
  // LayerPlan accepted only loops of fp-lower-fixed-point: the condition is
  // the solver's continue rule, and the step relaxes the iterates in place.
  for (auto [init, iterate] :
       llvm::zip_equal(loop.getInits(), loop.getBeforeArguments()))
    if (name(init) != name(iterate))
      w.line("kernels::copy({0}, {1}, {2});", name(init),
             shape(init).numElements(), name(iterate));
  // LayerPlan accepts one loop per layer, so the step holds no other loop:
  // on CUDA it can run as a graph (Device.cuh, Solver::loop).
  auto body = w.blockWithTrailer(");", "{0}.loop([&]", solverName);
  for (Operation &op : loop.getAfter().front().without_terminator())
    if (failed(emitOp(&op)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// The translation unit
//===----------------------------------------------------------------------===//

static std::string cppStringLiteral(StringRef text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    default:
      out += c;
    }
  }
  return out + "\"";
}

/// The layers of `module`, planned, and its manifest.
struct PlannedLibrary {
  std::vector<LayerPlan> plans;
  /// The plans of info.splitModule, one per plan above, or none.
  std::vector<LayerPlan> splitPlans;
  std::string manifest;
};

static FailureOr<PlannedLibrary> planLibrary(ModuleOp module,
                                             const LibraryInfo &info) {
  FailureOr<std::vector<LayerPlan>> planned = planLayers(module);
  if (failed(planned))
    return failure();
  PlannedLibrary library;
  library.plans = std::move(*planned);
  if (info.splitModule) {
    FailureOr<std::vector<LayerPlan>> split = planLayers(info.splitModule);
    if (failed(split))
      return failure();
    library.splitPlans = std::move(*split);
    if (library.splitPlans.size() != library.plans.size())
      return module.emitError("cannot emit: the split schedule has ")
                 << library.splitPlans.size() << " layers, the fused one "
                 << library.plans.size(),
             failure();
    for (auto [fused, split] :
         llvm::zip_equal(library.plans, library.splitPlans))
      if (fused.layer.getSymName() != split.layer.getSymName())
        return module.emitError("cannot emit: the split schedule's layer ")
                   << split.layer.getSymName()
                   << " stands where the fused one has "
                   << fused.layer.getSymName(),
               failure();
  }
  FailureOr<std::string> manifest =
      buildManifest(module, library.plans, info, library.splitPlans);
  if (failed(manifest))
    return failure();
  library.manifest = std::move(*manifest);
  return library;
}

static bool hasTarget(const LibraryInfo &info, StringRef target) {
  return llvm::is_contained(info.targets, target);
}

static void emitBanner(CodeWriter &w, const LibraryInfo &info,
                       ArrayRef<StringRef> description) {
  w.line("// Generated by {0} from {1}; do not edit.", info.generator,
         info.source.empty() ? std::string("<stdin>") : info.source);
  w.text("//");
  for (StringRef line : description)
    w.line("// {0}", line);
  w.blank();
}

static void emitLayerRule(CodeWriter &w, StringRef name) {
  w.line("//===-- layer {0} {1}//", name,
         std::string(std::max<int>(2, 60 - name.size()), '-'));
  w.blank();
}

static void emitSolverSettings(CodeWriter &w, const LayerPlan &plan) {
  if (!plan.solver)
    return;
  SolverAttr s = plan.solver.getSolver();
  w.line("const fp::host::SolverSettings {7} = {{{0}, {1}, {2}, "
         "{3}, {4}, {5}, {6}};",
         llvm::format("%.17g", s.getTolerance().convertToDouble()),
         llvm::format("%.17g", s.getQuantile().convertToDouble()),
         s.getMaxIterTrain(), s.getMaxIterEval(),
         llvm::format("%.17g", s.getRelaxStart().convertToDouble()),
         llvm::format("%.17g", s.getRelaxDecay().convertToDouble()),
         s.getRelaxPatience(), plan.isBackward ? "kBackwardSolver" : "kSolver");
}

/// `const fp::host::BufferSpec <name>[] = {...};` for `slots`.
static void emitBufferSpecs(CodeWriter &w, StringRef name,
                            ArrayRef<BufferSlot> slots) {
  SmallVector<std::string> specs;
  for (const BufferSlot &slot : slots) {
    // The output (input cotangent) lives in the caller's buffer.
    if (slot.result == 0) {
      specs.push_back("{0, false, false}");
      continue;
    }
    specs.push_back(llvm::formatv("{{{0}, {1}, {2}}", slot.elements,
                                  slot.perBatch ? "true" : "false",
                                  slot.perStep ? "true" : "false"));
  }
  if (specs.empty())
    specs.push_back("{0, false, false}");
  w.line("const fp::host::BufferSpec {0}[] = {{{1}};", name,
         llvm::join(specs, ", "));
}

ArrayRef<StringRef> mlir::fp::codegen::knownDTypes() {
  static const StringRef dtypes[] = {"f32", "f64", "bf16"};
  return dtypes;
}

/// The element types `info` lists, in knownDTypes() order, with their C++
/// types.
static SmallVector<std::pair<StringRef, StringRef>>
elementTypes(const LibraryInfo &info) {
  SmallVector<std::pair<StringRef, StringRef>> types;
  for (StringRef dtype : knownDTypes())
    if (llvm::is_contained(info.dtypes, dtype))
      types.emplace_back(dtype, dtype == "f32"   ? "float"
                                : dtype == "f64" ? "double"
                                                 : "fp::bf16");
  return types;
}

/// A fp::host::TargetFunctions initialiser: `fn` instantiated for each
/// element type `info` lists, nullptr for the others.
static std::string functionTable(StringRef fn, const LibraryInfo &info) {
  auto types = elementTypes(info);
  SmallVector<std::string> entries;
  for (StringRef dtype : knownDTypes()) {
    const auto *it = llvm::find_if(
        types, [&](const auto &type) { return type.first == dtype; });
    entries.push_back(it == types.end()
                          ? std::string("nullptr")
                          : llvm::formatv("&{0}<{1}>", fn, it->second).str());
  }
  return "{" + llvm::join(entries, ", ") + "}";
}

/// The signature of a layer backward named `name`.
static std::string backwardSignature(StringRef name) {
  return ("void " + name +
          "(const fp_backward_args &args, char *workspace, "
          "const size_t *offsets)")
      .str();
}

/// The signature of a layer forward named `name` (`forward`, or one of its
/// instantiations).
static std::string forwardSignature(StringRef name) {
  return ("void " + name +
          "(const fp_forward_args &args, char *workspace, "
          "const size_t *offsets)")
      .str();
}

/// Declares, in namespace `ns`, the CUDA unit's forward (and backward) of a
/// layer and their instantiations, and with `chunks` its sampleChunks.
static void declareDeviceFunctions(CodeWriter &w, StringRef ns, bool backward,
                                   bool chunks, const LibraryInfo &info) {
  auto inner =
      w.blockWithTrailer((" // namespace " + ns).str(), "namespace {0}", ns);
  w.text("template <typename Real>");
  w.line("{0};", forwardSignature("forward"));
  for (auto [dtype, type] : elementTypes(info))
    w.line("extern template {0};",
           forwardSignature(("forward<" + type + ">").str()));
  if (backward) {
    w.text("template <typename Real>");
    w.line("{0};", backwardSignature("backward"));
    for (auto [dtype, type] : elementTypes(info))
      w.line("extern template {0};",
             backwardSignature(("backward<" + type + ">").str()));
  }
  if (chunks) {
    w.text("template <typename Real>");
    w.text("int64_t sampleChunks(int64_t B, int64_t T);");
    for (auto [dtype, type] : elementTypes(info))
      w.line("extern template int64_t sampleChunks<{0}>(int64_t B, int64_t T);",
             type);
  }
}

LogicalResult mlir::fp::codegen::emitHostSource(ModuleOp module,
                                                const LibraryInfo &info,
                                                raw_ostream &os) {
  FailureOr<PlannedLibrary> library = planLibrary(module, info);
  if (failed(library))
    return failure();
  const bool cpu = hasTarget(info, "cpu"), cuda = hasTarget(info, "cuda");

  // Nothing reaches `os` unless the whole unit is emitted.
  std::string text;
  llvm::raw_string_ostream buffer(text);
  CodeWriter w(buffer);
  emitBanner(w, info,
             {"Host code of a model library: one forward per layer over the",
              "kernels of fp/Runtime/Kernels/Host.h, the model ABI entry "
              "points",
              "(fp/Runtime/ModelABI.h) and the manifest."});
  w.text("#include \"fp/Runtime/Kernels/HostEntry.h\"");
  w.text("#include \"fp/Runtime/Kernels/HostGradients.h\"");
  w.blank();
  w.text("#include <cmath>");
  w.text("#include <limits>");

  for (auto [index, plan] : llvm::enumerate(library->plans)) {
    std::string layer = identifier(plan.layer.getSymName());
    const LayerPlan *split = cuda && !library->splitPlans.empty()
                                 ? &library->splitPlans[index]
                                 : nullptr;
    w.blank();
    emitLayerRule(w, plan.layer.getSymName());
    {
      auto ns = w.blockWithTrailer(" // namespace layer_" + layer,
                                   "namespace layer_{0}", layer);
      w.blank();
      emitBufferSpecs(w, "kBuffers", plan.slots);
      if (!plan.saved.empty())
        emitBufferSpecs(w, "kSaved", plan.saved);
      const LayerPlan *backward = plan.backward.get();
      if (backward)
        emitBufferSpecs(w, "kBackwardBuffers", backward->slots);
      if (cpu) {
        emitSolverSettings(w, plan);
        if (backward)
          emitSolverSettings(w, *backward);
        w.text("namespace kernels = fp::host;");
        w.blank();
        LayerEmitter emitter(w, plan);
        if (failed(emitter.emitFunction(forwardSignature("forward"))))
          return failure();
        w.blank();
        if (backward) {
          LayerEmitter backwardEmitter(w, *backward);
          if (failed(
                  backwardEmitter.emitFunction(backwardSignature("backward"))))
            return failure();
          w.blank();
        }
      }
      if (cuda) {
        // Compiled by nvcc in the library's CUDA unit.
        declareDeviceFunctions(w, "cuda", backward != nullptr, split != nullptr,
                               info);
        if (split)
          declareDeviceFunctions(w, "cuda_split", split->backward != nullptr,
                                 false, info);
        w.blank();
      }
      std::string splitField = "nullptr";
      if (split) {
        const LayerPlan *splitBackward = split->backward.get();
        emitBufferSpecs(w, "kSplitBuffers", split->slots);
        if (!split->saved.empty())
          emitBufferSpecs(w, "kSplitSaved", split->saved);
        if (splitBackward)
          emitBufferSpecs(w, "kSplitBackwardBuffers", splitBackward->slots);
        w.line("const fp::host::SplitSchedule kSplit = {{kSplitBuffers, {0}, "
               "{1}, {2}, {3}, {4}, {5}, {6}, {7}};",
               split->slots.size(),
               split->saved.empty() ? "nullptr" : "kSplitSaved",
               split->saved.size(),
               splitBackward ? "kSplitBackwardBuffers" : "nullptr",
               splitBackward ? splitBackward->slots.size() : 0,
               functionTable("cuda_split::forward", info),
               splitBackward ? functionTable("cuda_split::backward", info)
                             : "{}",
               functionTable("cuda::sampleChunks", info));
        splitField = "&kSplit";
      }
      w.line("const fp::host::LayerDescriptor kLayer = {{\"{0}\", {1}, "
             "kBuffers, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, "
             "\"{11}\", {12}};",
             plan.layer.getSymName(), plan.params.size(), plan.slots.size(),
             cpu ? functionTable("forward", info) : "{}",
             cuda ? functionTable("cuda::forward", info) : "{}",
             plan.saved.empty() ? "nullptr" : "kSaved", plan.saved.size(),
             backward ? "kBackwardBuffers" : "nullptr",
             backward ? backward->slots.size() : 0,
             backward && cpu ? functionTable("backward", info) : "{}",
             backward && cuda ? functionTable("cuda::backward", info) : "{}",
             info.schedule, splitField);
      w.blank();
    }
    w.blank();
    {
      auto fn =
          w.block("FP_MODEL_EXPORT fp_status {0}(fp_target target, "
                  "fp_dtype dtype, int64_t batch, int64_t seq_len, "
                  "fp_buffer_sizes *sizes)",
                  entryPointName(plan.layer.getSymName(), "buffer_sizes"));
      w.line("return fp::host::bufferSizes(layer_{0}::kLayer, target, dtype, "
             "batch, seq_len, sizes);",
             layer);
    }
    w.blank();
    {
      auto fn = w.block("FP_MODEL_EXPORT fp_status {0}(const fp_forward_args "
                        "*args)",
                        entryPointName(plan.layer.getSymName(), "forward"));
      w.line("return fp::host::forward(args, layer_{0}::kLayer);", layer);
    }
    w.blank();
    {
      auto fn = w.block("FP_MODEL_EXPORT fp_status {0}(const fp_backward_args "
                        "*args)",
                        entryPointName(plan.layer.getSymName(), "backward"));
      w.line("return fp::host::{0}(args, layer_{1}::kLayer);",
             plan.backward ? "backward" : "backwardNotCompiled", layer);
    }
    w.blank();
    {
      auto fn = w.block("FP_MODEL_EXPORT const char *{0}(fp_target target, "
                        "fp_dtype dtype, int64_t batch, int64_t seq_len)",
                        entryPointName(plan.layer.getSymName(), "schedule"));
      w.line("return fp::host::scheduleName(layer_{0}::kLayer, target, dtype, "
             "batch, seq_len);",
             layer);
    }
  }

  w.blank();
  w.text("//===-- library " + std::string(62, '-') + "//");
  w.blank();
  {
    auto fn = w.block("FP_MODEL_EXPORT uint32_t fp_model_abi_version(void)");
    w.text("return FP_MODEL_ABI_VERSION;");
  }
  w.blank();
  {
    auto fn = w.block("FP_MODEL_EXPORT const char *fp_model_manifest(void)");
    w.line("return {0};", cppStringLiteral(library->manifest));
  }
  w.blank();
  {
    auto fn = w.block("FP_MODEL_EXPORT const char *fp_model_last_error(void)");
    w.text("return fp::host::lastError.c_str();");
  }
  os << text;
  return success();
}

/// The namespace layer_<layer>::<ns> of the CUDA unit: a layer's forward
/// (and backward), and with `chunks` its sampleChunks.
static LogicalResult emitDeviceLayer(CodeWriter &w, const LayerPlan &plan,
                                     StringRef ns, bool chunks,
                                     const LibraryInfo &info) {
  std::string layer = identifier(plan.layer.getSymName());
  auto block =
      w.blockWithTrailer((" // namespace layer_" + layer + "::" + ns).str(),
                         "namespace layer_{0}::{1}", layer, ns);
  w.blank();
  if (!plan.saved.empty())
    emitBufferSpecs(w, "kSaved", plan.saved);
  emitSolverSettings(w, plan);
  w.text("namespace kernels = fp::cuda;");
  w.blank();
  LayerEmitter emitter(w, plan);
  if (failed(emitter.emitFunction(forwardSignature("forward"))))
    return failure();
  w.blank();
  for (auto [dtype, type] : elementTypes(info))
    w.line("template {0};", forwardSignature(("forward<" + type + ">").str()));
  w.blank();
  if (chunks) {
    emitter.emitSampleChunks();
    w.blank();
    for (auto [dtype, type] : elementTypes(info))
      w.line("template int64_t sampleChunks<{0}>(int64_t B, int64_t T);", type);
    w.blank();
  }
  if (const LayerPlan *backward = plan.backward.get()) {
    emitSolverSettings(w, *backward);
    LayerEmitter backwardEmitter(w, *backward);
    if (failed(backwardEmitter.emitFunction(backwardSignature("backward"))))
      return failure();
    w.blank();
    for (auto [dtype, type] : elementTypes(info))
      w.line("template {0};",
             backwardSignature(("backward<" + type + ">").str()));
    w.blank();
  }
  return success();
}

LogicalResult mlir::fp::codegen::emitDeviceSource(ModuleOp module,
                                                  const LibraryInfo &info,
                                                  raw_ostream &os) {
  FailureOr<PlannedLibrary> library = planLibrary(module, info);
  if (failed(library))
    return failure();

  std::string text;
  llvm::raw_string_ostream buffer(text);
  CodeWriter w(buffer);
  emitBanner(w, info,
             {"CUDA code of a model library: one forward (and backward) per",
              "layer over the kernels of fp/Runtime/Kernels/Device.cuh and",
              "DeviceGradients.cuh, called by the entry points of the",
              "library's host unit for FP_TARGET_CUDA."});
  if (!info.cudaExpf) {
    w.text("// fpc --no-cuda-expf: e^x as the host computes it (Common.h).");
    w.text("#define FP_DEVICE_HOST_EXP 1");
    w.blank();
  }
  w.text("#include \"fp/Runtime/Kernels/DeviceGradients.cuh\"");
  w.blank();
  w.text("#include <cmath>");
  w.text("#include <limits>");

  for (auto [index, plan] : llvm::enumerate(library->plans)) {
    const bool split = !library->splitPlans.empty();
    w.blank();
    emitLayerRule(w, plan.layer.getSymName());
    if (failed(emitDeviceLayer(w, plan, "cuda", split, info)))
      return failure();
    if (split) {
      w.blank();
      if (failed(emitDeviceLayer(w, library->splitPlans[index], "cuda_split",
                                 false, info)))
        return failure();
    }
  }
  os << text;
  return success();
}

void mlir::fp::codegen::registerHostTranslation() {
  auto dialects = [](DialectRegistry &registry) {
    registry
        .insert<FPDialect, arith::ArithDialect, func::FuncDialect,
                math::MathDialect, scf::SCFDialect, tensor::TensorDialect>();
  };
  auto asModule = [](Operation *op) -> ModuleOp {
    auto module = dyn_cast<ModuleOp>(op);
    if (!module)
      op->emitError("cannot emit: expected a builtin.module");
    return module;
  };
  TranslateFromMLIRRegistration host(
      "fp-to-host", "emit the host C++ of a model library",
      [=](Operation *op, raw_ostream &os) -> LogicalResult {
        ModuleOp module = asModule(op);
        return success(module && succeeded(emitHostSource(module, {}, os)));
      },
      dialects);
  TranslateFromMLIRRegistration cuda(
      "fp-to-cuda", "emit the CUDA C++ of a model library",
      [=](Operation *op, raw_ostream &os) -> LogicalResult {
        ModuleOp module = asModule(op);
        LibraryInfo info;
        info.targets = {"cuda"};
        return success(module && succeeded(emitDeviceSource(module, info, os)));
      },
      dialects);
}
