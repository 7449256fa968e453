//===- Pipeline.cpp - The fp compilation pipeline ---------------*- C++ -*-===//
//
// The stage functions of Pipeline.h and the `fp-pipeline` registration.
//
//===----------------------------------------------------------------------===//

#include "fp/Transforms/Pipeline.h"
#include "fp/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::fp;

void mlir::fp::addFrontendCleanup(OpPassManager &pm) {
  pm.addPass(createInlinerPass());
  pm.addPass(createSymbolDCEPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::fp::addHoisting(OpPassManager &pm) {
  OpPassManager &func = pm.nest<func::FuncOp>();
  func.addPass(createFpHoistInvariants());
  func.addPass(createCanonicalizerPass());
  func.addPass(createCSEPass());
}

void mlir::fp::addBackwardDerivation(OpPassManager &pm, bool saveProducts) {
  FpDeriveBackwardOptions derivation;
  derivation.saveProducts = saveProducts;
  pm.addPass(createFpDeriveBackward(derivation));
  // The backward's copy of the map at the fixed point and the layer's own
  // application of it become one.
  pm.addPass(createCSEPass());
  // The adjoints' columns that nothing reads (the fixed point's) are not
  // computed.
  OpPassManager &func = pm.nest<func::FuncOp>();
  func.addPass(createFpNarrowToSlices());
  func.addPass(createCSEPass());
}

void mlir::fp::addProductReuse(OpPassManager &pm) {
  OpPassManager &func = pm.nest<func::FuncOp>();
  func.addPass(createFpReuseProducts());
  func.addPass(createCSEPass());
}

void mlir::fp::addFusion(OpPassManager &pm, bool fuseScans,
                         bool transposeScanA) {
  OpPassManager &func = pm.nest<func::FuncOp>();
  func.addPass(createFpMergeLinears());
  FpFuseMixScanOptions fusion;
  fusion.fuseScans = fuseScans;
  func.addPass(createFpFuseMixScan(fusion));
  func.addPass(createCSEPass());
  if (fuseScans && transposeScanA)
    func.addPass(createFpTransposeScanA());
}

void mlir::fp::addLoopLowering(OpPassManager &pm) {
  pm.nest<func::FuncOp>().addPass(createFpLowerFixedPoint());
}

void mlir::fp::addBufferPlanning(OpPassManager &pm) {
  pm.nest<func::FuncOp>().addPass(createFpPlanBuffers());
}

void mlir::fp::addKernelScheduling(OpPassManager &pm, bool stageInputs) {
  FpScheduleKernelsOptions schedule;
  schedule.stageInputs = stageInputs;
  pm.nest<func::FuncOp>().addPass(createFpScheduleKernels(schedule));
}

void mlir::fp::buildFpPipeline(OpPassManager &pm,
                               const FpPipelineOptions &options) {
  // While the maps are still calls (before the inliner).
  if (options.chunked)
    pm.addPass(createFpDeriveChunked());
  addFrontendCleanup(pm);
  if (options.hoist)
    addHoisting(pm);
  if (options.backward)
    addBackwardDerivation(pm, options.saveProducts);
  // After the derivation: the forward's step after the solve reuses the
  // products hoisted out of the loop; the backward's recomputation keeps
  // one GEMM per map.
  if (options.hoist)
    addProductReuse(pm);
  if (options.fuse)
    addFusion(pm, options.fuseScans, options.transposeScanA);
  addLoopLowering(pm);
  addBufferPlanning(pm);
  addKernelScheduling(pm, options.stageInputs);
}

void mlir::fp::registerFpPipeline() {
  PassPipelineRegistration<FpPipelineOptions>(
      "fp-pipeline",
      "the pipeline fpc runs from the frontend's IR to the emitters' input",
      buildFpPipeline);
}
