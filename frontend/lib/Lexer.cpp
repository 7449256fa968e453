//===- Lexer.cpp - Tokens of the .fp language -----------------------------===//
//
// Part of fpc. See docs/dsl.md §1 for the lexical rules.
//
//===----------------------------------------------------------------------===//

#include "fp/Frontend/Lexer.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cctype>

using namespace mlir;
using namespace mlir::fp::frontend;

StringRef mlir::fp::frontend::getTokenSpelling(TokenKind kind) {
  switch (kind) {
  case TokenKind::eof:
    return "end of file";
  case TokenKind::error:
    return "invalid token";
  case TokenKind::identifier:
    return "identifier";
  case TokenKind::integer:
    return "integer";
  case TokenKind::floatLiteral:
    return "number";
  case TokenKind::string:
    return "string";
#define FP_PUNCT(Name, Spelling)                                               \
  case TokenKind::Name:                                                        \
    return Spelling;
#define FP_KEYWORD(Spelling)                                                   \
  case TokenKind::kw_##Spelling:                                               \
    return #Spelling;
#include "fp/Frontend/TokenKinds.def"
  }
  return "token";
}

Location SourceLocator::get(llvm::SMLoc loc) const {
  unsigned bufferId = sourceMgr.FindBufferContainingLoc(loc);
  if (bufferId == 0)
    return UnknownLoc::get(context);
  auto [line, column] = sourceMgr.getLineAndColumn(loc, bufferId);
  StringRef file = sourceMgr.getMemoryBuffer(bufferId)->getBufferIdentifier();
  return FileLineColLoc::get(context, file, line, column);
}

Lexer::Lexer(const SourceLocator &locator, unsigned bufferId)
    : locator(locator),
      buffer(locator.getSourceMgr().getMemoryBuffer(bufferId)->getBuffer()),
      cur(buffer.begin()) {}

Token Lexer::formToken(TokenKind kind, const char *start) {
  Token token;
  token.kind = kind;
  token.spelling = StringRef(start, cur - start);
  token.startsLine = atLineStart;
  atLineStart = false;
  return token;
}

Token Lexer::emitError(const char *loc, const Twine &message) {
  locator.emitError(llvm::SMLoc::getFromPointer(loc)) << message;
  return formToken(TokenKind::error, loc);
}

void Lexer::skipWhitespaceAndComments() {
  const char *end = buffer.end();
  while (cur != end) {
    char c = *cur;
    if (c == '\n') {
      atLineStart = true;
      ++cur;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++cur;
    } else if (c == '/' && cur + 1 != end && cur[1] == '/') {
      while (cur != end && *cur != '\n')
        ++cur;
    } else {
      return;
    }
  }
}

bool Lexer::isNextSingleEqual() const {
  const char *p = cur;
  while (p != buffer.end() && (*p == ' ' || *p == '\t'))
    ++p;
  return p != buffer.end() && *p == '=' &&
         (p + 1 == buffer.end() || p[1] != '=');
}

Token Lexer::lex() {
  skipWhitespaceAndComments();
  const char *start = cur;
  if (cur == buffer.end())
    return formToken(TokenKind::eof, start);

  char c = *cur++;
  auto next = [&](char expected) {
    if (cur != buffer.end() && *cur == expected) {
      ++cur;
      return true;
    }
    return false;
  };
  if (std::isalpha(static_cast<unsigned char>(c)) || c == '_')
    return lexIdentifier(start);
  if (std::isdigit(static_cast<unsigned char>(c)))
    return lexNumber(start);
  switch (c) {
  case '"':
    return lexString(start);
  case '(':
    return formToken(TokenKind::lParen, start);
  case ')':
    return formToken(TokenKind::rParen, start);
  case '[':
    return formToken(TokenKind::lSquare, start);
  case ']':
    return formToken(TokenKind::rSquare, start);
  case '{':
    return formToken(TokenKind::lBrace, start);
  case '}':
    return formToken(TokenKind::rBrace, start);
  case ',':
    return formToken(TokenKind::comma, start);
  case ':':
    return formToken(TokenKind::colon, start);
  case ';':
    return formToken(TokenKind::semicolon, start);
  case '+':
    return formToken(TokenKind::plus, start);
  case '*':
    return formToken(TokenKind::star, start);
  case '/':
    return formToken(TokenKind::slash, start);
  case '%':
    return formToken(TokenKind::percent, start);
  case '.':
    if (next('.'))
      return formToken(TokenKind::dotDot, start);
    if (cur != buffer.end() && std::isdigit(static_cast<unsigned char>(*cur)))
      return emitError(start, "a number must start with a digit (write 0.5, "
                              "not .5)");
    return emitError(start, "unexpected '.'; ranges are written 'a..b'");
  case '-':
    return formToken(next('>') ? TokenKind::arrow : TokenKind::minus, start);
  case '=':
    return formToken(next('=') ? TokenKind::equalEqual : TokenKind::equal,
                     start);
  case '!':
    return formToken(next('=') ? TokenKind::bangEqual : TokenKind::bang, start);
  case '<':
    return formToken(next('=') ? TokenKind::lessEqual : TokenKind::less, start);
  case '>':
    return formToken(next('=') ? TokenKind::greaterEqual : TokenKind::greater,
                     start);
  case '&':
    if (next('&'))
      return formToken(TokenKind::ampAmp, start);
    return emitError(start, "unexpected '&'; did you mean '&&'?");
  case '|':
    if (next('|'))
      return formToken(TokenKind::pipePipe, start);
    return emitError(start, "unexpected '|'; did you mean '||'?");
  default:
    break;
  }
  // Skip the whole UTF-8 sequence (or the single stray byte) so that one bad
  // character gives one diagnostic.
  while (cur != buffer.end() &&
         (static_cast<unsigned char>(*cur) & 0xC0) == 0x80)
    ++cur;
  unsigned char byte = static_cast<unsigned char>(c);
  if (byte >= 0x20 && byte < 0x7F)
    return emitError(start, Twine("unexpected character '") + Twine(c) + "'");
  return emitError(start, "unexpected byte 0x" + llvm::utohexstr(byte) +
                              " (.fp source is ASCII outside comments and "
                              "strings)");
}

Token Lexer::lexIdentifier(const char *start) {
  while (cur != buffer.end() &&
         (std::isalnum(static_cast<unsigned char>(*cur)) || *cur == '_'))
    ++cur;
  StringRef text(start, cur - start);
  TokenKind kind = llvm::StringSwitch<TokenKind>(text)
#define FP_KEYWORD(Spelling) .Case(#Spelling, TokenKind::kw_##Spelling)
#include "fp/Frontend/TokenKinds.def"
                       .Default(TokenKind::identifier);
  return formToken(kind, start);
}

Token Lexer::lexNumber(const char *start) {
  auto isDigit = [&](const char *p) {
    return p != buffer.end() && std::isdigit(static_cast<unsigned char>(*p));
  };
  while (isDigit(cur))
    ++cur;
  bool isFloat = false;
  // `1..4` is a range: a '.' followed by another '.' ends the integer.
  if (cur != buffer.end() && *cur == '.' &&
      !(cur + 1 != buffer.end() && cur[1] == '.')) {
    isFloat = true;
    ++cur;
    while (isDigit(cur))
      ++cur;
  }
  if (cur != buffer.end() && (*cur == 'e' || *cur == 'E')) {
    const char *exponent = cur + 1;
    if (exponent != buffer.end() && (*exponent == '+' || *exponent == '-'))
      ++exponent;
    if (!isDigit(exponent))
      return emitError(start, "malformed exponent in number");
    isFloat = true;
    cur = exponent;
    while (isDigit(cur))
      ++cur;
  }
  if (cur != buffer.end() &&
      (std::isalpha(static_cast<unsigned char>(*cur)) || *cur == '_'))
    return emitError(cur, "unexpected character after number");
  return formToken(isFloat ? TokenKind::floatLiteral : TokenKind::integer,
                   start);
}

Token Lexer::lexString(const char *start) {
  while (cur != buffer.end()) {
    char c = *cur++;
    if (c == '"')
      return formToken(TokenKind::string, start);
    if (c == '\\') {
      const char *escape = cur - 1;
      while (cur != buffer.end() && *cur != '\n')
        ++cur;
      return emitError(escape, "escape sequences are not supported in strings");
    }
    if (c == '\n') {
      --cur;
      break;
    }
  }
  return emitError(start, "unterminated string");
}
