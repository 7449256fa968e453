//===- LayerPlan.cpp - Shapes, parameters and buffers of a layer ----------===//
//
// Shape resolution (dynamic extents are B at position 0 and T at position
// 1, nowhere else), parameter order (first appearance), and the storage of
// every value from the buffer plan of fp-plan-buffers.
//
//===----------------------------------------------------------------------===//

#include "fp/Codegen/LayerPlan.h"

#include "fp/Analysis/Matchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::fp;
using namespace mlir::fp::codegen;

//===----------------------------------------------------------------------===//
// Shape
//===----------------------------------------------------------------------===//

bool Shape::perBatch() const {
  return llvm::any_of(extents,
                      [](Extent e) { return e.kind == Extent::Batch; });
}

bool Shape::perStep() const {
  return llvm::any_of(extents,
                      [](Extent e) { return e.kind == Extent::Steps; });
}

int64_t Shape::staticElements() const {
  int64_t n = 1;
  for (Extent e : extents)
    if (e.kind == Extent::Static)
      n *= e.size;
  return n;
}

std::string Shape::product(int64_t from, int64_t to) const {
  SmallVector<std::string> factors;
  int64_t constant = 1;
  for (int64_t i = from; i < to; ++i) {
    Extent e = extents[i];
    if (e.kind == Extent::Batch)
      factors.push_back("B");
    else if (e.kind == Extent::Steps)
      factors.push_back("T");
    else
      constant *= e.size;
  }
  if (constant != 1 || factors.empty())
    factors.push_back(std::to_string(constant));
  return llvm::join(factors, " * ");
}

std::string Shape::tokenSize() const {
  int64_t from = 0;
  while (from < rank() && extents[from].kind != Extent::Static)
    ++from;
  return product(from, rank());
}

//===----------------------------------------------------------------------===//
// Shape resolution
//===----------------------------------------------------------------------===//

static FailureOr<Shape> resolveType(Value value, Location loc) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return emitError(loc) << "cannot emit a value of type " << value.getType(),
           failure();
  Shape shape;
  for (auto [i, size] : llvm::enumerate(type.getShape())) {
    if (!ShapedType::isDynamic(size)) {
      shape.extents.push_back(Extent::fixed(size));
      continue;
    }
    if (i > 1)
      return emitError(loc) << "cannot emit: dynamic dimension " << i << " of "
                            << type << " (only batch and time may be dynamic)",
             failure();
    shape.extents.push_back({i == 0 ? Extent::Batch : Extent::Steps, 0});
  }
  return shape;
}

/// Whether dimension `dim` of `value`'s type is dynamic.
static bool isDynamicDim(Value value, int64_t dim) {
  auto type = cast<RankedTensorType>(value.getType());
  return dim < type.getRank() && type.isDynamicDim(dim);
}

LogicalResult LayerPlan::resolveShapes() {
  auto resolve = [&](Value value, Location loc) -> LogicalResult {
    if (!isa<TensorType>(value.getType()))
      return success(); // indices and scalars carry no data of their own
    FailureOr<Shape> shape = resolveType(value, loc);
    if (failed(shape))
      return failure();
    shapes[value] = *shape;
    return success();
  };
  for (BlockArgument arg : layer.getArguments())
    if (failed(resolve(arg, layer.getLoc())))
      return failure();

  WalkResult walk = layer.walk([&](Operation *op) -> WalkResult {
    for (Region &region : op->getRegions())
      for (BlockArgument arg : region.getArguments())
        if (failed(resolve(arg, op->getLoc())))
          return WalkResult::interrupt();
    for (Value result : op->getResults())
      if (failed(resolve(result, op->getLoc())))
        return WalkResult::interrupt();
    // Ops that could move a batch or time extent elsewhere.
    // A sum over every token (a gradient of a parameter) keeps no batch or
    // time extent; a sum over one of them would move the other.
    if (auto reduce = dyn_cast<ReduceSumOp>(op)) {
      auto type = cast<RankedTensorType>(reduce.getInput().getType());
      int64_t dynamic = 0, reduced = 0;
      for (int64_t i = 0; i < type.getRank(); ++i)
        if (type.isDynamicDim(i)) {
          ++dynamic;
          reduced += llvm::is_contained(reduce.getDims(), i);
        }
      for (int64_t dim : reduce.getDims())
        if (isDynamicDim(reduce.getInput(), dim) && reduced != dynamic)
          return op->emitOpError("cannot emit a reduction over dimension ")
                 << dim << " (batch or time) alone";
    }
    if (auto reduce = dyn_cast<ReduceMaxOp>(op)) {
      for (int64_t dim : reduce.getDims())
        if (isDynamicDim(reduce.getInput(), dim))
          return op->emitOpError("cannot emit a reduction over dimension ")
                 << dim << " (batch or time)";
    }
    if (auto broadcast = dyn_cast<BroadcastOp>(op)) {
      for (auto [i, dim] : llvm::enumerate(broadcast.getDims()))
        if (isDynamicDim(broadcast.getInput(), i) && dim != int64_t(i))
          return op->emitOpError("cannot emit a broadcast that moves "
                                 "dimension ")
                 << i << " (batch or time) to " << dim;
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

//===----------------------------------------------------------------------===//
// Storage and workspace planning
//===----------------------------------------------------------------------===//

const Storage &LayerPlan::storage(Value value) const {
  const Storage *s = &storages.find(value)->second;
  while (s->kind == Storage::Alias)
    s = &storages.find(s->aliasOf)->second;
  return *s;
}

int64_t LayerPlan::rowStride(Value value) const {
  const Storage &s = storage(value);
  if (s.kind == Storage::View)
    return rowStride(s.aliasOf);
  return cast<RankedTensorType>(value.getType()).getShape().back();
}

int64_t LayerPlan::paramIndex(ParamOp op) const {
  return paramIndices.lookup(op.getName());
}

int64_t LayerPlan::savedIndex(unsigned result) const {
  int64_t index = 0;
  for (unsigned i = 1; i < result; ++i)
    if (layer.getResultAttr(i, "fp.saved"))
      ++index;
  return index;
}

bool LayerPlan::computedInPlace(unsigned result) const {
  return llvm::any_of(slots, [&](const BufferSlot &slot) {
    return slot.result == int64_t(result);
  });
}

/// The buffer a planned value was given, or failure with a located error.
static FailureOr<int64_t> plannedSlot(Operation *op, StringRef attrName,
                                      int64_t index, int64_t numSlots) {
  auto slots = op->getAttrOfType<DenseI64ArrayAttr>(attrName);
  if (!slots || int64_t(slots.size()) <= index)
    return op->emitOpError("cannot emit: no buffer planned for value #")
               << index << " ('" << attrName
               << "' missing; run fp-plan-buffers, which fp-pipeline does)",
           failure();
  int64_t slot = slots[index];
  if (slot < 0 || slot >= numSlots)
    return op->emitOpError("cannot emit: value #")
               << index << " has buffer " << slot << ", but the workspace has "
               << numSlots,
           failure();
  return slot;
}

LogicalResult LayerPlan::assignStorage() {
  // The workspace of fp-plan-buffers.
  auto workspace =
      layer->getAttrOfType<ArrayAttr>(FPDialect::getWorkspaceAttrName());
  if (!workspace)
    return layer.emitOpError("cannot emit a layer without a buffer plan "
                             "('fp.workspace' missing; run fp-plan-buffers, "
                             "which fp-pipeline does)");
  // The results a call provides memory for: the output (a backward's input
  // cotangent) and a forward's saved values.
  auto isInPlaceResult = [&](int64_t index) {
    if (index < 0 || index >= int64_t(layer.getNumResults()))
      return false;
    return index == 0 ||
           (!isBackward && layer.getResultAttr(index, "fp.saved"));
  };
  for (Attribute entry : workspace) {
    auto buffer = dyn_cast<DictionaryAttr>(entry);
    auto elements =
        buffer ? buffer.getAs<IntegerAttr>("elements") : IntegerAttr();
    if (!elements || elements.getInt() < 0)
      return layer.emitOpError("cannot emit: malformed 'fp.workspace' entry ")
             << entry;
    auto result = buffer.getAs<IntegerAttr>("result");
    if (buffer.contains("result") &&
        (!result || !isInPlaceResult(result.getInt()) ||
         computedInPlace(result.getInt())))
      return layer.emitOpError("cannot emit: 'fp.workspace' entry ")
             << entry
             << " holds a result that cannot be computed in place (the "
                "output, or a value the forward saves, each in one buffer)";
    slots.push_back({elements.getInt(), buffer.contains("per_batch"),
                     buffer.contains("per_step"),
                     result ? result.getInt() : -1});
  }
  const int64_t numSlots = slots.size();

  auto setStorage = [&](Value value, Storage s) { storages[value] = s; };
  auto checkFits = [&](Value value, int64_t slot, Operation *op) {
    const Shape &s = shapes[value];
    const BufferSlot &have = slots[slot];
    if (have.elements < s.staticElements() || have.perBatch != s.perBatch() ||
        have.perStep != s.perStep())
      return op->emitOpError("cannot emit: buffer ")
                 << slot << " does not hold a " << value.getType(),
             failure();
    return success();
  };
  setStorage(layer.getArgument(0), {Storage::Input});
  if (isChunk)
    for (unsigned i = 1; i < layer.getNumArguments(); ++i)
      setStorage(layer.getArgument(i), {Storage::StateIn, int64_t(i - 1)});
  if (isBackward) {
    // (input, saved..., cotangent of the output)
    const unsigned numArgs = layer.getNumArguments();
    for (unsigned i = 1; i + 1 < numArgs; ++i)
      setStorage(layer.getArgument(i), {Storage::Saved, int64_t(i - 1)});
    setStorage(layer.getArgument(numArgs - 1), {Storage::GradOutput});
  }
  WalkResult walk = layer.walk<WalkOrder::PreOrder>([&](Operation *op)
                                                        -> WalkResult {
    if (auto param = dyn_cast<ParamOp>(op)) {
      setStorage(param, {Storage::Param, paramIndex(param)});
      return WalkResult::advance();
    }
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      setStorage(reshape, {Storage::Alias, -1, reshape.getInput()});
      return WalkResult::advance();
    }
    // Not materialised (fp-plan-buffers): its readers read the input.
    if (auto transpose = dyn_cast<TransposeOp>(op);
        transpose && transpose.isReadOnlyAsLinearWeight()) {
      setStorage(transpose, {Storage::Alias, -1, transpose.getInput()});
      return WalkResult::advance();
    }
    if (auto slice = dyn_cast<SliceOp>(op); slice && slice.isReadInPlace()) {
      setStorage(slice,
                 {Storage::View, int64_t(slice.getStart()), slice.getInput()});
      return WalkResult::advance();
    }
    // The iterates of a lowered loop: the condition block's arguments
    // hold them; the step's arguments, the relaxed values and the
    // loop's results are the same storage.
    if (auto loop = dyn_cast<scf::WhileOp>(op)) {
      for (auto [index, iterate] : llvm::enumerate(loop.getBeforeArguments())) {
        FailureOr<int64_t> slot = plannedSlot(
            loop, FPDialect::getIterateSlotsAttrName(), index, numSlots);
        if (failed(slot) || failed(checkFits(iterate, *slot, loop)))
          return WalkResult::interrupt();
        setStorage(iterate, {Storage::Buffer, *slot});
        setStorage(loop.getAfterArguments()[index],
                   {Storage::Alias, -1, iterate});
        setStorage(loop.getResult(index), {Storage::Alias, -1, iterate});
      }
      return WalkResult::advance();
    }
    if (auto relax = dyn_cast<SolverRelaxOp>(op)) {
      setStorage(relax, {Storage::Alias, -1, relax.getCurrent()});
      return WalkResult::advance();
    }
    if (auto iterations = dyn_cast<SolverIterationsOp>(op)) {
      setStorage(iterations, {Storage::Iterations});
      for (Operation *user : iterations->getUsers())
        if (!isa<func::ReturnOp>(user))
          return user->emitOpError("cannot emit a use of the iteration "
                                   "counts other than the layer's result"),
                 WalkResult::interrupt();
      return WalkResult::advance();
    }
    for (auto [index, result] : llvm::enumerate(op->getResults())) {
      if (!isa<TensorType>(result.getType()))
        continue;
      FailureOr<int64_t> slot =
          plannedSlot(op, FPDialect::getSlotsAttrName(), index, numSlots);
      if (failed(slot) || failed(checkFits(result, *slot, op)))
        return WalkResult::interrupt();
      setStorage(result, {Storage::Buffer, *slot});
    }
    // A kernel's intermediate values live in its own scratch memory.
    return isa<KernelOp>(op) ? WalkResult::skip() : WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  // A slot that holds a result in place holds that value and nothing else.
  auto ret = cast<func::ReturnOp>(layer.getBody().front().getTerminator());
  for (int64_t slot = 0; slot < numSlots; ++slot) {
    const int64_t result = slots[slot].result;
    if (result < 0)
      continue;
    const Storage &held = storage(ret.getOperand(result));
    int64_t values = llvm::count_if(storages, [&](const auto &entry) {
      return entry.second.kind == Storage::Buffer && entry.second.index == slot;
    });
    if (held.kind != Storage::Buffer || held.index != slot || values != 1)
      return layer.emitOpError("cannot emit: buffer ")
             << slot << " is planned to hold result #" << result
             << " in place, but holds "
             << (values == 1 ? "another value" : "several values");
  }
  return success();
}

//===----------------------------------------------------------------------===//
// LayerPlan::build
//===----------------------------------------------------------------------===//

/// The buffer that holds a value of `shape`.
static BufferSlot slotFor(const Shape &shape) {
  return {shape.staticElements(), shape.perBatch(), shape.perStep()};
}

LogicalResult LayerPlan::collectParams() {
  // Parameters in first-appearance order, one per name; a layer's solver.
  WalkResult walk = layer.walk([&](Operation *op) -> WalkResult {
    if (auto param = dyn_cast<ParamOp>(op)) {
      auto [it, inserted] =
          paramIndices.try_emplace(param.getName(), params.size());
      auto shape = cast<RankedTensorType>(param.getType()).getShape();
      if (inserted) {
        params.push_back(
            {param.getName().str(), param, SmallVector<int64_t>(shape)});
      } else if (params[it->second].op.getType() != param.getType()) {
        return param.emitOpError("parameter '")
                   << param.getName() << "' appears with two types",
               WalkResult::interrupt();
      }
    }
    if (isa<FixedPointOp>(op))
      return op->emitOpError("cannot emit a fixed-point loop that is not "
                             "lowered (run fp-lower-fixed-point, which "
                             "fp-pipeline does)"),
             WalkResult::interrupt();
    if (auto loop = dyn_cast<scf::WhileOp>(op)) {
      FailureOr<LoweredLoop> parts = matchLoweredLoop(loop);
      if (failed(parts))
        return WalkResult::interrupt();
      if (solver)
        return loop.emitOpError("cannot emit a layer with more than one "
                                "fixed-point loop"),
               WalkResult::interrupt();
      solver = parts->solver;
      this->loop = loop;
    }
    if (isa<func::CallOp>(op))
      return op->emitOpError("cannot emit a call; run the inliner first "
                             "(fp-pipeline)"),
             WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

FailureOr<LayerPlan> LayerPlan::build(func::FuncOp layer) {
  LayerPlan plan;
  plan.layer = layer;
  FunctionType type = layer.getFunctionType();
  auto input = type.getNumInputs() == 1
                   ? dyn_cast<RankedTensorType>(type.getInput(0))
                   : RankedTensorType();
  if (!input || input.getRank() != 3 || !input.isDynamicDim(0) ||
      !input.isDynamicDim(1) || input.isDynamicDim(2))
    return layer.emitOpError("cannot emit a layer whose signature is not "
                             "(tensor<?x?xDxf..>) -> (...)"),
           failure();
  plan.dModel = input.getDimSize(2);
  if (type.getNumResults() < 1 || type.getResult(0) != input)
    return layer.emitOpError("cannot emit a layer whose first result is "
                             "not of its input's type"),
           failure();
  if (failed(plan.collectParams()) || failed(plan.resolveShapes()) ||
      failed(plan.assignStorage()))
    return failure();
  auto ret = cast<func::ReturnOp>(layer.getBody().front().getTerminator());
  for (unsigned i = 0; i < layer.getNumResults(); ++i)
    if (layer.getResultAttr(i, "fp.saved"))
      plan.saved.push_back(slotFor(plan.shape(ret.getOperand(i))));
  return plan;
}

FailureOr<LayerPlan> LayerPlan::buildBackward(func::FuncOp backward,
                                              const LayerPlan &forward) {
  LayerPlan plan;
  plan.layer = backward;
  plan.isBackward = true;
  plan.dModel = forward.dModel;
  FunctionType type = backward.getFunctionType();
  FunctionType forwardType = forward.layer.getFunctionType();
  const size_t numSaved = forward.saved.size();
  if (type.getNumInputs() != numSaved + 2 ||
      type.getInput(0) != forwardType.getInput(0) ||
      type.getInput(numSaved + 1) != forwardType.getResult(0) ||
      type.getNumResults() < 1 || type.getResult(0) != type.getInput(0))
    return backward.emitOpError("cannot emit a backward whose signature is "
                                "not (input, saved..., output cotangent) -> "
                                "(input cotangent, parameter gradients...)"),
           failure();
  auto names = backward->getAttrOfType<ArrayAttr>("fp.param_gradients");
  if (!names || names.size() + 1 != type.getNumResults())
    return backward.emitOpError("cannot emit a backward without one "
                                "'fp.param_gradients' name per gradient"),
           failure();
  for (auto [i, name] : llvm::enumerate(names)) {
    auto text = dyn_cast<StringAttr>(name);
    auto it = text ? forward.paramIndices.find(text.getValue())
                   : forward.paramIndices.end();
    if (it == forward.paramIndices.end())
      return backward.emitOpError("cannot emit the gradient of ")
                 << name << ", which is not a parameter of the layer",
             failure();
    if (type.getResult(i + 1) != forward.params[it->second].op.getType())
      return backward.emitOpError("cannot emit gradient #")
                 << i << " of type " << type.getResult(i + 1)
                 << ": its parameter is a "
                 << forward.params[it->second].op.getType(),
             failure();
    plan.gradientParams.push_back(it->second);
  }
  if (failed(plan.collectParams()))
    return failure();
  // Parameters are the forward's, in its order.
  plan.params = forward.params;
  plan.paramIndices = forward.paramIndices;
  if (failed(plan.resolveShapes()) || failed(plan.assignStorage()))
    return failure();
  plan.saved = forward.saved;
  return plan;
}

FailureOr<LayerPlan> LayerPlan::buildChunk(func::FuncOp chunk,
                                           const LayerPlan &forward) {
  LayerPlan plan;
  plan.layer = chunk;
  plan.isChunk = true;
  plan.dModel = forward.dModel;
  FunctionType type = chunk.getFunctionType();
  FunctionType forwardType = forward.layer.getFunctionType();
  const unsigned numStates = type.getNumInputs() - 1;
  // The forward's results may have grown by the saved values since the
  // chunked form was derived; its own are the output and the iterations.
  if (type.getNumInputs() < 1 || type.getInput(0) != forwardType.getInput(0) ||
      type.getNumResults() < numStates + 1 ||
      type.getResult(0) != forwardType.getResult(0))
    return chunk.emitOpError("cannot emit a chunked forward whose signature "
                             "is not (input, states...) -> (output, ..., "
                             "next states...)"),
           failure();
  const unsigned firstNext = type.getNumResults() - numStates;
  for (unsigned i = 0; i < numStates; ++i) {
    if (type.getResult(firstNext + i) != type.getInput(i + 1))
      return chunk.emitOpError("cannot emit a chunked forward whose state #")
                 << i << " is returned as a " << type.getResult(firstNext + i)
                 << " but read as a " << type.getInput(i + 1),
             failure();
    auto name = chunk.getArgAttrOfType<StringAttr>(i + 1, "fp.state");
    if (!name)
      return chunk.emitOpError("cannot emit a chunked forward whose state #")
                 << i << " has no name ('fp.state')",
             failure();
    plan.states.push_back({name.str(), {}});
  }
  if (firstNext > 2)
    return chunk.emitOpError("cannot emit a chunked forward with results "
                             "other than the output, the iteration counts "
                             "and the next states"),
           failure();
  if (failed(plan.collectParams()))
    return failure();
  // Parameters are the forward's, in its order.
  if (plan.params.size() > forward.params.size())
    return chunk.emitOpError("cannot emit a chunked forward with parameters "
                             "its layer does not have"),
           failure();
  for (const ParamInfo &param : plan.params)
    if (!forward.paramIndices.count(param.name))
      return chunk.emitOpError("cannot emit a chunked forward reading '")
                 << param.name << "', which is not a parameter of its layer",
             failure();
  plan.params = forward.params;
  plan.paramIndices = forward.paramIndices;
  if (failed(plan.resolveShapes()) || failed(plan.assignStorage()))
    return failure();
  for (unsigned i = 0; i < numStates; ++i)
    plan.states[i].shape = plan.shape(chunk.getArgument(i + 1));
  return plan;
}

FailureOr<std::vector<LayerPlan>>
mlir::fp::codegen::planLayers(ModuleOp module) {
  std::vector<LayerPlan> plans;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (!fn->hasAttr("fp.layer"))
      continue;
    FailureOr<LayerPlan> plan = LayerPlan::build(fn);
    if (failed(plan))
      return failure();
    plans.push_back(std::move(*plan));
  }
  // Derived backward functions, each with the plan of its layer.
  for (auto fn : module.getOps<func::FuncOp>()) {
    auto of = fn->getAttrOfType<FlatSymbolRefAttr>("fp.backward_of");
    if (!of)
      continue;
    auto forward = llvm::find_if(plans, [&](const LayerPlan &plan) {
      return plan.layer.getSymName() == of.getValue();
    });
    if (forward == plans.end())
      return fn.emitOpError("cannot emit the backward of ")
             << of << ", which is not a layer of this module";
    if (forward->backward)
      return fn.emitOpError("cannot emit a second backward of ") << of;
    FailureOr<LayerPlan> plan = LayerPlan::buildBackward(fn, *forward);
    if (failed(plan))
      return failure();
    forward->backward = std::make_shared<LayerPlan>(std::move(*plan));
  }
  // Chunked forms, each with the plan of its layer.
  for (auto fn : module.getOps<func::FuncOp>()) {
    auto of = fn->getAttrOfType<FlatSymbolRefAttr>("fp.chunk_of");
    if (!of)
      continue;
    auto forward = llvm::find_if(plans, [&](const LayerPlan &plan) {
      return plan.layer.getSymName() == of.getValue();
    });
    if (forward == plans.end())
      return fn.emitOpError("cannot emit the chunked form of ")
             << of << ", which is not a layer of this module";
    if (forward->chunk)
      return fn.emitOpError("cannot emit a second chunked form of ") << of;
    FailureOr<LayerPlan> plan = LayerPlan::buildChunk(fn, *forward);
    if (failed(plan))
      return failure();
    forward->chunk = std::make_shared<LayerPlan>(std::move(*plan));
  }
  if (plans.empty())
    return module.emitError("cannot emit a library without layers (no "
                            "function carries 'fp.layer')");
  return plans;
}

SolverRelaxOp mlir::fp::codegen::relaxEndingStep(SolverUpdateOp update) {
  auto relax = dyn_cast_or_null<SolverRelaxOp>(update->getPrevNode());
  if (!relax || relax.getState() != update.getState())
    return {};
  return relax;
}

bool mlir::fp::codegen::endsStep(SolverRelaxOp relax) {
  auto update = dyn_cast_or_null<SolverUpdateOp>(relax->getNextNode());
  return update && relaxEndingStep(update) == relax;
}
