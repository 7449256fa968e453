//===- TransposeScanA.cpp - Fused selective scans read Aᵀ -----------------===//
//
// fp-transpose-scan-a: a kernel input read only as the state matrix A of
// selective scans becomes Aᵀ, transposed once where A is defined and back
// inside the kernel's body, where codegen reads the input as it lies
// (Passes.td).
//
//===----------------------------------------------------------------------===//

#include "fp/Dialect/FpOps.h"
#include "fp/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::fp {
#define GEN_PASS_DEF_FPTRANSPOSESCANA
#include "fp/Transforms/Passes.h.inc"
} // namespace mlir::fp

using namespace mlir;
using namespace mlir::fp;

namespace {

/// Whether every use of `arg` is as the state matrix of a selective scan.
bool readOnlyAsScanMatrix(BlockArgument arg) {
  return !arg.use_empty() && llvm::all_of(arg.getUses(), [](OpOperand &use) {
    auto scan = dyn_cast<SelectiveScanOp>(use.getOwner());
    return scan &&
           use.getOperandNumber() == scan.getAMutable().getOperandNumber();
  });
}

RankedTensorType transposedType(RankedTensorType type) {
  return RankedTensorType::get({type.getDimSize(1), type.getDimSize(0)},
                               type.getElementType());
}

struct TransposeScanAPass
    : public fp::impl::FpTransposeScanABase<TransposeScanAPass> {
  void runOnOperation() override {
    // One transpose per matrix, however many kernels read it.
    llvm::DenseMap<Value, Value> transposed;
    getOperation().walk([&](KernelOp kernel) {
      Block *body = kernel.getBodyBlock();
      for (BlockArgument arg : body->getArguments()) {
        auto type = dyn_cast<RankedTensorType>(arg.getType());
        if (!type || type.getRank() != 2 || !type.hasStaticShape() ||
            !readOnlyAsScanMatrix(arg))
          continue;
        OpOperand &input = kernel->getOpOperand(arg.getArgNumber());
        Value &outer = transposed[input.get()];
        if (!outer) {
          OpBuilder builder(kernel.getContext());
          builder.setInsertionPointAfterValue(input.get());
          outer = TransposeOp::create(builder, input.get().getLoc(),
                                      transposedType(type), input.get());
        }
        input.set(outer);
        arg.setType(outer.getType());
        auto builder = OpBuilder::atBlockBegin(body);
        Value inner = TransposeOp::create(builder, kernel.getLoc(), type, arg);
        arg.replaceAllUsesExcept(inner, inner.getDefiningOp());
      }
    });
  }
};

} // namespace
