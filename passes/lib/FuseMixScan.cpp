//===- FuseMixScan.cpp - Group per-token work into kernels ------*- C++ -*-===//
//
// fp-fuse-mix-scan: partitions the per-token operations of every block into
// convex groups grown along data edges, outlines each group of two or more
// operations into an fp.kernel, and moves the time shifts and the splat
// constants that kernels read into them.
//
//===----------------------------------------------------------------------===//

#include "fp/Dialect/FpOps.h"
#include "fp/Transforms/Passes.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::fp {
#define GEN_PASS_DEF_FPFUSEMIXSCAN
#include "fp/Transforms/Passes.h.inc"
} // namespace mlir::fp

using namespace mlir;
using namespace mlir::fp;

//===----------------------------------------------------------------------===//
// Grouping
//===----------------------------------------------------------------------===//

namespace {

/// The groups of one block. Every operation of the block is a node; the
/// operations of a group act as one node of the quotient graph, which stays
/// acyclic as groups grow.
class BlockGrouping {
public:
  BlockGrouping(Block &block, bool withScans) : block(block) {
    for (Operation &op : block)
      position[&op] = position.size();
    for (Operation &op : block)
      if (isPerTokenOp(&op, withScans))
        place(&op);
    mergeSiblings();
  }

  /// The groups of two or more operations, each in block order.
  SmallVector<SmallVector<Operation *>> kernels() const {
    SmallVector<SmallVector<Operation *>> result;
    for (const auto &members : groups)
      if (members.size() >= 2)
        result.push_back(members);
    return result;
  }

private:
  Block &block;
  llvm::DenseMap<Operation *, int64_t> position;
  llvm::DenseMap<Operation *, int64_t> groupOf;
  SmallVector<SmallVector<Operation *>> groups;

  /// The operation of this block that is or contains `op`, or null.
  Operation *inBlock(Operation *op) const {
    return block.findAncestorOpInBlock(*op);
  }

  /// The operations of this block that read a result of `op` (directly or
  /// inside a region).
  SmallVector<Operation *> users(Operation *op) const {
    SmallVector<Operation *> result;
    for (Operation *user : op->getUsers())
      if (Operation *top = inBlock(user); top && top != op)
        result.push_back(top);
    return result;
  }

  /// Whether `set` is convex in the quotient graph: no path from it leaves
  /// it and returns. Paths are followed through whole groups.
  bool isConvex(const llvm::DenseSet<Operation *> &set) const {
    int64_t last = 0;
    for (Operation *op : set)
      last = std::max(last, position.lookup(op));
    SmallVector<Operation *> worklist;
    llvm::DenseSet<Operation *> seen;
    auto visit = [&](Operation *op) {
      if (position.lookup(op) > last || !seen.insert(op).second)
        return;
      worklist.push_back(op);
    };
    for (Operation *op : set)
      for (Operation *user : users(op))
        if (!set.contains(user))
          visit(user);
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (set.contains(op))
        return false;
      if (auto it = groupOf.find(op); it != groupOf.end())
        for (Operation *member : groups[it->second])
          visit(member);
      for (Operation *user : users(op))
        visit(user);
    }
    return true;
  }

  /// Puts `op` into the union of its producers' groups if that is convex,
  /// else into the first producer group it can join, else alone.
  void place(Operation *op) {
    llvm::SetVector<int64_t> candidates;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (auto it = groupOf.find(def); it != groupOf.end())
          candidates.insert(it->second);

    auto withOp = [&](ArrayRef<int64_t> ids) {
      llvm::DenseSet<Operation *> set{op};
      for (int64_t id : ids)
        set.insert(groups[id].begin(), groups[id].end());
      return set;
    };
    if (candidates.size() > 1 && isConvex(withOp(candidates.getArrayRef())))
      return join(op, candidates.getArrayRef());
    for (int64_t id : candidates)
      if (isConvex(withOp({id})))
        return join(op, {id});
    groupOf[op] = groups.size();
    groups.push_back({op});
  }

  /// Whether group `id` holds a scan, so that its kernel runs tokens in
  /// time order.
  bool holdsScan(int64_t id) const {
    return llvm::any_of(groups[id], [](Operation *op) {
      return isa<ScanOp, SelectiveScanOp>(op);
    });
  }

  /// Whether groups `a` and `b` read a per-token value defined outside
  /// both.
  bool shareAnInput(int64_t a, int64_t b) const {
    auto inside = [&](Value value) {
      Operation *def = value.getDefiningOp();
      auto it = def ? groupOf.find(def) : groupOf.end();
      return it != groupOf.end() && it->second == a;
    };
    llvm::DenseSet<Value> inputs;
    for (Operation *op : groups[a])
      for (Value operand : op->getOperands())
        if (!inside(operand) && isPerTokenType(operand.getType()))
          inputs.insert(operand);
    for (Operation *op : groups[b])
      for (Value operand : op->getOperands())
        if (inputs.contains(operand))
          return true;
    return false;
  }

  /// Merges kernels that run per token and read a common per-token input,
  /// where the union stays convex: one launch instead of two, and the
  /// common input is read once per token. (With its scans out of the fused
  /// kernels, the work before a selective scan falls into the mixer's chain and
  /// B's and C's, siblings that read one row of the loop's product.) Kernels
  /// that hold a scan are left alone: merging would put per-token work in time
  /// order.
  void mergeSiblings() {
    bool merged = true;
    while (merged) {
      merged = false;
      for (int64_t a = 0, e = groups.size(); a < e && !merged; ++a) {
        if (groups[a].size() < 2 || holdsScan(a))
          continue;
        for (int64_t b = a + 1; b < e && !merged; ++b) {
          if (groups[b].size() < 2 || holdsScan(b) || !shareAnInput(a, b))
            continue;
          llvm::DenseSet<Operation *> set(groups[a].begin(), groups[a].end());
          set.insert(groups[b].begin(), groups[b].end());
          if (!isConvex(set))
            continue;
          for (Operation *member : groups[b])
            groupOf[member] = a;
          groups[a].append(groups[b]);
          groups[b].clear();
          llvm::sort(groups[a], [&](Operation *x, Operation *y) {
            return position.lookup(x) < position.lookup(y);
          });
          merged = true;
        }
      }
    }
  }

  /// Merges groups `ids` into the first and appends `op`.
  void join(Operation *op, ArrayRef<int64_t> ids) {
    int64_t into = ids.front();
    for (int64_t id : ids.drop_front()) {
      for (Operation *member : groups[id])
        groupOf[member] = into;
      groups[into].append(groups[id]);
      groups[id].clear();
    }
    groups[into].push_back(op);
    groupOf[op] = into;
    llvm::sort(groups[into], [&](Operation *a, Operation *b) {
      return position.lookup(a) < position.lookup(b);
    });
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// Outlining
//===----------------------------------------------------------------------===//

/// Replaces `members` (same block, in order, convex) by one fp.kernel after
/// the last of them; operations between them that read their results move
/// after the kernel.
static void outline(ArrayRef<Operation *> members) {
  llvm::DenseSet<Operation *> inGroup(members.begin(), members.end());
  Block *block = members.front()->getBlock();

  llvm::SetVector<Value> inputs;
  SmallVector<Value> results;
  SmallVector<Location> locs;
  for (Operation *op : members) {
    locs.push_back(op->getLoc());
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || !inGroup.contains(def))
        inputs.insert(operand);
    }
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *user) {
            return !inGroup.contains(block->findAncestorOpInBlock(*user));
          }))
        results.push_back(result);
  }

  // The operations between the members that depend on them.
  llvm::DenseSet<Value> tainted;
  for (Operation *op : members)
    tainted.insert(op->result_begin(), op->result_end());
  SmallVector<Operation *> dependents;
  for (Operation *op = members.front()->getNextNode(); op != members.back();
       op = op->getNextNode()) {
    if (inGroup.contains(op))
      continue;
    bool depends = false;
    op->walk([&](Operation *inner) {
      depends |= llvm::any_of(inner->getOperands(),
                              [&](Value v) { return tainted.contains(v); });
    });
    if (!depends)
      continue;
    dependents.push_back(op);
    tainted.insert(op->result_begin(), op->result_end());
  }

  OpBuilder builder(members.back()->getContext());
  builder.setInsertionPointAfter(members.back());
  Location loc = builder.getFusedLoc(locs);
  OperationState state(loc, KernelOp::getOperationName());
  state.addOperands(inputs.getArrayRef());
  for (Value result : results)
    state.addTypes(result.getType());
  state.addRegion();
  auto kernel = cast<KernelOp>(builder.create(state));

  Block *body = builder.createBlock(&kernel.getBody());
  IRMapping mapping;
  for (Value input : inputs)
    mapping.map(input, body->addArgument(input.getType(), input.getLoc()));
  for (Operation *op : members)
    builder.clone(*op, mapping);
  SmallVector<Value> yielded;
  for (Value result : results)
    yielded.push_back(mapping.lookup(result));
  YieldOp::create(builder, loc, yielded);

  Operation *cursor = kernel;
  for (Operation *op : dependents) {
    op->moveAfter(cursor);
    cursor = op;
  }
  for (auto [result, replacement] :
       llvm::zip_equal(results, kernel.getResults()))
    result.replaceUsesWithIf(replacement, [&](OpOperand &use) {
      return !inGroup.contains(block->findAncestorOpInBlock(*use.getOwner()));
    });
  for (Operation *op : llvm::reverse(members))
    op->erase();
}

//===----------------------------------------------------------------------===//
// Shifted reads
//===----------------------------------------------------------------------===//

/// W shift(y) = shift(W y) for a map without a bias (a shift fills with
/// zeros, which a bias would not map to zero). Rewrites the maps whose
/// result's data only kernels read (its extents may be read too), so that
/// the shift moves into them.
static void commuteShiftedLinears(Operation *root) {
  SmallVector<LinearOp> candidates;
  root->walk([&](LinearOp linear) {
    auto shift = linear.getInput().getDefiningOp<ShiftOp>();
    if (shift && !linear.getBias() &&
        llvm::any_of(linear->getUsers(),
                     [](Operation *user) { return isa<KernelOp>(user); }) &&
        llvm::all_of(linear->getUsers(), [](Operation *user) {
          return isa<KernelOp, tensor::DimOp>(user);
        }))
      candidates.push_back(linear);
  });
  for (LinearOp linear : candidates) {
    auto shift = linear.getInput().getDefiningOp<ShiftOp>();
    OpBuilder builder(linear);
    auto unshifted =
        LinearOp::create(builder, linear.getLoc(), linear.getType(),
                         shift.getInput(), linear.getWeight(), linear.getGain(),
                         /*bias=*/Value());
    auto shifted = ShiftOp::create(builder, shift.getLoc(), unshifted,
                                   shift.getOffsetAttr());
    // A shift keeps the extents: the extents are read from the map.
    linear.getResult().replaceUsesWithIf(
        shifted, [](OpOperand &use) { return isa<KernelOp>(use.getOwner()); });
    linear.replaceAllUsesWith(unshifted.getResult());
    linear.erase();
    if (shift->use_empty())
      shift.erase();
  }
}

/// Moves every shift that `kernel` reads into its body: the kernel reads the
/// shift's input and shifts it per token (a shifted read), so that no
/// shifted copy is written.
static void absorbShifts(KernelOp kernel) {
  Block *body = kernel.getBodyBlock();
  OpBuilder builder = OpBuilder::atBlockBegin(body);
  for (OpOperand &operand : kernel->getOpOperands()) {
    auto shift = operand.get().getDefiningOp<ShiftOp>();
    if (!shift)
      continue;
    BlockArgument arg = body->getArgument(operand.getOperandNumber());
    auto inner =
        ShiftOp::create(builder, shift.getLoc(), arg, shift.getOffsetAttr());
    arg.replaceAllUsesExcept(inner.getResult(), inner);
    operand.set(shift.getInput());
    if (shift->use_empty())
      shift.erase();
  }
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

/// The most elements of a uniform splat constant built in a kernel's body:
/// one per thread of a CUDA team. A larger one stays an input, read from
/// memory once per token instead of written per token.
static constexpr int64_t kMaxBuiltUniformConstant = 256;

/// The scalar constant that `value` is defined by, if any.
static arith::ConstantOp scalarConstant(Value value) {
  auto constant = value.getDefiningOp<arith::ConstantOp>();
  return constant && isa<FloatAttr>(constant.getValue()) ? constant : nullptr;
}

/// Whether a kernel that reads `input` can build it in its body: a splat of
/// a constant scalar to a per-token shape, or a small uniform splat
/// constant.
static bool isBuiltInBody(Value input) {
  if (auto splat = input.getDefiningOp<tensor::SplatOp>())
    return isPerTokenType(splat.getType()) && scalarConstant(splat.getInput());
  auto constant = input.getDefiningOp<arith::ConstantOp>();
  auto dense =
      constant ? dyn_cast<DenseFPElementsAttr>(constant.getValue()) : nullptr;
  return dense && dense.isSplat() &&
         dense.getNumElements() <= kMaxBuiltUniformConstant;
}

/// Builds the constants that `kernel` reads in its body instead of taking
/// them as inputs: a per-token splat (the zeros of a slice's adjoint, a
/// norm's constants in a derived backward) would otherwise be written to a
/// batch × time buffer by a launch of its own and read back per token. A
/// per-token splat takes the batch and time extents of another per-token
/// input; without one it stays an input.
static void absorbConstants(KernelOp kernel) {
  Block *body = kernel.getBodyBlock();
  SmallVector<unsigned> absorbed;
  BlockArgument like;
  for (OpOperand &operand : kernel->getOpOperands()) {
    if (isBuiltInBody(operand.get()))
      absorbed.push_back(operand.getOperandNumber());
    else if (!like && isPerTokenType(operand.get().getType()))
      like = body->getArgument(operand.getOperandNumber());
  }
  if (absorbed.empty())
    return;

  OpBuilder builder = OpBuilder::atBlockBegin(body);
  SmallVector<Value, 2> extents;
  auto tokenExtents = [&](Location loc) -> ArrayRef<Value> {
    if (extents.empty())
      for (int64_t dim : {0, 1})
        extents.push_back(tensor::DimOp::create(builder, loc, like, dim));
    return extents;
  };
  for (unsigned index : llvm::reverse(absorbed)) {
    Operation *def = kernel->getOperand(index).getDefiningOp();
    Operation *scalar = nullptr;
    Value built;
    if (auto splat = dyn_cast<tensor::SplatOp>(def)) {
      if (!like)
        continue;
      scalar = scalarConstant(splat.getInput());
      ArrayRef<Value> sizes = tokenExtents(splat.getLoc());
      Value value = builder.clone(*scalar)->getResult(0);
      built = tensor::SplatOp::create(builder, splat.getLoc(), splat.getType(),
                                      value, sizes);
    } else {
      built = builder.clone(*def)->getResult(0);
    }
    body->getArgument(index).replaceAllUsesWith(built);
    body->eraseArgument(index);
    kernel->eraseOperand(index);
    if (!def->use_empty())
      continue;
    def->erase();
    if (scalar && scalar->use_empty())
      scalar->erase();
  }
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
struct FpFuseMixScanPass
    : public mlir::fp::impl::FpFuseMixScanBase<FpFuseMixScanPass> {
  using FpFuseMixScanBase::FpFuseMixScanBase;

  void runOnOperation() override {
    // Blocks first (inner ones before the blocks that hold them), so that
    // outlining never invalidates the walk.
    SmallVector<Block *> blocks;
    getOperation()->walk([&](Block *block) {
      if (!isa<KernelOp>(block->getParentOp()))
        blocks.push_back(block);
    });
    for (Block *block : blocks)
      for (const auto &members : BlockGrouping(*block, fuseScans).kernels())
        outline(members);
    commuteShiftedLinears(getOperation());
    getOperation()->walk(absorbShifts);
    getOperation()->walk(absorbConstants);
  }
};
} // namespace
