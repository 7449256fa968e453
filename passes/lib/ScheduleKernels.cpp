//===- ScheduleKernels.cpp - The schedule of each fp.kernel -----*- C++ -*-===//
//
// fp-schedule-kernels: decides how the team of threads that computes one
// token of an fp.kernel runs its body, and records the decisions in the IR
// (the attributes of the dialect description, and fp.barrier ops), which the
// kernel emitter then prints as they are:
//
// - Chains: consecutive ops of one element count that compute element i
//   from element i of their operands, or from values computed before them,
//   run as one loop over elements (fp::fused::forEachElement) in which each
//   thread computes the elements it owns in every such loop, so that no
//   barrier separates them; their values live in registers unless something
//   after the chain reads them (`fp.chain`).
// - Uniform scalars: ops of one element that only chains and other such
//   ops read, computed by every thread for itself (`fp.uniform`).
// - Scratch: every intermediate value a slot (`fp.slot`), reused once the
//   value is dead, and a matrix product's staged operand a temporary
//   (`fp.temp`); values the kernel yields are computed into the result
//   (`fp.out`).
// - Scan state: each scan's state in `state` (`fp.state_offset`), on CUDA
//   in registers where it fits (`fp.registers`, last in `state`).
// - Staged inputs: in a kernel run in time order, the per-token input rows
//   and input shifts copied a token ahead into a stage buffer
//   (`fp.staged_inputs`, `fp.staged`; Fused.h, "Staged inputs").
// - Chunks: where a kernel's scans can run a sample's tokens in chunks
//   (Fused.h, "Chunked execution"), the ops of the summary pass and its own
//   slots and chains (`fp.summary`), and each scan's carry.
// - Barriers: an fp.barrier wherever an op may touch an element that
//   another thread touched since the last one, one of the two a write.
//
//===----------------------------------------------------------------------===//

#include "fp/Analysis/KernelBody.h"
#include "fp/Dialect/FpOps.h"
#include "fp/Transforms/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <functional>

namespace mlir::fp {
#define GEN_PASS_DEF_FPSCHEDULEKERNELS
#include "fp/Transforms/Passes.h.inc"
} // namespace mlir::fp

using namespace mlir;
using namespace mlir::fp;

namespace {

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

/// An access of the team to `[begin, end)` of one space of memory a body
/// writes (0: scratch, 1 + j: result j). An owned access touches element
/// begin + i by the member that owns i in every element loop (i = rank,
/// rank + size, ...); any other may touch any element by any member.
struct Access {
  int space;
  int64_t begin, end;
  bool write, owned;
};

/// What one op does to memory: its accesses before the team-wide reduction
/// it makes, if it makes one (`barrier`: every member arrives there, so it
/// orders everything before it against everything after), and those after.
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

private:
  static bool conflict(const Access &a, const Access &b) {
    return a.space == b.space && a.begin < b.end && b.begin < a.end &&
           (a.write || b.write) && !(a.owned && b.owned && a.begin == b.begin);
  }
  SmallVector<Access> pending;
};

/// Scratch (in elements of the arithmetic type) up to which a kernel run in
/// time order stages its inputs' rows, both stage buffers included: 96 KiB
/// in f32, so that two blocks still fit on an SM of an H100.
constexpr int64_t kMaxStagedScratch = 24 * 1024;

/// Scan state a CUDA thread may hold in registers in a kernel that stages
/// its inputs: staging costs a few registers in the token loop, and at
/// config LM's 96 values ptxas then spills the loop's kernels (40 to 100
/// bytes a thread), where without it they fit in 128 registers.
constexpr int64_t kMaxStagingScanRegisters = 64;

int64_t roundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

/// The two passes over a body the schedule serves: the token's full
/// computation, and a chunked kernel's summary pass.
enum class Pass { Call, Summary };

/// A run of consecutive ops of one element count, each computing element i
/// from element i of its operands or from values computed before the run,
/// emitted as one loop over elements without barriers between them.
struct Chain {
  SmallVector<Operation *> ops;
  int64_t elements = 0;
  /// A uniform row sum of a value the chain computes, accumulated as the
  /// chain runs.
  Operation *sum = nullptr;
};

class KernelScheduler {
public:
  KernelScheduler(KernelOp kernel, bool stageInputs)
      : kernel(kernel), stageInputs(stageInputs) {}

  void run();

private:
  KernelOp kernel;
  bool stageInputs;
  Builder builder{kernel.getContext()};
  SmallVector<Operation *> ops;

  /// Where each value the body stores lies in the pass being scheduled:
  /// its space (Access) and first element. Inputs, stage buffers,
  /// registers and uniform scalars have no place: nothing writes them.
  struct Place {
    int space;
    int64_t offset;
  };
  llvm::DenseMap<Value, Place> places;
  /// The values that have storage without a scratch slot: the inputs, the
  /// values computed into results and the staged shifts.
  llvm::DenseSet<Value> placed;
  llvm::DenseSet<Operation *> uniforms;
  SmallVector<Chain> chains;
  llvm::DenseMap<Operation *, unsigned> chainOf;
  /// Each op's temporary in the pass being scheduled: offset and size.
  llvm::DenseMap<Operation *, std::pair<int64_t, int64_t>> temporaries;
  /// The shifts of an input read from the stage buffer, and their offsets.
  SmallVector<std::pair<Operation *, int64_t>> stagedShifts;
  int64_t stageElements = 0;
  Hazards hazards;
  /// The barriers found: before which op (the yield for the copies of
  /// results), and in which passes.
  llvm::MapVector<Operation *, std::pair<bool, bool>> barriers;

  static Value root(Value value) { return storageRoot(value); }
  std::optional<Place> placeOf(Value value) const;
  std::optional<int64_t> chainElements(Operation *op) const;
  bool readsAcrossElements(Operation *op, const Chain &chain) const;
  void findUniforms();
  void findChains(ArrayRef<Operation *> body);
  bool storedFromChain(Value value) const;
  bool isUniformValue(Value value) const {
    Operation *def = root(value).getDefiningOp();
    return def && uniforms.contains(def);
  }
  int64_t allocateScratch(ArrayRef<Operation *> body, bool toTheEnd, Pass pass);
  bool stagingAllowed() const;
  void stageShifts();
  int64_t chooseStagedInputs(int64_t scratch);
  void assignState();
  bool summarySlice(SmallVectorImpl<Operation *> &slice) const;
  void access(Value value, bool write, bool owned,
              SmallVectorImpl<Access> &accesses, bool first = false) const;
  Effect chainEffect(const Chain &chain) const;
  Effect uniformEffect(Operation *op) const;
  Effect opEffect(Operation *op) const;
  void barrierFor(Operation *before, const Effect &effect, Pass pass);
  void placeBarriers(ArrayRef<Operation *> body, Pass pass);
  void recordChains(Pass pass);
  void setSummaryField(Operation *op, StringRef name, Attribute value);
};

} // namespace

/// The place of `value` in the pass being scheduled: its own, or for a view,
/// its source's, offset to a slice's first column.
std::optional<KernelScheduler::Place>
KernelScheduler::placeOf(Value value) const {
  if (auto it = places.find(value); it != places.end())
    return it->second;
  Operation *view = value.getDefiningOp();
  if (!view || !isView(view))
    return std::nullopt;
  std::optional<Place> source = placeOf(view->getOperand(0));
  if (!source)
    return std::nullopt;
  if (auto slice = dyn_cast<SliceOp>(view))
    source->offset += slice.getStart();
  return source;
}

//===----------------------------------------------------------------------===//
// Chains and uniform scalars
//===----------------------------------------------------------------------===//

/// The element count of `op` if it can be part of a chain: it computes
/// element i of its result from element i of its operands (an elementwise
/// op; a splat constant, from none), or from the one element of a scalar
/// computed before (a broadcast: see readsAcrossElements). A broadcast
/// reads scratch only, never a kernel input, so that every read of an
/// input in a chain is at its element i. (A slice of one row is a view:
/// a chain reads it at its offset.)
std::optional<int64_t> KernelScheduler::chainElements(Operation *op) const {
  if (op->getNumResults() != 1 ||
      !isa<RankedTensorType>(op->getResult(0).getType()))
    return std::nullopt;
  int64_t elements = TokenShape(op->getResult(0).getType()).elements();
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
                   !isa<BlockArgument>(root(broadcast.getInput()));
          })
          .Default([](Operation *other) { return isElementwise(other); });
  if (!member)
    return std::nullopt;
  return elements;
}

/// Whether `op` reads a value of `chain` at another element than its own
/// (a broadcast scalar): it cannot join that chain.
bool KernelScheduler::readsAcrossElements(Operation *op,
                                          const Chain &chain) const {
  if (!isa<BroadcastOp>(op))
    return false;
  Operation *def = root(op->getOperand(0)).getDefiningOp();
  return def && llvm::is_contained(chain.ops, def);
}

/// Finds the ops that every thread computes for itself: ops of one element
/// that could be a chain's (chainElements), that the kernel does not yield,
/// and that only chains and other such ops read. Such a scalar (a
/// Householder reflection's coefficient 2·σ(β)·⟨v, y⟩, say) would otherwise
/// take a scratch slot, a phase of one busy thread and a barrier; every
/// thread computing it from values stored before (or from other uniform
/// scalars) needs none of these, and reads only what is final: its operands
/// are stored by earlier phases, each followed by a barrier, and no kernel
/// result shares memory with an input.
void KernelScheduler::findUniforms() {
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

/// Finds the chains among `body`: a chain grows while the next op (views
/// and scalar ops in between emit nothing) can join it. A single op is a
/// chain too where it reads a uniform scalar, which lives in a register
/// only, or where a row sum is accumulated from it.
void KernelScheduler::findChains(ArrayRef<Operation *> body) {
  chains.clear();
  chainOf.clear();
  Chain current;
  auto readsUniform = [&](Operation *op) {
    return llvm::any_of(op->getOperands(),
                        [&](Value operand) { return isUniformValue(operand); });
  };
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
  for (Operation *op : body) {
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
bool KernelScheduler::storedFromChain(Value value) const {
  unsigned chain = chainOf.lookup(value.getDefiningOp());
  return llvm::any_of(value.getUsers(), [&](Operation *user) {
    auto it = chainOf.find(user);
    return it == chainOf.end() || it->second != chain;
  });
}

//===----------------------------------------------------------------------===//
// Scratch, staging and state
//===----------------------------------------------------------------------===//

/// Assigns a scratch slot to every result of `body` that is neither a view
/// nor has storage already (a directly yielded value), and to every op's
/// temporary: a linear scan in body order, where a slot is reused by a
/// later value that fits once its value's last reader has run (a
/// temporary's, once its op has). With `toTheEnd`, yielded values live to
/// the end. Returns the scratch size.
int64_t KernelScheduler::allocateScratch(ArrayRef<Operation *> body,
                                         bool toTheEnd, Pass pass) {
  // A chain's ops all sit at its first op's position: the values it reads
  // live until it ends, and its results, stored by the same loop, never
  // share their slots.
  llvm::DenseMap<Operation *, int64_t> index;
  for (auto [i, op] : llvm::enumerate(body))
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
  int64_t nextPhase = static_cast<int64_t>(body.size());
  for (Operation *op : llvm::reverse(body)) {
    if (uniforms.contains(op) && !chainOf.count(op))
      index[op] = nextPhase;
    else if (!isView(op) && !computesNoTensor(op))
      nextPhase = index[op];
  }
  llvm::DenseMap<Value, int64_t> lastUse;
  for (Operation *op : body)
    for (Value operand : op->getOperands())
      lastUse[root(operand)] =
          std::max(lastUse.lookup(root(operand)), index[op]);
  // A yielded value that is not computed into its result (a reshape of an
  // intermediate value) is copied there after the last op: its storage
  // lives to the end.
  if (toTheEnd)
    for (Value value : kernel.getYield().getValues())
      lastUse[root(value)] = static_cast<int64_t>(body.size());

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
  for (Operation *op : body) {
    int64_t here = index[op];
    // Before the results: a temporary must not share a slot with them.
    if (int64_t need = temporaryElements(op)) {
      int64_t offset = take(need, here, here);
      temporaries[op] = {offset, need};
      Attribute range = builder.getDenseI64ArrayAttr({offset, need});
      if (pass == Pass::Call)
        op->setAttr(FPDialect::getTempAttrName(), range);
      else
        setSummaryField(op, "temp", range);
    }
    for (Value result : op->getResults()) {
      if (root(result) != result || placed.contains(result) ||
          places.count(result) || !isa<RankedTensorType>(result.getType()))
        continue;
      // A value only its chain reads lives in a register, as does a
      // uniform scalar.
      if ((chainOf.count(op) && !storedFromChain(result)) ||
          uniforms.contains(op))
        continue;
      // A dead result still occupies its slot while its op runs.
      int64_t offset = take(TokenShape(result.getType()).elements(), here,
                            lastUse.lookup(result));
      places[result] = {0, offset};
      Attribute slot = builder.getI64IntegerAttr(offset);
      if (pass == Pass::Call)
        op->setAttr(FPDialect::getSlotAttrName(), slot);
      else
        setSummaryField(op, "slot", slot);
    }
  }
  return next;
}

/// Sets `name` in `op`'s fp.summary dictionary.
void KernelScheduler::setSummaryField(Operation *op, StringRef name,
                                      Attribute value) {
  NamedAttrList fields;
  if (auto summary =
          op->getAttrOfType<DictionaryAttr>(FPDialect::getSummaryAttrName()))
    fields.append(summary.getValue());
  fields.set(name, value);
  op->setAttr(FPDialect::getSummaryAttrName(),
              fields.getDictionary(kernel.getContext()));
}

/// Whether a kernel run in time order may stage its inputs: not where its
/// scans hold more than kMaxStagingScanRegisters values per thread.
bool KernelScheduler::stagingAllowed() const {
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
/// two barriers at every token.
void KernelScheduler::stageShifts() {
  for (Operation *op : ops) {
    auto shift = dyn_cast<ShiftOp>(op);
    if (!shift || !isa<BlockArgument>(shift.getInput()))
      continue;
    placed.insert(shift.getResult());
    stagedShifts.push_back({op, stageElements});
    stageElements += roundUp(TokenShape(shift.getType()).elements(), 8);
  }
}

/// Chooses the per-token inputs whose rows the call reads from a stage
/// buffer, in body order while both buffers fit in kMaxStagedScratch with
/// the body's scratch and the staged shifts, each at an offset aligned to 8
/// elements. Where the shifts alone do not fit, they go back to the body:
/// each gets a slot after the body's scratch and is copied there. Returns
/// the scratch with those slots.
int64_t KernelScheduler::chooseStagedInputs(int64_t scratch) {
  if (roundUp(scratch, 4) + 2 * stageElements > kMaxStagedScratch) {
    for (auto [op, offset] : stagedShifts) {
      Value shifted = op->getResult(0);
      placed.erase(shifted);
      places[shifted] = {0, scratch};
      op->setAttr(FPDialect::getSlotAttrName(),
                  builder.getI64IntegerAttr(scratch));
      scratch += TokenShape(shifted.getType()).elements();
    }
    stagedShifts.clear();
    stageElements = 0;
  }
  for (auto [op, offset] : stagedShifts)
    op->setAttr(FPDialect::getStagedAttrName(),
                builder.getI64IntegerAttr(offset));
  const int64_t base = roundUp(scratch, 4);
  Block *body = kernel.getBodyBlock();
  SmallVector<int64_t> staged;
  for (BlockArgument arg : body->getArguments()) {
    TokenShape shape(arg.getType());
    // Only the rows the call reads at its own token.
    if (!shape.perToken ||
        (!arg.use_empty() && llvm::all_of(arg.getUsers(), [](Operation *user) {
          return isa<ShiftOp, tensor::DimOp>(user);
        })))
      continue;
    const int64_t size = roundUp(shape.elements(), 8);
    if (base + 2 * (stageElements + size) > kMaxStagedScratch)
      continue;
    staged.append({static_cast<int64_t>(arg.getArgNumber()), stageElements});
    stageElements += size;
  }
  if (!staged.empty())
    kernel->setAttr(FPDialect::getStagedInputsAttrName(),
                    builder.getDenseI64ArrayAttr(staged));
  return scratch;
}

/// Gives each scan its state in `state`, those held in registers on CUDA
/// last.
void KernelScheduler::assignState() {
  int64_t state = 0, registerState = 0;
  auto setOffset = [&](Operation *op) {
    op->setAttr(FPDialect::getStateOffsetAttrName(),
                builder.getI64IntegerAttr(state));
  };
  SmallVector<SelectiveScanOp> inRegisters;
  for (Operation *op : ops) {
    if (auto scan = dyn_cast<SelectiveScanOp>(op)) {
      if (scanStateInRegisters(scan)) {
        inRegisters.push_back(scan);
        continue;
      }
      TokenShape a(scan.getA().getType());
      setOffset(op);
      state += 2 * a.elements() + a.dims[0];
    } else if (auto scan = dyn_cast<ScanOp>(op)) {
      setOffset(op);
      state += 2 * TokenShape(scan.getType()).elements();
    }
  }
  for (SelectiveScanOp scan : inRegisters) {
    TokenShape a(scan.getA().getType());
    setOffset(scan);
    scan->setAttr(FPDialect::getRegistersAttrName(), builder.getUnitAttr());
    state += 2 * a.elements() + a.dims[0];
    registerState += 2 * a.elements() + a.dims[0];
  }
  kernel->setAttr(FPDialect::getStateSizeAttrName(),
                  builder.getI64IntegerAttr(state));
  kernel->setAttr(FPDialect::getRegisterStateAttrName(),
                  builder.getI64IntegerAttr(registerState));
}

/// The ops a chunk's summary pass runs, in body order: every scan and what
/// its operands are computed from. False when the kernel cannot run in
/// chunks: no scan may read another scan's result, and every selective
/// scan's A must be (a view of) a uniform input.
bool KernelScheduler::summarySlice(SmallVectorImpl<Operation *> &slice) const {
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

//===----------------------------------------------------------------------===//
// Effects and barriers
//===----------------------------------------------------------------------===//

/// Appends the team's access to `value`'s storage, all of it or its first
/// element, where the pass stores the value.
void KernelScheduler::access(Value value, bool write, bool owned,
                             SmallVectorImpl<Access> &accesses,
                             bool first) const {
  std::optional<Place> place = placeOf(value);
  if (!place)
    return;
  int64_t elements = first ? 1 : TokenShape(value.getType()).elements();
  accesses.push_back(
      {place->space, place->offset, place->offset + elements, write, owned});
}

/// A chain's accesses as its element loop makes them: element i of each
/// operand it does not hold in a register, element 0 of a broadcast one,
/// element i of each result read after it; a row sum at its end reduces
/// over the team.
Effect KernelScheduler::chainEffect(const Chain &chain) const {
  Effect effect;
  llvm::SmallPtrSet<Operation *, 8> members(chain.ops.begin(), chain.ops.end());
  auto read = [&](Value value) {
    Operation *def = root(value).getDefiningOp();
    auto slice = value.getDefiningOp<SliceOp>();
    if (def && members.contains(def) && (!slice || slice.getStart() == 0))
      return;
    if (isUniformValue(value))
      return;
    access(value, /*write=*/false, /*owned=*/true, effect.before);
  };
  for (Operation *op : chain.ops) {
    if (auto broadcast = dyn_cast<BroadcastOp>(op)) {
      if (!isUniformValue(broadcast.getInput()))
        access(broadcast.getInput(), /*write=*/false, /*owned=*/false,
               effect.before, /*first=*/true);
    } else if (isElementwise(op)) {
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
Effect KernelScheduler::uniformEffect(Operation *op) const {
  Effect effect;
  if (auto reduce = dyn_cast<ReduceSumOp>(op)) {
    access(reduce.getInput(), /*write=*/false, /*owned=*/true, effect.before);
    effect.barrier = true;
    return effect;
  }
  for (Value operand : op->getOperands())
    if (!isUniformValue(operand))
      access(operand, /*write=*/false, /*owned=*/false, effect.before,
             /*first=*/true);
  return effect;
}

/// The accesses of an op computed by one call of Fused.h: an elementwise op
/// or a constant's fill is an element loop, and a scan step touches the
/// channels a member owns; a norm of a single row long enough for the
/// whole team (fp::fused::forEachRow) reads its input element by element
/// before its first reduction and after it, and writes its result so; any
/// other op may touch any element of its operands, results and temporary.
Effect KernelScheduler::opEffect(Operation *op) const {
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
  if (isElementwise(op) || isa<tensor::SplatOp, arith::ConstantOp>(op)) {
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
    auto [offset, size] = it->second;
    effect.before.push_back({0, offset, offset + size, true, false});
  }
  return effect;
}

/// Records a barrier of `pass` before `before` where `effect` needs one.
void KernelScheduler::barrierFor(Operation *before, const Effect &effect,
                                 Pass pass) {
  if (hazards.needsBarrier(effect)) {
    auto &[call, summary] = barriers[before];
    (pass == Pass::Call ? call : summary) = true;
    hazards.barrier();
  }
  hazards.record(effect);
}

/// Places the barriers of `pass` over `body` in the order its ops run:
/// views, ops that compute no tensor and staged shifts run nothing; a
/// uniform scalar and a chain (at its first op) run as a whole, any other
/// op as one call. The body starts after a barrier.
void KernelScheduler::placeBarriers(ArrayRef<Operation *> body, Pass pass) {
  hazards.barrier();
  for (Operation *op : body) {
    if (isView(op) || computesNoTensor(op))
      continue;
    if (pass == Pass::Call && op->hasAttr(FPDialect::getStagedAttrName()))
      continue;
    auto chain = chainOf.find(op);
    if (uniforms.contains(op) && chain == chainOf.end()) {
      barrierFor(op, uniformEffect(op), pass);
      continue;
    }
    if (chain != chainOf.end()) {
      if (op == chains[chain->second].ops.front())
        barrierFor(op, chainEffect(chains[chain->second]), pass);
      continue;
    }
    barrierFor(op, opEffect(op), pass);
  }
}

/// Records the chains found in `pass` on their ops.
void KernelScheduler::recordChains(Pass pass) {
  for (auto [op, index] : chainOf) {
    Attribute chain = builder.getI64IntegerAttr(index);
    if (pass == Pass::Call)
      op->setAttr(FPDialect::getChainAttrName(), chain);
    else
      setSummaryField(op, "chain", chain);
  }
}

void KernelScheduler::run() {
  Block *body = kernel.getBodyBlock();
  for (Operation &op : body->without_terminator())
    ops.push_back(&op);

  // Inputs have storage of their own; a value the body computes goes
  // straight to the first result that yields it.
  for (BlockArgument arg : body->getArguments())
    placed.insert(arg);
  for (auto [j, value] : llvm::enumerate(kernel.getYield().getValues())) {
    Operation *def = value.getDefiningOp();
    if (!def || isView(def) || placed.contains(value))
      continue;
    placed.insert(value);
    places[value] = {1 + static_cast<int>(j), 0};
    def->setAttr(FPDialect::getOutAttrName(), builder.getI64IntegerAttr(j));
  }

  findUniforms();
  for (Operation *op : uniforms)
    op->setAttr(FPDialect::getUniformAttrName(), builder.getUnitAttr());
  findChains(ops);
  recordChains(Pass::Call);
  const bool staging = kernel.isSequential() && stageInputs && stagingAllowed();
  if (staging)
    stageShifts();
  int64_t scratch = allocateScratch(ops, /*toTheEnd=*/true, Pass::Call);
  if (staging)
    scratch = chooseStagedInputs(scratch);
  assignState();

  // The call's barriers, and one before the copies of the results not
  // computed in place (a reshaped or repeated value), after the body.
  placeBarriers(ops, Pass::Call);
  Operation *yield = kernel.getYield();
  for (auto [j, value] : llvm::enumerate(kernel.getYield().getValues())) {
    std::optional<Place> place = placeOf(value);
    if (place && place->space == 1 + static_cast<int>(j) && place->offset == 0)
      continue;
    int64_t elements = TokenShape(value.getType()).elements();
    Effect copy;
    access(value, /*write=*/false, /*owned=*/true, copy.before);
    copy.before.push_back(
        {1 + static_cast<int>(j), 0, elements, /*write=*/true, true});
    barrierFor(yield, copy, Pass::Call);
  }

  // The summary pass: the scans take their summary steps, the other ops of
  // the slice run as in the call, with scratch slots of their own (the
  // summary writes no result, so values the call computes into its results
  // live in scratch here; the scans' results keep their places).
  SmallVector<Operation *> slice;
  if (kernel.isSequential() && summarySlice(slice)) {
    int64_t carry = 0;
    for (Operation *op : slice) {
      op->setAttr(FPDialect::getSummaryAttrName(),
                  builder.getDictionaryAttr({}));
      int64_t size = 0;
      if (auto scan = dyn_cast<SelectiveScanOp>(op)) {
        TokenShape a(scan.getA().getType());
        size = a.elements() + a.dims[0];
      } else if (auto scan = dyn_cast<ScanOp>(op)) {
        size = 2 * TokenShape(scan.getType()).elements();
      } else {
        for (Value result : op->getResults())
          if (root(result) == result) {
            placed.erase(result);
            places.erase(result);
          }
        continue;
      }
      op->setAttr(FPDialect::getCarryOffsetAttrName(),
                  builder.getI64IntegerAttr(carry));
      carry += size;
    }
    kernel->setAttr(FPDialect::getCarrySizeAttrName(),
                    builder.getI64IntegerAttr(carry));
    temporaries.clear();
    findChains(slice);
    recordChains(Pass::Summary);
    scratch = std::max(
        scratch, allocateScratch(slice, /*toTheEnd=*/false, Pass::Summary));
    placeBarriers(slice, Pass::Summary);
  }

  // The stage buffers come after the scratch of the call and of the
  // summary pass.
  if (!stagedShifts.empty() ||
      kernel->hasAttr(FPDialect::getStagedInputsAttrName())) {
    const int64_t offset = roundUp(scratch, 4);
    kernel->setAttr(FPDialect::getStageOffsetAttrName(),
                    builder.getI64IntegerAttr(offset));
    scratch = offset + 2 * stageElements;
  }
  kernel->setAttr(FPDialect::getStageSizeAttrName(),
                  builder.getI64IntegerAttr(stageElements));
  kernel->setAttr(FPDialect::getScratchSizeAttrName(),
                  builder.getI64IntegerAttr(scratch));

  OpBuilder insert(kernel.getContext());
  for (auto [before, passes] : barriers) {
    insert.setInsertionPoint(before);
    auto barrier = BarrierOp::create(insert, before->getLoc(), passes.first,
                                     passes.second);
    (void)barrier;
  }
}

namespace {
struct FpScheduleKernelsPass
    : public fp::impl::FpScheduleKernelsBase<FpScheduleKernelsPass> {
  using FpScheduleKernelsBase::FpScheduleKernelsBase;

  void runOnOperation() override {
    getOperation().walk([&](KernelOp kernel) {
      if (kernel->hasAttr(FPDialect::getScratchSizeAttrName()))
        return; // scheduled already
      KernelScheduler(kernel, stageInputs).run();
    });
  }
};
} // namespace
