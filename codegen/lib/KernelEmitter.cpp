//===- KernelEmitter.cpp - Function objects for fp.kernel ops ---*- C++ -*-===//
//
// An fp.kernel, scheduled by fp-schedule-kernels, becomes
//
//   template <typename Real> struct Kernel0 {
//     using Scalar = fp::Compute<Real>;
//     struct Registers { ... };  // scan state a CUDA thread keeps
//     static constexpr int64_t kRegisterState = ...;
//     const Real *in0; ...  // the inputs, in operand order
//     Real *out0; ...       // the results
//     int64_t length;       // tokens per sample, where the body shifts
//     template <typename Team>
//     FP_HOST_DEVICE void operator()(Team &team, int64_t row, int64_t step,
//                                    Scalar *scratch, Scalar *state,
//                                    Registers &registers) const;
//     static constexpr bool kChunkable = ...;
//     static constexpr int64_t kCarry = ...;
//     // Where kChunkable: summarize, saveCarry and loadCarry.
//   };
//
// whose call computes token `row`, the `step`-th of its sample: per-token
// inputs and results are offset to the token's row, uniform inputs are not,
// an fp.shift of an input reads the input's row `offset` tokens earlier (or
// zeros) into a slot of its own or from the stage buffer, a splat constant
// is filled into a slot of its own (its extents and scalar emit nothing),
// intermediate values live in their `scratch` slots and scans their state in
// `state`, or on CUDA in `registers`. Inputs and results hold the call's
// element type `Real`; scratch, state and literals the arithmetic type
// `Scalar` (float for bf16). Every op is one call of a Fused.h function,
// except views, which take their input's storage, uniform scalars, one
// statement of every thread, and chains, one loop over elements
// (fp::fused::forEachElement); an fp.barrier is the team's synchronisation.
//
// Every decision (slots, chains, uniform scalars, staging, state, chunks
// and barriers) is the schedule's, read from the IR: this file only prints.
// A chunkable kernel (one with fp.carry_size) also gets `summarize`, which
// runs the ops marked fp.summary with that pass's slots and chains,
// `saveCarry` and `loadCarry`.
//
//===----------------------------------------------------------------------===//

#include "fp/Codegen/KernelEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"

#include <cassert>
#include <cmath>
#include <optional>

using namespace mlir;
using namespace mlir::fp;
using namespace mlir::fp::codegen;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

std::string mlir::fp::codegen::realLiteral(double value) {
  if (std::isnan(value))
    return "std::numeric_limits<Scalar>::quiet_NaN()";
  if (std::isinf(value))
    return value > 0 ? "std::numeric_limits<Scalar>::infinity()"
                     : "-std::numeric_limits<Scalar>::infinity()";
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.17g", value);
  if (text.find_first_of(".en") == std::string::npos)
    text += ".0";
  return "Scalar(" + text + ")";
}

std::string mlir::fp::codegen::locationComment(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return llvm::formatv("{0}:{1}:{2}",
                         llvm::sys::path::filename(file.getFilename()),
                         file.getLine(), file.getColumn());
  if (auto name = dyn_cast<NameLoc>(loc))
    return locationComment(name.getChildLoc());
  if (auto call = dyn_cast<CallSiteLoc>(loc))
    return locationComment(call.getCallee());
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::string text = locationComment(inner); !text.empty())
        return text;
  return "";
}

StringRef mlir::fp::codegen::elementwiseFunctor(Operation *op) {
  return llvm::TypeSwitch<Operation *, StringRef>(op)
      .Case([](arith::AddFOp) { return "Add"; })
      .Case([](arith::SubFOp) { return "Sub"; })
      .Case([](arith::MulFOp) { return "Mul"; })
      .Case([](arith::DivFOp) { return "Div"; })
      .Case([](arith::MaximumFOp) { return "Max"; })
      .Case([](arith::MinimumFOp) { return "Min"; })
      .Case([](arith::NegFOp) { return "Neg"; })
      .Case([](math::ExpOp) { return "Exp"; })
      .Case([](math::LogOp) { return "Log"; })
      .Case([](math::SqrtOp) { return "Sqrt"; })
      .Case([](math::TanhOp) { return "Tanh"; })
      .Case([](math::AbsFOp) { return "Abs"; })
      .Case([](SiluOp) { return "Silu"; })
      .Case([](SigmoidOp) { return "Sigmoid"; })
      .Case([](SoftplusOp) { return "Softplus"; })
      .Default([](Operation *) { return StringRef(); });
}

//===----------------------------------------------------------------------===//
// Kernel function objects
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Kernel function objects
//===----------------------------------------------------------------------===//

namespace {

/// The template arguments of Fused.h's selective-scan functions for `scan`:
/// whether its A is given transposed.
StringRef scanTemplateArguments(SelectiveScanOp scan) {
  return readsTransposedMatrix(scan) ? "<true>" : "";
}

std::string joinInts(ArrayRef<int64_t> values) {
  return llvm::join(
      llvm::map_range(values, [](int64_t v) { return std::to_string(v); }),
      ", ");
}

/// An integer attribute of the schedule, if `op` has it.
std::optional<int64_t> scheduled(Operation *op, StringRef name) {
  if (auto value = op->getAttrOfType<IntegerAttr>(name))
    return value.getInt();
  return std::nullopt;
}

/// The two bodies a kernel's schedule describes: the token's full
/// computation, and a chunked kernel's summary pass.
enum class Pass { Call, Summary };

class KernelEmitter {
public:
  KernelEmitter(CodeWriter &w, KernelOp kernel) : w(w), kernel(kernel) {}

  FailureOr<KernelLaunch> emit(StringRef name);

private:
  CodeWriter &w;
  KernelOp kernel;
  KernelLaunch launch;
  /// The body's ops and barriers, in order.
  SmallVector<Operation *> ops;
  /// The pass being printed.
  Pass pass = Pass::Call;
  /// The pointer expression of every value with storage in the pass being
  /// printed.
  llvm::DenseMap<Value, std::string> pointers;
  /// The declarations of the inputs' pointers at the token's row, where
  /// they are read from the inputs (not from a stage buffer).
  SmallVector<std::pair<Value, std::string>> inputLines;
  /// The inputs read from a stage buffer, and their offsets in it.
  SmallVector<std::pair<unsigned, int64_t>> staged;
  /// The staged shifts of inputs, in body order.
  SmallVector<ShiftOp> stagedShifts;
  /// The member of `registers` of each selective scan whose state lives in
  /// registers on CUDA.
  llvm::DenseMap<Operation *, std::string> registerMembers;
  /// Each op's temporary in the pass being printed: its pointer and size.
  llvm::DenseMap<Operation *, std::pair<std::string, int64_t>> temporaries;
  /// The values computed into the call's results (pointers `y<j>`, of the
  /// element type Real rather than Scalar).
  llvm::DenseSet<Value> inResults;
  /// The chains of the pass being printed, from its schedule.
  struct Chain {
    SmallVector<Operation *> ops;
    int64_t elements = 0;
    Operation *sum = nullptr;
  };
  SmallVector<Chain> chains;
  llvm::DenseMap<Operation *, unsigned> chainOf;
  /// The register of each uniform scalar printed so far.
  llvm::DenseMap<Value, std::string> uniformNames;
  /// Numbers the intermediate values and the shape arrays of the call.
  int64_t nextValue = 0, nextArray = 0;

  static Value root(Value value) { return storageRoot(value); }
  const std::string &ptr(Value value) const {
    auto it = pointers.find(value);
    assert(it != pointers.end() && "a kernel value without storage");
    return it->second;
  }
  int64_t stateOffsetOf(Operation *op) const {
    return *scheduled(op, FPDialect::getStateOffsetAttrName());
  }
  /// The schedule's field `name` of `op` in the pass being printed: the
  /// attribute itself in the call, its entry of fp.summary in the summary.
  Attribute field(Operation *op, StringRef callName,
                  StringRef summaryName) const;
  bool inSummary(Operation *op) const {
    return op->hasAttr(FPDialect::getSummaryAttrName());
  }
  void aliasInput(Operation *view);
  int64_t inputRowStride(unsigned input);
  void declareScratch(ArrayRef<Operation *> body,
                      SmallVectorImpl<std::string> &declarations);
  void readChains(ArrayRef<Operation *> body);
  LogicalResult emitOp(Operation *op);
  // The printers of the ops emitOp prints as one call of Fused.h.
  LogicalResult printFill(Operation *op, std::optional<double> value);
  LogicalResult print(tensor::SplatOp splat);
  LogicalResult print(arith::ConstantOp constant);
  LogicalResult print(L2NormOp norm);
  LogicalResult print(LayerNormOp norm);
  LogicalResult print(RMSNormOp norm);
  LogicalResult print(ShiftOp shift);
  LogicalResult print(SliceOp slice);
  LogicalResult print(ConcatOp concat);
  LogicalResult print(BroadcastOp broadcast);
  LogicalResult printReduction(Operation *reduce, ArrayRef<int64_t> dims,
                               bool sum);
  LogicalResult print(ReduceSumOp reduce);
  LogicalResult print(ReduceMaxOp reduce);
  LogicalResult print(MatmulOp matmul);
  LogicalResult print(TriuOp triu);
  LogicalResult print(SelectiveScanOp scan);
  LogicalResult print(ScanOp scan);
  std::string scalarOf(Value value) const;
  std::string elementExpression(Operation *op,
                                llvm::function_ref<std::string(Value)> operand);
  void emitUniform(Operation *op);
  LogicalResult emitChain(const Chain &chain);
  void emitUnusedParameters();
  LogicalResult emitBody(llvm::function_ref<LogicalResult(Operation *)> emit);
  LogicalResult emitChunkMembers();
  void emitStageMembers();
};

} // namespace

Attribute KernelEmitter::field(Operation *op, StringRef callName,
                               StringRef summaryName) const {
  if (pass == Pass::Call)
    return op->getAttr(callName);
  auto summary =
      op->getAttrOfType<DictionaryAttr>(FPDialect::getSummaryAttrName());
  return summary ? summary.get(summaryName) : Attribute();
}

/// The row stride of kernel input `input`: its elements per token, or for a
/// slice read in place (fp.slice), its source's row.
int64_t KernelEmitter::inputRowStride(unsigned input) {
  if (auto slice = kernel.getInputs()[input].getDefiningOp<SliceOp>();
      slice && slice.isReadInPlace())
    return cast<RankedTensorType>(slice.getInput().getType()).getShape().back();
  return TokenShape(kernel.getBodyBlock()->getArgument(input).getType())
      .elements();
}

/// Gives a view its input's pointer, offset to a slice's first column. (The
/// copy comes first: inserting into `pointers` may move the strings that
/// ptr() refers to.)
void KernelEmitter::aliasInput(Operation *view) {
  // A view of a uniform scalar has its register (uniformNames) instead.
  if (!pointers.count(view->getOperand(0)))
    return;
  std::string input = ptr(view->getOperand(0));
  if (auto slice = dyn_cast<SliceOp>(view); slice && slice.getStart() != 0)
    input = llvm::formatv("({0} + {1})", input, slice.getStart()).str();
  pointers[view->getResult(0)] = std::move(input);
}

/// Names the scratch the pass being printed gives `body`'s ops, in body
/// order (each op's temporary before its result), and declares each.
void KernelEmitter::declareScratch(ArrayRef<Operation *> body,
                                   SmallVectorImpl<std::string> &declarations) {
  for (Operation *op : body) {
    if (auto range = dyn_cast_or_null<DenseI64ArrayAttr>(
            field(op, FPDialect::getTempAttrName(), "temp"))) {
      std::string name = "t" + std::to_string(nextValue++);
      declarations.push_back(
          llvm::formatv("Scalar *const {0} = scratch + {1};", name, range[0]));
      temporaries[op] = {name, range[1]};
    }
    if (auto slot = dyn_cast_or_null<IntegerAttr>(
            field(op, FPDialect::getSlotAttrName(), "slot"))) {
      std::string name = "v" + std::to_string(nextValue++);
      declarations.push_back(llvm::formatv("Scalar *const {0} = scratch + {1};",
                                           name, slot.getInt()));
      pointers[op->getResult(0)] = std::move(name);
    }
  }
}

/// Reads the chains of the pass being printed: its ops of one chain in body
/// order, a uniform row sum among them the chain's sum.
void KernelEmitter::readChains(ArrayRef<Operation *> body) {
  chains.clear();
  chainOf.clear();
  for (Operation *op : body) {
    auto index = dyn_cast_or_null<IntegerAttr>(
        field(op, FPDialect::getChainAttrName(), "chain"));
    if (!index)
      continue;
    unsigned id = index.getInt();
    if (chains.size() <= id)
      chains.resize(id + 1);
    chainOf[op] = id;
    if (op->hasAttr(FPDialect::getUniformAttrName())) {
      chains[id].sum = op;
      continue;
    }
    chains[id].ops.push_back(op);
    chains[id].elements = TokenShape(op->getResult(0).getType()).elements();
  }
}

FailureOr<KernelLaunch> KernelEmitter::emit(StringRef name) {
  if (!kernel->hasAttr(FPDialect::getScratchSizeAttrName()))
    return kernel.emitOpError("is not scheduled: run fp-schedule-kernels "
                              "before emitting it");
  launch.name = name.str();
  launch.sequential = kernel.isSequential();
  Block *body = kernel.getBodyBlock();
  YieldOp yield = kernel.getYield();
  SmallVector<Operation *> computing;
  for (Operation &op : body->without_terminator()) {
    ops.push_back(&op);
    if (!isa<BarrierOp>(op))
      computing.push_back(&op);
  }

  // Storage: inputs and results are the struct's pointers at the token's
  // row; views alias their input.
  launch.shifted = !body->getOps<ShiftOp>().empty();
  if (auto pairs = kernel->getAttrOfType<DenseI64ArrayAttr>(
          FPDialect::getStagedInputsAttrName()))
    for (int64_t i = 0; i + 1 < pairs.size(); i += 2)
      staged.push_back({static_cast<unsigned>(pairs[i]), pairs[i + 1]});
  for (auto [i, arg] : llvm::enumerate(body->getArguments())) {
    TokenShape shape(arg.getType());
    std::string name = "x" + std::to_string(i);
    pointers[arg] = name;
    // An input read only at other tokens, or only for its extents, needs
    // no pointer at this one.
    if (!arg.use_empty() && llvm::all_of(arg.getUsers(), [](Operation *user) {
          return isa<ShiftOp, tensor::DimOp>(user);
        }))
      continue;
    int64_t stride = inputRowStride(i);
    inputLines.emplace_back(
        arg,
        shape.perToken
            ? llvm::formatv("const Real *const {0} = in{1} + row * {2};", name,
                            i, stride)
                  .str()
            : llvm::formatv("const Real *const {0} = in{1};", name, i).str());
  }
  SmallVector<std::string> outputLines;
  for (auto [j, value] : llvm::enumerate(yield.getValues()))
    outputLines.push_back(
        llvm::formatv("Real *const y{0} = out{0} + row * {1};", j,
                      TokenShape(value.getType()).elements()));
  for (Operation *op : computing) {
    if (std::optional<int64_t> j = scheduled(op, FPDialect::getOutAttrName())) {
      pointers[op->getResult(0)] = "y" + std::to_string(*j);
      inResults.insert(op->getResult(0));
    }
    if (auto shift = dyn_cast<ShiftOp>(op);
        shift && shift->hasAttr(FPDialect::getStagedAttrName())) {
      pointers[shift.getResult()] = "s" + std::to_string(stagedShifts.size());
      stagedShifts.push_back(shift);
    }
  }
  readChains(computing);
  SmallVector<std::string> scratchDeclarations;
  declareScratch(computing, scratchDeclarations);
  for (Operation *op : computing)
    if (isView(op))
      aliasInput(op);

  // Scan state held in registers on CUDA, and the per-token cost.
  SmallVector<std::string> registerFields;
  for (Operation *op : computing) {
    for (Value result : op->getResults())
      if (isa<RankedTensorType>(result.getType()))
        launch.cost += TokenShape(result.getType()).elements();
    auto scan = dyn_cast<SelectiveScanOp>(op);
    if (!scan || !scan->hasAttr(FPDialect::getRegistersAttrName()))
      continue;
    TokenShape a(scan.getA().getType());
    std::string member = "scan" + std::to_string(registerFields.size());
    registerFields.push_back(
        llvm::formatv("fp::fused::ScanRegisters<Scalar, {0}, {1}, "
                      "kernels::kTeamSize> {2};",
                      a.dims[0], a.dims[1], member));
    registerMembers[scan] = member;
  }
  launch.state = *scheduled(kernel, FPDialect::getStateSizeAttrName());
  launch.scratch = *scheduled(kernel, FPDialect::getScratchSizeAttrName());

  std::string where = locationComment(kernel.getLoc());
  w.line("// fp.kernel{0}{1}: {2} ops{3}", where.empty() ? "" : " at ", where,
         computing.size(), launch.sequential ? ", in time order" : "");
  w.text("template <typename Real>");
  auto type = w.blockWithTrailer(";", "struct {0}", name);
  w.text("using Scalar = fp::Compute<Real>;");
  if (registerFields.empty()) {
    w.text("struct Registers {};");
  } else {
    w.text("// Scan state a CUDA thread keeps across the sample's tokens.");
    auto registers = w.blockWithTrailer(";", "struct Registers");
    w.text("#ifdef __CUDA_ARCH__");
    for (const std::string &field : registerFields)
      w.text(field);
    w.text("#endif");
  }
  w.line("static constexpr int64_t kRegisterState = {0};",
         *scheduled(kernel, FPDialect::getRegisterStateAttrName()));
  for (auto [i, arg] : llvm::enumerate(body->getArguments()))
    w.line("const Real *in{0};", i);
  for (size_t j = 0; j < yield.getValues().size(); ++j)
    w.line("Real *out{0};", j);
  if (launch.shifted)
    w.text("int64_t length; // tokens per sample, for the shifted reads");
  w.blank();
  {
    w.text("template <typename Team>");
    auto call = w.block(
        "FP_HOST_DEVICE void operator()(Team &team, int64_t row, int64_t step, "
        "Scalar *scratch, Scalar *state, Registers &registers) const");
    for (const auto &[value, line] : inputLines) {
      unsigned arg = cast<BlockArgument>(value).getArgNumber();
      auto *in = llvm::find_if(
          staged, [&](const auto &input) { return input.first == arg; });
      if (in == staged.end())
        w.text(line);
      else
        w.line("const Real *const x{0} = stageBuffer(scratch, step) + {1};",
               arg, in->second);
    }
    for (ShiftOp shift : stagedShifts)
      w.line("const Real *const {0} = stageBuffer(scratch, step) + {1};",
             ptr(shift.getResult()),
             *scheduled(shift, FPDialect::getStagedAttrName()));
    for (const std::string &line : outputLines)
      w.text(line);
    for (const std::string &declaration : scratchDeclarations)
      w.text(declaration);
    emitUnusedParameters();
    if (failed(emitBody([&](Operation *op) { return emitOp(op); })))
      return failure();
    // Results not computed in place: a reshaped or repeated value.
    for (auto [j, value] : llvm::enumerate(yield.getValues())) {
      std::string target = "y" + std::to_string(j);
      if (ptr(value) == target)
        continue;
      w.line("fp::fused::copy(team, {0}, {1}, {2});",
             TokenShape(value.getType()).elements(), ptr(value), target);
    }
  }
  if (failed(emitChunkMembers()))
    return failure();
  emitStageMembers();
  w.blank();
  w.text("// Scratch per token in elements of Scalar, the launch's.");
  w.line("static constexpr int64_t kScratch = {0};", launch.scratch);
  return launch;
}

/// kStage, and for a kernel with staged inputs its stage buffers (two,
/// after the scratch of the call and of the summary pass) and its stage(),
/// which copies a token's rows into one.
void KernelEmitter::emitStageMembers() {
  w.blank();
  w.text("// Staged inputs (Fused.h): elements of Real per stage buffer.");
  w.line("static constexpr int64_t kStage = {0};",
         *scheduled(kernel, FPDialect::getStageSizeAttrName()));
  std::optional<int64_t> offset =
      scheduled(kernel, FPDialect::getStageOffsetAttrName());
  if (!offset)
    return;
  w.line("static constexpr int64_t kStageOffset = {0};", *offset);
  {
    auto buffer = w.block("FP_HOST_DEVICE static Real *stageBuffer(Scalar "
                          "*scratch, int64_t step)");
    w.text("return reinterpret_cast<Real *>(scratch + kStageOffset) + "
           "(step & 1) * kStage;");
  }
  w.text("// Copies token `row`'s rows of the staged inputs to `to`.");
  w.text("template <typename Team>");
  auto stage = w.block("FP_HOST_DEVICE void stage(Team &team, int64_t row, "
                       "int64_t step, Real *to) const");
  if (stagedShifts.empty())
    w.text("(void)step;");
  for (ShiftOp shift : stagedShifts)
    w.line("fp::fused::stageShifted(team, in{0}, row, step, length, {1}, {2}, "
           "to + {3});",
           cast<BlockArgument>(shift.getInput()).getArgNumber(),
           static_cast<int64_t>(shift.getOffset()),
           TokenShape(shift.getType()).elements(),
           *scheduled(shift, FPDialect::getStagedAttrName()));
  Block *body = kernel.getBodyBlock();
  for (auto [arg, at] : staged) {
    TokenShape shape(body->getArgument(arg).getType());
    int64_t stride = inputRowStride(arg);
    w.line("fp::fused::stageRow(team, in{0} + row * {1}, {2}, to + {3});", arg,
           stride, shape.elements(), at);
  }
}

/// Prints `op` as one call of Fused.h: elementwise arithmetic as a unary
/// or binary element loop, any other op by the printer of its kind.
LogicalResult KernelEmitter::emitOp(Operation *op) {
  if (StringRef functor = elementwiseFunctor(op); !functor.empty()) {
    SmallVector<std::string> operands;
    for (Value operand : op->getOperands())
      operands.push_back(ptr(operand));
    w.line("fp::fused::{0}(team, kernels::{1}(), {2}, {3}, {4});",
           operands.size() == 1 ? "unary" : "binary", functor,
           TokenShape(op->getResult(0).getType()).elements(),
           llvm::join(operands, ", "), ptr(op->getResult(0)));
    return success();
  }
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<tensor::SplatOp, arith::ConstantOp, L2NormOp, LayerNormOp,
            RMSNormOp, ShiftOp, SliceOp, ConcatOp, BroadcastOp, ReduceSumOp,
            ReduceMaxOp, MatmulOp, TriuOp, SelectiveScanOp, ScanOp>(
          [&](auto kind) { return print(kind); })
      .Default([&](Operation *other) {
        return other->emitOpError("cannot emit this operation in a kernel");
      });
}

/// A constant built per token (fp-fuse-mix-scan builds the splats a kernel
/// reads in its body): filled into its slot.
LogicalResult KernelEmitter::printFill(Operation *op,
                                       std::optional<double> value) {
  if (!value)
    return op->emitOpError("cannot emit in a kernel: only splats of a "
                           "constant are built per token");
  w.line("fp::fused::fill(team, {0}, {1}, {2});",
         TokenShape(op->getResult(0).getType()).elements(), realLiteral(*value),
         ptr(op->getResult(0)));
  return success();
}

LogicalResult KernelEmitter::print(tensor::SplatOp splat) {
  auto constant = splat.getInput().getDefiningOp<arith::ConstantOp>();
  return printFill(splat, constant ? splatLiteral(constant) : std::nullopt);
}

LogicalResult KernelEmitter::print(arith::ConstantOp constant) {
  return printFill(constant, splatLiteral(constant));
}

static std::string epsLiteral(APFloat value) {
  return realLiteral(value.convertToDouble());
}

LogicalResult KernelEmitter::print(L2NormOp norm) {
  TokenShape s(norm.getType());
  w.line("fp::fused::l2norm(team, {0}, {1}, {2}, {3}, {4});",
         ptr(norm.getInput()), s.rows(), s.width(), epsLiteral(norm.getEps()),
         ptr(norm));
  return success();
}

LogicalResult KernelEmitter::print(LayerNormOp norm) {
  TokenShape s(norm.getType());
  w.line("fp::fused::layerNorm(team, {0}, {1}, {2}, {3}, {4}, {5}, {6});",
         ptr(norm.getInput()), ptr(norm.getWeight()), ptr(norm.getBias()),
         s.rows(), s.width(), epsLiteral(norm.getEps()), ptr(norm));
  return success();
}

LogicalResult KernelEmitter::print(RMSNormOp norm) {
  TokenShape s(norm.getType());
  w.line("fp::fused::rmsNorm(team, {0}, {1}, {2}, {3}, {4}, {5});",
         ptr(norm.getInput()), ptr(norm.getWeight()), s.rows(), s.width(),
         epsLiteral(norm.getEps()), ptr(norm));
  return success();
}

/// A shift of an input the schedule did not stage: its row `offset` tokens
/// earlier copied into its slot.
LogicalResult KernelEmitter::print(ShiftOp shift) {
  auto input = cast<BlockArgument>(shift.getInput());
  w.line("fp::fused::shifted(team, in{0}, row, step, length, {1}, {2}, {3});",
         input.getArgNumber(), static_cast<int64_t>(shift.getOffset()),
         TokenShape(shift.getType()).elements(), ptr(shift));
  return success();
}

/// A slice that is not a view: a copy of its columns.
LogicalResult KernelEmitter::print(SliceOp slice) {
  TokenShape in(slice.getInput().getType());
  w.line("fp::fused::slice(team, {0}, {1}, {2}, {3}, {4}, {5});",
         ptr(slice.getInput()), in.rows(), in.width(), slice.getStart(),
         slice.getEnd() - slice.getStart(), ptr(slice));
  return success();
}

LogicalResult KernelEmitter::print(ConcatOp concat) {
  int64_t offset = 0, width = TokenShape(concat.getType()).width();
  for (Value input : concat.getInputs()) {
    TokenShape in(input.getType());
    w.line("fp::fused::insert(team, {0}, {1}, {2}, {3}, {4}, {5});", ptr(input),
           in.rows(), in.width(), offset, width, ptr(concat));
    offset += in.width();
  }
  return success();
}

LogicalResult KernelEmitter::print(BroadcastOp broadcast) {
  TokenShape in(broadcast.getInput().getType()), out(broadcast.getType());
  if (in.rank() == 0) {
    w.line("fp::fused::fill(team, {0}, {1}[0], {2});", out.elements(),
           ptr(broadcast.getInput()), ptr(broadcast));
    return success();
  }
  ArrayRef<int64_t> dims = broadcast.getDims();
  if (in.perToken)
    dims = dims.drop_front(2);
  SmallVector<int64_t> tokenDims;
  for (int64_t d : dims)
    tokenDims.push_back(d - 2);
  int64_t id = nextArray++;
  w.line("const int64_t extents{0}[] = {{{1}};", id, joinInts(out.dims));
  w.line("const int dims{0}[] = {{{1}};", id, joinInts(tokenDims));
  w.line("fp::fused::broadcast(team, {0}, {1}, extents{2}, dims{2}, {3}, "
         "{4});",
         ptr(broadcast.getInput()), out.rank(), id, in.rank(), ptr(broadcast));
  return success();
}

/// A sum or maximum over some of a token's dimensions: a row sum where it
/// sums the last one alone, a general reduction otherwise.
LogicalResult KernelEmitter::printReduction(Operation *reduce,
                                            ArrayRef<int64_t> dims, bool sum) {
  Value input = reduce->getOperand(0);
  TokenShape in(input.getType());
  if (sum && dims.size() == 1 && dims[0] == in.rank() + 1) {
    w.line("fp::fused::sumRows(team, {0}, {1}, {2}, {3});", ptr(input),
           in.rows(), in.width(), ptr(reduce->getResult(0)));
    return success();
  }
  SmallVector<std::string> flags;
  for (int64_t d = 0; d < in.rank(); ++d)
    flags.push_back(llvm::is_contained(dims, d + 2) ? "true" : "false");
  int64_t id = nextArray++;
  w.line("const int64_t extents{0}[] = {{{1}};", id, joinInts(in.dims));
  w.line("const bool reduced{0}[] = {{{1}};", id, llvm::join(flags, ", "));
  w.line("fp::fused::reduce(team, {0}, {1}, extents{2}, reduced{2}, {3}, "
         "{4});",
         ptr(input), in.rank(), id, sum ? "true" : "false",
         ptr(reduce->getResult(0)));
  return success();
}

LogicalResult KernelEmitter::print(ReduceSumOp reduce) {
  return printReduction(reduce, reduce.getDims(), /*sum=*/true);
}

LogicalResult KernelEmitter::print(ReduceMaxOp reduce) {
  return printReduction(reduce, reduce.getDims(), /*sum=*/false);
}

/// A batch of matrix products per token, with the temporary the schedule
/// gave it for staging a transposed right operand.
LogicalResult KernelEmitter::print(MatmulOp matmul) {
  TokenShape lhs(matmul.getLhs().getType()), rhs(matmul.getRhs().getType());
  if (lhs.rank() < 2)
    return matmul.emitOpError("cannot emit in a kernel: a per-token "
                              "matrix product needs matrices");
  int64_t l0 = lhs.dims[lhs.rank() - 2], l1 = lhs.dims.back();
  int64_t r0 = rhs.dims[rhs.rank() - 2], r1 = rhs.dims.back();
  bool tl = matmul.getTransposeLhs(), tr = matmul.getTransposeRhs();
  int64_t m = tl ? l1 : l0, k = tl ? l0 : l1, n = tr ? r0 : r1;
  int64_t batch = lhs.elements() / (l0 * l1);
  std::string staging;
  if (auto it = temporaries.find(matmul); it != temporaries.end())
    staging = llvm::formatv(", {0}, {1}", it->second.first, it->second.second);
  w.line("fp::fused::matmul(team, {0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, "
         "{8}{9});",
         ptr(matmul.getLhs()), ptr(matmul.getRhs()), batch, m, n, k,
         tl ? "true" : "false", tr ? "true" : "false", ptr(matmul), staging);
  return success();
}

LogicalResult KernelEmitter::print(TriuOp triu) {
  TokenShape in(triu.getInput().getType());
  w.line("fp::fused::triu(team, {0}, {1}, {2}, {3});", ptr(triu.getInput()),
         in.rows(), TokenShape(triu.getType()).width(), ptr(triu));
  return success();
}

/// A selective scan's step: on CUDA from its registers where the schedule
/// keeps its state there, from `state` otherwise.
LogicalResult KernelEmitter::print(SelectiveScanOp scan) {
  TokenShape a(scan.getA().getType());
  StringRef transposed = scanTemplateArguments(scan);
  std::string operands = llvm::formatv(
      "{0}, {1}, {2}, {3}, {4}, {5}", ptr(scan.getU()), ptr(scan.getDelta()),
      ptr(scan.getA()), ptr(scan.getB()), ptr(scan.getC()),
      scan.getD() ? ptr(scan.getD()) : "nullptr");
  auto it = registerMembers.find(scan);
  if (it != registerMembers.end()) {
    w.text("#ifdef __CUDA_ARCH__");
    w.line("fp::fused::selectiveScanStep{0}(team, step == 0, registers.{1}, "
           "{2}, {3});",
           transposed, it->second, operands, ptr(scan));
    w.text("#else");
  }
  w.line("fp::fused::selectiveScanStep{0}(team, step == 0, state + {1}, {2}, "
         "{3}, {4}, {5});",
         transposed, stateOffsetOf(scan), operands, a.dims[0], a.dims[1],
         ptr(scan));
  if (it != registerMembers.end())
    w.text("#endif");
  return success();
}

LogicalResult KernelEmitter::print(ScanOp scan) {
  if (scan.getReverse())
    return scan.emitOpError("cannot emit a reverse scan in a kernel");
  w.line("fp::fused::scanStep(team, state + {0}, {1}, {2}, {3}, {4});",
         stateOffsetOf(scan), ptr(scan.getCoeff()), ptr(scan.getInput()),
         TokenShape(scan.getType()).elements(), ptr(scan));
  return success();
}

/// Emits `chain` as one loop over its elements: each op's element i in a
/// register of its own, stored where something after the chain reads it,
/// with the arithmetic and the roundings of the ops one by one (a value in
/// a result is rounded to the element type before the chain reads it on).
/// A row sum at its end (Chain::sum) is accumulated element by element as
/// fp::fused::rowSum does and reduced over the team into a uniform scalar.
LogicalResult KernelEmitter::emitChain(const Chain &chain) {
  SmallVector<Operation *> described(chain.ops);
  if (chain.sum)
    described.push_back(chain.sum);
  for (Operation *op : described) {
    std::string at = locationComment(op->getLoc());
    w.line("// {0}{1}{2}", op->getName().getStringRef(),
           at.empty() ? "" : " at ", at);
  }
  llvm::DenseMap<Value, std::string> registers;
  auto element = [&](Value value) -> std::string {
    // A view's element i is its source's, except a slice's from an offset.
    auto slice = value.getDefiningOp<SliceOp>();
    auto it = registers.find(root(value));
    if (it != registers.end() && (!slice || slice.getStart() == 0))
      return it->second;
    if (auto uniform = uniformNames.find(root(value));
        uniform != uniformNames.end())
      return uniform->second;
    // A kernel input no launch writes while it runs (a staged row is in
    // the scratch instead): fp::fused::input's read-only load.
    if (auto arg = dyn_cast<BlockArgument>(root(value));
        arg && llvm::none_of(staged, [&](const auto &input) {
          return input.first == arg.getArgNumber();
        }))
      return llvm::formatv("Scalar(fp::fused::input({0}, i))", ptr(value))
          .str();
    return llvm::formatv("Scalar({0}[i])", ptr(value)).str();
  };
  std::string partial;
  if (chain.sum) {
    partial = "p" + std::to_string(nextValue++);
    w.line("fp::fused::Wide<Scalar> {0} = 0;", partial);
  }
  std::optional<CodeWriter::Block> loop;
  w.line("fp::fused::{0}(team, {1}, [&](int64_t i) {{",
         chain.sum ? "forEachElementInOrder" : "forEachElement",
         chain.elements);
  loop.emplace(w, ");");
  for (Operation *op : chain.ops) {
    std::string expression = elementExpression(op, element);
    Value result = op->getResult(0);
    std::string name = "e" + std::to_string(nextValue++);
    if (!pointers.count(result)) {
      w.line("const Scalar {0} = {1};", name, expression);
    } else if (inResults.contains(result)) {
      w.line("const Scalar {0} = Scalar(Real({1}));", name, expression);
      w.line("{0}[i] = Real({1});", ptr(result), name);
    } else {
      w.line("const Scalar {0} = {1};", name, expression);
      w.line("{0}[i] = {1};", ptr(result), name);
    }
    registers[result] = name;
  }
  if (!chain.sum)
    return success();
  w.line("{0} += fp::fused::Wide<Scalar>({1});", partial,
         element(chain.sum->getOperand(0)));
  loop.reset();
  std::string name = "u" + std::to_string(nextValue++);
  w.line("const Scalar {0} = Scalar(team.sum({1}));", name, partial);
  uniformNames[chain.sum->getResult(0)] = name;
  return success();
}

/// The expression of one element of a chain member `op` (chainElements),
/// given its operands' elements.
std::string KernelEmitter::elementExpression(
    Operation *op, llvm::function_ref<std::string(Value)> operand) {
  if (StringRef functor = elementwiseFunctor(op); !functor.empty()) {
    SmallVector<std::string> operands;
    for (Value value : op->getOperands())
      operands.push_back(operand(value));
    return llvm::formatv("kernels::{0}()({1})", functor,
                         llvm::join(operands, ", "));
  }
  if (auto broadcast = dyn_cast<BroadcastOp>(op))
    return scalarOf(broadcast.getInput());
  auto constant = isa<tensor::SplatOp>(op)
                      ? op->getOperand(0).getDefiningOp<arith::ConstantOp>()
                      : cast<arith::ConstantOp>(op);
  return realLiteral(*splatLiteral(constant));
}

/// The one element of a value of one element: a uniform scalar's register,
/// or element 0 of its storage.
std::string KernelEmitter::scalarOf(Value value) const {
  if (auto it = uniformNames.find(root(value)); it != uniformNames.end())
    return it->second;
  return llvm::formatv("Scalar({0}[0])", ptr(value)).str();
}

/// The kernel's parameters a body may leave unread.
void KernelEmitter::emitUnusedParameters() {
  for (StringRef name : {"row", "step", "scratch", "state", "registers"})
    w.line("(void){0};", name);
}

/// Prints the pass's ops in order as a token's work: views and ops that
/// compute no tensor print nothing, a staged shift a comment, a uniform
/// scalar a statement and a chain (at its first op) one loop; any other op
/// is printed by `emit`, after a comment that names it. A barrier of the
/// pass is the team's synchronisation.
LogicalResult
KernelEmitter::emitBody(llvm::function_ref<LogicalResult(Operation *)> emit) {
  for (Operation *op : ops) {
    if (auto barrier = dyn_cast<BarrierOp>(op)) {
      if (pass == Pass::Call ? barrier.getCall() : barrier.getSummary())
        w.text("team.sync();");
      continue;
    }
    if (pass == Pass::Summary && !inSummary(op))
      continue;
    if (isView(op) || computesNoTensor(op))
      continue;
    if (pass == Pass::Call && op->hasAttr(FPDialect::getStagedAttrName())) {
      std::string at = locationComment(op->getLoc());
      w.line("// {0}{1}{2}: staged ({3})", op->getName().getStringRef(),
             at.empty() ? "" : " at ", at, ptr(op->getResult(0)));
      continue;
    }
    auto chain = chainOf.find(op);
    if (op->hasAttr(FPDialect::getUniformAttrName()) &&
        chain == chainOf.end()) {
      emitUniform(op);
      continue;
    }
    if (chain != chainOf.end()) {
      if (op == chains[chain->second].ops.front() &&
          failed(emitChain(chains[chain->second])))
        return failure();
      continue;
    }
    std::string at = locationComment(op->getLoc());
    w.line("// {0}{1}{2}", op->getName().getStringRef(),
           at.empty() ? "" : " at ", at);
    if (failed(emit(op)))
      return failure();
  }
  return success();
}

/// Emits the uniform scalar `op` as a statement every thread runs.
void KernelEmitter::emitUniform(Operation *op) {
  std::string at = locationComment(op->getLoc());
  w.line("// {0}{1}{2}", op->getName().getStringRef(), at.empty() ? "" : " at ",
         at);
  std::string expression;
  if (auto reduce = dyn_cast<ReduceSumOp>(op))
    expression = llvm::formatv(
        "fp::fused::rowSum<Scalar>(team, {0}, {1})", ptr(reduce.getInput()),
        TokenShape(reduce.getInput().getType()).elements());
  else
    expression =
        elementExpression(op, [&](Value operand) { return scalarOf(operand); });
  std::string name = "u" + std::to_string(nextValue++);
  w.line("const Scalar {0} = {1};", name, expression);
  uniformNames[op->getResult(0)] = name;
}

/// kChunkable and kCarry, and for a chunkable kernel its summarize,
/// saveCarry and loadCarry.
LogicalResult KernelEmitter::emitChunkMembers() {
  std::optional<int64_t> carry =
      scheduled(kernel, FPDialect::getCarrySizeAttrName());
  if (!carry) {
    w.text("static constexpr bool kChunkable = false;");
    w.text("static constexpr int64_t kCarry = 0;");
    return success();
  }
  SmallVector<Operation *> slice, scans;
  for (Operation *op : ops)
    if (inSummary(op)) {
      slice.push_back(op);
      if (isa<SelectiveScanOp, ScanOp>(op))
        scans.push_back(op);
    }
  w.blank();
  w.text("// Chunked execution (Fused.h): the scans' carry per chunk.");
  w.text("static constexpr bool kChunkable = true;");
  w.line("static constexpr int64_t kCarry = {0};", *carry);

  // The pointer expression of a selective scan's A: a uniform input.
  auto inputOf = [&](Value value) {
    return "in" + std::to_string(cast<BlockArgument>(value).getArgNumber());
  };
  auto carryOffsetOf = [](Operation *op) {
    return *scheduled(op, FPDialect::getCarryOffsetAttrName());
  };
  // Emits `device` for a scan whose state is in registers on CUDA, and
  // `host` (its state in memory) for the host, or alone otherwise.
  auto perTarget = [&](Operation *scan, const std::string &device,
                       const std::string &host) {
    if (!registerMembers.count(scan)) {
      w.text(host);
      return;
    }
    w.text("#ifdef __CUDA_ARCH__");
    w.text(device);
    w.text("#else");
    w.text(host);
    w.text("#endif");
  };

  // summarize: the slice, each scan as its summary step, with the summary
  // pass's scratch slots: values the call computes into its results live in
  // scratch here. (The scans' results keep their pointers.)
  pass = Pass::Summary;
  auto fullPointers = pointers;
  SmallVector<Operation *> computed;
  for (Operation *op : slice) {
    if (isa<SelectiveScanOp, ScanOp>(op))
      continue;
    computed.push_back(op);
    for (Value result : op->getResults())
      if (root(result) == result)
        pointers.erase(result);
  }
  SmallVector<std::string> summaryDeclarations;
  uniformNames.clear();
  readChains(slice);
  declareScratch(slice, summaryDeclarations);
  for (Operation *op : computed)
    if (isView(op))
      aliasInput(op);
  llvm::DenseSet<Value> used;
  for (Operation *op : slice) {
    if (computesNoTensor(op))
      continue;
    if (auto scan = dyn_cast<SelectiveScanOp>(op)) {
      for (Value operand :
           {scan.getU(), scan.getDelta(), scan.getA(), scan.getB()})
        used.insert(root(operand));
      continue;
    }
    for (Value operand : op->getOperands())
      used.insert(root(operand));
    for (Value result : op->getResults())
      used.insert(root(result));
  }
  w.blank();
  w.text("// Computes what the scans read for token `row` and steps them "
         "without results.");
  w.text("template <typename Team>");
  {
    auto block = w.block("FP_HOST_DEVICE void summarize(Team &team, int64_t "
                         "row, int64_t step, bool first, Scalar *scratch, "
                         "Scalar *state, Registers &registers) const");
    // The summary pass reads no stage buffer.
    for (const auto &[value, line] : inputLines)
      if (used.contains(value))
        w.text(line);
    for (const std::string &declaration : summaryDeclarations)
      w.text(declaration);
    emitUnusedParameters();
    // The scans take their summary steps; the other ops are printed as in
    // the call.
    auto emitSummaryOp = [&](Operation *op) -> LogicalResult {
      if (auto scan = dyn_cast<SelectiveScanOp>(op)) {
        TokenShape a(scan.getA().getType());
        std::string operands = llvm::formatv(
            "{0}, {1}, {2}, {3}", ptr(scan.getU()), ptr(scan.getDelta()),
            ptr(scan.getA()), ptr(scan.getB()));
        StringRef transposed = scanTemplateArguments(scan);
        perTarget(op,
                  llvm::formatv("fp::fused::selectiveScanSummaryStep{0}(team, "
                                "first, registers.{1}, {2});",
                                transposed, registerMembers.lookup(op),
                                operands),
                  llvm::formatv("fp::fused::selectiveScanSummaryStep{0}(team, "
                                "first, state + {1}, {2}, {3}, {4});",
                                transposed, stateOffsetOf(op), operands,
                                a.dims[0], a.dims[1]));
      } else if (auto scan = dyn_cast<ScanOp>(op)) {
        w.line("fp::fused::scanSummaryStep(team, first, state + {0}, {1}, "
               "{2}, {3});",
               stateOffsetOf(op), ptr(scan.getCoeff()), ptr(scan.getInput()),
               TokenShape(scan.getType()).elements());
      } else {
        return emitOp(op);
      }
      return success();
    };
    if (failed(emitBody(emitSummaryOp)))
      return failure();
    // The next token's step, or saveCarry, follows without a barrier.
    w.text("team.sync();");
  }
  pointers = std::move(fullPointers);
  pass = Pass::Call;

  w.blank();
  w.text("// Stores the scans' carry at the end of a chunk.");
  w.text("template <typename Team>");
  {
    auto block = w.block("FP_HOST_DEVICE void saveCarry(Team &team, const "
                         "Scalar *state, const Registers &registers, Scalar "
                         "*carry) const");
    w.text("(void)state;");
    w.text("(void)registers;");
    for (Operation *op : scans) {
      int64_t offset = carryOffsetOf(op);
      if (auto scan = dyn_cast<SelectiveScanOp>(op)) {
        TokenShape a(scan.getA().getType());
        perTarget(op,
                  llvm::formatv("fp::fused::saveSelectiveScanCarry(team, "
                                "registers.{0}, carry + {1});",
                                registerMembers.lookup(op), offset),
                  llvm::formatv("fp::fused::saveSelectiveScanCarry(team, "
                                "state + {0}, {1}, {2}, carry + {3});",
                                stateOffsetOf(op), a.dims[0], a.dims[1],
                                offset));
      } else {
        w.line("fp::fused::saveScanCarry(team, state + {0}, {1}, carry + "
               "{2});",
               stateOffsetOf(op),
               TokenShape(op->getResult(0).getType()).elements(), offset);
      }
    }
  }

  w.blank();
  w.text("// Starts the scans from the carries of the `count` chunks before "
         "this one.");
  w.text("template <typename Team>");
  {
    auto block = w.block("FP_HOST_DEVICE void loadCarry(Team &team, Scalar "
                         "*state, Registers &registers, const Scalar "
                         "*carries, int64_t count) const");
    w.text("(void)state;");
    w.text("(void)registers;");
    for (Operation *op : scans) {
      int64_t offset = carryOffsetOf(op);
      if (auto scan = dyn_cast<SelectiveScanOp>(op)) {
        TokenShape a(scan.getA().getType());
        StringRef transposed = scanTemplateArguments(scan);
        std::string matrix = inputOf(root(scan.getA()));
        perTarget(op,
                  llvm::formatv("fp::fused::loadSelectiveScanCarry{0}(team, "
                                "registers.{1}, state + {2}, {3}, carries + "
                                "{4}, kCarry, count);",
                                transposed, registerMembers.lookup(op),
                                stateOffsetOf(op), matrix, offset),
                  llvm::formatv("fp::fused::loadSelectiveScanCarry{0}(team, "
                                "state + {1}, {2}, {3}, {4}, carries + {5}, "
                                "kCarry, count);",
                                transposed, stateOffsetOf(op), matrix,
                                a.dims[0], a.dims[1], offset));
      } else {
        w.line("fp::fused::loadScanCarry(team, state + {0}, {1}, carries + "
               "{2}, kCarry, count);",
               stateOffsetOf(op),
               TokenShape(op->getResult(0).getType()).elements(), offset);
      }
    }
  }
  return success();
}

FailureOr<KernelLaunch> mlir::fp::codegen::emitKernelFunctor(CodeWriter &w,
                                                             KernelOp kernel,
                                                             StringRef name) {
  return KernelEmitter(w, kernel).emit(name);
}
