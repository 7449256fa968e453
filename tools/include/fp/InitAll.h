//===- InitAll.h - Register every dialect, pass and translation -*- C++ -*-===//
//
// The one place that lists what the fp tools register, so fp-opt,
// fp-translate and fpc agree.
//
//===----------------------------------------------------------------------===//

#ifndef FP_INITALL_H
#define FP_INITALL_H

#include "fp/Codegen/HostEmitter.h"
#include "fp/Dialect/FpDialect.h"
#include "fp/Frontend/MLIRGen.h"
#include "fp/Transforms/Passes.h"
#include "fp/Transforms/Pipeline.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::fp {

/// Registers the fp dialect and the upstream dialects fp programs use.
inline void registerAllFpDialects(DialectRegistry &registry) {
  registry.insert<FPDialect, arith::ArithDialect, func::FuncDialect,
                  math::MathDialect, scf::SCFDialect, tensor::TensorDialect>();
  // Lets the inliner inline func.call, e.g. a mixer or map into a body.
  func::registerInlinerExtension(registry);
  // Vector-Jacobian product rules of the upstream ops fp programs use.
  registerDifferentiableExternalModels(registry);
}

/// Registers the fp passes and the upstream passes the fp pipeline uses.
inline void registerAllFpPasses() {
  registerCanonicalizerPass();
  registerCSEPass();
  registerInlinerPass();
  registerLoopInvariantCodeMotionPass();
  registerSymbolDCEPass();
  registerFpPasses();
  registerFpPipeline();
}

/// Registers the fp translations (`--import-fp`).
inline void registerAllFpTranslations() {
  frontend::registerImportFpTranslation();
  codegen::registerHostTranslation();
}

} // namespace mlir::fp

#endif // FP_INITALL_H
