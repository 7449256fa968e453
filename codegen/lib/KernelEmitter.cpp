//===- KernelEmitter.cpp - Function objects for fp.kernel ops ---*- C++ -*-===//
//
// An fp.kernel becomes
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
// zeros) into a slot of its own, a splat constant is filled into a slot of
// its own (its extents and scalar emit nothing), intermediate values get slots
// in `scratch` (reused once a value is dead) and scans their state in
// `state`. On CUDA, a selective scan whose state fits (kMaxScanRegisters
// values per thread) keeps it in `registers` instead, across the sample's
// tokens: its slots come last in `state`, and kRegisterState says how many
// elements the device launcher leaves out. Inputs and results hold the
// call's element type `Real`; scratch, state and literals the arithmetic
// type `Scalar` (float for bf16). Every op is one call of a Fused.h
// function, preceded by a team synchronisation where it may touch what
// another thread touched since the last one ("Barriers" below), except
// views, which take their input's storage: a reshape, and the transpose of
// an input holding Aᵀ that selective scans read as it lies
// (fp-transpose-scan-a; Fused.h's `ATransposed`), and chains: consecutive
// ops of one element count that compute element i from element i of their
// operands, or from values computed before them, run as one loop over
// elements (fp::fused::forEachElement) in which each thread computes the
// elements it owns in every such loop, so that no barrier separates them;
// their values live in registers unless something after the chain reads
// them, and the chain's inputs keep their slots until it ends, so that it
// never overwrites what another thread still reads.
//
// A kernel whose scans can run a sample's tokens in chunks (Fused.h,
// "Chunked execution") is kChunkable: no scan reads another scan's result,
// every selective scan's A is (a view of) a uniform input, and nothing a
// scan reads is written to a result. Its `summarize` runs the ops the scans
// read and the scans' summary steps (no result is written), `saveCarry`
// stores the scans' carries (kCarry elements per chunk) and `loadCarry`
// starts them from the carries of the chunks before.
//
//===----------------------------------------------------------------------===//

#include "fp/Codegen/KernelEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"

#include <cassert>
#include <cmath>
#include <functional>
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

std::optional<double> mlir::fp::codegen::splatLiteral(arith::ConstantOp op) {
  std::optional<double> value;
  if (auto scalar = dyn_cast<FloatAttr>(op.getValue()))
    value = scalar.getValueAsDouble();
  else if (auto dense = dyn_cast<DenseFPElementsAttr>(op.getValue());
           dense && dense.isSplat())
    value = dense.getSplatValue<APFloat>().convertToDouble();
  if (!value)
    return std::nullopt;
  if (auto literal =
          op->getAttrOfType<FloatAttr>(FPDialect::getLiteralAttrName()))
    return literal.getValueAsDouble();
  return value;
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

namespace {

/// Threads of the block that computes a fused kernel's token on CUDA
/// (fp::cuda::kTeamSize), and the most selective-scan state values one of
/// them keeps in registers: 4 channels of 16 states at 1024 channels, 6 at
/// 1536. A larger state stays in memory.
constexpr int64_t kDeviceTeamSize = 256;
constexpr int64_t kMaxScanRegisters = 128;

/// The part of a tensor type one token sees: the dimensions after batch and
/// time for per-token values, all of them for uniform ones.
struct TokenShape {
  SmallVector<int64_t> dims;
  bool perToken = false;

  explicit TokenShape(Type type) {
    auto tensor = cast<RankedTensorType>(type);
    ArrayRef<int64_t> shape = tensor.getShape();
    perToken = tensor.getRank() >= 2 && tensor.isDynamicDim(0) &&
               tensor.isDynamicDim(1);
    dims.assign(perToken ? shape.drop_front(2) : shape);
  }
  int64_t rank() const { return dims.size(); }
  int64_t elements() const {
    int64_t n = 1;
    for (int64_t d : dims)
      n *= d;
    return n;
  }
  int64_t width() const { return dims.empty() ? 1 : dims.back(); }
  int64_t rows() const { return elements() / std::max<int64_t>(width(), 1); }
};

/// Whether a selective scan's state lives in registers on CUDA.
bool scanStateInRegisters(SelectiveScanOp scan) {
  TokenShape a(scan.getA().getType());
  int64_t channels = a.dims[0], stateSize = a.dims[1];
  int64_t perThread = (channels + kDeviceTeamSize - 1) / kDeviceTeamSize;
  return perThread * stateSize <= kMaxScanRegisters;
}

/// Whether `scan` reads its state matrix transposed: its A is the
/// fp.transpose of a kernel input holding Aᵀ (fp-transpose-scan-a), which
/// the scan reads as it lies.
bool readsTransposedMatrix(SelectiveScanOp scan) {
  auto transpose = scan.getA().getDefiningOp<TransposeOp>();
  return transpose && isa<BlockArgument>(transpose.getInput()) &&
         llvm::all_of(transpose->getUses(), [](OpOperand &use) {
           auto reader = dyn_cast<SelectiveScanOp>(use.getOwner());
           return reader && use.get() == reader.getA();
         });
}

/// The template arguments of Fused.h's selective-scan functions for `scan`:
/// whether its A is given transposed.
StringRef scanTemplateArguments(SelectiveScanOp scan) {
  return readsTransposedMatrix(scan) ? "<true>" : "";
}

bool isView(Operation *op);

/// Whether `slice` is a view of its input: a range of columns of a single
/// row, which lie consecutively in the row's storage, where that row is
/// computed in the body (scratch, or a result). A slice of a kernel input
/// is copied, so that a chain (emitChain) reads every input at its own
/// element.
bool isSliceView(SliceOp slice) {
  if (TokenShape(slice.getInput().getType()).rows() != 1)
    return false;
  Value source = slice.getInput();
  while (Operation *def = source.getDefiningOp()) {
    if (!isView(def))
      return true;
    source = def->getOperand(0);
  }
  return false;
}

/// Whether `op` is a view of its input, with its input's storage: a
/// reshape, a slice of one row (isSliceView), or the transpose of Aᵀ that
/// selective scans read as it lies.
bool isView(Operation *op) {
  if (isa<ReshapeOp>(op))
    return true;
  if (auto slice = dyn_cast<SliceOp>(op))
    return isSliceView(slice);
  auto transpose = dyn_cast<TransposeOp>(op);
  return transpose && !transpose->use_empty() &&
         llvm::all_of(transpose->getUsers(), [](Operation *user) {
           auto scan = dyn_cast<SelectiveScanOp>(user);
           return scan && readsTransposedMatrix(scan);
         });
}

/// Whether `op` computes no tensor: the extents and scalars a body's splats
/// are built from (tensor.dim, arith.constant), which get no storage and
/// emit nothing of their own.
bool computesNoTensor(Operation *op) {
  return llvm::none_of(op->getResultTypes(),
                       [](Type type) { return isa<RankedTensorType>(type); });
}

/// Whether `op` sums a value of one row (fp.reduce_sum over its last
/// dimension) into one element: a candidate uniform scalar that every
/// thread gets from a reduction of the whole team (fp::fused::rowSum).
bool isRowSumToScalar(Operation *op) {
  auto reduce = dyn_cast<ReduceSumOp>(op);
  if (!reduce)
    return false;
  TokenShape in(reduce.getInput().getType());
  ArrayRef<int64_t> dims = reduce.getDims();
  return in.perToken && in.rank() >= 1 && in.rows() == 1 && dims.size() == 1 &&
         dims[0] == in.rank() + 1 &&
         TokenShape(reduce.getType()).elements() == 1;
}

std::string joinInts(ArrayRef<int64_t> values) {
  return llvm::join(
      llvm::map_range(values, [](int64_t v) { return std::to_string(v); }),
      ", ");
}

/// Members of a CUDA block's group (a warp), and the passes over a row's
/// elements up to which fp::fused::forEachRow gives the row to one group
/// (fp::fused::kShortRowPasses): a row op on a longer single row is
/// computed by the whole team, each member its own elements.
constexpr int64_t kDeviceGroupSize = 32;
constexpr int64_t kShortRowPasses = 4;

/// An access of the team to `[begin, end)` of one space of memory a body
/// writes (0: scratch, 1 + j: result j). An owned access touches element
/// begin + i by the member that owns i in every element loop (i = rank,
/// rank + size, ...); any other may touch any element by any member.
struct Access {
  int space;
  int64_t begin, end;
  bool write, owned;
};

/// What one emitted op does to memory: its accesses before the team-wide
/// reduction it makes, if it makes one (`barrier`: every member arrives
/// there, so it orders everything before it against everything after),
/// and those after it.
struct Effect {
  SmallVector<Access> before, after;
  bool barrier = false;
};

/// The accesses since the team's last barrier. An op needs a barrier
/// before it where one of its accesses and a pending one touch a common
/// element, one of them a write, unless both are owned from the same
/// first element (the same member then makes both, in program order).
class Hazards {
public:
  bool needsBarrier(const Effect &effect) const {
    return llvm::any_of(effect.before, [&](const Access &access) {
      return llvm::any_of(pending, [&](const Access &earlier) {
        return conflict(earlier, access);
      });
    });
  }
  void barrier() { pending.clear(); }
  void record(const Effect &effect) {
    if (effect.barrier)
      pending.assign(effect.after.begin(), effect.after.end());
    else
      pending.append(effect.before.begin(), effect.before.end());
  }
  bool empty() const { return pending.empty(); }

private:
  static bool conflict(const Access &a, const Access &b) {
    return a.space == b.space && a.begin < b.end && b.begin < a.end &&
           (a.write || b.write) && !(a.owned && b.owned && a.begin == b.begin);
  }
  SmallVector<Access> pending;
};

class KernelEmitter {
public:
  KernelEmitter(CodeWriter &w, KernelOp kernel, const KernelOptions &options)
      : w(w), kernel(kernel), options(options) {}

  FailureOr<KernelLaunch> emit(StringRef name);

private:
  CodeWriter &w;
  KernelOp kernel;
  KernelOptions options;
  KernelLaunch launch;
  /// The pointer expression of every body value.
  llvm::DenseMap<Value, std::string> pointers;
  /// Where each value the body stores lies: its space (Access) and first
  /// element. Inputs, stage buffers, registers and uniform scalars have
  /// no place: nothing in the body writes them.
  struct Place {
    int space;
    int64_t offset;
  };
  llvm::DenseMap<Value, Place> places;
  /// The accesses since the last barrier the body emitted.
  Hazards hazards;
  /// The value whose storage a value uses (itself unless a reshape).
  llvm::DenseMap<Value, Value> roots;
  /// Where each scan's state starts in `state`.
  llvm::DenseMap<Operation *, int64_t> stateOffsets;
  /// The member of `registers` of each selective scan whose state lives in
  /// registers on CUDA.
  llvm::DenseMap<Operation *, std::string> registerMembers;
  /// Where each scan's carry starts in a chunk's carry.
  llvm::DenseMap<Operation *, int64_t> carryOffsets;
  /// The declarations of the call's pointers: each input's at the token's
  /// row, each result's, and each intermediate value's scratch slot.
  SmallVector<std::pair<Value, std::string>> inputLines;
  /// The per-token inputs of a kernel run in time order that the call
  /// reads from a stage buffer in scratch (Fused.h, "Staged inputs"): each
  /// one's row stride and elements, and its offset in a buffer, in
  /// elements of Real; and a buffer's size.
  struct StagedInput {
    unsigned arg;
    int64_t stride, elements, offset = 0;
  };
  SmallVector<StagedInput> rowInputs, staged;
  /// The shifts of an input (fp.shift of a block argument) that the call
  /// reads from the stage buffer too: stage() copies row t − offset of the
  /// input, or zeros outside the sample, where the body would copy it.
  struct StagedShift {
    Operation *op;
    unsigned arg;
    int64_t shift, elements, offset;
  };
  SmallVector<StagedShift> stagedShifts;
  /// Whether emitOp emits the shifts in stagedShifts as copies (the
  /// summary pass, which stages nothing).
  bool shiftsUnstaged = false;
  int64_t stageElements = 0;
  SmallVector<std::string> outputLines;
  SmallVector<std::string> scratchDeclarations;
  /// Scratch that an op uses while it runs (a matrix product's staged
  /// operand): its pointer, and its size in elements.
  llvm::DenseMap<Operation *, std::pair<std::string, int64_t>> temporaries;
  /// Where each temporary starts in scratch.
  llvm::DenseMap<Operation *, int64_t> temporaryOffsets;
  /// The values computed into the call's results (pointers `y<j>`, of the
  /// element type Real rather than Scalar).
  llvm::DenseSet<Value> inResults;
  /// Runs of consecutive ops of one element count, each computing element i
  /// from element i of its operands or from values computed before the run,
  /// emitted as one loop over elements without barriers between them
  /// (emitChain); found for the op list being emitted (findChains).
  struct Chain {
    SmallVector<Operation *> ops;
    int64_t elements = 0;
    /// A uniform row sum of a value the chain computes
    /// (isUniformReduction), accumulated as the chain runs.
    Operation *sum = nullptr;
  };
  SmallVector<Chain> chains;
  llvm::DenseMap<Operation *, unsigned> chainOf;
  /// Scalars every thread computes for itself (findUniforms): ops of one
  /// element that only chains and other such ops read, emitted as a
  /// statement of each thread, in a register, with neither scratch nor a
  /// barrier; and the register each one's value is in where emitted.
  llvm::DenseSet<Operation *> uniforms;
  llvm::DenseMap<Value, std::string> uniformNames;
  /// Numbers the intermediate values and the shape arrays of the call.
  int64_t nextValue = 0, nextArray = 0;

  int64_t stateOffsetOf(Operation *op) const { return stateOffsets.lookup(op); }

  Value root(Value value) const { return roots.lookup(value); }
  const std::string &ptr(Value value) const {
    auto it = pointers.find(value);
    assert(it != pointers.end() && "a kernel value without storage");
    return it->second;
  }
  /// Gives a view (isView) its input's pointer, offset to a slice's first
  /// column. (The copy comes first: inserting into `pointers` may move the
  /// strings that ptr() refers to.)
  void aliasInput(Operation *view) {
    // A view of a uniform scalar has its register (uniformNames) instead.
    if (!pointers.count(view->getOperand(0)))
      return;
    std::string input = ptr(view->getOperand(0));
    int64_t start = 0;
    if (auto slice = dyn_cast<SliceOp>(view); slice && slice.getStart() != 0) {
      start = slice.getStart();
      input = llvm::formatv("({0} + {1})", input, start).str();
    }
    pointers[view->getResult(0)] = std::move(input);
    if (auto it = places.find(view->getOperand(0)); it != places.end()) {
      Place source = it->second;
      places[view->getResult(0)] = {source.space, source.offset + start};
    }
  }
  int64_t allocateScratch(ArrayRef<Operation *> ops, bool toTheEnd,
                          SmallVectorImpl<std::string> &declarations);
  LogicalResult emitOp(Operation *op);
  std::optional<int64_t> chainElements(Operation *op) const;
  bool readsAcrossElements(Operation *op, const Chain &chain) const;
  void findChains(ArrayRef<Operation *> ops);
  bool storedFromChain(Value value) const;
  void findUniforms(ArrayRef<Operation *> ops);
  std::string scalarOf(Value value) const;
  std::string elementExpression(Operation *op,
                                llvm::function_ref<std::string(Value)> operand);
  void emitUniform(Operation *op);
  LogicalResult emitChain(const Chain &chain);
  void access(Value value, bool write, bool owned,
              SmallVectorImpl<Access> &accesses, bool first = false) const;
  Effect chainEffect(const Chain &chain) const;
  Effect uniformEffect(Operation *op) const;
  Effect opEffect(Operation *op) const;
  void barrierFor(const Effect &effect);
  FailureOr<bool> emitIfChained(Operation *op);
  void emitUnusedParameters();
  LogicalResult emitBody(ArrayRef<Operation *> ops,
                         llvm::function_ref<LogicalResult(Operation *)> emit);
  bool summarySlice(ArrayRef<Operation *> ops,
                    SmallVectorImpl<Operation *> &slice) const;
  LogicalResult emitChunkMembers(ArrayRef<Operation *> ops);
  bool stagingAllowed(ArrayRef<Operation *> ops) const;
  void stageShifts(ArrayRef<Operation *> ops);
  void chooseStagedInputs(ArrayRef<Operation *> ops);
  void emitStageMembers();
  bool isStagedShift(Operation *op) const {
    return !shiftsUnstaged &&
           llvm::any_of(stagedShifts, [&](const StagedShift &shift) {
             return shift.op == op;
           });
  }
};

} // namespace

/// Elements of scratch a per-token matrix product may stage its transposed
/// right operand in (fp::fused::matmul): a 64 × 64 operand's padded copy.
static constexpr int64_t kMaxStagingElements = 64 * 65;

/// The scratch `op` uses while it runs: for a matrix product with a
/// transposed right operand, fp::fused::stagingSize's room for a padded
/// copy of it, k × (n rounded up to odd) per matrix, as many matrices as
/// fit in kMaxStagingElements.
static int64_t temporaryElements(Operation *op) {
  auto matmul = dyn_cast<MatmulOp>(op);
  if (!matmul || !matmul.getTransposeRhs())
    return 0;
  TokenShape lhs(matmul.getLhs().getType()), rhs(matmul.getRhs().getType());
  if (lhs.rank() < 2 || rhs.rank() < 2)
    return 0;
  int64_t n = rhs.dims[rhs.rank() - 2], k = rhs.dims.back();
  int64_t batch = lhs.elements() / (lhs.dims[lhs.rank() - 2] * lhs.dims.back());
  int64_t one = k * (n | 1);
  return std::min(batch, kMaxStagingElements / one) * one;
}

/// Assigns a scratch slot to every result of `ops` that is neither a reshape
/// nor has a pointer yet (a directly yielded value), and to every op's
/// temporary: a linear scan in body order, where a slot is reused by a later
/// value that fits once its value's last reader has run (a temporary's, once
/// its op has). With `toTheEnd`, yielded values live to the end. Returns the
/// scratch size.
int64_t
KernelEmitter::allocateScratch(ArrayRef<Operation *> ops, bool toTheEnd,
                               SmallVectorImpl<std::string> &declarations) {
  // A chain's ops all sit at its first op's position: the values it reads
  // live until it ends, and its results, stored by the same loop, never
  // share their slots.
  llvm::DenseMap<Operation *, int64_t> index;
  for (auto [i, op] : llvm::enumerate(ops))
    index[op] = i;
  for (const Chain &chain : chains) {
    for (Operation *op : chain.ops)
      index[op] = index[chain.ops.front()];
    if (chain.sum)
      index[chain.sum] = index[chain.ops.front()];
  }
  // A uniform scalar sits at the next op that is followed by a barrier:
  // the threads may still be computing it while that op runs (no barrier
  // between them), so what it reads lives until that op ends.
  int64_t nextPhase = static_cast<int64_t>(ops.size());
  for (Operation *op : llvm::reverse(ops)) {
    if (uniforms.contains(op) && !chainOf.count(op))
      index[op] = nextPhase;
    else if (!isView(op) && !computesNoTensor(op))
      nextPhase = index[op];
  }
  llvm::DenseMap<Value, int64_t> lastUse;
  for (Operation *op : ops)
    for (Value operand : op->getOperands())
      lastUse[root(operand)] =
          std::max(lastUse.lookup(root(operand)), index[op]);
  // A yielded value that is not computed into its result (a reshape of an
  // intermediate value) is copied there after the last op: its storage
  // lives to the end.
  if (toTheEnd)
    for (Value value : kernel.getYield().getValues())
      lastUse[root(value)] = static_cast<int64_t>(ops.size());

  struct Slot {
    int64_t offset, size, freeAfter;
  };
  SmallVector<Slot> slots;
  int64_t next = 0;
  // The offset of a slot of `need` elements free at op `here`, taken until
  // after op `freeAfter`.
  auto take = [&](int64_t need, int64_t here, int64_t freeAfter) {
    Slot *chosen = nullptr;
    for (Slot &slot : slots)
      if (slot.freeAfter < here && slot.size >= need &&
          (!chosen || slot.size < chosen->size))
        chosen = &slot;
    if (!chosen) {
      slots.push_back({next, need, 0});
      next += need;
      chosen = &slots.back();
    }
    chosen->freeAfter = std::max(freeAfter, here);
    return chosen->offset;
  };
  for (Operation *op : ops) {
    int64_t here = index[op];
    // Before the results: a temporary must not share a slot with them.
    if (int64_t need = temporaryElements(op)) {
      std::string name = "t" + std::to_string(nextValue++);
      int64_t offset = take(need, here, here);
      declarations.push_back(
          llvm::formatv("Scalar *const {0} = scratch + {1};", name, offset));
      temporaries[op] = {name, need};
      temporaryOffsets[op] = offset;
    }
    for (Value result : op->getResults()) {
      if (root(result) != result || pointers.count(result) ||
          !isa<RankedTensorType>(result.getType()))
        continue;
      // A value only its chain reads lives in a register, as does a
      // uniform scalar.
      if ((chainOf.count(op) && !storedFromChain(result)) ||
          uniforms.contains(op))
        continue;
      // A dead result still occupies its slot while its op runs.
      int64_t offset = take(TokenShape(result.getType()).elements(), here,
                            lastUse.lookup(result));
      std::string name = "v" + std::to_string(nextValue++);
      pointers[result] = name;
      places[result] = {0, offset};
      declarations.push_back(
          llvm::formatv("Scalar *const {0} = scratch + {1};", name, offset));
    }
  }
  return next;
}

FailureOr<KernelLaunch> KernelEmitter::emit(StringRef name) {
  launch.name = name.str();
  launch.sequential = kernel.isSequential();
  Block *body = kernel.getBodyBlock();
  YieldOp yield = kernel.getYield();
  SmallVector<Operation *> ops;
  for (Operation &op : body->without_terminator())
    ops.push_back(&op);

  // Storage: inputs and results are the struct's pointers at the token's
  // row; reshapes alias their input.
  for (BlockArgument arg : body->getArguments())
    roots[arg] = arg;
  for (Operation *op : ops) {
    for (Value result : op->getResults())
      roots[result] = result;
    if (isView(op))
      roots[op->getResult(0)] = root(op->getOperand(0));
  }
  launch.shifted = !body->getOps<ShiftOp>().empty();
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
    // A slice read in place (fp.slice) keeps its input's row stride.
    int64_t stride = shape.elements();
    if (auto slice = kernel.getInputs()[i].getDefiningOp<SliceOp>();
        slice && slice.isReadInPlace())
      stride =
          cast<RankedTensorType>(slice.getInput().getType()).getShape().back();
    if (shape.perToken)
      rowInputs.push_back({static_cast<unsigned>(i), stride, shape.elements()});
    inputLines.emplace_back(
        arg,
        shape.perToken
            ? llvm::formatv("const Real *const {0} = in{1} + row * {2};", name,
                            i, stride)
                  .str()
            : llvm::formatv("const Real *const {0} = in{1};", name, i).str());
  }
  for (auto [j, value] : llvm::enumerate(yield.getValues())) {
    std::string name = "y" + std::to_string(j);
    outputLines.push_back(
        llvm::formatv("Real *const {0} = out{1} + row * {2};", name, j,
                      TokenShape(value.getType()).elements()));
    // A value the body computes goes straight to the first result that
    // yields it.
    if (value.getDefiningOp() && !isView(value.getDefiningOp()) &&
        !pointers.count(value)) {
      pointers[value] = name;
      places[value] = {1 + static_cast<int>(j), 0};
      inResults.insert(value);
    }
  }
  findUniforms(ops);
  findChains(ops);
  const bool staging =
      launch.sequential && options.stageInputs && stagingAllowed(ops);
  if (staging)
    stageShifts(ops);
  launch.scratch = allocateScratch(ops, /*toTheEnd=*/true, scratchDeclarations);
  if (staging)
    chooseStagedInputs(ops);
  for (Operation *op : ops)
    if (isView(op))
      aliasInput(op);

  // State slots, those held in registers on CUDA last, and the per-token
  // cost.
  SmallVector<SelectiveScanOp> inRegisters;
  for (Operation *op : ops) {
    for (Value result : op->getResults())
      if (isa<RankedTensorType>(result.getType()))
        launch.cost += TokenShape(result.getType()).elements();
    if (auto scan = dyn_cast<SelectiveScanOp>(op)) {
      if (scanStateInRegisters(scan)) {
        inRegisters.push_back(scan);
        continue;
      }
      TokenShape a(scan.getA().getType());
      stateOffsets[op] = launch.state;
      launch.state += 2 * a.elements() + a.dims[0];
    } else if (auto scan = dyn_cast<ScanOp>(op)) {
      stateOffsets[op] = launch.state;
      launch.state += 2 * TokenShape(scan.getType()).elements();
    }
  }
  SmallVector<std::string> registerFields;
  int64_t registerState = 0;
  for (SelectiveScanOp scan : inRegisters) {
    TokenShape a(scan.getA().getType());
    std::string member = "scan" + std::to_string(registerFields.size());
    registerFields.push_back(
        llvm::formatv("fp::fused::ScanRegisters<Scalar, {0}, {1}, "
                      "kernels::kTeamSize> {2};",
                      a.dims[0], a.dims[1], member));
    registerMembers[scan] = member;
    stateOffsets[scan] = launch.state;
    launch.state += 2 * a.elements() + a.dims[0];
    registerState += 2 * a.elements() + a.dims[0];
  }

  std::string where = locationComment(kernel.getLoc());
  w.line("// fp.kernel{0}{1}: {2} ops{3}", where.empty() ? "" : " at ", where,
         ops.size(), launch.sequential ? ", in time order" : "");
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
  w.line("static constexpr int64_t kRegisterState = {0};", registerState);
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
      auto arg = cast<BlockArgument>(value);
      auto *in = llvm::find_if(staged, [&](const StagedInput &input) {
        return input.arg == arg.getArgNumber();
      });
      if (in == staged.end())
        w.text(line);
      else
        w.line("const Real *const x{0} = stageBuffer(scratch, step) + {1};",
               in->arg, in->offset);
    }
    for (const StagedShift &shift : stagedShifts)
      w.line("const Real *const {0} = stageBuffer(scratch, step) + {1};",
             ptr(shift.op->getResult(0)), shift.offset);
    for (const std::string &line : outputLines)
      w.text(line);
    for (const std::string &declaration : scratchDeclarations)
      w.text(declaration);
    emitUnusedParameters();
    if (failed(emitBody(ops, [&](Operation *op) { return emitOp(op); })))
      return failure();
    // Results not computed in place: a reshaped or repeated value.
    for (auto [j, value] : llvm::enumerate(yield.getValues())) {
      std::string target = "y" + std::to_string(j);
      if (ptr(value) == target)
        continue;
      int64_t elements = TokenShape(value.getType()).elements();
      Effect copy;
      access(value, /*write=*/false, /*owned=*/true, copy.before);
      copy.before.push_back(
          {1 + static_cast<int>(j), 0, elements, /*write=*/true, true});
      barrierFor(copy);
      w.line("fp::fused::copy(team, {0}, {1}, {2});", elements, ptr(value),
             target);
    }
  }
  if (failed(emitChunkMembers(ops)))
    return failure();
  emitStageMembers();
  w.blank();
  w.text("// Scratch per token in elements of Scalar, the launch's.");
  w.line("static constexpr int64_t kScratch = {0};", launch.scratch);
  return launch;
}

static int64_t roundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

/// Scratch (in elements of the arithmetic type) up to which a kernel run in
/// time order stages its inputs' rows, both stage buffers included: 96 KiB
/// in f32, so that two blocks still fit on an SM of an H100.
static constexpr int64_t kMaxStagedScratch = 24 * 1024;

/// Scan state a CUDA thread may hold in registers in a kernel that stages
/// its inputs: staging costs a few registers in the token loop, and at
/// config LM's 96 values ptxas then spills the loop's kernels (40 to 100
/// bytes a thread), where without it they fit in 128 registers.
static constexpr int64_t kMaxStagingScanRegisters = 64;

/// Whether a kernel run in time order may stage its inputs: not where its
/// scans hold more than kMaxStagingScanRegisters values per thread.
bool KernelEmitter::stagingAllowed(ArrayRef<Operation *> ops) const {
  int64_t scanRegisters = 0;
  for (Operation *op : ops)
    if (auto scan = dyn_cast<SelectiveScanOp>(op);
        scan && scanStateInRegisters(scan)) {
      TokenShape a(scan.getA().getType());
      scanRegisters +=
          (a.dims[0] + kDeviceTeamSize - 1) / kDeviceTeamSize * a.dims[1];
    }
  return scanRegisters <= kMaxStagingScanRegisters;
}

/// Stages every shift of an input first (before the body's scratch is laid
/// out, which then has no slot for them): the shifted row is the one read
/// that no other stage covers, copied otherwise by the whole team between
/// two barriers at every token. Each is read where it lies: `s<k>`, a
/// pointer into the stage buffer.
void KernelEmitter::stageShifts(ArrayRef<Operation *> ops) {
  for (Operation *op : ops) {
    auto shift = dyn_cast<ShiftOp>(op);
    if (!shift || !isa<BlockArgument>(shift.getInput()))
      continue;
    const int64_t elements = TokenShape(shift.getType()).elements();
    pointers[shift.getResult()] = "s" + std::to_string(stagedShifts.size());
    stagedShifts.push_back(
        {op, cast<BlockArgument>(shift.getInput()).getArgNumber(),
         static_cast<int64_t>(shift.getOffset()), elements, stageElements});
    stageElements += roundUp(elements, 8);
  }
}

/// Chooses the per-token inputs whose rows the call reads from a stage
/// buffer, in body order while both buffers fit in kMaxStagedScratch with
/// the body's scratch and the staged shifts, each at an offset aligned to 8
/// elements. Where the shifts alone do not fit, they go back to the body:
/// each gets a slot after the body's scratch and is copied there.
void KernelEmitter::chooseStagedInputs(ArrayRef<Operation *> ops) {
  (void)ops;
  if (roundUp(launch.scratch, 4) + 2 * stageElements > kMaxStagedScratch) {
    for (const StagedShift &shift : stagedShifts) {
      std::string name = "v" + std::to_string(nextValue++);
      scratchDeclarations.push_back(llvm::formatv(
          "Scalar *const {0} = scratch + {1};", name, launch.scratch));
      launch.scratch += shift.elements;
      pointers[shift.op->getResult(0)] = std::move(name);
    }
    stagedShifts.clear();
    stageElements = 0;
  }
  const int64_t base = roundUp(launch.scratch, 4);
  for (StagedInput input : rowInputs) {
    const int64_t size = roundUp(input.elements, 8);
    if (base + 2 * (stageElements + size) > kMaxStagedScratch)
      continue;
    input.offset = stageElements;
    stageElements += size;
    staged.push_back(input);
  }
}

/// kStage, and for a kernel with staged inputs its stage buffers (two,
/// after the scratch of the call and of the summary pass, which grows the
/// launch's scratch) and its stage(), which copies a token's rows into one.
void KernelEmitter::emitStageMembers() {
  w.blank();
  w.text("// Staged inputs (Fused.h): elements of Real per stage buffer.");
  w.line("static constexpr int64_t kStage = {0};", stageElements);
  if (staged.empty() && stagedShifts.empty())
    return;
  const int64_t offset = roundUp(launch.scratch, 4);
  launch.scratch = offset + 2 * stageElements;
  w.line("static constexpr int64_t kStageOffset = {0};", offset);
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
  for (const StagedShift &shift : stagedShifts)
    w.line("fp::fused::stageShifted(team, in{0}, row, step, length, {1}, {2}, "
           "to + {3});",
           shift.arg, shift.shift, shift.elements, shift.offset);
  for (const StagedInput &input : staged)
    w.line("fp::fused::stageRow(team, in{0} + row * {1}, {2}, to + {3});",
           input.arg, input.stride, input.elements, input.offset);
}

LogicalResult KernelEmitter::emitOp(Operation *op) {
  auto shape = [](Value v) { return TokenShape(v.getType()); };
  auto eps = [](APFloat value) { return realLiteral(value.convertToDouble()); };

  if (StringRef functor = elementwiseFunctor(op); !functor.empty()) {
    SmallVector<std::string> operands;
    for (Value operand : op->getOperands())
      operands.push_back(ptr(operand));
    w.line("fp::fused::{0}(team, kernels::{1}(), {2}, {3}, {4});",
           operands.size() == 1 ? "unary" : "binary", functor,
           shape(op->getResult(0)).elements(), llvm::join(operands, ", "),
           ptr(op->getResult(0)));
    return success();
  }

  // A constant built per token (fp-fuse-mix-scan builds the splats a
  // kernel reads in its body).
  auto fill = [&](Operation *op, std::optional<double> value) -> LogicalResult {
    if (!value)
      return op->emitOpError("cannot emit in a kernel: only splats of a "
                             "constant are built per token");
    w.line("fp::fused::fill(team, {0}, {1}, {2});",
           shape(op->getResult(0)).elements(), realLiteral(*value),
           ptr(op->getResult(0)));
    return success();
  };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](tensor::SplatOp splat) {
        auto constant = splat.getInput().getDefiningOp<arith::ConstantOp>();
        return fill(splat, constant ? splatLiteral(constant) : std::nullopt);
      })
      .Case([&](arith::ConstantOp constant) {
        return fill(constant, splatLiteral(constant));
      })
      .Case([&](L2NormOp norm) {
        TokenShape s = shape(norm);
        w.line("fp::fused::l2norm(team, {0}, {1}, {2}, {3}, {4});",
               ptr(norm.getInput()), s.rows(), s.width(), eps(norm.getEps()),
               ptr(norm));
        return success();
      })
      .Case([&](LayerNormOp norm) {
        TokenShape s = shape(norm);
        w.line("fp::fused::layerNorm(team, {0}, {1}, {2}, {3}, {4}, {5}, {6});",
               ptr(norm.getInput()), ptr(norm.getWeight()), ptr(norm.getBias()),
               s.rows(), s.width(), eps(norm.getEps()), ptr(norm));
        return success();
      })
      .Case([&](RMSNormOp norm) {
        TokenShape s = shape(norm);
        w.line("fp::fused::rmsNorm(team, {0}, {1}, {2}, {3}, {4}, {5});",
               ptr(norm.getInput()), ptr(norm.getWeight()), s.rows(), s.width(),
               eps(norm.getEps()), ptr(norm));
        return success();
      })
      .Case([&](ShiftOp shift) {
        auto input = cast<BlockArgument>(shift.getInput());
        w.line("fp::fused::shifted(team, in{0}, row, step, length, {1}, {2}, "
               "{3});",
               input.getArgNumber(), static_cast<int64_t>(shift.getOffset()),
               shape(shift).elements(), ptr(shift));
        return success();
      })
      .Case([&](SliceOp slice) {
        TokenShape in = shape(slice.getInput());
        w.line("fp::fused::slice(team, {0}, {1}, {2}, {3}, {4}, {5});",
               ptr(slice.getInput()), in.rows(), in.width(), slice.getStart(),
               slice.getEnd() - slice.getStart(), ptr(slice));
        return success();
      })
      .Case([&](ConcatOp concat) {
        int64_t offset = 0, width = shape(concat).width();
        for (Value input : concat.getInputs()) {
          TokenShape in = shape(input);
          w.line("fp::fused::insert(team, {0}, {1}, {2}, {3}, {4}, {5});",
                 ptr(input), in.rows(), in.width(), offset, width, ptr(concat));
          offset += in.width();
        }
        return success();
      })
      .Case([&](BroadcastOp broadcast) {
        TokenShape in = shape(broadcast.getInput()), out = shape(broadcast);
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
               ptr(broadcast.getInput()), out.rank(), id, in.rank(),
               ptr(broadcast));
        return success();
      })
      .Case<ReduceSumOp, ReduceMaxOp>([&](Operation *reduce) {
        Value input = reduce->getOperand(0);
        ArrayRef<int64_t> dims = isa<ReduceSumOp>(reduce)
                                     ? cast<ReduceSumOp>(reduce).getDims()
                                     : cast<ReduceMaxOp>(reduce).getDims();
        TokenShape in = shape(input);
        if (isa<ReduceSumOp>(reduce) && dims.size() == 1 &&
            dims[0] == in.rank() + 1) {
          w.line("fp::fused::sumRows(team, {0}, {1}, {2}, {3});", ptr(input),
                 in.rows(), in.width(), ptr(reduce->getResult(0)));
          return success();
        }
        SmallVector<std::string> flags;
        for (int64_t d = 0; d < in.rank(); ++d)
          flags.push_back(llvm::is_contained(dims, d + 2) ? "true" : "false");
        int64_t id = nextArray++;
        w.line("const int64_t extents{0}[] = {{{1}};", id, joinInts(in.dims));
        w.line("const bool reduced{0}[] = {{{1}};", id,
               llvm::join(flags, ", "));
        w.line("fp::fused::reduce(team, {0}, {1}, extents{2}, reduced{2}, {3}, "
               "{4});",
               ptr(input), in.rank(), id,
               isa<ReduceSumOp>(reduce) ? "true" : "false",
               ptr(reduce->getResult(0)));
        return success();
      })
      .Case([&](MatmulOp matmul) -> LogicalResult {
        TokenShape lhs = shape(matmul.getLhs()), rhs = shape(matmul.getRhs());
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
          staging =
              llvm::formatv(", {0}, {1}", it->second.first, it->second.second);
        w.line("fp::fused::matmul(team, {0}, {1}, {2}, {3}, {4}, {5}, {6}, "
               "{7}, {8}{9});",
               ptr(matmul.getLhs()), ptr(matmul.getRhs()), batch, m, n, k,
               tl ? "true" : "false", tr ? "true" : "false", ptr(matmul),
               staging);
        return success();
      })
      .Case([&](TriuOp triu) {
        TokenShape in = shape(triu.getInput());
        w.line("fp::fused::triu(team, {0}, {1}, {2}, {3});",
               ptr(triu.getInput()), in.rows(), shape(triu).width(), ptr(triu));
        return success();
      })
      .Case([&](SelectiveScanOp scan) {
        TokenShape a = shape(scan.getA());
        StringRef transposed = scanTemplateArguments(scan);
        std::string operands = llvm::formatv(
            "{0}, {1}, {2}, {3}, {4}, {5}", ptr(scan.getU()),
            ptr(scan.getDelta()), ptr(scan.getA()), ptr(scan.getB()),
            ptr(scan.getC()), scan.getD() ? ptr(scan.getD()) : "nullptr");
        auto it = registerMembers.find(scan);
        if (it != registerMembers.end()) {
          w.text("#ifdef __CUDA_ARCH__");
          w.line("fp::fused::selectiveScanStep{0}(team, step == 0, "
                 "registers.{1}, {2}, {3});",
                 transposed, it->second, operands, ptr(scan));
          w.text("#else");
        }
        w.line("fp::fused::selectiveScanStep{0}(team, step == 0, state + {1}, "
               "{2}, {3}, {4}, {5});",
               transposed, stateOffsetOf(scan), operands, a.dims[0], a.dims[1],
               ptr(scan));
        if (it != registerMembers.end())
          w.text("#endif");
        return success();
      })
      .Case([&](ScanOp scan) -> LogicalResult {
        if (scan.getReverse())
          return scan.emitOpError("cannot emit a reverse scan in a kernel");
        w.line("fp::fused::scanStep(team, state + {0}, {1}, {2}, {3}, {4});",
               stateOffsetOf(scan), ptr(scan.getCoeff()), ptr(scan.getInput()),
               shape(scan).elements(), ptr(scan));
        return success();
      })
      .Default([&](Operation *other) {
        return other->emitOpError("cannot emit this operation in a kernel");
      });
}

/// The element count of `op` if it can be part of a chain: it computes
/// element i of its result from element i of its operands (an elementwise
/// op; a splat constant, from none), or from the one element of a scalar
/// computed before (a broadcast: see readsAcrossElements). A broadcast
/// reads scratch only, never a kernel input, so that every read of an
/// input in a chain is at its element i. (A slice of one row is a view,
/// isSliceView: a chain reads it at its offset.)
std::optional<int64_t> KernelEmitter::chainElements(Operation *op) const {
  if (op->getNumResults() != 1 ||
      !isa<RankedTensorType>(op->getResult(0).getType()))
    return std::nullopt;
  int64_t elements = TokenShape(op->getResult(0).getType()).elements();
  auto fromScratch = [&](Value input) {
    return !isa<BlockArgument>(root(input));
  };
  bool member =
      llvm::TypeSwitch<Operation *, bool>(op)
          .Case([](tensor::SplatOp splat) {
            auto constant = splat.getInput().getDefiningOp<arith::ConstantOp>();
            return constant && splatLiteral(constant).has_value();
          })
          .Case([](arith::ConstantOp constant) {
            return splatLiteral(constant).has_value();
          })
          .Case([&](BroadcastOp broadcast) {
            return TokenShape(broadcast.getInput().getType()).rank() == 0 &&
                   fromScratch(broadcast.getInput());
          })
          .Default([](Operation *other) {
            return !elementwiseFunctor(other).empty();
          });
  if (!member)
    return std::nullopt;
  return elements;
}

/// Whether `op` reads a value of `chain` at another element than its own
/// (a broadcast scalar): it cannot join that chain.
bool KernelEmitter::readsAcrossElements(Operation *op,
                                        const Chain &chain) const {
  if (!isa<BroadcastOp>(op))
    return false;
  Operation *def = root(op->getOperand(0)).getDefiningOp();
  return def && llvm::is_contained(chain.ops, def);
}

/// Finds the chains of two or more ops among `ops`: a chain grows while
/// the next op (views and scalar ops in between emit nothing) can join it.
void KernelEmitter::findChains(ArrayRef<Operation *> ops) {
  chains.clear();
  chainOf.clear();
  Chain current;
  auto readsUniform = [&](Operation *op) {
    return llvm::any_of(op->getOperands(), [&](Value operand) {
      Operation *def = root(operand).getDefiningOp();
      return def && uniforms.contains(def);
    });
  };
  // A single op is a chain too where it reads a uniform scalar, which
  // lives in a register only, or where a row sum is accumulated from it.
  auto close = [&] {
    if (current.ops.size() >= 2 || current.sum ||
        llvm::any_of(current.ops, readsUniform)) {
      for (Operation *op : current.ops)
        chainOf[op] = chains.size();
      if (current.sum)
        chainOf[current.sum] = chains.size();
      chains.push_back(std::move(current));
    }
    current = Chain();
  };
  for (Operation *op : ops) {
    if (isView(op) || computesNoTensor(op))
      continue;
    // A uniform row sum of the whole of a value the current chain computes
    // ends the chain, which accumulates it.
    if (uniforms.contains(op) && isa<ReduceSumOp>(op) && !current.ops.empty()) {
      Value summed = op->getOperand(0);
      Operation *def = root(summed).getDefiningOp();
      if (llvm::is_contained(current.ops, def) &&
          TokenShape(summed.getType()).elements() == current.elements)
        current.sum = op;
    }
    std::optional<int64_t> elements = chainElements(op);
    if (!elements || uniforms.contains(op)) {
      close();
      continue;
    }
    if (!current.ops.empty() &&
        (*elements != current.elements || readsAcrossElements(op, current)))
      close();
    current.ops.push_back(op);
    current.elements = *elements;
  }
  close();
}

/// Whether a chain's result needs storage: something outside its chain
/// reads it (a view, a later op, the yield).
bool KernelEmitter::storedFromChain(Value value) const {
  unsigned chain = chainOf.lookup(value.getDefiningOp());
  return llvm::any_of(value.getUsers(), [&](Operation *user) {
    auto it = chainOf.find(user);
    return it == chainOf.end() || it->second != chain;
  });
}

/// Whether `op` belongs to a chain; at the chain's first op, emits the
/// chain and the barrier after it.
FailureOr<bool> KernelEmitter::emitIfChained(Operation *op) {
  auto it = chainOf.find(op);
  if (it == chainOf.end())
    return false;
  const Chain &chain = chains[it->second];
  if (op == chain.ops.front()) {
    barrierFor(chainEffect(chain));
    if (failed(emitChain(chain)))
      return failure();
  }
  return true;
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
        arg && llvm::none_of(staged, [&](const StagedInput &input) {
          return input.arg == arg.getArgNumber();
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
    if (!storedFromChain(result)) {
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

/// Finds the ops among `ops` that every thread computes for itself: ops
/// of one element that could be a chain's (chainElements), that the kernel
/// does not yield, and that only chains and other such ops read. Such a
/// scalar (a Householder reflection's coefficient 2·σ(β)·⟨v, y⟩, say)
/// would otherwise take a scratch slot, a phase of one busy thread and a
/// barrier; every thread computing it from values stored before (or from
/// other uniform scalars) needs none of these, and reads only what is
/// final: its operands are stored by earlier phases, each followed by a
/// barrier, and no kernel result shares memory with an input.
void KernelEmitter::findUniforms(ArrayRef<Operation *> ops) {
  uniforms.clear();
  for (Operation *op : ops)
    if (!isView(op) && !computesNoTensor(op) &&
        (chainElements(op) == 1 || isRowSumToScalar(op)))
      uniforms.insert(op);
  // Whether only chains, uniform scalars and views read only by them read
  // `value` (or only its extents).
  std::function<bool(Value)> readByChainsOnly = [&](Value value) {
    return llvm::all_of(value.getUsers(), [&](Operation *user) {
      if (uniforms.contains(user) || isa<tensor::DimOp>(user))
        return true;
      if (isView(user))
        return readByChainsOnly(user->getResult(0));
      return chainElements(user).has_value();
    });
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (Operation *op :
         SmallVector<Operation *>(uniforms.begin(), uniforms.end())) {
      // A row sum reads a row in memory or in a chain's registers.
      Operation *summed = isa<ReduceSumOp>(op)
                              ? root(op->getOperand(0)).getDefiningOp()
                              : nullptr;
      if (!readByChainsOnly(op->getResult(0)) ||
          (summed && uniforms.contains(summed))) {
        uniforms.erase(op);
        changed = true;
      }
    }
  }
}

/// The kernel's parameters a body may leave unread.
void KernelEmitter::emitUnusedParameters() {
  for (StringRef name : {"row", "step", "scratch", "state", "registers"})
    w.line("(void){0};", name);
}

/// Emits `ops` in order as a token's work: views and ops that compute no
/// tensor emit nothing, a uniform scalar is computed into a register and a
/// chain as one loop; any other op is emitted by `emit`, after a comment
/// that names it. Each is preceded by the team's barrier where it needs one
/// (barrierFor); the body starts after one.
LogicalResult
KernelEmitter::emitBody(ArrayRef<Operation *> ops,
                        llvm::function_ref<LogicalResult(Operation *)> emit) {
  hazards.barrier();
  for (Operation *op : ops) {
    if (isView(op) || computesNoTensor(op))
      continue;
    if (isStagedShift(op)) {
      std::string at = locationComment(op->getLoc());
      w.line("// {0}{1}{2}: staged ({3})", op->getName().getStringRef(),
             at.empty() ? "" : " at ", at, ptr(op->getResult(0)));
      continue;
    }
    if (uniforms.contains(op) && !chainOf.count(op)) {
      barrierFor(uniformEffect(op));
      emitUniform(op);
      continue;
    }
    FailureOr<bool> chained = emitIfChained(op);
    if (failed(chained))
      return failure();
    if (*chained)
      continue;
    barrierFor(opEffect(op));
    std::string at = locationComment(op->getLoc());
    w.line("// {0}{1}{2}", op->getName().getStringRef(),
           at.empty() ? "" : " at ", at);
    if (failed(emit(op)))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Barriers
//===----------------------------------------------------------------------===//
//
// The team synchronises before an op only where the op may touch an element
// that another member touched since the last barrier, one of the two a write
// (Hazards). Element loops (chains, and the copies of results) and row ops
// that the whole team computes on a single row own their elements as every
// element loop does, so a chain that reads what the chain before it wrote,
// element by element, needs no barrier between them; any other op is taken
// to touch any element of its operands and results. A team-wide reduction
// inside an op (a chain's row sum, a norm's) is a barrier of its own. The
// launchers synchronise the team between tokens (Fused.h's runTokens, and
// Host.h's and Device.cuh's token loops), so a body starts with nothing
// pending and needs no barrier at its end; a summary step ends with one, as
// the chunk-carry loops run it token after token without.

/// Appends the team's access to `value`'s storage, all of it or its first
/// element, where the body stores the value (`places`).
void KernelEmitter::access(Value value, bool write, bool owned,
                           SmallVectorImpl<Access> &accesses,
                           bool first) const {
  auto it = places.find(value);
  if (it == places.end())
    return;
  int64_t elements = first ? 1 : TokenShape(value.getType()).elements();
  accesses.push_back({it->second.space, it->second.offset,
                      it->second.offset + elements, write, owned});
}

/// A chain's accesses, as emitChain reads and stores: element i of each
/// operand it does not hold in a register, element 0 of a broadcast one,
/// element i of each result read after it; a row sum at its end reduces
/// over the team.
Effect KernelEmitter::chainEffect(const Chain &chain) const {
  Effect effect;
  llvm::SmallPtrSet<Operation *, 8> members(chain.ops.begin(), chain.ops.end());
  auto read = [&](Value value) {
    Operation *def = root(value).getDefiningOp();
    auto slice = value.getDefiningOp<SliceOp>();
    if (def && members.contains(def) && (!slice || slice.getStart() == 0))
      return;
    if (uniformNames.count(root(value)))
      return;
    access(value, /*write=*/false, /*owned=*/true, effect.before);
  };
  for (Operation *op : chain.ops) {
    if (auto broadcast = dyn_cast<BroadcastOp>(op)) {
      if (!uniformNames.count(root(broadcast.getInput())))
        access(broadcast.getInput(), /*write=*/false, /*owned=*/false,
               effect.before, /*first=*/true);
    } else if (!elementwiseFunctor(op).empty()) {
      for (Value operand : op->getOperands())
        read(operand);
    }
    for (Value result : op->getResults())
      if (storedFromChain(result))
        access(result, /*write=*/true, /*owned=*/true, effect.before);
  }
  if (chain.sum) {
    read(chain.sum->getOperand(0));
    effect.barrier = true;
  }
  return effect;
}

/// A uniform scalar's accesses: element 0 of each stored operand, or, for a
/// row sum, the row, element by element, before the team's reduction.
Effect KernelEmitter::uniformEffect(Operation *op) const {
  Effect effect;
  if (auto reduce = dyn_cast<ReduceSumOp>(op)) {
    access(reduce.getInput(), /*write=*/false, /*owned=*/true, effect.before);
    effect.barrier = true;
    return effect;
  }
  for (Value operand : op->getOperands())
    if (!uniformNames.count(root(operand)))
      access(operand, /*write=*/false, /*owned=*/false, effect.before,
             /*first=*/true);
  return effect;
}

/// The accesses of an op emitted as a call of Fused.h: an elementwise op or
/// a constant's fill is an element loop, and a scan step touches the
/// channels a member owns; a norm of a single row long enough for the
/// whole team (fp::fused::forEachRow) reads its input element by element
/// before its first reduction and after it, and writes its result so; any
/// other op may touch any element of its operands, results and temporary.
Effect KernelEmitter::opEffect(Operation *op) const {
  Effect effect;
  // A scan's step (or summary step): a member steps the channels it owns,
  // as an element loop does (on CUDA, the channels of its registers, rank +
  // k · kTeamSize), reading element c of the per-channel operands and every
  // element of B and C.
  if (auto scan = dyn_cast<SelectiveScanOp>(op)) {
    for (Value owned : {scan.getU(), scan.getDelta()})
      access(owned, /*write=*/false, /*owned=*/true, effect.before);
    for (Value any : {scan.getB(), scan.getC()})
      access(any, /*write=*/false, /*owned=*/false, effect.before);
    if (Value skip = scan.getD())
      access(skip, /*write=*/false, /*owned=*/false, effect.before);
    access(scan.getResult(), /*write=*/true, /*owned=*/true, effect.before);
    return effect;
  }
  if (auto scan = dyn_cast<ScanOp>(op)) {
    for (Value owned : {scan.getCoeff(), scan.getInput()})
      access(owned, /*write=*/false, /*owned=*/true, effect.before);
    access(scan.getResult(), /*write=*/true, /*owned=*/true, effect.before);
    return effect;
  }
  // fp::fused::unary, binary and fill: element loops.
  if (!elementwiseFunctor(op).empty() ||
      isa<tensor::SplatOp, arith::ConstantOp>(op)) {
    for (Value operand : op->getOperands())
      access(operand, /*write=*/false, /*owned=*/true, effect.before);
    access(op->getResult(0), /*write=*/true, /*owned=*/true, effect.before);
    return effect;
  }
  Value input = llvm::TypeSwitch<Operation *, Value>(op)
                    .Case([](L2NormOp norm) { return norm.getInput(); })
                    .Case([](LayerNormOp norm) { return norm.getInput(); })
                    .Case([](RMSNormOp norm) { return norm.getInput(); })
                    .Default([](Operation *) { return Value(); });
  if (input) {
    TokenShape shape(op->getResult(0).getType());
    if (shape.rows() == 1 &&
        shape.width() > kShortRowPasses * kDeviceGroupSize) {
      for (Value operand : op->getOperands())
        if (operand != input) {
          access(operand, /*write=*/false, /*owned=*/false, effect.before);
          access(operand, /*write=*/false, /*owned=*/false, effect.after);
        }
      access(input, /*write=*/false, /*owned=*/true, effect.before);
      effect.barrier = true;
      access(input, /*write=*/false, /*owned=*/true, effect.after);
      access(op->getResult(0), /*write=*/true, /*owned=*/true, effect.after);
      return effect;
    }
  }
  for (Value operand : op->getOperands())
    access(operand, /*write=*/false, /*owned=*/false, effect.before);
  for (Value result : op->getResults())
    if (isa<RankedTensorType>(result.getType()))
      access(result, /*write=*/true, /*owned=*/false, effect.before);
  if (auto it = temporaries.find(op); it != temporaries.end()) {
    int64_t offset = temporaryOffsets.lookup(op);
    effect.before.push_back(
        {0, offset, offset + it->second.second, true, false});
  }
  return effect;
}

/// Emits the team's barrier where `effect` needs one, and records it.
void KernelEmitter::barrierFor(const Effect &effect) {
  if (hazards.needsBarrier(effect)) {
    w.text("team.sync();");
    hazards.barrier();
  }
  hazards.record(effect);
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

/// The ops a chunk's summary pass runs, in body order: every scan and what
/// its operands are computed from. False when the kernel cannot run in
/// chunks (see the file comment).
bool KernelEmitter::summarySlice(ArrayRef<Operation *> ops,
                                 SmallVectorImpl<Operation *> &slice) const {
  Operation *kernelOp = const_cast<KernelOp &>(kernel).getOperation();
  llvm::SmallPtrSet<Operation *, 16> needed;
  SmallVector<Value> worklist;
  bool anyScan = false;
  for (Operation *op : ops) {
    if (auto scan = dyn_cast<SelectiveScanOp>(op)) {
      auto a = dyn_cast<BlockArgument>(root(scan.getA()));
      if (!a || TokenShape(a.getType()).perToken)
        return false;
      // The summary step reads neither C nor D.
      worklist.append({scan.getU(), scan.getDelta(), scan.getB()});
    } else if (isa<ScanOp>(op)) {
      llvm::append_range(worklist, op->getOperands());
    } else {
      continue;
    }
    anyScan = true;
    needed.insert(op);
  }
  if (!anyScan)
    return false;
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || def->getParentOp() != kernelOp)
      continue;
    if (isa<SelectiveScanOp, ScanOp>(def))
      return false; // a scan reads another scan's result
    if (!needed.insert(def).second)
      continue;
    llvm::append_range(worklist, def->getOperands());
  }
  for (Operation *op : ops)
    if (needed.contains(op))
      slice.push_back(op);
  return true;
}

/// kChunkable and kCarry, and for a chunkable kernel its summarize,
/// saveCarry and loadCarry.
LogicalResult KernelEmitter::emitChunkMembers(ArrayRef<Operation *> ops) {
  SmallVector<Operation *> slice;
  if (!launch.sequential || !summarySlice(ops, slice)) {
    w.text("static constexpr bool kChunkable = false;");
    w.text("static constexpr int64_t kCarry = 0;");
    return success();
  }
  SmallVector<Operation *> scans;
  int64_t carry = 0;
  for (Operation *op : slice) {
    if (auto scan = dyn_cast<SelectiveScanOp>(op)) {
      TokenShape a(scan.getA().getType());
      carryOffsets[op] = carry;
      carry += a.elements() + a.dims[0];
      scans.push_back(op);
    } else if (auto scan = dyn_cast<ScanOp>(op)) {
      carryOffsets[op] = carry;
      carry += 2 * TokenShape(scan.getType()).elements();
      scans.push_back(op);
    }
  }
  w.blank();
  w.text("// Chunked execution (Fused.h): the scans' carry per chunk.");
  w.text("static constexpr bool kChunkable = true;");
  w.line("static constexpr int64_t kCarry = {0};", carry);

  // The pointer expression of a selective scan's A: a uniform input.
  auto inputOf = [&](Value value) {
    return "in" + std::to_string(cast<BlockArgument>(value).getArgNumber());
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

  // summarize: the slice, each scan as its summary step, with scratch slots
  // of its own: the summary pass writes no result, so values the full call
  // computes into its results live in scratch here. (The scans' results
  // keep their pointers and get no slot.)
  auto fullPointers = pointers;
  auto fullPlaces = places;
  SmallVector<Operation *> computed;
  for (Operation *op : slice) {
    if (isa<SelectiveScanOp, ScanOp>(op))
      continue;
    computed.push_back(op);
    for (Value result : op->getResults())
      if (root(result) == result) {
        pointers.erase(result);
        places.erase(result);
      }
  }
  SmallVector<std::string> summaryDeclarations;
  uniformNames.clear();
  findChains(slice);
  launch.scratch =
      std::max(launch.scratch,
               allocateScratch(slice, /*toTheEnd=*/false, summaryDeclarations));
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
    for (const auto &[value, line] : inputLines)
      if (used.contains(value))
        w.text(line);
    for (const std::string &declaration : summaryDeclarations)
      w.text(declaration);
    emitUnusedParameters();
    // The scans take their summary steps; the other ops are emitted as in
    // the body.
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
    shiftsUnstaged = true; // the summary pass reads no stage buffer
    LogicalResult emitted = emitBody(slice, emitSummaryOp);
    shiftsUnstaged = false;
    if (failed(emitted))
      return failure();
    // The next token's step, or saveCarry, follows without a barrier.
    w.text("team.sync();");
  }
  pointers = std::move(fullPointers);
  places = std::move(fullPlaces);

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
      int64_t offset = carryOffsets.lookup(op);
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
      int64_t offset = carryOffsets.lookup(op);
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

FailureOr<KernelLaunch>
mlir::fp::codegen::emitKernelFunctor(CodeWriter &w, KernelOp kernel,
                                     StringRef name,
                                     const KernelOptions &options) {
  return KernelEmitter(w, kernel, options).emit(name);
}
