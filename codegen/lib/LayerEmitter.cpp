//===- LayerEmitter.cpp - One layer's forward or backward -------*- C++ -*-===//
//
// A layer function's body as C++: per op, one call of the target's kernels
// (fp/Runtime/Kernels/Host.h or Device.cuh through the `kernels::` alias),
// each op kind printed by a function of its own; the lowered fixed-point
// loop as the target's solver loop; every fp.kernel as its function object
// (KernelEmitter) and a launch of it.
//
//===----------------------------------------------------------------------===//

#include "LayerEmitter.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace mlir::fp;
using namespace mlir::fp::codegen;

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
  case Storage::StateIn:
    return "state" + std::to_string(s.index);
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

/// The function object of `kernel`, named `name`, or, where the unit
/// already defines one with the same text, an alias of that one.
LogicalResult LayerEmitter::emitKernel(KernelOp kernel, StringRef name) {
  std::string text;
  llvm::raw_string_ostream os(text);
  CodeWriter functor(os);
  FailureOr<KernelLaunch> launch = emitKernelFunctor(functor, kernel, name);
  if (failed(launch))
    return failure();
  kernels[kernel] = std::move(*launch);

  // The definition without its name, which it holds once.
  std::string declaration = ("struct " + name + " {").str();
  size_t at = text.find(declaration);
  assert(at != std::string::npos && "a function object names itself");
  std::string key = text;
  key.replace(at, declaration.size(), "struct {");

  if (const std::string *defined = definitions.find(key)) {
    // The kernel's comment line, then the alias.
    w.text(StringRef(text).split('\n').first);
    w.line("// The same function object as {0}.", *defined);
    w.text("template <typename Real>");
    w.line("using {0} = {1}<Real>;", name, *defined);
    return success();
  }
  definitions.add(key, "::" + scope + "::" + name.str());
  w.lines(text);
  return success();
}

LogicalResult LayerEmitter::emitFunction(StringRef signature) {
  // The kernels' function objects first, at namespace scope.
  const char *stem = plan.isBackward ? "BackwardKernel"
                     : plan.isChunk  ? "ChunkKernel"
                                     : "Kernel";
  WalkResult walk = plan.layer.walk([&](KernelOp kernel) {
    if (failed(emitKernel(kernel, stem + std::to_string(kernels.size()))))
      return WalkResult::interrupt();
    w.blank();
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  w.text("template <typename Real>");
  auto fn = w.block("{0}", signature);
  w.text("using Scalar = fp::Compute<Real>;");
  w.text("kernels::Scope scope(args.stream, args.allow_tf32 != 0);");
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
  for (auto [i, state] : llvm::enumerate(plan.states))
    w.line("const Real *state{0} = static_cast<const Real *>("
           "args.state_in[{0}]); // {1}",
           i, state.name);
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

/// Emits `op`: nothing for ops without data of their own or read in place
/// by their readers, else a comment naming it and its printer's call.
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
      .Case<LinearOp, WeightNormOp, WeightNormGradOp, SliceOp, ConcatOp,
            BroadcastOp, ReduceSumOp, ReduceMaxOp, ShiftOp, ScanOp,
            SelectiveScanOp, CausalConvOp, L2NormOp, LayerNormOp, RMSNormOp,
            MatmulOp, TriuOp, MatrixExpOp, tensor::SplatOp, KernelOp,
            SolverInitOp, SolverRelaxOp, SolverUpdateOp, SolverIterationsOp,
            TransposeOp, WeightGradOp, TriuPackOp, L2NormGradOp,
            ReduceMaxGradOp, SelectiveScanGradOp, CausalConvGradOp,
            ChunkShiftOp, ChunkScanOp, ChunkSelectiveScanOp, ChunkCausalConvOp>(
          [&](auto kind) { return print(kind); })
      .Case([&](scf::WhileOp loop) { return emitLoop(loop); })
      .Case([&](func::ReturnOp ret) { return emitReturn(ret); })
      .Default([&](Operation *other) {
        return other->emitOpError("cannot emit this operation for the host");
      });
}

/// A GEMM with the bias; operands read in place in wider matrices pass
/// their row strides, and a weight that is an unmaterialised transpose is
/// read as it lies.
LogicalResult LayerEmitter::print(LinearOp linear) {
  if (linear.getGain())
    return linear.emitOpError(
        "cannot emit a weight-normalised fp.linear; run "
        "fp-hoist-invariants, which makes the normalisation explicit");
  // A weight that is an unmaterialised fp.transpose is read as it
  // lies, by a GEMM that transposes the other way.
  Value weight = linear.getWeight();
  auto transpose = weight.getDefiningOp<TransposeOp>();
  const bool transposed = transpose && transpose.isReadOnlyAsLinearWeight();
  Value input = linear.getInput();
  Value read = transposed ? transpose.getInput() : weight;
  std::string bias = linear.getBias() ? name(linear.getBias()) : "nullptr";
  // Operands read in place in wider matrices (fp.slice) pass their
  // row strides.
  if (plan.rowStride(input) != width(input) ||
      plan.rowStride(read) != width(read)) {
    w.line("kernels::linearStrided({0}, {1}, {2}, {3}, {4}, {5}, {6}, "
           "{7}, {8}, {9});",
           name(input), plan.rowStride(input), rows(input), width(input),
           name(read), plan.rowStride(read), transposed ? "true" : "false",
           width(linear), bias, name(linear));
    return success();
  }
  w.line("kernels::{0}({1}, {2}, {3}, {4}, {5}, {6}, {7});",
         transposed ? "linearTransposed" : "linear", name(input), rows(input),
         width(input), name(read), width(linear), bias, name(linear));
  return success();
}

LogicalResult LayerEmitter::print(WeightNormOp norm) {
  auto type = cast<RankedTensorType>(norm.getType());
  w.line("kernels::weightNorm({0}, {1}, {2}, {3}, {4});",
         name(norm.getWeight()), name(norm.getGain()), type.getDimSize(0),
         type.getDimSize(1), name(norm));
  return success();
}

LogicalResult LayerEmitter::print(WeightNormGradOp grad) {
  auto type = cast<RankedTensorType>(grad.getWeight().getType());
  w.line("kernels::weightNormGrad({0}, {1}, {2}, {3}, {4}, {5}, {6});",
         name(grad.getWeight()), name(grad.getGain()), name(grad.getGrad()),
         type.getDimSize(0), type.getDimSize(1), name(grad.getDweight()),
         name(grad.getDgain()));
  return success();
}

LogicalResult LayerEmitter::print(SliceOp slice) {
  w.line("kernels::sliceColumns({0}, {1}, {2}, {3}, {4}, {5});",
         name(slice.getInput()), rows(slice.getInput()),
         width(slice.getInput()), slice.getStart(),
         slice.getEnd() - slice.getStart(), name(slice));
  return success();
}

LogicalResult LayerEmitter::print(ConcatOp concat) {
  int64_t offset = 0;
  for (Value input : concat.getInputs()) {
    w.line("kernels::insertColumns({0}, {1}, {2}, {3}, {4}, {5});", name(input),
           rows(input), width(input), offset, width(concat), name(concat));
    offset += width(input);
  }
  return success();
}

LogicalResult LayerEmitter::print(BroadcastOp broadcast) {
  Value input = broadcast.getInput();
  const Shape &out = shape(broadcast);
  if (shape(input).rank() == 0) {
    w.line("kernels::fillFrom({0}, {1}, {2});", name(broadcast),
           out.numElements(), name(input));
    return success();
  }
  std::string dims = uniqueName("dims");
  w.line(
      "const int {0}[] = {{{1}};", dims,
      llvm::join(llvm::map_range(broadcast.getDims(),
                                 [](int64_t d) { return std::to_string(d); }),
                 ", "));
  w.line("kernels::broadcast({0}, {1}, {2}, {3}, {4});", name(input),
         shapeLiteral(out), dims, shape(input).rank(), name(broadcast));
  return success();
}

LogicalResult LayerEmitter::print(ReduceSumOp reduce) {
  return emitReduce(reduce, reduce.getInput(), reduce.getDims(), true);
}

LogicalResult LayerEmitter::print(ReduceMaxOp reduce) {
  return emitReduce(reduce, reduce.getInput(), reduce.getDims(), false);
}

LogicalResult LayerEmitter::print(ShiftOp shift) {
  w.line("kernels::shift({0}, B, T, {1}, {2}, {3});", name(shift.getInput()),
         shape(shift).tokenSize(), static_cast<int64_t>(shift.getOffset()),
         name(shift));
  return success();
}

LogicalResult LayerEmitter::print(ScanOp scan) {
  w.line("kernels::scan({0}, {1}, B, T, {2}, {3}, {4});", name(scan.getCoeff()),
         name(scan.getInput()), shape(scan).tokenSize(),
         scan.getReverse() ? "true" : "false", name(scan));
  return success();
}

LogicalResult LayerEmitter::print(SelectiveScanOp scan) {
  auto a = cast<RankedTensorType>(scan.getA().getType());
  w.line("kernels::selectiveScan({0}, {1}, {2}, {3}, {4}, {5}, B, T, "
         "{6}, {7}, {8});",
         name(scan.getU()), name(scan.getDelta()), name(scan.getA()),
         name(scan.getB()), name(scan.getC()),
         scan.getD() ? name(scan.getD()) : "nullptr", a.getDimSize(0),
         a.getDimSize(1), name(scan));
  return success();
}

LogicalResult LayerEmitter::print(CausalConvOp conv) {
  auto weight = cast<RankedTensorType>(conv.getWeight().getType());
  Value input = conv.getInput();
  std::string bias = conv.getBias() ? name(conv.getBias()) : "nullptr";
  if (plan.rowStride(input) != width(input)) {
    w.line("kernels::causalConvStrided({0}, {1}, {2}, {3}, B, T, {4}, "
           "{5}, {6});",
           name(input), plan.rowStride(input), name(conv.getWeight()), bias,
           weight.getDimSize(0), weight.getDimSize(1), name(conv));
    return success();
  }
  w.line("kernels::causalConv({0}, {1}, {2}, B, T, {3}, {4}, {5});",
         name(input), name(conv.getWeight()), bias, weight.getDimSize(0),
         weight.getDimSize(1), name(conv));
  return success();
}

LogicalResult LayerEmitter::print(ChunkShiftOp shift) {
  w.line("kernels::shiftFrom({0}, {1}, B, T, {2}, {3}, {4}, {5});",
         name(shift.getInput()), name(shift.getState()),
         shape(shift.getResult()).tokenSize(),
         static_cast<int64_t>(shift.getOffset()), name(shift.getResult()),
         name(shift.getNext()));
  return success();
}

LogicalResult LayerEmitter::print(ChunkScanOp scan) {
  w.line("kernels::scanFrom({0}, {1}, {2}, B, T, {3}, {4}, {5});",
         name(scan.getCoeff()), name(scan.getInput()), name(scan.getState()),
         shape(scan.getResult()).tokenSize(), name(scan.getResult()),
         name(scan.getNext()));
  return success();
}

LogicalResult LayerEmitter::print(ChunkSelectiveScanOp scan) {
  auto a = cast<RankedTensorType>(scan.getA().getType());
  w.line("kernels::selectiveScanFrom({0}, {1}, {2}, {3}, {4}, {5}, {6}, B, "
         "T, {7}, {8}, {9}, {10});",
         name(scan.getU()), name(scan.getDelta()), name(scan.getA()),
         name(scan.getB()), name(scan.getC()),
         scan.getD() ? name(scan.getD()) : "nullptr", name(scan.getState()),
         a.getDimSize(0), a.getDimSize(1), name(scan.getResult()),
         name(scan.getNext()));
  return success();
}

LogicalResult LayerEmitter::print(ChunkCausalConvOp conv) {
  auto weight = cast<RankedTensorType>(conv.getWeight().getType());
  Value input = conv.getInput();
  w.line("kernels::causalConvFrom({0}, {1}, {2}, {3}, {4}, B, T, {5}, {6}, "
         "{7}, {8});",
         name(input), plan.rowStride(input), name(conv.getState()),
         name(conv.getWeight()),
         conv.getBias() ? name(conv.getBias()) : "nullptr",
         weight.getDimSize(0), weight.getDimSize(1), name(conv.getResult()),
         name(conv.getNext()));
  return success();
}

LogicalResult LayerEmitter::print(L2NormOp norm) {
  w.line("kernels::l2norm({0}, {1}, {2}, {3}, {4});", name(norm.getInput()),
         rows(norm), width(norm), realLiteral(norm.getEps().convertToDouble()),
         name(norm));
  return success();
}

LogicalResult LayerEmitter::print(LayerNormOp norm) {
  w.line("kernels::layerNorm({0}, {1}, {2}, {3}, {4}, {5}, {6});",
         name(norm.getInput()), name(norm.getWeight()), name(norm.getBias()),
         rows(norm), width(norm), realLiteral(norm.getEps().convertToDouble()),
         name(norm));
  return success();
}

LogicalResult LayerEmitter::print(RMSNormOp norm) {
  w.line("kernels::rmsNorm({0}, {1}, {2}, {3}, {4}, {5});",
         name(norm.getInput()), name(norm.getWeight()), rows(norm), width(norm),
         realLiteral(norm.getEps().convertToDouble()), name(norm));
  return success();
}

LogicalResult LayerEmitter::print(MatmulOp matmul) {
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
         shape(matmul).product(0, rank - 2), m, n, k, tl ? "true" : "false",
         tr ? "true" : "false", name(matmul));
  return success();
}

LogicalResult LayerEmitter::print(TriuOp triu) {
  auto type = cast<RankedTensorType>(triu.getType());
  w.line("kernels::triu({0}, {1}, {2}, {3});", name(triu.getInput()),
         rows(triu.getInput()), type.getShape().back(), name(triu));
  return success();
}

/// A splat of a constant scalar to a shape whose dynamic sizes are the
/// batch or time extent of their position.
LogicalResult LayerEmitter::print(tensor::SplatOp splat) {
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
}

/// A launch of the kernel's function object: over tokens in any order, or
/// over samples in time order where the body holds a scan.
LogicalResult LayerEmitter::print(KernelOp kernel) {
  const KernelLaunch &launch = kernels.find(kernel)->second;
  SmallVector<std::string> fields;
  for (Value input : kernel.getInputs())
    fields.push_back(name(input));
  for (Value result : kernel.getResults())
    fields.push_back(name(result));
  if (launch.shifted)
    fields.push_back("T");
  std::string functor =
      llvm::formatv("{0}<Real>{{{1}}", launch.name, llvm::join(fields, ", "));
  if (launch.sequential)
    w.line("kernels::forEachSample<Real>(B, T, {0}, {1}, {2}, {3});",
           launch.scratch, launch.state, launch.cost, functor);
  else
    w.line("kernels::forEachToken<Real>(B, T, {0}, {1}, {2});", launch.scratch,
           launch.cost, functor);
  return success();
}

/// The layer's solver: its state where the data is.
LogicalResult LayerEmitter::print(SolverInitOp init) {
  solverName = uniqueName("solver");
  if (plan.isBackward)
    w.line("kernels::Solver<Real> {0}(B, kBackwardSolver, true, "
           "nullptr);",
           solverName);
  else
    w.line("kernels::Solver<Real> {0}(B, {1}, args.training != 0, "
           "args.solver);",
           solverName, plan.solverSettingsName());
  return success();
}

/// A relaxation of one iterate; the step's last also runs the
/// bookkeeping (relaxEndingStep).
LogicalResult LayerEmitter::print(SolverRelaxOp relax) {
  Value iterate = relax.getCurrent();
  w.line("{0}.{1}({2}, {3}, {4}, {5});", solverName,
         endsStep(relax) ? "relaxAndUpdate" : "relax", name(iterate),
         name(relax.getNext()), shape(iterate).product(1, 2),
         shape(iterate).product(2, shape(iterate).rank()));
  return success();
}

LogicalResult LayerEmitter::print(SolverUpdateOp) {
  w.line("{0}.update();", solverName);
  return success();
}

/// The solver's statistics, for the caller.
LogicalResult LayerEmitter::print(SolverIterationsOp) {
  if (plan.isBackward)
    w.line("if (args.stats)\n  args.stats->backward_steps = "
           "{0}.numSteps();",
           solverName);
  else
    w.line("{0}.report(args.stats, args.device_stats);", solverName);
  return success();
}

LogicalResult LayerEmitter::print(MatrixExpOp exp) {
  w.line("kernels::matrixExp({0}, {1}, {2});", name(exp.getInput()),
         cast<RankedTensorType>(exp.getType()).getDimSize(0), name(exp));
  return success();
}

LogicalResult LayerEmitter::print(TransposeOp transpose) {
  auto type = cast<RankedTensorType>(transpose.getInput().getType());
  w.line("kernels::transpose({0}, {1}, {2}, {3});", name(transpose.getInput()),
         type.getDimSize(0), type.getDimSize(1), name(transpose));
  return success();
}

LogicalResult LayerEmitter::print(WeightGradOp grad) {
  Value dy = grad.getGrad(), input = grad.getInput();
  if (plan.rowStride(dy) != width(dy) ||
      plan.rowStride(input) != width(input)) {
    w.line("kernels::weightGradStrided({0}, {1}, {2}, {3}, {4}, {5}, "
           "{6}, {7});",
           name(dy), plan.rowStride(dy), name(input), plan.rowStride(input),
           rows(dy), width(dy), width(input), name(grad));
    return success();
  }
  w.line("kernels::weightGrad({0}, {1}, {2}, {3}, {4}, {5});", name(dy),
         name(input), rows(dy), width(dy), width(input), name(grad));
  return success();
}

LogicalResult LayerEmitter::print(TriuPackOp pack) {
  auto type = cast<RankedTensorType>(pack.getInput().getType());
  const int64_t m = type.getShape().back();
  w.line("kernels::triuPack({0}, {1}, {2}, {3});", name(pack.getInput()),
         shape(pack.getInput()).product(0, type.getRank() - 2), m, name(pack));
  return success();
}

LogicalResult LayerEmitter::print(L2NormGradOp grad) {
  w.line("kernels::l2normGrad({0}, {1}, {2}, {3}, {4}, {5});",
         name(grad.getInput()), name(grad.getGrad()), rows(grad), width(grad),
         realLiteral(grad.getEps().convertToDouble()), name(grad));
  return success();
}

/// The gradient of a maximum over some dimensions, with the mask of them.
LogicalResult LayerEmitter::print(ReduceMaxGradOp grad) {
  const Shape &in = shape(grad.getInput());
  std::string mask = uniqueName("reduced");
  SmallVector<std::string> flags;
  for (int64_t d = 0; d < in.rank(); ++d)
    flags.push_back(llvm::is_contained(grad.getDims(), d) ? "true" : "false");
  w.line("const bool {0}[] = {{{1}};", mask, llvm::join(flags, ", "));
  w.line("kernels::reduceMaxGrad({0}, {1}, {2}, {3}, {4});",
         name(grad.getInput()), name(grad.getGrad()), shapeLiteral(in), mask,
         name(grad));
  return success();
}

LogicalResult LayerEmitter::print(SelectiveScanGradOp grad) {
  auto a = cast<RankedTensorType>(grad.getA().getType());
  w.line("kernels::selectiveScanGrad({0}, {1}, {2}, {3}, {4}, {5}, B, "
         "T, {6}, {7}, {8}, {9}, {10}, {11}, {12});",
         name(grad.getU()), name(grad.getDelta()), name(grad.getA()),
         name(grad.getB()), name(grad.getC()), name(grad.getGrad()),
         a.getDimSize(0), a.getDimSize(1), name(grad.getDu()),
         name(grad.getDdelta()), name(grad.getDA()), name(grad.getDB()),
         name(grad.getDC()));
  return success();
}

LogicalResult LayerEmitter::print(CausalConvGradOp grad) {
  auto weight = cast<RankedTensorType>(grad.getWeight().getType());
  Value input = grad.getInput();
  if (plan.rowStride(input) != width(input)) {
    w.line("kernels::causalConvGradStrided({0}, {1}, {2}, {3}, B, T, "
           "{4}, {5}, {6}, {7});",
           name(input), plan.rowStride(input), name(grad.getWeight()),
           name(grad.getGrad()), weight.getDimSize(0), weight.getDimSize(1),
           name(grad.getDinput()), name(grad.getDweight()));
    return success();
  }
  w.line("kernels::causalConvGrad({0}, {1}, {2}, B, T, {3}, {4}, {5}, "
         "{6});",
         name(input), name(grad.getWeight()), name(grad.getGrad()),
         weight.getDimSize(0), weight.getDimSize(1), name(grad.getDinput()),
         name(grad.getDweight()));
  return success();
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
  if (plan.isChunk) {
    // The next states, after every read of the states in (a caller may
    // pass one buffer as both).
    const unsigned first = ret.getNumOperands() - plan.states.size();
    for (auto [i, state] : llvm::enumerate(plan.states)) {
      Value next = ret.getOperand(first + i);
      w.line(
          "kernels::copy({0}, {1}, static_cast<Real *>(args.state_out[{2}]));"
          " // {3}",
          name(next), shape(next).numElements(), i, state.name);
    }
    return success();
  }
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
