//===- IterationCost.h - Work and traffic of a layer's launches -*- C++ -*-===//
//
// What one step of a layer's lowered fixed-point loop costs, launch by
// launch: the floating-point operations it performs and the elements it
// moves between memory and the cores, each as a polynomial in the call's
// batch B and length T (per token, per sample, fixed); and the same for the
// launches of a call outside that loop, of the forward and of its derived
// backward. The manifest carries both (`iteration_cost` and `call_cost`,
// docs/abi.md) so that fp-bench can place a measured step, forward call or
// training step on the roofline of the machine it runs on.
//
// The model of a launch is the one the emitters implement: an fp.kernel
// reads each of its inputs once (only the columns its slices use) and writes
// its results once, keeping every intermediate value on chip; a linear map
// reads its input and weights and writes its result once; a top-level op of
// an unfused loop reads its operands and writes its results; the solver's
// bookkeeping (fp.solver_update) is part of the launch of the relaxation
// right before it (relaxEndingStep), else one of its own. FLOPs count one
// per arithmetic operation or elementary function in an op's definition
// (dialect/include/fp/Dialect/FpOps.td), e.g. 2·K per output of a linear map
// and 7 per (token, channel, state) of a selective scan. Outside the loop the
// launches are the ones the emitters run: parameters, reshapes, slices read
// in place and transposes read by a GEMM cost nothing; a concatenation is a
// copy per input; a constant tensor is written once; the loop's initial iterate
// is copied where it does not lie in the iterate's buffer; a forward's return
// copies what was not computed in the caller's memory, and a backward's adds
// every parameter gradient into the caller's (reading both, writing one).
//
//===----------------------------------------------------------------------===//

#ifndef FP_CODEGEN_ITERATIONCOST_H
#define FP_CODEGEN_ITERATIONCOST_H

#include "fp/Codegen/LayerPlan.h"

#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::fp::codegen {

/// `perToken · B · T + perSample · B + fixed`.
struct CostTerms {
  int64_t perToken = 0;
  int64_t perSample = 0;
  int64_t fixed = 0;

  CostTerms &operator+=(const CostTerms &other) {
    perToken += other.perToken;
    perSample += other.perSample;
    fixed += other.fixed;
    return *this;
  }
  friend CostTerms operator*(int64_t factor, CostTerms terms) {
    return {factor * terms.perToken, factor * terms.perSample,
            factor * terms.fixed};
  }
};

/// One launch of a solver step.
struct LaunchCost {
  /// The op that launches, e.g. "fp.kernel".
  std::string op;
  CostTerms flops;
  /// Elements read plus elements written.
  CostTerms elements;
};

/// The launches of one step of `plan`'s fixed-point loop, in order. Fails
/// (without a diagnostic) when the plan has no loop or the loop holds an op
/// whose cost is not modelled; the manifest then omits the cost.
FailureOr<SmallVector<LaunchCost>> iterationCost(const LayerPlan &plan);

/// The launches of one call of `plan`'s function other than the steps of its
/// fixed-point loop, in order (all of them for a function without a loop).
/// Fails (without a diagnostic) when the function holds an op whose cost is
/// not modelled; the manifest then omits the cost.
FailureOr<SmallVector<LaunchCost>> callCost(const LayerPlan &plan);

} // namespace mlir::fp::codegen

#endif // FP_CODEGEN_ITERATIONCOST_H
