//===- FpOps.cpp - fp dialect operations ------------------------*- C++ -*-===//
//
// Verifiers of the fp ops, and the custom syntax, builders and control-flow
// interfaces of `fp.fixed_point`. Shapes are checked wherever both sides are
// static; a dynamic dimension is compatible with any size.
//
//===----------------------------------------------------------------------===//

#include "fp/Dialect/FpOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::fp;

//===----------------------------------------------------------------------===//
// Shape helpers
//===----------------------------------------------------------------------===//

/// Two dimension sizes agree unless both are static and differ.
static bool areCompatible(int64_t lhs, int64_t rhs) {
  return ShapedType::isDynamic(lhs) || ShapedType::isDynamic(rhs) || lhs == rhs;
}

/// A dimension size for a message: '?' for a dynamic one.
static std::string formatDim(int64_t size) {
  return ShapedType::isDynamic(size) ? "?" : std::to_string(size);
}

static RankedTensorType getTensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Checks that every value in `values` has the element type of `reference`.
static LogicalResult verifySameElementType(Operation *op, Value reference,
                                           ValueRange values) {
  Type expected = getTensorType(reference).getElementType();
  for (Value value : values) {
    if (!value)
      continue;
    if (getTensorType(value).getElementType() != expected)
      return op->emitOpError("expects all operands and results to have "
                             "element type ")
             << expected << ", got " << value.getType();
  }
  return success();
}

/// Checks that `dims` is strictly increasing and below `rank`.
static LogicalResult verifyDimList(Operation *op, ArrayRef<int64_t> dims,
                                   int64_t rank, StringRef what) {
  for (auto [i, dim] : llvm::enumerate(dims)) {
    if (dim < 0 || dim >= rank)
      return op->emitOpError("expects ")
             << what << " in [0, " << rank << "), got " << dim;
    if (i > 0 && dims[i - 1] >= dim)
      return op->emitOpError("expects ")
             << what << " to be strictly increasing";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// FixedPointOp
//===----------------------------------------------------------------------===//

RankedTensorType FixedPointOp::getIterationCountsType(MLIRContext *context,
                                                      TypeRange iterateTypes) {
  int64_t batch = ShapedType::kDynamic;
  if (!iterateTypes.empty())
    if (auto type = dyn_cast<RankedTensorType>(iterateTypes.front()))
      if (type.getRank() >= 1)
        batch = type.getDimSize(0);
  return RankedTensorType::get({batch}, IntegerType::get(context, 32));
}

void FixedPointOp::build(
    OpBuilder &builder, OperationState &state, ValueRange inits,
    SolverAttr solver, BackwardAttr backward,
    function_ref<void(OpBuilder &, Location, ValueRange)> bodyBuilder) {
  OpBuilder::InsertionGuard guard(builder);
  state.addOperands(inits);
  state.addAttribute(getSolverAttrName(state.name), solver);
  state.addAttribute(getBackwardAttrName(state.name), backward);

  TypeRange iterateTypes = inits.getTypes();
  state.addTypes(iterateTypes);
  state.addTypes(getIterationCountsType(builder.getContext(), iterateTypes));

  Region *body = state.addRegion();
  Block *block = builder.createBlock(body);
  for (Value init : inits)
    block->addArgument(init.getType(), init.getLoc());
  if (bodyBuilder)
    bodyBuilder(builder, state.location, block->getArguments());
  else
    ensureTerminator(*body, builder, state.location);
}

YieldOp FixedPointOp::getYield() {
  return cast<YieldOp>(getBodyBlock()->getTerminator());
}

/// fixed-point-op ::= `fp.fixed_point` `(` assignment-list `)` `:` type-list
///                    `solver` solver-attr `backward` backward-attr
///                    attr-dict-with-keyword region
ParseResult FixedPointOp::parse(OpAsmParser &parser, OperationState &result) {
  SmallVector<OpAsmParser::Argument> regionArgs;
  SmallVector<OpAsmParser::UnresolvedOperand> inits;
  SmallVector<Type> types;
  SMLoc initsLoc = parser.getCurrentLocation();
  if (parser.parseAssignmentList(regionArgs, inits) ||
      parser.parseColonTypeList(types))
    return failure();
  if (regionArgs.size() != types.size())
    return parser.emitError(initsLoc)
           << "expected " << regionArgs.size()
           << " types for the iteration arguments, got " << types.size();
  for (auto [arg, type] : llvm::zip_equal(regionArgs, types))
    arg.type = type;
  if (parser.resolveOperands(inits, types, initsLoc, result.operands))
    return failure();

  MLIRContext *context = parser.getContext();
  Attribute solver, backward;
  if (parser.parseKeyword("solver") ||
      !(solver = SolverAttr::parse(parser, Type())) ||
      parser.parseKeyword("backward") ||
      !(backward = BackwardAttr::parse(parser, Type())))
    return failure();
  result.addAttribute(getSolverAttrName(result.name), solver);
  result.addAttribute(getBackwardAttrName(result.name), backward);
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();

  Region *body = result.addRegion();
  if (parser.parseRegion(*body, regionArgs))
    return failure();
  FixedPointOp::ensureTerminator(*body, parser.getBuilder(), result.location);

  result.addTypes(types);
  result.addTypes(getIterationCountsType(context, types));
  return success();
}

void FixedPointOp::print(OpAsmPrinter &p) {
  p << " (";
  llvm::interleaveComma(
      llvm::zip_equal(getBodyBlock()->getArguments(), getInits()), p,
      [&](auto pair) { p << std::get<0>(pair) << " = " << std::get<1>(pair); });
  p << ") : ";
  llvm::interleaveComma(getInits().getTypes(), p);
  p << " solver ";
  p.printStrippedAttrOrType(getSolver());
  p << " backward ";
  p.printStrippedAttrOrType(getBackward());
  p.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(),
      /*elidedAttrs=*/{getSolverAttrName(), getBackwardAttrName()});
  p << ' ';
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/true);
}

LogicalResult FixedPointOp::verify() {
  if (getInits().empty())
    return emitOpError("expects at least one iteration argument");
  if (getFixedPoints().size() != getInits().size())
    return emitOpError("expects one fixed-point result per iteration "
                       "argument, got ")
           << getFixedPoints().size() << " for " << getInits().size();
  for (auto [index, init, result] :
       llvm::enumerate(getInits(), getFixedPoints())) {
    if (init.getType() != result.getType())
      return emitOpError("expects result #")
             << index << " to have the type of iteration argument #" << index
             << ", " << init.getType() << ", got " << result.getType();
  }
  int64_t batch = getTensorType(getInits().front()).getDimSize(0);
  for (auto [index, init] : llvm::enumerate(getInits())) {
    int64_t size = getTensorType(init).getDimSize(0);
    if (!areCompatible(size, batch))
      return emitOpError("expects every iteration argument to have batch "
                         "size ")
             << formatDim(batch) << ", got " << formatDim(size) << " for #"
             << index;
  }
  int64_t counts = getIterations().getType().getDimSize(0);
  if (!areCompatible(counts, batch))
    return emitOpError("expects one iteration count per sample (")
           << formatDim(batch) << "), got " << formatDim(counts);

  Block *block = getBodyBlock();
  if (block->getNumArguments() != getInits().size())
    return emitOpError("expects the body to take ")
           << getInits().size() << " argument(s), one per iterate, got "
           << block->getNumArguments();
  for (auto [index, arg, init] :
       llvm::enumerate(block->getArguments(), getInits())) {
    if (arg.getType() != init.getType())
      return emitOpError("expects body argument #")
             << index << " to have type " << init.getType() << ", got "
             << arg.getType();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// KernelOp
//===----------------------------------------------------------------------===//

YieldOp KernelOp::getYield() {
  return cast<YieldOp>(getBodyBlock()->getTerminator());
}

bool KernelOp::isSequential() {
  return llvm::any_of(getBodyBlock()->getOperations(), [](Operation &op) {
    return isa<ScanOp, SelectiveScanOp>(op);
  });
}

/// kernel-op ::= `fp.kernel` `(` assignment-list `)` `:` function-type
///               attr-dict-with-keyword region
ParseResult KernelOp::parse(OpAsmParser &parser, OperationState &result) {
  SmallVector<OpAsmParser::Argument> regionArgs;
  SmallVector<OpAsmParser::UnresolvedOperand> inputs;
  FunctionType type;
  SMLoc inputsLoc = parser.getCurrentLocation();
  if (parser.parseAssignmentList(regionArgs, inputs) || parser.parseColon() ||
      parser.parseType(type))
    return failure();
  if (regionArgs.size() != type.getNumInputs())
    return parser.emitError(inputsLoc)
           << "expected " << regionArgs.size()
           << " input types, one per kernel argument, got "
           << type.getNumInputs();
  for (auto [arg, argType] : llvm::zip_equal(regionArgs, type.getInputs()))
    arg.type = argType;
  if (parser.resolveOperands(inputs, type.getInputs(), inputsLoc,
                             result.operands) ||
      parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  Region *body = result.addRegion();
  if (parser.parseRegion(*body, regionArgs))
    return failure();
  KernelOp::ensureTerminator(*body, parser.getBuilder(), result.location);
  result.addTypes(type.getResults());
  return success();
}

void KernelOp::print(OpAsmPrinter &p) {
  p << " (";
  llvm::interleaveComma(
      llvm::zip_equal(getBodyBlock()->getArguments(), getInputs()), p,
      [&](auto pair) { p << std::get<0>(pair) << " = " << std::get<1>(pair); });
  p << ") : ";
  p.printFunctionalType(getInputs().getTypes(), getResults().getTypes());
  p.printOptionalAttrDictWithKeyword((*this)->getAttrs());
  p << ' ';
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/true);
}

LogicalResult KernelOp::verify() {
  if (getResults().empty())
    return emitOpError("expects at least one result");
  Block *block = getBodyBlock();
  if (block->getNumArguments() != getInputs().size())
    return emitOpError("expects the body to take ")
           << getInputs().size() << " argument(s), one per input, got "
           << block->getNumArguments();
  for (auto [index, arg, input] :
       llvm::enumerate(block->getArguments(), getInputs()))
    if (arg.getType() != input.getType())
      return emitOpError("expects body argument #")
             << index << " to have type " << input.getType() << ", got "
             << arg.getType();
  for (Operation &op : block->without_terminator())
    if (op.getNumRegions() != 0)
      return op.emitOpError("cannot be part of a kernel: kernels hold no "
                            "nested regions");
  for (auto scan : block->getOps<ScanOp>())
    if (scan.getReverse())
      return scan.emitOpError("cannot be part of a kernel: kernels run "
                              "forward in time");
  // A token sees other tokens only through its inputs, which are complete
  // before the kernel runs.
  for (auto shift : block->getOps<ShiftOp>()) {
    auto input = dyn_cast<BlockArgument>(shift.getInput());
    if (!input || input.getOwner() != block)
      return shift.emitOpError("in a kernel must shift one of the kernel's "
                               "inputs");
  }
  if ((*this)->hasAttr(FPDialect::getScratchSizeAttrName()))
    return verifySchedule();
  return success();
}

/// Elements of `type` one token sees: those after batch and time for a
/// per-token tensor, all of them for a uniform one.
static int64_t tokenElements(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  ArrayRef<int64_t> shape = tensor.getShape();
  if (tensor.getRank() >= 2 && tensor.isDynamicDim(0) && tensor.isDynamicDim(1))
    shape = shape.drop_front(2);
  int64_t elements = 1;
  for (int64_t extent : shape)
    elements *= extent;
  return elements;
}

/// The schedule fp-schedule-kernels recorded (see the dialect description):
/// every attribute of the right kind, and every slot, temporary, staged row,
/// scan state and carry within its space.
LogicalResult KernelOp::verifySchedule() {
  Operation *kernel = getOperation();
  auto size = [&](StringRef name, bool required) -> FailureOr<int64_t> {
    Attribute attr = kernel->getAttr(name);
    if (!attr && !required)
      return 0;
    auto value = dyn_cast_or_null<IntegerAttr>(attr);
    if (!value || value.getInt() < 0)
      return emitOpError("expects '") << name
                                      << "' to be a non-negative "
                                         "integer";
    return value.getInt();
  };
  FailureOr<int64_t> scratch = size(FPDialect::getScratchSizeAttrName(), true);
  FailureOr<int64_t> state = size(FPDialect::getStateSizeAttrName(), true);
  FailureOr<int64_t> registerState =
      size(FPDialect::getRegisterStateAttrName(), true);
  FailureOr<int64_t> stage = size(FPDialect::getStageSizeAttrName(), true);
  FailureOr<int64_t> carry = size(FPDialect::getCarrySizeAttrName(), false);
  if (failed(scratch) || failed(state) || failed(registerState) ||
      failed(stage) || failed(carry))
    return failure();
  if (*registerState > *state)
    return emitOpError("keeps more scan state in registers (")
           << *registerState << ") than it has (" << *state << ")";

  Block *block = getBodyBlock();
  if (auto staged = kernel->getAttrOfType<DenseI64ArrayAttr>(
          FPDialect::getStagedInputsAttrName())) {
    ArrayRef<int64_t> pairs = staged.asArrayRef();
    if (pairs.size() % 2 != 0)
      return emitOpError("expects 'fp.staged_inputs' to hold [argument, "
                         "offset] pairs");
    for (size_t i = 0; i < pairs.size(); i += 2) {
      int64_t arg = pairs[i], offset = pairs[i + 1];
      if (arg < 0 || arg >= static_cast<int64_t>(block->getNumArguments()))
        return emitOpError("stages input #") << arg << ", which it lacks";
      int64_t elements = tokenElements(block->getArgument(arg).getType());
      if (offset < 0 || offset + elements > *stage)
        return emitOpError("stages input #")
               << arg << " at [" << offset << ", " << offset + elements
               << "), outside its stage buffer of " << *stage << " elements";
    }
  } else if (kernel->hasAttr(FPDialect::getStagedInputsAttrName())) {
    return emitOpError("expects 'fp.staged_inputs' to be an array of i64");
  }

  // `[offset, offset + elements)` must lie in a space of `limit` elements.
  auto within = [](Operation *op, StringRef what, int64_t offset,
                   int64_t elements, int64_t limit) -> LogicalResult {
    if (offset < 0 || offset + elements > limit)
      return op->emitOpError("has its ")
             << what << " at [" << offset << ", " << offset + elements
             << "), outside the kernel's " << limit << " elements";
    return success();
  };
  auto integer = [](Operation *op, Attribute attr,
                    StringRef name) -> FailureOr<int64_t> {
    auto value = dyn_cast<IntegerAttr>(attr);
    if (!value)
      return op->emitOpError("expects '") << name << "' to be an integer";
    return value.getInt();
  };
  // A result's slot (`fp.slot`, or `slot` of `fp.summary`) and a
  // temporary's range (`fp.temp`, or `temp`).
  auto checkSlots = [&](Operation *op, Attribute slot, Attribute temp,
                        StringRef pass) -> LogicalResult {
    if (slot) {
      FailureOr<int64_t> offset = integer(op, slot, "slot");
      if (failed(offset))
        return failure();
      if (op->getNumResults() != 1 ||
          !isa<RankedTensorType>(op->getResult(0).getType()))
        return op->emitOpError("has a scratch slot but no tensor result");
      if (failed(within(op, (pass + "slot").str(), *offset,
                        tokenElements(op->getResult(0).getType()), *scratch)))
        return failure();
    }
    if (temp) {
      auto range = dyn_cast<DenseI64ArrayAttr>(temp);
      if (!range || range.size() != 2)
        return op->emitOpError("expects its temporary to be [offset, size]");
      if (failed(within(op, (pass + "temporary").str(), range[0], range[1],
                        *scratch)))
        return failure();
    }
    return success();
  };

  for (Operation &op : block->without_terminator()) {
    if (failed(checkSlots(&op, op.getAttr(FPDialect::getSlotAttrName()),
                          op.getAttr(FPDialect::getTempAttrName()), "")))
      return failure();
    if (Attribute summary = op.getAttr(FPDialect::getSummaryAttrName())) {
      auto fields = dyn_cast<DictionaryAttr>(summary);
      if (!fields)
        return op.emitOpError("expects 'fp.summary' to be a dictionary");
      if (!*carry)
        return op.emitOpError("runs in the summary pass of a kernel that "
                              "does not run in chunks");
      if (failed(checkSlots(&op, fields.get("slot"), fields.get("temp"),
                            "summary ")))
        return failure();
    }
    if (Attribute out = op.getAttr(FPDialect::getOutAttrName())) {
      FailureOr<int64_t> index = integer(&op, out, "fp.out");
      if (failed(index))
        return failure();
      if (*index < 0 || *index >= static_cast<int64_t>(getNumResults()))
        return op.emitOpError("is computed into result #")
               << *index << ", which the kernel lacks";
    }
    if (Attribute staged = op.getAttr(FPDialect::getStagedAttrName())) {
      auto shift = dyn_cast<ShiftOp>(op);
      if (!shift)
        return op.emitOpError("is staged, but only a shift of an input is");
      FailureOr<int64_t> offset = integer(&op, staged, "fp.staged");
      if (failed(offset) ||
          failed(within(&op, "staged row", *offset,
                        tokenElements(shift.getType()), *stage)))
        return failure();
    }
    if (Attribute offset = op.getAttr(FPDialect::getStateOffsetAttrName())) {
      int64_t elements = 0;
      if (auto scan = dyn_cast<SelectiveScanOp>(op)) {
        auto a = cast<RankedTensorType>(scan.getA().getType()).getShape();
        elements = 2 * a[0] * a[1] + a[0];
      } else if (auto scan = dyn_cast<ScanOp>(op)) {
        elements = 2 * tokenElements(scan.getType());
      } else {
        return op.emitOpError("has scan state, but is no scan");
      }
      FailureOr<int64_t> start = integer(&op, offset, "fp.state_offset");
      if (failed(start) ||
          failed(within(&op, "state", *start, elements, *state)))
        return failure();
    } else if (isa<ScanOp, SelectiveScanOp>(op)) {
      return op.emitOpError("expects its state's offset ('fp.state_offset')");
    }
    if (op.hasAttr(FPDialect::getRegistersAttrName()) &&
        !isa<SelectiveScanOp>(op))
      return op.emitOpError("keeps its state in registers, but only a "
                            "selective scan does");
  }
  return success();
}

//===----------------------------------------------------------------------===//
// BarrierOp
//===----------------------------------------------------------------------===//

LogicalResult BarrierOp::verify() {
  if (!getCall() && !getSummary())
    return emitOpError("expects to synchronise the call, the summary pass, "
                       "or both");
  return success();
}

//===----------------------------------------------------------------------===//
// YieldOp
//===----------------------------------------------------------------------===//

// The yield is checked against its loop here rather than in a region
// verifier of FixedPointOp, so these messages come before the generic
// control-flow-edge checks of RegionBranchOpInterface.
LogicalResult YieldOp::verify() {
  if (auto kernel = dyn_cast<KernelOp>((*this)->getParentOp())) {
    if (getValues().size() != kernel.getResults().size())
      return emitOpError("expects ")
             << kernel.getResults().size()
             << " yielded value(s), one per kernel result, got "
             << getValues().size();
    for (auto [index, value, result] :
         llvm::enumerate(getValues(), kernel.getResults()))
      if (value.getType() != result.getType())
        return emitOpError("expects yielded value #")
               << index << " to have type " << result.getType() << ", got "
               << value.getType();
    return success();
  }
  auto loop = cast<FixedPointOp>((*this)->getParentOp());
  if (getValues().size() != loop.getInits().size())
    return emitOpError("expects ")
           << loop.getInits().size()
           << " yielded value(s), one per iterate, got " << getValues().size();
  for (auto [index, value, init] :
       llvm::enumerate(getValues(), loop.getInits())) {
    if (value.getType() != init.getType())
      return emitOpError("expects yielded value #")
             << index << " to have type " << init.getType() << ", got "
             << value.getType();
  }
  return success();
}

OperandRange FixedPointOp::getEntrySuccessorOperands(RegionSuccessor) {
  return getInits();
}

void FixedPointOp::getSuccessorRegions(
    RegionBranchPoint point, SmallVectorImpl<RegionSuccessor> &regions) {
  // The body runs at least once, then either again or the op exits with the
  // yielded (relaxed) iterates as its fixed-point results.
  regions.push_back(
      RegionSuccessor(&getBody(), getBodyBlock()->getArguments()));
  if (!point.isParent())
    regions.push_back(RegionSuccessor(
        getOperation(),
        getOperation()->getResults().take_front(getNumIterates())));
}

SmallVector<Region *> FixedPointOp::getLoopRegions() { return {&getBody()}; }

Block::BlockArgListType FixedPointOp::getRegionIterArgs() {
  return getBodyBlock()->getArguments();
}

std::optional<MutableArrayRef<OpOperand>>
FixedPointOp::getYieldedValuesMutable() {
  return getYield().getValuesMutable();
}

std::optional<ResultRange> FixedPointOp::getLoopResults() {
  return getOperation()->getResults().take_front(getNumIterates());
}

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  if (getName().empty())
    return emitOpError("expects a non-empty parameter name");
  RankedTensorType type = getTensorType(getResult());
  for (auto [index, size] : llvm::enumerate(type.getShape()))
    if (size < 1)
      return emitOpError("expects every dimension to be positive, got ")
             << size << " for dimension " << index;
  InitKind kind = getInit().getKind();
  bool needsRank = kind == InitKind::FanInUniform || kind == InitKind::S4DReal;
  if (needsRank && type.getRank() < 1)
    return emitOpError("initialiser '")
           << stringifyInitKind(kind) << "' needs a parameter of rank >= 1";
  if (kind == InitKind::RowNorm && type.getRank() != 1)
    return emitOpError("initialiser 'row_norm' needs a parameter of rank 1 "
                       "(one gain per row), got rank ")
           << type.getRank();
  if ((kind == InitKind::Eye || kind == InitKind::Orthogonal) &&
      (type.getRank() != 2 || type.getDimSize(0) != type.getDimSize(1)))
    return emitOpError("initialiser '")
           << stringifyInitKind(kind) << "' needs a square matrix, got "
           << type;
  if (getFrozen() && getDecay())
    return emitOpError("a frozen parameter is not trained, so it cannot be "
                       "in the weight-decay group");
  return success();
}

//===----------------------------------------------------------------------===//
// WeightNormOp
//===----------------------------------------------------------------------===//

/// One gain per row of `weight`, of its element type.
static LogicalResult verifyGainPerRow(Operation *op, Value weight, Value gain) {
  if (failed(verifySameElementType(op, weight, {gain})))
    return failure();
  int64_t rows = getTensorType(weight).getDimSize(0);
  int64_t gains = getTensorType(gain).getDimSize(0);
  if (!areCompatible(rows, gains))
    return op->emitOpError("expects one gain per weight row (")
           << formatDim(rows) << "), got " << formatDim(gains);
  return success();
}

LogicalResult WeightNormOp::verify() {
  return verifyGainPerRow(*this, getWeight(), getGain());
}

LogicalResult WeightNormGradOp::verify() {
  return verifyGainPerRow(*this, getWeight(), getGain());
}

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::verify() {
  if (failed(verifySameElementType(
          *this, getInput(), {getWeight(), getGain(), getBias(), getResult()})))
    return failure();
  RankedTensorType input = getTensorType(getInput());
  RankedTensorType weight = getTensorType(getWeight());
  RankedTensorType result = getTensorType(getResult());
  int64_t outSize = weight.getDimSize(0), inSize = weight.getDimSize(1);
  int64_t rank = input.getRank();
  if (!areCompatible(input.getDimSize(rank - 1), inSize))
    return emitOpError("expects the input's last dimension (")
           << formatDim(input.getDimSize(rank - 1))
           << ") to match the weight's input size (" << formatDim(inSize)
           << ")";
  if (result.getRank() != rank)
    return emitOpError("expects a result of rank ")
           << rank << ", got " << result.getRank();
  for (int64_t i = 0; i + 1 < rank; ++i)
    if (!areCompatible(input.getDimSize(i), result.getDimSize(i)))
      return emitOpError("expects result dimension ")
             << i << " (" << formatDim(result.getDimSize(i))
             << ") to match the input's (" << formatDim(input.getDimSize(i))
             << ")";
  if (!areCompatible(result.getDimSize(rank - 1), outSize))
    return emitOpError("expects the result's last dimension (")
           << formatDim(result.getDimSize(rank - 1))
           << ") to match the weight's output size (" << formatDim(outSize)
           << ")";
  for (auto [name, value] :
       {std::pair<StringRef, Value>{"gain", getGain()}, {"bias", getBias()}}) {
    if (value && !areCompatible(getTensorType(value).getDimSize(0), outSize))
      return emitOpError("expects the ")
             << name << " to have the weight's output size ("
             << formatDim(outSize) << "), got "
             << formatDim(getTensorType(value).getDimSize(0));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// SelectiveScanOp
//===----------------------------------------------------------------------===//

/// The operand checks of fp.selective_scan, shared with its gradient.
static LogicalResult verifySelectiveScanOperands(Operation *op, Value uValue,
                                                 Value aValue, Value bValue,
                                                 Value dValue) {
  if (failed(verifySameElementType(op, uValue, {aValue, bValue, dValue})))
    return failure();
  RankedTensorType u = getTensorType(uValue);
  RankedTensorType a = getTensorType(aValue);
  RankedTensorType b = getTensorType(bValue);
  int64_t channels = u.getDimSize(2), states = a.getDimSize(1);
  if (!areCompatible(a.getDimSize(0), channels))
    return op->emitOpError("expects 'A' to have one row per channel (")
           << formatDim(channels) << "), got " << formatDim(a.getDimSize(0));
  for (int64_t i = 0; i < 2; ++i)
    if (!areCompatible(b.getDimSize(i), u.getDimSize(i)))
      return op->emitOpError("expects 'B' and 'C' to have the batch and time "
                             "sizes of 'u'");
  if (!areCompatible(b.getDimSize(2), states))
    return op->emitOpError(
               "expects 'B' and 'C' to have the state size of 'A' (")
           << formatDim(states) << "), got " << formatDim(b.getDimSize(2));
  if (dValue && !areCompatible(getTensorType(dValue).getDimSize(0), channels))
    return op->emitOpError(
               "expects the skip 'D' to have one entry per channel (")
           << formatDim(channels) << "), got "
           << formatDim(getTensorType(dValue).getDimSize(0));
  return success();
}

LogicalResult SelectiveScanOp::verify() {
  return verifySelectiveScanOperands(*this, getU(), getA(), getB(), getD());
}

//===----------------------------------------------------------------------===//
// CausalConvOp
//===----------------------------------------------------------------------===//

/// The operand checks of fp.causal_conv, shared with its gradient.
static LogicalResult verifyCausalConvOperands(Operation *op, Value input,
                                              Value weightValue, Value bias) {
  if (failed(verifySameElementType(op, input, {weightValue, bias})))
    return failure();
  int64_t channels = getTensorType(input).getDimSize(2);
  RankedTensorType weight = getTensorType(weightValue);
  if (!areCompatible(weight.getDimSize(0), channels))
    return op->emitOpError("expects one weight row per channel (")
           << formatDim(channels) << "), got "
           << formatDim(weight.getDimSize(0));
  if (ShapedType::isDynamic(weight.getDimSize(1)) || weight.getDimSize(1) < 1)
    return op->emitOpError("expects a static kernel width >= 1, got ")
           << formatDim(weight.getDimSize(1));
  if (bias && !areCompatible(getTensorType(bias).getDimSize(0), channels))
    return op->emitOpError("expects one bias per channel (")
           << formatDim(channels) << "), got "
           << formatDim(getTensorType(bias).getDimSize(0));
  return success();
}

LogicalResult CausalConvOp::verify() {
  return verifyCausalConvOperands(*this, getInput(), getWeight(), getBias());
}

//===----------------------------------------------------------------------===//
// Chunked forms
//===----------------------------------------------------------------------===//

/// Checks the state of a chunked op whose state is `rows` rows of the
/// activation `token` (shift, scan, causal convolution): its rank, its
/// batch, its static dimension 1 of size `rows`, and the feature dimensions
/// of `token`.
static LogicalResult verifyRowState(Operation *op, Value token, Value state,
                                    int64_t rows) {
  if (failed(verifySameElementType(op, token, {state})))
    return failure();
  RankedTensorType t = getTensorType(token), s = getTensorType(state);
  if (s.getRank() != t.getRank())
    return op->emitOpError("expects a state of rank ")
           << t.getRank() << " (batch, rows, features...), got " << s;
  if (!areCompatible(s.getDimSize(0), t.getDimSize(0)))
    return op->emitOpError("expects the state to have the batch size of the "
                           "input (")
           << formatDim(t.getDimSize(0)) << "), got "
           << formatDim(s.getDimSize(0));
  if (s.getDimSize(1) != rows)
    return op->emitOpError("expects the state to hold ")
           << rows << " row(s) along dimension 1, got "
           << formatDim(s.getDimSize(1));
  for (int64_t i = 2; i < t.getRank(); ++i)
    if (!areCompatible(s.getDimSize(i), t.getDimSize(i)))
      return op->emitOpError("expects the state's dimension ")
             << i << " to be the input's (" << formatDim(t.getDimSize(i))
             << "), got " << formatDim(s.getDimSize(i));
  return success();
}

LogicalResult ChunkShiftOp::verify() {
  const auto offset = static_cast<int64_t>(getOffset());
  if (offset < 1)
    return emitOpError("expects a causal offset >= 1, got ") << offset;
  return verifyRowState(*this, getInput(), getState(), offset);
}

LogicalResult ChunkScanOp::verify() {
  return verifyRowState(*this, getInput(), getState(), 1);
}

LogicalResult ChunkSelectiveScanOp::verify() {
  if (failed(
          verifySelectiveScanOperands(*this, getU(), getA(), getB(), getD())) ||
      failed(verifySameElementType(*this, getU(), {getState()})))
    return failure();
  RankedTensorType u = getTensorType(getU()), a = getTensorType(getA()),
                   state = getTensorType(getState());
  if (!areCompatible(state.getDimSize(0), u.getDimSize(0)) ||
      !areCompatible(state.getDimSize(1), a.getDimSize(0)) ||
      !areCompatible(state.getDimSize(2), a.getDimSize(1)) ||
      state.isDynamicDim(1) || state.isDynamicDim(2))
    return emitOpError("expects a state of shape (batch, ")
           << formatDim(a.getDimSize(0)) << ", " << formatDim(a.getDimSize(1))
           << ") with static channels and states, got " << state;
  return success();
}

LogicalResult ChunkCausalConvOp::verify() {
  if (failed(
          verifyCausalConvOperands(*this, getInput(), getWeight(), getBias())))
    return failure();
  int64_t width = getTensorType(getWeight()).getDimSize(1);
  if (width < 2)
    return emitOpError("expects a kernel width >= 2 (a width of 1 carries no "
                       "state), got ")
           << width;
  return verifyRowState(*this, getInput(), getState(), width - 1);
}

//===----------------------------------------------------------------------===//
// Normalisations
//===----------------------------------------------------------------------===//

static LogicalResult verifyEps(Operation *op, double eps) {
  if (!(eps > 0) || !std::isfinite(eps))
    return op->emitOpError("expects a positive finite eps, got ") << eps;
  return success();
}

/// Checks a per-feature affine vector against the input's last dimension.
static LogicalResult verifyFeatureVector(Operation *op, Value input,
                                         Value vector, StringRef name) {
  RankedTensorType type = getTensorType(input);
  int64_t features = type.getDimSize(type.getRank() - 1);
  int64_t size = getTensorType(vector).getDimSize(0);
  if (!areCompatible(size, features))
    return op->emitOpError("expects the ")
           << name << " to have the input's last dimension ("
           << formatDim(features) << "), got " << formatDim(size);
  return success();
}

LogicalResult L2NormOp::verify() {
  return verifyEps(*this, getEps().convertToDouble());
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifySameElementType(*this, getInput(), {getWeight()})) ||
      failed(verifyEps(*this, getEps().convertToDouble())))
    return failure();
  return verifyFeatureVector(*this, getInput(), getWeight(), "weight");
}

LogicalResult RMSNormOp::verify() {
  if (failed(verifySameElementType(*this, getInput(), {getWeight()})) ||
      failed(verifyEps(*this, getEps().convertToDouble())))
    return failure();
  return verifyFeatureVector(*this, getInput(), getWeight(), "weight");
}

//===----------------------------------------------------------------------===//
// BroadcastOp
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::verify() {
  if (failed(verifySameElementType(*this, getInput(), {getResult()})))
    return failure();
  RankedTensorType input = getTensorType(getInput());
  RankedTensorType result = getTensorType(getResult());
  if (!getLike() && !result.hasStaticShape())
    return emitOpError("without 'like' expects a static result, got ")
           << result;
  ArrayRef<int64_t> dims = getDims();
  if (static_cast<int64_t>(dims.size()) != input.getRank())
    return emitOpError("expects one entry in 'dims' per input dimension (")
           << input.getRank() << "), got " << dims.size();
  if (failed(verifyDimList(*this, dims, result.getRank(), "'dims'")))
    return failure();
  for (auto [index, dim] : llvm::enumerate(dims))
    if (!areCompatible(input.getDimSize(index), result.getDimSize(dim)))
      return emitOpError("expects input dimension ")
             << index << " (" << formatDim(input.getDimSize(index))
             << ") to match result dimension " << dim << " ("
             << formatDim(result.getDimSize(dim)) << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// ReduceSumOp and ReduceMaxOp
//===----------------------------------------------------------------------===//

template <typename ReductionOp>
static LogicalResult verifyReduction(ReductionOp op) {
  if (failed(verifySameElementType(op, op.getInput(), {op.getResult()})))
    return failure();
  RankedTensorType input = getTensorType(op.getInput());
  RankedTensorType result = getTensorType(op.getResult());
  ArrayRef<int64_t> dims = op.getDims();
  if (dims.empty())
    return op.emitOpError("expects at least one dimension to reduce");
  if (failed(verifyDimList(op, dims, input.getRank(), "'dims'")))
    return failure();
  SmallVector<int64_t> kept;
  for (int64_t i = 0; i < input.getRank(); ++i)
    if (!llvm::is_contained(dims, i))
      kept.push_back(input.getDimSize(i));
  if (result.getRank() != static_cast<int64_t>(kept.size()))
    return op.emitOpError("expects a result of rank ")
           << kept.size() << ", got " << result.getRank();
  for (auto [index, size] : llvm::enumerate(kept))
    if (!areCompatible(size, result.getDimSize(index)))
      return op.emitOpError("expects result dimension ")
             << index << " to be " << formatDim(size) << ", got "
             << formatDim(result.getDimSize(index));
  return success();
}

LogicalResult ReduceSumOp::verify() { return verifyReduction(*this); }

LogicalResult ReduceMaxOp::verify() { return verifyReduction(*this); }

//===----------------------------------------------------------------------===//
// SliceOp
//===----------------------------------------------------------------------===//

LogicalResult SliceOp::verify() {
  if (failed(verifySameElementType(*this, getInput(), {getResult()})))
    return failure();
  RankedTensorType input = getTensorType(getInput());
  RankedTensorType result = getTensorType(getResult());
  int64_t start = getStart(), end = getEnd();
  int64_t rank = input.getRank(), size = input.getDimSize(rank - 1);
  if (start < 0 || end <= start)
    return emitOpError("expects 0 <= start < end, got [")
           << start << " : " << end << "]";
  if (!ShapedType::isDynamic(size) && end > size)
    return emitOpError("expects the range [")
           << start << " : " << end << "] to lie within the last dimension ("
           << size << ")";
  if (result.getRank() != rank)
    return emitOpError("expects a result of rank ")
           << rank << ", got " << result.getRank();
  for (int64_t i = 0; i + 1 < rank; ++i)
    if (!areCompatible(input.getDimSize(i), result.getDimSize(i)))
      return emitOpError("expects result dimension ")
             << i << " to match the input's";
  if (result.getDimSize(rank - 1) != end - start)
    return emitOpError("expects the result's last dimension to be ")
           << end - start << ", got " << formatDim(result.getDimSize(rank - 1));
  return success();
}

//===----------------------------------------------------------------------===//
// ConcatOp
//===----------------------------------------------------------------------===//

bool SliceOp::isReadInPlace() {
  if (ShapedType::isDynamic(getTensorType(getInput()).getShape().back()))
    return false;
  Value result = getResult();
  // A kernel input read a row at a time: per token, one row per token and
  // never at another token; or uniform, one row.
  auto readsRows = [](BlockArgument arg) {
    auto type = cast<RankedTensorType>(arg.getType());
    ArrayRef<int64_t> shape = type.getShape();
    const bool perToken =
        type.getRank() >= 2 && type.isDynamicDim(0) && type.isDynamicDim(1);
    if (perToken)
      return type.getRank() == 3 &&
             llvm::none_of(arg.getUsers(),
                           [](Operation *user) { return isa<ShiftOp>(user); });
    return llvm::all_of(shape.drop_back(), [](int64_t d) { return d == 1; });
  };
  return !result.use_empty() &&
         llvm::all_of(result.getUses(), [&](OpOperand &use) {
           Operation *owner = use.getOwner();
           if (auto linear = dyn_cast<LinearOp>(owner))
             return !linear.getGain();
           if (isa<WeightGradOp>(owner))
             return true;
           if (auto conv = dyn_cast<CausalConvOp>(owner))
             return &use == &conv.getInputMutable();
           if (auto grad = dyn_cast<CausalConvGradOp>(owner))
             return &use == &grad.getInputMutable();
           // A transposed weight whose GEMMs read it as it lies.
           if (auto transpose = dyn_cast<TransposeOp>(owner))
             return transpose.isReadOnlyAsLinearWeight();
           if (auto kernel = dyn_cast<KernelOp>(owner))
             return readsRows(
                 kernel.getBodyBlock()->getArgument(use.getOperandNumber()));
           return false;
         });
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("expects at least one input");
  if (failed(verifySameElementType(*this, getResult(), getInputs())))
    return failure();
  RankedTensorType result = getTensorType(getResult());
  int64_t rank = result.getRank();
  int64_t total = 0;
  for (auto [index, input] : llvm::enumerate(getInputs())) {
    RankedTensorType type = getTensorType(input);
    if (type.getRank() != rank)
      return emitOpError("expects every input to have the result's rank (")
             << rank << "), got " << type.getRank() << " for input #" << index;
    for (int64_t i = 0; i + 1 < rank; ++i)
      if (!areCompatible(type.getDimSize(i), result.getDimSize(i)))
        return emitOpError("expects input #")
               << index << " to match the result in dimension " << i;
    int64_t size = type.getDimSize(rank - 1);
    total = ShapedType::isDynamic(size) || ShapedType::isDynamic(total)
                ? ShapedType::kDynamic
                : total + size;
  }
  if (!areCompatible(total, result.getDimSize(rank - 1)))
    return emitOpError("expects the result's last dimension to be the sum "
                       "of the inputs' (")
           << formatDim(total) << "), got "
           << formatDim(result.getDimSize(rank - 1));
  return success();
}

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  if (failed(verifySameElementType(*this, getInput(), {getResult()})))
    return failure();
  RankedTensorType input = getTensorType(getInput());
  RankedTensorType result = getTensorType(getResult());
  // Keep every dimension up to the last dynamic one of the input.
  int64_t kept = 0;
  for (int64_t i = 0; i < input.getRank(); ++i)
    if (input.isDynamicDim(i))
      kept = i + 1;
  if (result.getRank() < kept)
    return emitOpError("expects the result to keep the input's leading "
                       "dimensions up to its last dynamic one (")
           << kept << ")";
  for (int64_t i = 0; i < kept; ++i)
    if (input.getDimSize(i) != result.getDimSize(i))
      return emitOpError("expects result dimension ")
             << i << " to be " << formatDim(input.getDimSize(i)) << ", got "
             << formatDim(result.getDimSize(i));
  int64_t inputElements = 1, resultElements = 1;
  for (int64_t i = kept; i < input.getRank(); ++i)
    inputElements *= input.getDimSize(i);
  for (int64_t i = kept; i < result.getRank(); ++i) {
    if (result.isDynamicDim(i))
      return emitOpError("expects the reshaped dimensions of the result to "
                         "be static");
    resultElements *= result.getDimSize(i);
  }
  if (inputElements != resultElements)
    return emitOpError("expects the reshaped dimensions to hold ")
           << inputElements << " elements, got " << resultElements;
  return success();
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  if (failed(verifySameElementType(*this, getLhs(), {getRhs(), getResult()})))
    return failure();
  RankedTensorType lhs = getTensorType(getLhs());
  RankedTensorType rhs = getTensorType(getRhs());
  RankedTensorType result = getTensorType(getResult());
  int64_t rank = lhs.getRank();
  if (rhs.getRank() != rank || result.getRank() != rank)
    return emitOpError("expects operands and result of equal rank, got ")
           << rank << ", " << rhs.getRank() << " and " << result.getRank();
  for (int64_t i = 0; i + 2 < rank; ++i)
    if (!areCompatible(lhs.getDimSize(i), rhs.getDimSize(i)) ||
        !areCompatible(lhs.getDimSize(i), result.getDimSize(i)))
      return emitOpError("expects batch dimension ") << i << " to agree";
  auto matrixDims = [&](RankedTensorType type, bool transposed) {
    int64_t rows = type.getDimSize(rank - 2), cols = type.getDimSize(rank - 1);
    return transposed ? std::make_pair(cols, rows) : std::make_pair(rows, cols);
  };
  auto [m, k] = matrixDims(lhs, getTransposeLhs());
  auto [k2, n] = matrixDims(rhs, getTransposeRhs());
  if (!areCompatible(k, k2))
    return emitOpError("expects contracting sizes to agree, got ")
           << formatDim(k) << " and " << formatDim(k2);
  if (!areCompatible(result.getDimSize(rank - 2), m) ||
      !areCompatible(result.getDimSize(rank - 1), n))
    return emitOpError("expects result matrices of shape ")
           << formatDim(m) << "x" << formatDim(n) << ", got "
           << formatDim(result.getDimSize(rank - 2)) << "x"
           << formatDim(result.getDimSize(rank - 1));
  return success();
}

//===----------------------------------------------------------------------===//
// TriuOp
//===----------------------------------------------------------------------===//

/// The shape checks of fp.triu from `packed` vectors to `square` matrices,
/// shared with its adjoint fp.triu_pack.
static LogicalResult verifyTriuShapes(Operation *op, Value vectors,
                                      Value matrices) {
  if (failed(verifySameElementType(op, vectors, {matrices})))
    return failure();
  RankedTensorType input = getTensorType(vectors);
  RankedTensorType result = getTensorType(matrices);
  int64_t rank = input.getRank();
  if (result.getRank() != rank + 1)
    return op->emitOpError("expects a result of rank ")
           << rank + 1 << ", got " << result.getRank();
  for (int64_t i = 0; i + 1 < rank; ++i)
    if (!areCompatible(input.getDimSize(i), result.getDimSize(i)))
      return op->emitOpError("expects result dimension ")
             << i << " to match the input's";
  int64_t packed = input.getDimSize(rank - 1);
  int64_t m = result.getDimSize(rank);
  if (ShapedType::isDynamic(packed) || ShapedType::isDynamic(m) ||
      result.getDimSize(rank - 1) != m)
    return op->emitOpError("expects static square result matrices");
  if (packed != m * (m + 1) / 2)
    return op->emitOpError("expects ")
           << m * (m + 1) / 2 << " packed entries for " << m << "x" << m
           << " upper-triangular matrices, got " << packed;
  return success();
}

LogicalResult TriuOp::verify() {
  return verifyTriuShapes(*this, getInput(), getResult());
}

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::verify() {
  if (failed(verifySameElementType(*this, getInput(), {getResult()})))
    return failure();
  ArrayRef<int64_t> in = getTensorType(getInput()).getShape();
  ArrayRef<int64_t> out = getTensorType(getResult()).getShape();
  if (in[0] != out[1] || in[1] != out[0])
    return emitOpError("expects the result to be ")
           << in[1] << "x" << in[0] << ", got " << out[0] << "x" << out[1];
  return success();
}

LogicalResult MatrixExpOp::verify() {
  RankedTensorType type = getTensorType(getInput());
  if (type.getDimSize(0) != type.getDimSize(1))
    return emitOpError("expects a square matrix, got ") << type;
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  // (Xᵀ)ᵀ = X.
  if (auto inner = getInput().getDefiningOp<TransposeOp>())
    return inner.getInput();
  return {};
}

bool TransposeOp::isReadOnlyAsLinearWeight() {
  Value result = getResult();
  return llvm::all_of(result.getUses(), [&](OpOperand &use) {
    auto linear = dyn_cast<LinearOp>(use.getOwner());
    return linear && !linear.getGain() && use.get() == linear.getWeight() &&
           linear.getInput() != result;
  });
}

LogicalResult WeightGradOp::verify() {
  if (failed(
          verifySameElementType(*this, getGrad(), {getInput(), getResult()})))
    return failure();
  RankedTensorType grad = getTensorType(getGrad());
  RankedTensorType input = getTensorType(getInput());
  int64_t rank = grad.getRank();
  if (input.getRank() != rank)
    return emitOpError("expects 'grad' and 'input' of one rank");
  for (int64_t i = 0; i + 1 < rank; ++i)
    if (!areCompatible(grad.getDimSize(i), input.getDimSize(i)))
      return emitOpError("expects 'grad' and 'input' to agree in dimension ")
             << i;
  ArrayRef<int64_t> result = getTensorType(getResult()).getShape();
  if (!areCompatible(grad.getDimSize(rank - 1), result[0]) ||
      !areCompatible(input.getDimSize(rank - 1), result[1]))
    return emitOpError("expects a ")
           << formatDim(grad.getDimSize(rank - 1)) << "x"
           << formatDim(input.getDimSize(rank - 1)) << " result, got "
           << result[0] << "x" << result[1];
  return success();
}

LogicalResult TriuPackOp::verify() {
  return verifyTriuShapes(*this, getResult(), getInput());
}

LogicalResult SelectiveScanGradOp::verify() {
  return verifySelectiveScanOperands(*this, getU(), getA(), getB(), Value());
}

LogicalResult ReduceMaxGradOp::verify() {
  if (failed(verifySameElementType(*this, getInput(), {getGrad()})))
    return failure();
  RankedTensorType input = getTensorType(getInput());
  RankedTensorType grad = getTensorType(getGrad());
  ArrayRef<int64_t> dims = getDims();
  for (auto [i, dim] : llvm::enumerate(dims))
    if (dim < 0 || dim >= input.getRank() || (i > 0 && dims[i - 1] >= dim))
      return emitOpError("expects increasing dimensions of the input");
  SmallVector<int64_t> kept;
  for (int64_t i = 0; i < input.getRank(); ++i)
    if (!llvm::is_contained(dims, i))
      kept.push_back(input.getDimSize(i));
  if (int64_t(kept.size()) != grad.getRank() ||
      llvm::any_of(llvm::zip_equal(kept, grad.getShape()), [](auto pair) {
        return !areCompatible(std::get<0>(pair), std::get<1>(pair));
      }))
    return emitOpError("expects 'grad' to have the shape of the reduction "
                       "of 'input' over the dimensions");
  return success();
}

LogicalResult CausalConvGradOp::verify() {
  return verifyCausalConvOperands(*this, getInput(), getWeight(), Value());
}

//===----------------------------------------------------------------------===//
// TableGen'd op definitions
//===----------------------------------------------------------------------===//

#define GET_OP_CLASSES
#include "fp/Dialect/FpOps.cpp.inc"

//===----------------------------------------------------------------------===//
// SolverInitOp
//===----------------------------------------------------------------------===//

void SolverInitOp::getAsmResultNames(
    function_ref<void(Value, StringRef)> setNameFn) {
  setNameFn(getState(), "solver");
}
