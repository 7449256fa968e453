//===- FpDialect.h - The fp dialect -----------------------------*- C++ -*-===//
//
// Declares the fp dialect class. Include FpOps.h for the ops and FpAttrs.h
// for the attributes.
//
//===----------------------------------------------------------------------===//

#ifndef FP_DIALECT_FPDIALECT_H
#define FP_DIALECT_FPDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "fp/Dialect/FpOpsDialect.h.inc"

#endif // FP_DIALECT_FPDIALECT_H
