//===- fp-opt.cpp - The fp optimizer driver ---------------------*- C++ -*-===//
//
// mlir-opt for the fp dialect: parses textual or bytecode IR, runs any
// registered pass or pipeline on it, and prints the result. Every fp pass is
// testable alone through this tool.
//
//===----------------------------------------------------------------------===//

#include "fp/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::fp::registerAllFpDialects(registry);
  mlir::fp::registerAllFpPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "fp optimizer driver\n", registry));
}
