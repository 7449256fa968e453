//===- CodeWriter.h - Indented source text for the emitters -----*- C++ -*-===//
//
// A thin layer over mlir::raw_indented_ostream: lines formatted with
// llvm::formatv and RAII blocks that open a brace and indent.
//
//===----------------------------------------------------------------------===//

#ifndef FP_CODEGEN_CODEWRITER_H
#define FP_CODEGEN_CODEWRITER_H

#include "mlir/Support/IndentedOstream.h"
#include "llvm/Support/FormatVariadic.h"

#include <string>

namespace mlir::fp::codegen {

class CodeWriter {
public:
  explicit CodeWriter(llvm::raw_ostream &os) : os(os) {}

  /// Writes one line formatted by llvm::formatv.
  template <typename... Args> void line(const char *format, Args &&...args) {
    os << llvm::formatv(format, std::forward<Args>(args)...) << "\n";
  }
  /// Writes one line verbatim.
  void text(llvm::StringRef line) { os << line << "\n"; }
  void blank() { os << "\n"; }
  /// Writes lines made by another CodeWriter, indented as this one's.
  void lines(llvm::StringRef text) { os << text; }

  /// A block: `header {` now, `}` + `trailer` when the scope ends.
  class Block {
  public:
    Block(CodeWriter &writer, std::string trailer)
        : writer(writer), trailer(std::move(trailer)) {
      writer.os.indent();
    }
    ~Block() {
      writer.os.unindent();
      writer.os << "}" << trailer << "\n";
    }
    Block(const Block &) = delete;
    Block &operator=(const Block &) = delete;

  private:
    CodeWriter &writer;
    std::string trailer;
  };

  template <typename... Args>
  [[nodiscard]] Block block(const char *format, Args &&...args) {
    os << llvm::formatv(format, std::forward<Args>(args)...) << " {\n";
    return Block(*this, "");
  }
  template <typename... Args>
  [[nodiscard]] Block blockWithTrailer(std::string trailer, const char *format,
                                       Args &&...args) {
    os << llvm::formatv(format, std::forward<Args>(args)...) << " {\n";
    return Block(*this, std::move(trailer));
  }

private:
  mlir::raw_indented_ostream os;
};

} // namespace mlir::fp::codegen

#endif // FP_CODEGEN_CODEWRITER_H
