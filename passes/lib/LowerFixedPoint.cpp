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
