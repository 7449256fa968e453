//===- FpDialect.cpp - The fp dialect ---------------------------*- C++ -*-===//
//
// Registers the fp dialect's ops and attributes.
//
//===----------------------------------------------------------------------===//

#include "fp/Dialect/FpDialect.h"
#include "fp/Dialect/FpAttrs.h"
#include "fp/Dialect/FpOps.h"

using namespace mlir;
using namespace mlir::fp;

#include "fp/Dialect/FpOpsDialect.cpp.inc"

void FPDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "fp/Dialect/FpOps.cpp.inc"
      >();
  registerAttributes();
}
