//===- Parser.h - Parser of the .fp language --------------------*- C++ -*-===//
//
// A recursive-descent parser from one SourceMgr buffer to a SourceFile
// (docs/dsl.md §2). Errors are reported through mlir::emitError at
// `file:line:col`; the parser recovers at the next statement so that one run
// reports several errors.
//
//===----------------------------------------------------------------------===//

#ifndef FP_FRONTEND_PARSER_H
#define FP_FRONTEND_PARSER_H

#include "fp/Frontend/AST.h"

#include "mlir/Support/LLVM.h"

namespace mlir::fp::frontend {

/// Parses buffer `bufferId`. Returns failure if any error was reported; the
/// partial tree is still filled in.
LogicalResult parseSourceFile(const SourceLocator &locator, unsigned bufferId,
                              SourceFile &file);

} // namespace mlir::fp::frontend

#endif // FP_FRONTEND_PARSER_H
