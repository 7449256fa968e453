//===- MLIRGen.h - From .fp source to the fp dialect --------------*- C++
//-*-===//
//
// The frontend's entry point: parse a .fp file and the files it imports,
// check it, and elaborate its models (or, in a file without models, its
// layers) into a module of the fp dialect (docs/dsl.md §5). Every operation
// carries the `file:line:col` of the source that produced it; values bound
// by `let` carry their name as well.
//
//===----------------------------------------------------------------------===//

#ifndef FP_FRONTEND_MLIRGEN_H
#define FP_FRONTEND_MLIRGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <string>
#include <vector>

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::fp::frontend {

struct FrontendOptions {
  /// Directories searched for `import "x.fp"` after the importing file's own
  /// directory.
  std::vector<std::string> includeDirs;
  /// Element type of every tensor: "f32" or "f64".
  std::string elementType = "f32";
  /// Integer model fields that replace the source's values in every model:
  /// d_model, n_layers, vocab, pad_vocab_multiple (`fpc --set`).
  std::map<std::string, int64_t> modelOverrides;
};

/// Parses and elaborates the main buffer of `sourceMgr`; imported files are
/// added to `sourceMgr`. Diagnostics go to the context's handler. Returns
/// null if any error was reported.
OwningOpRef<ModuleOp> importFpSource(llvm::SourceMgr &sourceMgr,
                                     MLIRContext *context,
                                     const FrontendOptions &options = {});

/// The dialects the frontend's output uses.
void registerFrontendDialects(DialectRegistry &registry);

/// Registers `--import-fp` with mlir-translate style tools.
void registerImportFpTranslation();

} // namespace mlir::fp::frontend

#endif // FP_FRONTEND_MLIRGEN_H
