//===- DeriveChunked.cpp - Chunked, stateful forms of layers ----*- C++ -*-===//
//
// fp-derive-chunked: for every layer @L, a function @L.chunk that runs a
// chunk of each sequence from the state the tokens before it left and
// returns the state it leaves (docs/streaming.md). Every op that couples
// tokens becomes its chunked form (fp.chunk_shift, fp.chunk_scan,
// fp.chunk_selective_scan, fp.chunk_causal_conv), whose state is a new
// argument and whose next state a new result; a function that calls one
// gets both, through every call.
//
// A fixed-point loop applies its map many times, each from the chunk's
// initial state; the state the chunk leaves is that of the map applied to
// the fixed point. Where the layer applies it there itself (`ŷ = f(y*)`, the
// value its output is computed from), a call inside the loop's body shares
// the states of that call and its next states are dropped; where the layer
// returns the fixed point itself, the chunked form applies the map once
// more after the loop for the state alone. The pass runs before the
// inliner, while maps are still calls.
//
//===----------------------------------------------------------------------===//

#include "fp/Dialect/FpOps.h"
#include "fp/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <memory>

namespace mlir::fp {
#define GEN_PASS_DEF_FPDERIVECHUNKED
#include "fp/Transforms/Passes.h.inc"
} // namespace mlir::fp

using namespace mlir;
using namespace mlir::fp;

namespace {

/// What every error of the pass ends with: how to compile without it.
constexpr const char *kWithout =
    " (`fpc --no-chunked` leaves the chunked form out)";

/// The chunked form of a function: the states are its last `names.size()`
/// arguments and results, in the same order.
struct ChunkedFunction {
  mutable func::FuncOp fn;
  SmallVector<std::string> names;
};

/// A state an op or call of a function reads: its type and name.
struct StateUse {
  Type type;
  std::string name;
};

/// The type of the state the chunked form of a time-coupling op reads, or
/// null for an op that couples no tokens (or one of width 1).
Type stateTypeOf(Operation *op) {
  auto tokens = [](Value value, int64_t rows) -> Type {
    auto type = cast<RankedTensorType>(value.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[1] = rows;
    return RankedTensorType::get(shape, type.getElementType());
  };
  return llvm::TypeSwitch<Operation *, Type>(op)
      .Case([&](ShiftOp shift) {
        return tokens(shift.getInput(),
                      static_cast<int64_t>(shift.getOffset()));
      })
      .Case([&](ScanOp scan) { return tokens(scan.getInput(), 1); })
      .Case([&](SelectiveScanOp scan) -> Type {
        auto u = cast<RankedTensorType>(scan.getU().getType());
        auto a = cast<RankedTensorType>(scan.getA().getType());
        return RankedTensorType::get(
            {u.getDimSize(0), a.getDimSize(0), a.getDimSize(1)},
            u.getElementType());
      })
      .Case([&](CausalConvOp conv) -> Type {
        int64_t width =
            cast<RankedTensorType>(conv.getWeight().getType()).getDimSize(1);
        return width > 1 ? tokens(conv.getInput(), width - 1) : Type();
      })
      .Default([](Operation *) { return Type(); });
}

/// Checks that an op the chunked form cannot continue a sequence through is
/// not there: an anti-causal shift or a reverse scan reads later tokens.
LogicalResult checkCausal(Operation *op) {
  if (auto shift = dyn_cast<ShiftOp>(op);
      shift && static_cast<int64_t>(shift.getOffset()) < 0)
    return shift.emitOpError("cannot be run in chunks: it reads later tokens "
                             "(offset ")
           << static_cast<int64_t>(shift.getOffset()) << ")" << kWithout;
  if (auto scan = dyn_cast<ScanOp>(op); scan && scan.getReverse())
    return scan.emitOpError("cannot be run in chunks: a reverse scan reads "
                            "later tokens")
           << kWithout;
  return success();
}

/// Rewrites a time-coupling op into its chunked form reading `state`;
/// returns the next state.
Value rewriteOp(OpBuilder &b, Operation *op, Value state) {
  b.setInsertionPoint(op);
  Location loc = op->getLoc();
  auto replace = [&](Operation *chunked) {
    op->getResult(0).replaceAllUsesWith(chunked->getResult(0));
    op->erase();
    return chunked->getResult(1);
  };
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](ShiftOp shift) {
        return replace(ChunkShiftOp::create(b, loc, shift.getType(),
                                            state.getType(), shift.getInput(),
                                            state, shift.getOffsetAttr()));
      })
      .Case([&](ScanOp scan) {
        return replace(ChunkScanOp::create(b, loc, scan.getType(),
                                           state.getType(), scan.getCoeff(),
                                           scan.getInput(), state));
      })
      .Case([&](SelectiveScanOp scan) {
        return replace(ChunkSelectiveScanOp::create(
            b, loc, scan.getType(), state.getType(), scan.getU(),
            scan.getDelta(), scan.getA(), scan.getB(), scan.getC(), state,
            scan.getD()));
      })
      .Case([&](CausalConvOp conv) {
        return replace(ChunkCausalConvOp::create(
            b, loc, conv.getType(), state.getType(), conv.getInput(),
            conv.getWeight(), state, conv.getBias()));
      });
}

class ChunkDeriver {
public:
  explicit ChunkDeriver(ModuleOp module) : module(module), symbols(module) {}

  /// The chunked form of `fn`, or null when nothing in it couples tokens;
  /// created once per function.
  FailureOr<const ChunkedFunction *> derive(func::FuncOp fn);

private:
  ModuleOp module;
  SymbolTable symbols;
  /// Owned one by one: callers keep pointers while others are added.
  llvm::DenseMap<Operation *, std::unique_ptr<ChunkedFunction>> chunked;
  llvm::DenseSet<Operation *> stateless;
};

/// The loop whose body holds `op`, if any, below `fn`.
FixedPointOp enclosingLoop(Operation *op) {
  return op->getParentOfType<FixedPointOp>();
}

/// Whether `outer`, a call after `loop`, applies the map that `inner`, a
/// call in the loop's body, applies to the iterates: the same callee, the
/// loop's fixed points in place of its iterates, and the other operands
/// the same values.
bool appliesMapAtFixedPoint(func::CallOp inner, func::CallOp outer,
                            FixedPointOp loop) {
  if (inner.getCallee() != outer.getCallee() ||
      inner.getNumOperands() != outer.getNumOperands())
    return false;
  Block *body = loop.getBodyBlock();
  for (auto [in, out] :
       llvm::zip_equal(inner.getOperands(), outer.getOperands())) {
    auto arg = dyn_cast<BlockArgument>(in);
    Value expected = arg && arg.getOwner() == body
                         ? loop.getFixedPoints()[arg.getArgNumber()]
                         : in;
    if (out != expected)
      return false;
  }
  return true;
}

FailureOr<const ChunkedFunction *> ChunkDeriver::derive(func::FuncOp fn) {
  if (auto it = chunked.find(fn); it != chunked.end())
    return static_cast<const ChunkedFunction *>(it->second.get());
  if (stateless.contains(fn))
    return static_cast<const ChunkedFunction *>(nullptr);
  if (fn.isExternal())
    return fn.emitOpError("cannot derive the chunked form of an external "
                          "function"),
           failure();

  // What in `fn` couples tokens: its ops, and calls of functions whose
  // ops do, in order.
  struct Coupling {
    Operation *op;
    SmallVector<StateUse> states;
    const ChunkedFunction *callee = nullptr;
  };
  SmallVector<Coupling> couplings;
  WalkResult walk = fn.walk([&](Operation *op) -> WalkResult {
    if (failed(checkCausal(op)))
      return WalkResult::interrupt();
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee)
        return call.emitOpError("calls an unknown function"),
               WalkResult::interrupt();
      FailureOr<const ChunkedFunction *> inner = derive(callee);
      if (failed(inner))
        return WalkResult::interrupt();
      if (!*inner)
        return WalkResult::advance();
      Coupling coupling{op, {}, *inner};
      auto args = (*inner)->fn.getArgumentTypes();
      for (auto [i, name] : llvm::enumerate((*inner)->names))
        coupling.states.push_back(
            {args[args.size() - (*inner)->names.size() + i], name});
      couplings.push_back(std::move(coupling));
      return WalkResult::advance();
    }
    if (Type state = stateTypeOf(op))
      couplings.push_back(
          {op,
           {{state,
             (fn.getSymName() + "." + op->getName().stripDialect()).str()}}});
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (couplings.empty()) {
    stateless.insert(fn);
    return static_cast<const ChunkedFunction *>(nullptr);
  }

  // The states of `fn`: those of its couplings outside loops, in order. A
  // coupling in a loop's body shares those of its application after the
  // loop (a call; an op of its own there has no state at the loop's end).
  llvm::DenseMap<Operation *, unsigned> firstState;
  llvm::DenseMap<Operation *, Operation *> sharesWith;
  ChunkedFunction result;
  llvm::StringMap<unsigned> uses;
  SmallVector<Type> stateTypes;
  for (Coupling &coupling : couplings) {
    if (enclosingLoop(coupling.op))
      continue;
    firstState[coupling.op] = stateTypes.size();
    for (StateUse &state : coupling.states) {
      unsigned n = ++uses[state.name];
      result.names.push_back(n == 1 ? state.name
                                    : state.name + "#" + std::to_string(n));
      stateTypes.push_back(state.type);
    }
  }
  for (Coupling &coupling : couplings) {
    FixedPointOp loop = enclosingLoop(coupling.op);
    if (!loop)
      continue;
    auto inner = dyn_cast<func::CallOp>(coupling.op);
    if (!inner)
      return coupling.op->emitOpError(
                 "cannot be run in chunks: it couples tokens inside a "
                 "fixed-point body outside a map (fp-derive-chunked runs "
                 "before the inliner, while maps are calls)")
                 << kWithout,
             failure();
    auto *partner = llvm::find_if(couplings, [&](const Coupling &other) {
      auto outer = dyn_cast<func::CallOp>(other.op);
      return outer && !enclosingLoop(outer) &&
             appliesMapAtFixedPoint(inner, outer, loop);
    });
    if (partner != couplings.end()) {
      sharesWith[inner] = partner->op;
      continue;
    }
    // The layer returns the fixed point itself: the chunk's state is that
    // of one more application of the map to it, made for the state alone.
    for (Value operand : inner.getOperands())
      if (!isa<BlockArgument>(operand) &&
          loop->isProperAncestor(operand.getDefiningOp()))
        return inner.emitOpError("cannot be run in chunks: the map is not "
                                 "applied after the loop, and its operands "
                                 "are computed in the loop, so it cannot be "
                                 "applied there for the chunk's state")
                   << kWithout,
               failure();
    firstState[inner] = stateTypes.size();
    for (StateUse &state : coupling.states) {
      unsigned n = ++uses[state.name];
      result.names.push_back(n == 1 ? state.name
                                    : state.name + "#" + std::to_string(n));
      stateTypes.push_back(state.type);
    }
  }

  // The chunked function: a copy with the states appended to its
  // arguments and results.
  OpBuilder b(module.getContext());
  b.setInsertionPointAfter(fn);
  auto copy = cast<func::FuncOp>(b.clone(*fn));
  copy.setSymName((fn.getSymName() + ".chunk").str());
  symbols.insert(copy);
  Block &entry = copy.getBody().front();
  const unsigned numArgs = entry.getNumArguments();
  for (Type type : stateTypes)
    entry.addArgument(type, fn.getLoc());
  auto stateArg = [&](unsigned i) { return entry.getArgument(numArgs + i); };

  // The copy's couplings: the ops at the original's positions in walk
  // order.
  SmallVector<Operation *> copied;
  {
    llvm::DenseMap<Operation *, unsigned> position;
    unsigned next = 0;
    fn.walk([&](Operation *op) { position[op] = next++; });
    SmallVector<Operation *> ops;
    copy.walk([&](Operation *op) { ops.push_back(op); });
    for (Coupling &coupling : couplings)
      copied.push_back(ops[position.lookup(coupling.op)]);
  }

  SmallVector<Value> next(stateTypes.size());
  for (auto [coupling, op] : llvm::zip_equal(couplings, copied)) {
    Operation *owner = coupling.op;
    if (auto it = sharesWith.find(owner); it != sharesWith.end())
      owner = it->second;
    const unsigned first = firstState.lookup(owner);
    const bool inLoop = enclosingLoop(op) != nullptr;
    if (!coupling.callee) {
      Value state = rewriteOp(b, op, stateArg(first));
      if (!inLoop)
        next[first] = state;
      continue;
    }
    auto call = cast<func::CallOp>(op);
    SmallVector<Value> operands(call.getOperands());
    for (unsigned i = 0; i < coupling.states.size(); ++i)
      operands.push_back(stateArg(first + i));
    b.setInsertionPoint(call);
    auto chunkedCall =
        func::CallOp::create(b, call.getLoc(), coupling.callee->fn, operands);
    const unsigned numResults = call.getNumResults();
    for (unsigned i = 0; i < numResults; ++i)
      call.getResult(i).replaceAllUsesWith(chunkedCall.getResult(i));
    Operation *last = chunkedCall;
    if (inLoop && !sharesWith.count(coupling.op)) {
      // The application to the fixed point, for its state.
      FixedPointOp loop = enclosingLoop(chunkedCall);
      Block *body = loop.getBodyBlock();
      SmallVector<Value> mapped;
      for (Value operand : chunkedCall.getOperands()) {
        auto arg = dyn_cast<BlockArgument>(operand);
        mapped.push_back(arg && arg.getOwner() == body
                             ? loop.getFixedPoints()[arg.getArgNumber()]
                             : operand);
      }
      b.setInsertionPointAfter(loop);
      last =
          func::CallOp::create(b, call.getLoc(), coupling.callee->fn, mapped);
    }
    if (!inLoop || last != chunkedCall)
      for (unsigned i = 0; i < coupling.states.size(); ++i)
        next[first + i] = last->getResult(numResults + i);
    call.erase();
  }

  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  SmallVector<Value> results(ret.getOperands());
  llvm::append_range(results, next);
  b.setInsertionPoint(ret);
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  copy.setFunctionType(b.getFunctionType(entry.getArgumentTypes(),
                                         ValueRange(results).getTypes()));
  for (auto [i, name] : llvm::enumerate(result.names))
    copy.setArgAttr(numArgs + i, "fp.state", b.getStringAttr(name));

  result.fn = copy;
  auto &owned = chunked[fn];
  owned = std::make_unique<ChunkedFunction>(std::move(result));
  return static_cast<const ChunkedFunction *>(owned.get());
}

struct FpDeriveChunkedPass
    : public mlir::fp::impl::FpDeriveChunkedBase<FpDeriveChunkedPass> {
  using FpDeriveChunkedBase::FpDeriveChunkedBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> layers;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr("fp.layer") && !fn.isExternal())
        layers.push_back(fn);
    ChunkDeriver deriver(module);
    for (func::FuncOp layer : layers) {
      FailureOr<const ChunkedFunction *> chunk = deriver.derive(layer);
      if (failed(chunk))
        return signalPassFailure();
      func::FuncOp fn;
      if (*chunk) {
        fn = (*chunk)->fn;
      } else {
        // Nothing couples tokens: the chunked form is the layer itself,
        // with no state.
        OpBuilder b(layer);
        b.setInsertionPointAfter(layer);
        fn = cast<func::FuncOp>(b.clone(*layer));
        fn.setSymName((layer.getSymName() + ".chunk").str());
      }
      fn->removeAttr("fp.layer");
      fn.setPublic();
      fn->setAttr("fp.chunk_of",
                  FlatSymbolRefAttr::get(layer.getSymNameAttr()));
    }
  }
};

} // namespace
