//===- FpDialect.cpp - The fp dialect ---------------------------*- C++ -*-===//
//
// Registers the fp dialect's ops, attributes and types.
//
//===----------------------------------------------------------------------===//

#include "fp/Dialect/FpDialect.h"
#include "fp/Dialect/FpAttrs.h"
#include "fp/Dialect/FpOps.h"
#include "fp/Dialect/FpTypes.h"

#include "mlir/Transforms/InliningUtils.h"

using namespace mlir;
using namespace mlir::fp;

#include "fp/Dialect/FpOpsDialect.cpp.inc"

namespace {
/// Every fp op may be inlined anywhere: a mixer or map written as a function
/// is called from a fixed-point body and from a layer head, and inlined into
/// both before hoisting and fusion.
struct FpInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;

  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
  bool isLegalToInline(Region *, Region *, bool, IRMapping &) const final {
    return true;
  }
};
} // namespace

void FPDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "fp/Dialect/FpOps.cpp.inc"
      >();
  registerAttributes();
  registerTypes();
  addInterfaces<FpInlinerInterface>();
}
