//===- Parser.cpp - Parser of the .fp language ----------------------------===//
//
// Part of fpc. The grammar is in docs/dsl.md §2.
//
//===----------------------------------------------------------------------===//

#include "fp/Frontend/Parser.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

using namespace mlir;
using namespace mlir::fp::frontend;

namespace {

/// Nesting deeper than this (brackets, blocks, unary chains) is refused: it
/// is never useful and would otherwise exhaust the stack.
constexpr unsigned kMaxNesting = 200;
/// Expression trees taller than this are refused: a flat chain such as
/// `a + a + ... + a` is as tall as it is long.
constexpr unsigned kMaxExprHeight = 256;
/// After this many errors in one file the parser stops.
constexpr unsigned kMaxErrors = 20;

class Parser {
public:
  Parser(const SourceLocator &locator, unsigned bufferId, SourceFile &file)
      : locator(locator), lexer(locator, bufferId), file(file) {
    tok = lexer.lex();
  }

  LogicalResult parseFile();

private:
  //===--------------------------------------------------------------------===//
  // Token helpers
  //===--------------------------------------------------------------------===//

  void consume() {
    if (stopped)
      tok.kind = TokenKind::eof;
    else
      tok = lexer.lex();
  }
  /// Ends parsing: every following token reads as end of file.
  void stop() {
    stopped = true;
    tok.kind = TokenKind::eof;
  }
  bool consumeIf(TokenKind kind) {
    if (!tok.is(kind))
      return false;
    consume();
    return true;
  }
  bool isContextual(StringRef word) const {
    return tok.is(TokenKind::identifier) && tok.spelling == word;
  }

  /// Reports `message` at the current token. Returns failure so callers can
  /// `return emitError(...)`.
  LogicalResult emitError(const Twine &message) {
    return emitError(tok.getLoc(), message);
  }
  LogicalResult emitError(llvm::SMLoc loc, const Twine &message) {
    ++numErrors;
    // After giving up, and at an invalid token the lexer already reported,
    // stay quiet.
    if (stopped)
      return failure();
    if (!tok.is(TokenKind::error) || loc != tok.getLoc())
      locator.emitError(loc) << message;
    if (numErrors == kMaxErrors) {
      locator.emitError(loc) << "too many errors, giving up on this file";
      stop();
    }
    return failure();
  }
  /// "expected X, found Y".
  LogicalResult emitExpected(const Twine &what) {
    std::string found = tok.is(TokenKind::eof) ? std::string("end of file")
                                               : "'" + tok.spelling.str() + "'";
    return emitError("expected " + what + ", found " + found);
  }
  LogicalResult expect(TokenKind kind, const Twine &context) {
    if (consumeIf(kind))
      return success();
    return emitExpected("'" + getTokenSpelling(kind) + "' " + context);
  }
  LogicalResult parseIdentifier(std::string &name, llvm::SMLoc &loc,
                                const Twine &what) {
    if (!tok.is(TokenKind::identifier))
      return emitExpected(what);
    name = tok.spelling.str();
    loc = tok.getLoc();
    consume();
    return success();
  }

  /// Enters one nesting level; fails (once) when too deep.
  struct NestingGuard {
    Parser &parser;
    explicit NestingGuard(Parser &parser) : parser(parser) { ++parser.depth; }
    ~NestingGuard() { --parser.depth; }
    LogicalResult check() {
      if (parser.depth <= kMaxNesting)
        return success();
      if (!parser.reportedNesting) {
        parser.reportedNesting = true;
        (void)parser.emitError("nesting deeper than " + Twine(kMaxNesting) +
                               " levels");
      }
      parser.stop();
      return failure();
    }
  };

  /// A statement ends at ';', at '}', at the end of the file, or before a
  /// token that starts a new line.
  LogicalResult expectStatementEnd() {
    if (consumeIf(TokenKind::semicolon) || tok.is(TokenKind::rBrace) ||
        tok.is(TokenKind::eof) || tok.startsLine)
      return success();
    return emitExpected("end of statement (a line break or ';')");
  }

  /// Skips to the start of the next statement after an error.
  void recoverStatement() {
    unsigned braces = 0;
    while (!tok.is(TokenKind::eof)) {
      if (braces == 0 && (tok.is(TokenKind::rBrace) ||
                          (tok.startsLine && !tok.is(TokenKind::lBrace))))
        return;
      if (tok.is(TokenKind::semicolon) && braces == 0) {
        consume();
        return;
      }
      if (tok.is(TokenKind::lBrace))
        ++braces;
      else if (tok.is(TokenKind::rBrace))
        --braces;
      consume();
    }
  }

  /// Skips to the next top-level declaration after an error.
  void recoverDeclaration() {
    while (!tok.is(TokenKind::eof)) {
      if (tok.startsLine &&
          (tok.is(TokenKind::kw_import) || isContextual("mixer") ||
           isContextual("layer") || isContextual("model")))
        return;
      consume();
    }
  }

  //===--------------------------------------------------------------------===//
  // Declarations and statements
  //===--------------------------------------------------------------------===//

  LogicalResult parseImport();
  LogicalResult parseFunction(FunctionDecl::Kind kind,
                              std::unique_ptr<FunctionDecl> &result);
  LogicalResult parseModel();
  LogicalResult parseSignature(FunctionDecl &decl);
  LogicalResult parseShape(std::vector<ExprPtr> &shape, llvm::SMLoc &loc);
  LogicalResult parseBlock(StmtList &block);
  LogicalResult parseStatement(StmtList &block);
  LogicalResult parseParam(Stmt &stmt);

  //===--------------------------------------------------------------------===//
  // Expressions
  //===--------------------------------------------------------------------===//

  ExprPtr parseExpr() { return parseBinary(0); }
  ExprPtr parseBinary(unsigned minPrecedence);
  ExprPtr parseUnary();
  ExprPtr parsePostfix();
  ExprPtr parsePrimary();
  LogicalResult parseCallArguments(Expr &call);
  /// Computes `expr`'s height from its operands; fails (and stops) when the
  /// tree is too tall.
  LogicalResult checkHeight(Expr &expr) {
    for (const ExprPtr &operand : expr.operands)
      expr.height = std::max(expr.height, operand->height + 1);
    if (expr.height <= kMaxExprHeight)
      return success();
    (void)emitError(expr.loc, "expression nested deeper than " +
                                  Twine(kMaxExprHeight) +
                                  " levels; split it with 'let'");
    stop();
    return failure();
  }

  const SourceLocator &locator;
  Lexer lexer;
  SourceFile &file;
  Token tok;
  unsigned depth = 0;
  unsigned numErrors = 0;
  bool reportedNesting = false;
  bool stopped = false;
};

} // namespace

//===----------------------------------------------------------------------===//
// Declarations
//===----------------------------------------------------------------------===//

LogicalResult Parser::parseFile() {
  while (!tok.is(TokenKind::eof)) {
    if (consumeIf(TokenKind::semicolon))
      continue;
    LogicalResult result = failure();
    if (tok.is(TokenKind::kw_import)) {
      result = parseImport();
    } else if (isContextual("mixer") || isContextual("layer")) {
      auto kind = isContextual("mixer") ? FunctionDecl::Kind::Mixer
                                        : FunctionDecl::Kind::Layer;
      consume();
      std::unique_ptr<FunctionDecl> decl;
      result = parseFunction(kind, decl);
      if (decl)
        file.functions.push_back(std::move(decl));
    } else if (isContextual("model")) {
      result = parseModel();
    } else {
      (void)emitExpected("a declaration ('import', 'mixer', 'layer' or "
                         "'model')");
    }
    if (failed(result)) {
      consume();
      recoverDeclaration();
    }
  }
  return success(numErrors == 0);
}

LogicalResult Parser::parseImport() {
  llvm::SMLoc loc = tok.getLoc();
  consume();
  if (!tok.is(TokenKind::string))
    return emitExpected("a quoted file name after 'import'");
  ImportDecl import;
  import.loc = loc;
  import.path = tok.spelling.drop_front().drop_back().str();
  if (import.path.empty())
    return emitError("empty file name in import");
  consume();
  file.imports.push_back(std::move(import));
  return expectStatementEnd();
}

LogicalResult Parser::parseFunction(FunctionDecl::Kind kind,
                                    std::unique_ptr<FunctionDecl> &result) {
  auto decl = std::make_unique<FunctionDecl>();
  decl->kind = kind;
  decl->file = file.path;
  if (failed(parseIdentifier(decl->name, decl->loc, "a name")) ||
      failed(parseSignature(*decl)))
    return failure();
  LogicalResult body = parseBlock(decl->body);
  result = std::move(decl);
  return body;
}

LogicalResult Parser::parseSignature(FunctionDecl &decl) {
  if (failed(expect(TokenKind::lParen, "to start the arguments")))
    return failure();
  if (!tok.is(TokenKind::rParen)) {
    do {
      Argument arg;
      if (failed(parseIdentifier(arg.name, arg.loc, "an argument name")) ||
          failed(expect(TokenKind::colon, "after the argument name")) ||
          failed(parseShape(arg.shape, arg.shapeLoc)))
        return failure();
      decl.arguments.push_back(std::move(arg));
    } while (consumeIf(TokenKind::comma));
  }
  if (failed(expect(TokenKind::rParen, "to end the arguments")) ||
      failed(expect(TokenKind::arrow, "before the result shape")))
    return failure();
  return parseShape(decl.resultShape, decl.resultLoc);
}

LogicalResult Parser::parseShape(std::vector<ExprPtr> &shape,
                                 llvm::SMLoc &loc) {
  loc = tok.getLoc();
  if (failed(expect(TokenKind::lSquare, "to start a shape")))
    return failure();
  if (!tok.is(TokenKind::rSquare)) {
    do {
      ExprPtr size = parseExpr();
      if (!size)
        return failure();
      shape.push_back(std::move(size));
    } while (consumeIf(TokenKind::comma));
  }
  return expect(TokenKind::rSquare, "to end the shape");
}

LogicalResult Parser::parseModel() {
  consume();
  auto model = std::make_unique<ModelDecl>();
  if (failed(parseIdentifier(model->name, model->loc, "a model name")) ||
      failed(expect(TokenKind::lBrace, "to start the model")))
    return failure();
  while (!tok.is(TokenKind::rBrace) && !tok.is(TokenKind::eof)) {
    if (consumeIf(TokenKind::semicolon))
      continue;
    ModelDecl::Field field;
    ExprPtr value;
    const char *before = tok.spelling.data();
    if (succeeded(parseIdentifier(field.key, field.loc, "a model field")) &&
        succeeded(expect(TokenKind::equal, "after the field name")) &&
        (value = parseExpr()) && succeeded(expectStatementEnd())) {
      field.value = std::move(value);
      model->fields.push_back(std::move(field));
      continue;
    }
    if (tok.spelling.data() == before)
      consume();
    recoverStatement();
  }
  LogicalResult end = expect(TokenKind::rBrace, "to end the model");
  file.models.push_back(std::move(model));
  return end;
}

LogicalResult Parser::parseBlock(StmtList &block) {
  NestingGuard guard(*this);
  if (failed(guard.check()))
    return failure();
  if (failed(expect(TokenKind::lBrace, "to start a block")))
    return failure();
  while (!tok.is(TokenKind::rBrace) && !tok.is(TokenKind::eof)) {
    if (consumeIf(TokenKind::semicolon))
      continue;
    const char *before = tok.spelling.data();
    if (succeeded(parseStatement(block)))
      continue;
    // Always make progress: skip the offending token, then the statement.
    if (tok.spelling.data() == before)
      consume();
    recoverStatement();
  }
  return expect(TokenKind::rBrace, "to end the block");
}

LogicalResult Parser::parseStatement(StmtList &block) {
  auto stmt = std::make_unique<Stmt>();
  Stmt &s = *stmt;
  s.loc = tok.getLoc();
  switch (tok.kind) {
  case TokenKind::kw_config:
    consume();
    s.kind = StmtKind::Config;
    if (failed(parseIdentifier(s.name, s.nameLoc, "a configuration name")))
      return failure();
    if (consumeIf(TokenKind::equal) && !(s.value = parseExpr()))
      return failure();
    break;
  case TokenKind::kw_param:
    consume();
    s.kind = StmtKind::Param;
    if (failed(parseParam(s)))
      return failure();
    break;
  case TokenKind::kw_let:
    consume();
    s.kind = StmtKind::Let;
    if (failed(parseIdentifier(s.name, s.nameLoc, "a name after 'let'")) ||
        failed(expect(TokenKind::equal, "after the name")) ||
        !(s.value = parseExpr()))
      return failure();
    break;
  case TokenKind::kw_fn: {
    consume();
    s.kind = StmtKind::Map;
    s.map = std::make_unique<FunctionDecl>();
    s.map->kind = FunctionDecl::Kind::Map;
    s.map->file = file.path;
    if (failed(parseIdentifier(s.map->name, s.map->loc, "a map name")) ||
        failed(parseSignature(*s.map)))
      return failure();
    s.name = s.map->name;
    s.nameLoc = s.map->loc;
    if (failed(parseBlock(s.map->body)))
      return failure();
    block.push_back(std::move(stmt));
    return success();
  }
  case TokenKind::kw_for:
    consume();
    s.kind = StmtKind::For;
    if (failed(parseIdentifier(s.name, s.nameLoc, "a loop variable")) ||
        failed(expect(TokenKind::kw_in, "after the loop variable")) ||
        !(s.value = parseExpr()) ||
        failed(expect(TokenKind::dotDot, "in the loop range 'lo..hi'")) ||
        !(s.upper = parseExpr()) || failed(parseBlock(s.body)))
      return failure();
    block.push_back(std::move(stmt));
    return success();
  case TokenKind::kw_if: {
    consume();
    s.kind = StmtKind::If;
    if (!(s.value = parseExpr()) || failed(parseBlock(s.body)))
      return failure();
    if (consumeIf(TokenKind::kw_else)) {
      if (tok.is(TokenKind::kw_if)) {
        NestingGuard guard(*this);
        if (failed(guard.check()) || failed(parseStatement(s.elseBody)))
          return failure();
      } else if (failed(parseBlock(s.elseBody))) {
        return failure();
      }
    }
    block.push_back(std::move(stmt));
    return success();
  }
  case TokenKind::kw_assert:
    consume();
    s.kind = StmtKind::Assert;
    if (!(s.value = parseExpr()) ||
        failed(expect(TokenKind::comma, "before the assertion message")))
      return failure();
    if (!tok.is(TokenKind::string))
      return emitExpected("a quoted message");
    s.message = tok.spelling.drop_front().drop_back().str();
    consume();
    break;
  case TokenKind::kw_return:
    consume();
    s.kind = StmtKind::Return;
    if (!(s.value = parseExpr()))
      return failure();
    break;
  case TokenKind::identifier:
    s.kind = StmtKind::Assign;
    s.name = tok.spelling.str();
    s.nameLoc = tok.getLoc();
    consume();
    if (!tok.is(TokenKind::equal))
      return emitError(s.nameLoc, "expected a statement; to define '" + s.name +
                                      "' write 'let " + s.name + " = ...'");
    consume();
    if (!(s.value = parseExpr()))
      return failure();
    break;
  default:
    return emitExpected("a statement");
  }
  if (failed(expectStatementEnd()))
    return failure();
  block.push_back(std::move(stmt));
  return success();
}

LogicalResult Parser::parseParam(Stmt &s) {
  // Parameter names may be reserved words (`param mixer: ...`).
  if (tok.is(TokenKind::identifier) || isContextual("mixer")) {
    s.name = tok.spelling.str();
    s.nameLoc = tok.getLoc();
    consume();
  } else {
    return emitExpected("a parameter name");
  }
  if (failed(expect(TokenKind::colon, "after the parameter name")))
    return failure();
  if (tok.is(TokenKind::lSquare)) {
    llvm::SMLoc shapeLoc;
    s.hasParamShape = true;
    if (failed(parseShape(s.paramShape, shapeLoc)) ||
        failed(expect(TokenKind::equal, "before the initialiser")) ||
        !(s.paramInit = parseExpr()))
      return failure();
  } else if (!(s.paramComposite = parseExpr())) {
    return failure();
  }
  if (tok.is(TokenKind::identifier) && !tok.startsLine) {
    if (tok.spelling == "decay") {
      s.decay = DecayFlag::Decay;
    } else if (tok.spelling == "no_decay") {
      s.decay = DecayFlag::NoDecay;
    } else if (tok.spelling == "frozen") {
      s.frozen = true;
      s.frozenLoc = tok.getLoc();
    } else {
      return emitExpected(
          "'decay', 'no_decay', 'frozen' or the end of the statement");
    }
    consume();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

namespace {
/// Binary operators by increasing precedence; 0 means "not binary".
unsigned getPrecedence(TokenKind kind) {
  switch (kind) {
  case TokenKind::pipePipe:
    return 1;
  case TokenKind::ampAmp:
    return 2;
  case TokenKind::equalEqual:
  case TokenKind::bangEqual:
  case TokenKind::less:
  case TokenKind::lessEqual:
  case TokenKind::greater:
  case TokenKind::greaterEqual:
    return 3;
  case TokenKind::plus:
  case TokenKind::minus:
    return 4;
  case TokenKind::star:
  case TokenKind::slash:
  case TokenKind::percent:
    return 5;
  default:
    return 0;
  }
}
} // namespace

ExprPtr Parser::parseBinary(unsigned minPrecedence) {
  NestingGuard guard(*this);
  if (failed(guard.check()))
    return nullptr;
  ExprPtr lhs = parseUnary();
  while (lhs) {
    unsigned precedence = getPrecedence(tok.kind);
    // An operator at the start of a line begins a new statement.
    if (precedence == 0 || precedence <= minPrecedence || tok.startsLine)
      return lhs;
    auto binary = std::make_unique<Expr>(ExprKind::Binary, tok.getLoc());
    binary->op = tok.kind;
    consume();
    ExprPtr rhs = parseBinary(precedence);
    if (!rhs)
      return nullptr;
    if (precedence == 3 && getPrecedence(tok.kind) == 3 && !tok.startsLine) {
      (void)emitError("comparisons do not chain; use '&&'");
      return nullptr;
    }
    binary->operands.push_back(std::move(lhs));
    binary->operands.push_back(std::move(rhs));
    if (failed(checkHeight(*binary)))
      return nullptr;
    lhs = std::move(binary);
  }
  return lhs;
}

ExprPtr Parser::parseUnary() {
  if (!tok.is(TokenKind::minus) && !tok.is(TokenKind::bang))
    return parsePostfix();
  NestingGuard guard(*this);
  if (failed(guard.check()))
    return nullptr;
  auto unary = std::make_unique<Expr>(ExprKind::Unary, tok.getLoc());
  unary->op = tok.kind;
  consume();
  ExprPtr operand = parseUnary();
  if (!operand)
    return nullptr;
  unary->operands.push_back(std::move(operand));
  if (failed(checkHeight(*unary)))
    return nullptr;
  return unary;
}

ExprPtr Parser::parsePostfix() {
  ExprPtr expr = parsePrimary();
  while (expr && !tok.startsLine) {
    if (tok.is(TokenKind::lParen)) {
      if (expr->kind != ExprKind::Name) {
        (void)emitError("only names can be called");
        return nullptr;
      }
      expr->kind = ExprKind::Call;
      if (failed(parseCallArguments(*expr)) || failed(checkHeight(*expr)))
        return nullptr;
      continue;
    }
    if (!tok.is(TokenKind::lSquare))
      break;
    NestingGuard guard(*this);
    if (failed(guard.check()))
      return nullptr;
    llvm::SMLoc loc = tok.getLoc();
    consume();
    ExprPtr first = parseExpr();
    if (!first)
      return nullptr;
    ExprPtr result;
    if (consumeIf(TokenKind::colon)) {
      ExprPtr second = parseExpr();
      if (!second)
        return nullptr;
      result = std::make_unique<Expr>(ExprKind::Slice, loc);
      result->operands.push_back(std::move(expr));
      result->operands.push_back(std::move(first));
      result->operands.push_back(std::move(second));
    } else {
      result = std::make_unique<Expr>(ExprKind::Index, loc);
      result->operands.push_back(std::move(expr));
      result->operands.push_back(std::move(first));
    }
    if (failed(expect(TokenKind::rSquare, "to end the index")) ||
        failed(checkHeight(*result)))
      return nullptr;
    expr = std::move(result);
  }
  return expr;
}

LogicalResult Parser::parseCallArguments(Expr &call) {
  NestingGuard guard(*this);
  if (failed(guard.check()))
    return failure();
  consume(); // '('
  bool sawNamed = false;
  if (!tok.is(TokenKind::rParen)) {
    do {
      std::string argName;
      llvm::SMLoc argNameLoc = tok.getLoc();
      // `name = value` is a named argument; `name == value` is not.
      if (tok.is(TokenKind::identifier) && lexer.isNextSingleEqual()) {
        argName = tok.spelling.str();
        consume();
        consume();
      }
      if (argName.empty() && sawNamed)
        return emitError("positional argument after a named argument");
      sawNamed |= !argName.empty();
      ExprPtr value = parseExpr();
      if (!value)
        return failure();
      call.operands.push_back(std::move(value));
      call.argNames.push_back(std::move(argName));
      call.argNameLocs.push_back(argNameLoc);
    } while (consumeIf(TokenKind::comma));
  }
  return expect(TokenKind::rParen, "to end the arguments");
}

ExprPtr Parser::parsePrimary() {
  llvm::SMLoc loc = tok.getLoc();
  switch (tok.kind) {
  case TokenKind::integer: {
    auto expr = std::make_unique<Expr>(ExprKind::Integer, loc);
    if (tok.spelling.getAsInteger(10, expr->intValue)) {
      (void)emitError("integer literal too large");
      return nullptr;
    }
    consume();
    return expr;
  }
  case TokenKind::floatLiteral: {
    auto expr = std::make_unique<Expr>(ExprKind::Float, loc);
    std::string text = tok.spelling.str();
    errno = 0;
    expr->floatValue = std::strtod(text.c_str(), nullptr);
    if (errno == ERANGE || !std::isfinite(expr->floatValue)) {
      (void)emitError("number out of range");
      return nullptr;
    }
    consume();
    return expr;
  }
  case TokenKind::kw_true:
  case TokenKind::kw_false: {
    auto expr = std::make_unique<Expr>(ExprKind::Bool, loc);
    expr->boolValue = tok.is(TokenKind::kw_true);
    consume();
    return expr;
  }
  case TokenKind::identifier: {
    auto expr = std::make_unique<Expr>(ExprKind::Name, loc);
    expr->name = tok.spelling.str();
    consume();
    return expr;
  }
  case TokenKind::lParen: {
    NestingGuard guard(*this);
    if (failed(guard.check()))
      return nullptr;
    consume();
    ExprPtr inner = parseExpr();
    if (!inner || failed(expect(TokenKind::rParen, "to close '('")))
      return nullptr;
    return inner;
  }
  case TokenKind::lSquare: {
    NestingGuard guard(*this);
    if (failed(guard.check()))
      return nullptr;
    auto list = std::make_unique<Expr>(ExprKind::List, loc);
    consume();
    if (!tok.is(TokenKind::rSquare)) {
      do {
        ExprPtr element = parseExpr();
        if (!element)
          return nullptr;
        list->operands.push_back(std::move(element));
      } while (consumeIf(TokenKind::comma));
    }
    if (failed(expect(TokenKind::rSquare, "to end the list")) ||
        failed(checkHeight(*list)))
      return nullptr;
    return list;
  }
  default:
    (void)emitExpected("an expression");
    return nullptr;
  }
}

LogicalResult mlir::fp::frontend::parseSourceFile(const SourceLocator &locator,
                                                  unsigned bufferId,
                                                  SourceFile &file) {
  file.bufferId = bufferId;
  file.path = locator.getSourceMgr()
                  .getMemoryBuffer(bufferId)
                  ->getBufferIdentifier()
                  .str();
  return Parser(locator, bufferId, file).parseFile();
}
