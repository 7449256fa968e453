//===- Manifest.h - The JSON manifest of a model library --------*- C++ -*-===//
//
// Builds the manifest of docs/abi.md from the lowered module: layers with
// their parameters, initialisers and solver settings, and the model stack
// from the module's `fp.models` attribute.
//
//===----------------------------------------------------------------------===//

#ifndef FP_CODEGEN_MANIFEST_H
#define FP_CODEGEN_MANIFEST_H

#include "fp/Codegen/HostEmitter.h"
#include "fp/Codegen/LayerPlan.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::fp::codegen {

/// The per-layer symbol of an entry point: fp_<layer>_<role>.
std::string entryPointName(StringRef layer, StringRef role);

/// The manifest of a library holding `layers` of `module`, as compact JSON;
/// with the "cuda" target and `splitLayers` (one per layer), each layer's
/// CUDA split schedule is described too (`cuda_split`).
FailureOr<std::string> buildManifest(ModuleOp module,
                                     ArrayRef<LayerPlan> layers,
                                     const LibraryInfo &info,
                                     ArrayRef<LayerPlan> splitLayers = {});

} // namespace mlir::fp::codegen

#endif // FP_CODEGEN_MANIFEST_H
