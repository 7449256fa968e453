//===- fpc.cpp - The fp compiler driver -------------------------*- C++ -*-===//
//
// `fpc model.fp --emit=mlir` parses a model written in the .fp language
// (docs/dsl.md), checks it and prints it in the fp dialect. Errors are
// printed as `file:line:col: error: ...` with the source line, and fpc exits
// with status 1.
//
//===----------------------------------------------------------------------===//

#include "fp/Frontend/MLIRGen.h"
#include "fp/InitAll.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

namespace {

enum class EmitStage { MLIR, SharedLibrary };

cl::OptionCategory fpcCategory("fpc options");

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.fp>"),
                               cl::Required, cl::cat(fpcCategory));
cl::opt<std::string> outputFile("o", cl::desc("Output file ('-' for stdout)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(fpcCategory));
cl::opt<EmitStage>
    emit("emit", cl::desc("What to produce"),
         cl::init(EmitStage::SharedLibrary),
         cl::values(clEnumValN(EmitStage::MLIR, "mlir",
                               "the model in the fp dialect, as parsed"),
                    clEnumValN(EmitStage::SharedLibrary, "so",
                               "a shared library (model.so)")),
         cl::cat(fpcCategory));
cl::list<std::string> includeDirs("I",
                                  cl::desc("Directory searched by imports"),
                                  cl::value_desc("dir"), cl::Prefix,
                                  cl::cat(fpcCategory));
enum class ElementType { F32, F64 };
cl::opt<ElementType> elementType(
    "element-type", cl::desc("Element type of every tensor"),
    cl::init(ElementType::F32),
    cl::values(clEnumValN(ElementType::F32, "f32", "32-bit floats"),
               clEnumValN(ElementType::F64, "f64", "64-bit floats")),
    cl::cat(fpcCategory));

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  cl::HideUnrelatedOptions({&fpcCategory, &cl::getGeneralCategory()});
  cl::ParseCommandLineOptions(argc, argv, "fpc: the fp compiler\n");

  if (emit == EmitStage::SharedLibrary) {
    llvm::errs() << "fpc: error: code generation is not implemented yet; use "
                    "--emit=mlir\n";
    return 1;
  }

  DialectRegistry registry;
  fp::registerAllFpDialects(registry);
  MLIRContext context(registry);

  std::string error;
  auto input = openInputFile(inputFile, &error);
  if (!input) {
    llvm::errs() << "fpc: error: " << error << "\n";
    return 1;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);

  fp::frontend::FrontendOptions options;
  options.includeDirs.assign(includeDirs.begin(), includeDirs.end());
  options.elementType = elementType == ElementType::F64 ? "f64" : "f32";
  OwningOpRef<ModuleOp> module =
      fp::frontend::importFpSource(sourceMgr, &context, options);
  if (!module)
    return 1;

  auto output = openOutputFile(outputFile, &error);
  if (!output) {
    llvm::errs() << "fpc: error: " << error << "\n";
    return 1;
  }
  module->print(output->os());
  output->os() << "\n";
  output->keep();
  return 0;
}
