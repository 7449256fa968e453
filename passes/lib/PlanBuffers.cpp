//===- PlanBuffers.cpp - One workspace per layer ----------------*- C++ -*-===//
//
// fp-plan-buffers: assigns every tensor a layer computes to a buffer of one
// workspace by a linear scan over lifetimes, and records the plan in the
// discardable attributes the emitters read (fp.workspace, fp.slots,
// fp.iterate_slots). Fixed-point loops must be lowered (fp-lower-fixed-point):
// an iterate, its fp.solver_relax and the loop's result share a buffer. The
// results the caller provides memory for (the output, the saved values, a
// backward's input cotangent) get buffers of their own, marked `result`, so
// that they are computed in place rather than copied out.
//
//===----------------------------------------------------------------------===//

#include "fp/Dialect/FpOps.h"
#include "fp/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::fp {
#define GEN_PASS_DEF_FPPLANBUFFERS
#include "fp/Transforms/Passes.h.inc"
} // namespace mlir::fp

using namespace mlir;
using namespace mlir::fp;

namespace {

/// A buffer: `elements` scalars, times B and T where flagged; `result` is
/// the index of the function result it holds in place, or -1.
struct Buffer {
  int64_t elements = 0;
  bool perBatch = false, perStep = false;
  int64_t result = -1;
};

/// What a tensor of `type` needs: the product of its static extents, and
/// whether dimension 0 (batch) and 1 (time) are dynamic.
Buffer bufferFor(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  Buffer buffer{1, false, false};
  for (auto [i, size] : llvm::enumerate(tensor.getShape())) {
    if (!ShapedType::isDynamic(size))
      buffer.elements *= size;
    else if (i == 0)
      buffer.perBatch = true;
    else
      buffer.perStep = true;
  }
  return buffer;
}

/// Program positions: ops numbered in pre-order (kernel bodies are one
/// position); each loop also has an end position after its body.
struct Positions {
  llvm::DenseMap<Operation *, int64_t> at, loopEnd;

  void number(Block &block, int64_t &next) {
    for (Operation &op : block) {
      at[&op] = next++;
      if (!isa<KernelOp>(op))
        for (Region &region : op.getRegions())
          for (Block &inner : region)
            number(inner, next);
      if (isa<scf::WhileOp>(op))
        loopEnd[&op] = next++;
    }
  }

  int64_t def(Value value) const {
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      Operation *owner = arg.getOwner()->getParentOp();
      return isa<func::FuncOp>(owner) ? -1 : at.lookup(owner);
    }
    Operation *op = value.getDefiningOp();
    return isa<scf::WhileOp>(op) ? loopEnd.lookup(op) : at.lookup(op);
  }

  /// The last position at which `user` may read `value`: its own, or the
  /// end of the outermost loop around it that `value` is defined outside
  /// of, because every iteration reads it again.
  int64_t use(Value value, Operation *user) const {
    int64_t pos = at.lookup(user);
    Operation *defScope =
        isa<BlockArgument>(value)
            ? cast<BlockArgument>(value).getOwner()->getParentOp()
            : value.getDefiningOp();
    for (Operation *p = user->getParentOp(); p; p = p->getParentOp()) {
      if (!isa<scf::WhileOp>(p))
        continue;
      bool inside = p == defScope || p->isProperAncestor(defScope);
      if (!inside)
        pos = std::max(pos, loopEnd.lookup(p));
    }
    return pos;
  }
};

/// Plans one layer function; fails, with an error, on a loop that is not
/// lowered.
LogicalResult planLayer(func::FuncOp layer) {
  SmallVector<LoweredLoop> loops;
  WalkResult lowered = layer.walk([&](Operation *op) {
    if (isa<FixedPointOp>(op))
      return op->emitOpError("must be lowered before buffer planning (run "
                             "fp-lower-fixed-point, which fp-pipeline does)"),
             WalkResult::interrupt();
    if (auto loop = dyn_cast<scf::WhileOp>(op)) {
      FailureOr<LoweredLoop> parts = matchLoweredLoop(loop);
      if (failed(parts))
        return WalkResult::interrupt();
      loops.push_back(std::move(*parts));
    }
    return WalkResult::advance();
  });
  if (lowered.wasInterrupted())
    return failure();

  Positions positions;
  int64_t next = 0;
  positions.number(layer.getBody().front(), next);

  // The values that need a buffer, in definition order; the values that
  // share another's storage.
  SmallVector<Value> buffered;
  llvm::DenseMap<Value, Value> aliasOf;
  layer.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<ParamOp>(op))
      return WalkResult::advance();
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      aliasOf[reshape] = reshape.getInput();
      return WalkResult::advance();
    }
    // A transpose read only by GEMMs is not materialised: they read its
    // input, which therefore lives as long as the transpose's readers.
    if (auto transpose = dyn_cast<TransposeOp>(op);
        transpose && transpose.isReadOnlyAsLinearWeight()) {
      aliasOf[transpose] = transpose.getInput();
      return WalkResult::advance();
    }
    // Likewise a slice its readers read where it lies in its input.
    if (auto slice = dyn_cast<SliceOp>(op); slice && slice.isReadInPlace()) {
      aliasOf[slice] = slice.getInput();
      return WalkResult::advance();
    }
    // A loop's iterate is its condition block's argument; the step's
    // argument, the relaxed value and the loop's result are the same
    // storage. The initial value is copied in.
    if (auto loop = dyn_cast<scf::WhileOp>(op)) {
      for (auto [iterate, stepArg, result] :
           llvm::zip_equal(loop.getBeforeArguments(), loop.getAfterArguments(),
                           loop.getResults())) {
        buffered.push_back(iterate);
        aliasOf[stepArg] = iterate;
        aliasOf[result] = iterate;
      }
      return WalkResult::advance();
    }
    if (auto relax = dyn_cast<SolverRelaxOp>(op)) {
      aliasOf[relax] = relax.getCurrent();
      return WalkResult::advance();
    }
    // Iteration counts go to the solver statistics, not the workspace.
    if (isa<SolverIterationsOp>(op))
      return WalkResult::advance();
    for (Value result : op->getResults())
      if (isa<RankedTensorType>(result.getType()))
        buffered.push_back(result);
    return isa<KernelOp>(op) ? WalkResult::skip() : WalkResult::advance();
  });

  auto rootOf = [&](Value value) {
    while (aliasOf.count(value))
      value = aliasOf.lookup(value);
    return value;
  };
  llvm::DenseMap<Value, int64_t> lastUse;
  for (Value value : buffered)
    lastUse[value] = positions.def(value);
  auto noteUses = [&](Value value) {
    Value root = rootOf(value);
    auto it = lastUse.find(root);
    if (it == lastUse.end())
      return;
    for (OpOperand &use : value.getUses())
      it->second = std::max(it->second, positions.use(value, use.getOwner()));
  };
  for (Value value : buffered)
    noteUses(value);
  for (auto &entry : aliasOf)
    noteUses(entry.first);
  // An iterate is carried to the next step.
  for (LoweredLoop &parts : loops)
    for (Value iterate : parts.loop.getBeforeArguments())
      lastUse[iterate] =
          std::max(lastUse[iterate], positions.loopEnd.lookup(parts.loop));

  // The results written in place of the caller's buffers: the layer's
  // output (a backward's input cotangent) and every value a forward saves
  // for its backward. A backward's parameter gradients are accumulated into
  // the caller's, so they keep a copy. Each such result's root gets a
  // buffer that holds nothing else, so the emitters can point it at the
  // caller's memory; a root returned twice is written in place once.
  llvm::DenseSet<Value> isBuffered(buffered.begin(), buffered.end());
  llvm::DenseMap<Value, int64_t> resultOf;
  auto ret = cast<func::ReturnOp>(layer.getBody().front().getTerminator());
  const bool isBackward = layer->hasAttr("fp.backward_of");
  for (auto [index, operand] : llvm::enumerate(ret.getOperands())) {
    if (index > 0 && (isBackward || !layer.getResultAttr(index, "fp.saved")))
      continue;
    Value root = rootOf(operand);
    if (isBuffered.contains(root))
      resultOf.try_emplace(root, index);
  }

  // Linear scan: a buffer is free once its value's last use is strictly
  // before the new value's definition. Buffers only hold values with the
  // same dependence on B and T; the best-fitting free one is reused and
  // grown. A result's buffer is its own and is never freed.
  SmallVector<Buffer> buffers;
  llvm::DenseMap<Value, int64_t> slotOf;
  struct Active {
    int64_t slot, end;
  };
  SmallVector<Active> active;
  SmallVector<int64_t> freeSlots;
  for (Value value : buffered) {
    int64_t def = positions.def(value);
    for (auto *it = active.begin(); it != active.end();) {
      if (it->end < def) {
        freeSlots.push_back(it->slot);
        it = active.erase(it);
      } else {
        ++it;
      }
    }
    Buffer want = bufferFor(value.getType());
    if (auto result = resultOf.find(value); result != resultOf.end()) {
      want.result = result->second;
      slotOf[value] = buffers.size();
      buffers.push_back(want);
      continue;
    }
    int64_t chosen = -1;
    auto fits = [&](int64_t slot) {
      return buffers[slot].elements >= want.elements;
    };
    for (int64_t slot : freeSlots) {
      const Buffer &have = buffers[slot];
      if (have.perBatch != want.perBatch || have.perStep != want.perStep)
        continue;
      if (chosen < 0 || (fits(slot) && !fits(chosen)) ||
          (fits(slot) == fits(chosen) &&
           (fits(slot) ? have.elements < buffers[chosen].elements
                       : have.elements > buffers[chosen].elements)))
        chosen = slot;
    }
    if (chosen < 0) {
      chosen = buffers.size();
      buffers.push_back(want);
    } else {
      llvm::erase(freeSlots, chosen);
      buffers[chosen].elements =
          std::max(buffers[chosen].elements, want.elements);
    }
    slotOf[value] = chosen;
    active.push_back({chosen, lastUse[value]});
  }

  // Record the plan.
  Builder builder(layer.getContext());
  auto slotsOf = [&](ValueRange values) {
    SmallVector<int64_t> slots;
    for (Value value : values)
      slots.push_back(slotOf.lookup_or(value, -1));
    return builder.getDenseI64ArrayAttr(slots);
  };
  layer.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (auto loop = dyn_cast<scf::WhileOp>(op))
      op->setAttr(FPDialect::getIterateSlotsAttrName(),
                  slotsOf(loop.getBeforeArguments()));
    if (llvm::any_of(op->getResults(),
                     [&](Value v) { return slotOf.count(v); }))
      op->setAttr(FPDialect::getSlotsAttrName(), slotsOf(op->getResults()));
    return isa<KernelOp>(op) ? WalkResult::skip() : WalkResult::advance();
  });
  SmallVector<Attribute> workspace;
  for (const Buffer &buffer : buffers) {
    SmallVector<NamedAttribute> fields = {builder.getNamedAttr(
        "elements", builder.getI64IntegerAttr(buffer.elements))};
    if (buffer.perBatch)
      fields.push_back(
          builder.getNamedAttr("per_batch", builder.getUnitAttr()));
    if (buffer.perStep)
      fields.push_back(builder.getNamedAttr("per_step", builder.getUnitAttr()));
    if (buffer.result >= 0)
      fields.push_back(builder.getNamedAttr(
          "result", builder.getI64IntegerAttr(buffer.result)));
    workspace.push_back(builder.getDictionaryAttr(fields));
  }
  layer->setAttr(FPDialect::getWorkspaceAttrName(),
                 builder.getArrayAttr(workspace));
  return success();
}

struct FpPlanBuffersPass
    : public mlir::fp::impl::FpPlanBuffersBase<FpPlanBuffersPass> {
  using FpPlanBuffersBase::FpPlanBuffersBase;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (!(fn->hasAttr("fp.layer") || fn->hasAttr("fp.backward_of") ||
          fn->hasAttr("fp.chunk_of")) ||
        fn.isExternal())
      return markAllAnalysesPreserved();
    if (failed(planLayer(fn)))
      signalPassFailure();
  }
};

} // namespace
