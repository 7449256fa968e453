//===- fp-translate.cpp - Translations to and from the fp dialect ---------===//
//
// mlir-translate for fp: `--import-fp` reads .fp source into the fp dialect
// (with `-verify-diagnostics` for the frontend's lit tests).
//
//===----------------------------------------------------------------------===//

#include "fp/InitAll.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::fp::registerAllFpTranslations();
  return mlir::failed(
             mlir::mlirTranslateMain(argc, argv, "fp translation driver\n"))
             ? 1
             : 0;
}
