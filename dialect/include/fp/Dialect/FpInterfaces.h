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

#endif // FP_DIALECT_FPINTERFACES_H
