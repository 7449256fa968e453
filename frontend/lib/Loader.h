//===- Loader.h - A .fp file and its imports --------------------*- C++ -*-===//
//
// Private to the frontend: loads the main file and, depth first, every file
// it imports (docs/dsl.md §4), each parsed once, with import cycles and
// missing files reported at the `import` that names them.
//
//===----------------------------------------------------------------------===//

// A private header of lib/: llvm-header-guard derives the guard it wants
// from the absolute path when the path has no include/ directory.
#ifndef FP_FRONTEND_LIB_LOADER_H // NOLINT(llvm-header-guard)
#define FP_FRONTEND_LIB_LOADER_H

#include "fp/Frontend/AST.h"

#include "mlir/Support/LLVM.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir::fp::frontend {

struct LoadedSources {
  /// The main file first, then the imported files in load order.
  std::vector<std::unique_ptr<SourceFile>> files;
};

LogicalResult loadSources(const SourceLocator &locator, unsigned mainBufferId,
                          ArrayRef<std::string> includeDirs,
                          LoadedSources &sources);

} // namespace mlir::fp::frontend

#endif // FP_FRONTEND_LIB_LOADER_H
