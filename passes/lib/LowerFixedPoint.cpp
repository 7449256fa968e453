//===- LowerFixedPoint.cpp - The solver as an explicit loop -----*- C++ -*-===//
//
// fp-lower-fixed-point: rewrites fp.fixed_point into an scf.while over the
// body, with the solver's continue rule, residual, relaxation and
// bookkeeping as fp.solver_* ops that run where the data is.
//
//===----------------------------------------------------------------------===//

#include "fp/Dialect/FpOps.h"
#include "fp/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::fp {
#define GEN_PASS_DEF_FPLOWERFIXEDPOINT
#include "fp/Transforms/Passes.h.inc"
} // namespace mlir::fp

using namespace mlir;
using namespace mlir::fp;

namespace {

/// Replaces `loop` by its lowered form (see the pass description).
void lowerFixedPoint(FixedPointOp loop) {
  OpBuilder builder(loop);
  Location loc = loop.getLoc();
  ValueRange inits = loop.getInits();
  TypeRange types = inits.getTypes();

  Value solver = SolverInitOp::create(builder, loc, inits.front(),
                                      loop.getSolver(), loop.getBackward());
  auto whileOp = scf::WhileOp::create(builder, loc, types, inits);

  // Before each step: the continue rule; the iterates pass through.
  SmallVector<Location> locs(types.size(), loc);
  Block *before = builder.createBlock(&whileOp.getBefore(), {}, types, locs);
  Value go = SolverContinueOp::create(builder, loc, solver);
  scf::ConditionOp::create(builder, loc, go, before->getArguments());

  // The step: the body, then residual and relaxation of every iterate and
  // the bookkeeping.
  whileOp.getAfter().takeBody(loop.getBody());
  Block *step = &whileOp.getAfter().front();
  auto yield = cast<YieldOp>(step->getTerminator());
  builder.setInsertionPoint(yield);
  SmallVector<Value> relaxed;
  for (auto [iterate, next] :
       llvm::zip_equal(step->getArguments(), yield.getValues()))
    relaxed.push_back(
        SolverRelaxOp::create(builder, yield.getLoc(), solver, iterate, next));
  SolverUpdateOp::create(builder, yield.getLoc(), solver);
  scf::YieldOp::create(builder, yield.getLoc(), relaxed);
  yield.erase();

  builder.setInsertionPointAfter(whileOp);
  Value iterations = SolverIterationsOp::create(
      builder, loc, loop.getIterations().getType(), solver);
  loop.getFixedPoints().replaceAllUsesWith(whileOp.getResults());
  loop.getIterations().replaceAllUsesWith(iterations);
  loop.erase();
}

} // namespace

FailureOr<LoweredLoop> mlir::fp::matchLoweredLoop(scf::WhileOp loop) {
  auto mismatch = [&](const Twine &why) {
    return loop.emitOpError("is not a fixed-point loop in the form "
                            "fp-lower-fixed-point produces: ")
               << why,
           failure();
  };
  LoweredLoop parts;
  parts.loop = loop;

  Block &before = loop.getBefore().front();
  auto condition = dyn_cast<scf::ConditionOp>(before.getTerminator());
  auto test = condition
                  ? condition.getCondition().getDefiningOp<SolverContinueOp>()
                  : SolverContinueOp();
  if (!test || before.getOperations().size() != 2)
    return mismatch("its condition is not only fp.solver_continue");
  if (condition.getArgs() != ValueRange(before.getArguments()))
    return mismatch("its condition does not pass the iterates through");
  parts.solver = test.getState().getDefiningOp<SolverInitOp>();
  if (!parts.solver)
    return mismatch("its solver state is not from fp.solver_init");

  Block &step = loop.getAfter().front();
  auto yield = cast<scf::YieldOp>(step.getTerminator());
  for (auto [index, iterate, next] :
       llvm::enumerate(step.getArguments(), yield.getResults())) {
    auto relax = next.getDefiningOp<SolverRelaxOp>();
    if (!relax || relax->getBlock() != &step ||
        relax.getState() != parts.solver.getResult() ||
        relax.getCurrent() != iterate)
      return mismatch("iterate #" + Twine(index) +
                      " is not updated by fp.solver_relax of its solver");
    // The relaxation overwrites the iterate's storage, which reshapes and
    // slices read in place share.
    SmallVector<Value> sharing = {iterate};
    for (size_t i = 0; i < sharing.size(); ++i) {
      for (Operation *user : sharing[i].getUsers()) {
        Operation *inStep = step.findAncestorOpInBlock(*user);
        if (inStep != relax && relax->isBeforeInBlock(inStep))
          return mismatch("iterate #" + Twine(index) +
                          " is read after its fp.solver_relax");
        if (isa<ReshapeOp>(user) ||
            (isa<SliceOp>(user) && cast<SliceOp>(user).isReadInPlace()))
          sharing.push_back(user->getResult(0));
      }
    }
    parts.relaxes.push_back(relax);
  }
  for (Operation &op : step)
    if (auto update = dyn_cast<SolverUpdateOp>(op))
      if (update.getState() == parts.solver.getResult()) {
        if (parts.update)
          return mismatch("its step has two fp.solver_update");
        parts.update = update;
      }
  if (!parts.update)
    return mismatch("its step has no fp.solver_update");
  for (SolverRelaxOp relax : parts.relaxes)
    if (parts.update->isBeforeInBlock(relax))
      return mismatch("fp.solver_update comes before an fp.solver_relax");
  return parts;
}

namespace {

struct FpLowerFixedPointPass
    : public mlir::fp::impl::FpLowerFixedPointBase<FpLowerFixedPointPass> {
  using FpLowerFixedPointBase::FpLowerFixedPointBase;

  void runOnOperation() override {
    // Post-order: an inner loop is lowered before the body that holds it
    // moves.
    SmallVector<FixedPointOp> loops;
    getOperation().walk([&](FixedPointOp loop) { loops.push_back(loop); });
    if (loops.empty())
      return markAllAnalysesPreserved();
    for (FixedPointOp loop : loops)
      lowerFixedPoint(loop);
  }
};

} // namespace
