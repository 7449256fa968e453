//===- FpTypes.cpp - fp dialect types ---------------------------*- C++ -*-===//
//
// Registers the types of the fp dialect.
//
//===----------------------------------------------------------------------===//

#include "fp/Dialect/FpTypes.h"
#include "fp/Dialect/FpDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fp;

#define GET_TYPEDEF_CLASSES
#include "fp/Dialect/FpTypes.cpp.inc"

void FPDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "fp/Dialect/FpTypes.cpp.inc"
      >();
}
