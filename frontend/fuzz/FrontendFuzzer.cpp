//===- FrontendFuzzer.cpp - libFuzzer target over the .fp frontend --------===//
//
// Feeds arbitrary bytes to the frontend as a .fp file: lexer, parser,
// imports and elaboration into the fp dialect. Any input must end in a
// module or in diagnostics, never in a crash, a hang or unbounded memory.
// scripts/fuzz.sh builds and runs it; inputs that crashed it live on as
// regression tests in test/Frontend/fuzz-regressions/.
//
//===----------------------------------------------------------------------===//

#include "fp/Frontend/MLIRGen.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::DialectRegistry registry;
  mlir::fp::frontend::registerFrontendDialects(registry);
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  // Diagnostics are expected; only their absence of crashes matters.
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size),
          "fuzz.fp"),
      llvm::SMLoc());
  (void)mlir::fp::frontend::importFpSource(sourceMgr, &context);
  return 0;
}
