//===- FpOps.h - fp dialect operations --------------------------*- C++ -*-===//
//
// Declares the ops of the fp dialect.
//
//===----------------------------------------------------------------------===//

#ifndef FP_DIALECT_FPOPS_H
#define FP_DIALECT_FPOPS_H

#include "fp/Dialect/FpAttrs.h"
#include "fp/Dialect/FpDialect.h"
#include "fp/Dialect/FpInterfaces.h"
#include "fp/Dialect/FpTypes.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::fp {
class YieldOp;
} // namespace mlir::fp

#define GET_OP_CLASSES
#include "fp/Dialect/FpOps.h.inc"

#endif // FP_DIALECT_FPOPS_H
