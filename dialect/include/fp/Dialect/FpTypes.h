//===- FpTypes.h - fp dialect types -----------------------------*- C++ -*-===//
//
// The types of the fp dialect (see FpTypes.td).
//
//===----------------------------------------------------------------------===//

#ifndef FP_DIALECT_FPTYPES_H
#define FP_DIALECT_FPTYPES_H

#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "fp/Dialect/FpTypes.h.inc"

#endif // FP_DIALECT_FPTYPES_H
