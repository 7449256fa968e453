//===- FpAttrs.cpp - fp dialect attributes ----------------------*- C++ -*-===//
//
// Verifiers of the initialiser, solver and backward-mode attributes, which
// are the compile-time checks of a layer's solver settings.
//
//===----------------------------------------------------------------------===//

#include "fp/Dialect/FpAttrs.h"
#include "fp/Dialect/FpDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace mlir;
using namespace mlir::fp;

#include "fp/Dialect/FpEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "fp/Dialect/FpAttrs.cpp.inc"

void FPDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "fp/Dialect/FpAttrs.cpp.inc"
      >();
}

void mlir::fp::printShortestFloat(AsmPrinter &printer, double value) {
  if (!std::isfinite(value)) {
    printer.printFloat(APFloat(value));
    return;
  }
  char buffer[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  std::string text = buffer;
  // MLIR float literals need a '.' before any exponent.
  if (text.find('.') == std::string::npos) {
    size_t exponent = text.find_first_of("eE");
    text.insert(exponent == std::string::npos ? text.size() : exponent, ".0");
  }
  printer << text;
}

//===----------------------------------------------------------------------===//
// InitAttr
//===----------------------------------------------------------------------===//

/// The number of numeric arguments each initialiser takes: {min, max}.
static std::pair<size_t, size_t> getInitArity(InitKind kind) {
  switch (kind) {
  case InitKind::Zeros:
  case InitKind::Ones:
  case InitKind::S4DReal:
  case InitKind::RowNorm:
  case InitKind::Orthogonal:
    return {0, 0};
  case InitKind::Constant:
  case InitKind::Eye:
    return {1, 1};
  case InitKind::FanInUniform:
    return {0, 1};
  case InitKind::Uniform:
  case InitKind::Normal:
  case InitKind::LogUniform:
    return {2, 2};
  case InitKind::DtBias:
    return {3, 3};
  }
  llvm_unreachable("unknown initialiser kind");
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, DenseF64ArrayAttr argsAttr,
                               StringAttr of) {
  ArrayRef<double> args;
  if (argsAttr)
    args = argsAttr.asArrayRef();
  auto [minArgs, maxArgs] = getInitArity(kind);
  StringRef name = stringifyInitKind(kind);
  if (args.size() < minArgs || args.size() > maxArgs) {
    auto diag = emitError() << "initialiser '" << name << "' takes ";
    if (minArgs == maxArgs)
      diag << minArgs;
    else
      diag << minArgs << " to " << maxArgs;
    return diag << " argument(s), got " << args.size();
  }
  if (llvm::any_of(args, [](double v) { return !std::isfinite(v); }))
    return emitError() << "initialiser '" << name
                       << "' has a non-finite argument";
  if (kind == InitKind::RowNorm) {
    if (!of || of.getValue().empty())
      return emitError() << "initialiser 'row_norm' needs the parameter it "
                            "is the norm of ('of \"name\"')";
  } else if (of) {
    return emitError() << "initialiser '" << name
                       << "' does not refer to another parameter";
  }
  if (kind == InitKind::Uniform && !(args[0] < args[1]))
    return emitError() << "initialiser 'uniform' needs lo < hi";
  if (kind == InitKind::LogUniform && !(args[0] > 0 && args[0] < args[1]))
    return emitError() << "initialiser 'log_uniform' needs 0 < lo < hi";
  if (kind == InitKind::Normal && !(args[1] > 0))
    return emitError() << "initialiser 'normal' needs a positive std";
  if (kind == InitKind::DtBias &&
      !(args[0] > 0 && args[0] < args[1] && args[2] > 0))
    return emitError() << "initialiser 'dt_bias' needs 0 < dt_min < dt_max "
                          "and floor > 0";
  return success();
}

//===----------------------------------------------------------------------===//
// SolverAttr
//===----------------------------------------------------------------------===//

LogicalResult SolverAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 APFloat toleranceValue, APFloat quantileValue,
                                 int64_t maxIterTrain, int64_t maxIterEval,
                                 APFloat relaxStartValue,
                                 APFloat relaxDecayValue,
                                 int64_t relaxPatience) {
  double tolerance = toleranceValue.convertToDouble();
  double quantile = quantileValue.convertToDouble();
  double relaxStart = relaxStartValue.convertToDouble();
  double relaxDecay = relaxDecayValue.convertToDouble();
  if (!(tolerance > 0) || !std::isfinite(tolerance))
    return emitError() << "solver tolerance must be positive, got "
                       << tolerance;
  if (!(quantile >= 0 && quantile <= 1))
    return emitError() << "solver quantile must lie in [0, 1], got "
                       << quantile;
  if (maxIterTrain < 1)
    return emitError() << "solver max_iter_train must be at least 1, got "
                       << maxIterTrain;
  if (maxIterEval < 1)
    return emitError() << "solver max_iter_eval must be at least 1, got "
                       << maxIterEval;
  if (!(relaxStart > 0 && relaxStart <= 1))
    return emitError() << "solver relax_start must lie in (0, 1], got "
                       << relaxStart;
  if (!(relaxDecay > 0 && relaxDecay <= 1))
    return emitError() << "solver relax_decay must lie in (0, 1], got "
                       << relaxDecay;
  if (relaxPatience < 1)
    return emitError() << "solver relax_patience must be at least 1, got "
                       << relaxPatience;
  return success();
}

SolverAttr SolverAttr::getReferenceDefaults(MLIRContext *context) {
  return SolverAttr::get(context, /*tolerance=*/0.1, /*quantile=*/0.75,
                         /*maxIterTrain=*/100, /*maxIterEval=*/1000,
                         /*relaxStart=*/0.99, /*relaxDecay=*/0.9,
                         /*relaxPatience=*/15);
}

//===----------------------------------------------------------------------===//
// BackwardAttr
//===----------------------------------------------------------------------===//

LogicalResult BackwardAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   BackwardMode mode, int64_t steps,
                                   APFloat toleranceValue) {
  double tolerance = toleranceValue.convertToDouble();
  StringRef name = stringifyBackwardMode(mode);
  bool takesSteps =
      mode == BackwardMode::Truncated || mode == BackwardMode::Neumann;
  bool takesTolerance = mode == BackwardMode::Implicit;
  if (takesSteps && steps < 1)
    return emitError() << "backward mode '" << name
                       << "' needs steps >= 1, got " << steps;
  if (!takesSteps && steps != 0)
    return emitError() << "backward mode '" << name << "' takes no steps";
  if (takesTolerance && (!(tolerance > 0) || !std::isfinite(tolerance)))
    return emitError() << "backward mode 'implicit' needs a positive "
                          "tolerance, got "
                       << tolerance;
  if (!takesTolerance && tolerance != 0)
    return emitError() << "backward mode '" << name << "' takes no tolerance";
  return success();
}
