//===- FpInterfaces.h - fp dialect op interfaces ----------------*- C++ -*-===//
//
// The differentiation interface (vector-Jacobian product rules).
//
//===----------------------------------------------------------------------===//

#ifndef FP_DIALECT_FPINTERFACES_H
#define FP_DIALECT_FPINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/TypeUtilities.h"

#include "fp/Dialect/FpInterfaces.h.inc"

namespace mlir {
class DialectRegistry;
namespace fp {
/// Attaches DifferentiableOpInterface to the arith and math ops fp programs
/// use (FpDerivatives.cpp).
void registerDifferentiableExternalModels(DialectRegistry &registry);
} // namespace fp
} // namespace mlir

#endif // FP_DIALECT_FPINTERFACES_H
