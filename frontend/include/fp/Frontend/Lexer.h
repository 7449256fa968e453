//===- Lexer.h - Tokens of the .fp language ---------------------*- C++ -*-===//
//
// The lexer of the .fp language (docs/dsl.md §1). It works on one buffer of
// an llvm::SourceMgr, never fails: bytes it cannot read become `error` tokens
// after a located diagnostic, and the end of the buffer is an `eof` token.
//
//===----------------------------------------------------------------------===//

#ifndef FP_FRONTEND_LEXER_H
#define FP_FRONTEND_LEXER_H

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/SourceMgr.h"

namespace mlir::fp::frontend {

enum class TokenKind {
#define FP_TOKEN(Name) Name,
#include "fp/Frontend/TokenKinds.def"
};

/// The spelling of a punctuation token or keyword, or a description of the
/// other kinds ("identifier", "end of file").
llvm::StringRef getTokenSpelling(TokenKind kind);

struct Token {
  TokenKind kind = TokenKind::eof;
  /// The source text of the token.
  llvm::StringRef spelling;
  /// True when the token is the first on its line; statements end at line
  /// breaks (docs/dsl.md §1).
  bool startsLine = false;

  bool is(TokenKind k) const { return kind == k; }
  llvm::SMLoc getLoc() const {
    return llvm::SMLoc::getFromPointer(spelling.data());
  }
  /// The end of the token's text.
  llvm::SMLoc getEndLoc() const {
    return llvm::SMLoc::getFromPointer(spelling.data() + spelling.size());
  }
};

/// Turns source locations into MLIR locations and reports diagnostics.
class SourceLocator {
public:
  SourceLocator(llvm::SourceMgr &sourceMgr, MLIRContext *context)
      : sourceMgr(sourceMgr), context(context) {}

  /// A `file:line:col` location for `loc`.
  Location get(llvm::SMLoc loc) const;

  InFlightDiagnostic emitError(llvm::SMLoc loc) const {
    return mlir::emitError(get(loc));
  }

  llvm::SourceMgr &getSourceMgr() const { return sourceMgr; }
  MLIRContext *getContext() const { return context; }

private:
  llvm::SourceMgr &sourceMgr;
  MLIRContext *context;
};

class Lexer {
public:
  Lexer(const SourceLocator &locator, unsigned bufferId);

  /// Lexes and returns the next token.
  Token lex();

  /// True when the next token is '=' (and not '=='); lexes nothing.
  bool isNextSingleEqual() const;

private:
  Token formToken(TokenKind kind, const char *start);
  Token emitError(const char *loc, const llvm::Twine &message);
  Token lexIdentifier(const char *start);
  Token lexNumber(const char *start);
  Token lexString(const char *start);
  void skipWhitespaceAndComments();

  const SourceLocator &locator;
  llvm::StringRef buffer;
  const char *cur;
  bool atLineStart = true;
};

} // namespace mlir::fp::frontend

#endif // FP_FRONTEND_LEXER_H
