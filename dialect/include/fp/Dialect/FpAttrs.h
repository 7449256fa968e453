//===- FpAttrs.h - fp dialect attributes ------------------------*- C++ -*-===//
//
// Parameter initialisers, solver settings and backward modes.
//
//===----------------------------------------------------------------------===//

#ifndef FP_DIALECT_FPATTRS_H
#define FP_DIALECT_FPATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

namespace mlir::fp {
/// Prints `value` with the fewest significant digits that parse back to the
/// same double, always as an MLIR float literal ("0.99", "1.0e-06", "15.0").
void printShortestFloat(AsmPrinter &printer, double value);
} // namespace mlir::fp

#include "fp/Dialect/FpEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "fp/Dialect/FpAttrs.h.inc"

#endif // FP_DIALECT_FPATTRS_H
