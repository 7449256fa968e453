//===- MLIRGen.h - From .fp source to the fp dialect ------------*- C++ -*-===//
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
namespace cl {
class ValuesClass;
} // namespace cl
} // namespace llvm

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::fp::frontend {

/// The element type of every tensor the frontend emits.
enum class ElementType { F32, F64 };

struct FrontendOptions {
  /// Directories searched for `import "x.fp"` after the importing file's own
  /// directory.
  std::vector<std::string> includeDirs;
  /// Element type of every tensor.
  ElementType elementType = ElementType::F32;
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

/// The values of a command-line option that picks the element type, "f32"
/// and "f64", for `cl::opt<ElementType>`. Every tool that offers the choice
/// (fpc's `--element-type`, fp-translate's `--fp-element-type`) takes them
/// from here, so that the tools agree on the spellings.
llvm::cl::ValuesClass getElementTypeOptionValues();

} // namespace mlir::fp::frontend

#endif // FP_FRONTEND_MLIRGEN_H
