//===- AST.h - Syntax tree of the .fp language ------------------*- C++ -*-===//
//
// The syntax tree the parser builds (docs/dsl.md §2). It is untyped: sizes,
// shapes and names are resolved when a layer is elaborated into the fp
// dialect (MLIRGen.h), because every size depends on the configuration the
// layer is instantiated with.
//
//===----------------------------------------------------------------------===//

#ifndef FP_FRONTEND_AST_H
#define FP_FRONTEND_AST_H

#include "fp/Frontend/Lexer.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/SMLoc.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mlir::fp::frontend {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  Integer, // 42
  Float,   // 1.0e-5
  Bool,    // true
  Name,    // x
  Unary,   // -x, !b
  Binary,  // a + b
  Call,    // f(a, b, name = c)
  Index,   // x[i]
  Slice,   // x[a : b]
  List,    // [a, b]: a shape
};

struct Expr {
  ExprKind kind;
  llvm::SMLoc loc;
  int64_t intValue = 0;
  double floatValue = 0;
  bool boolValue = false;
  /// Name: the identifier; Call: the callee.
  std::string name;
  /// Unary and Binary: the operator.
  TokenKind op = TokenKind::error;
  /// Unary: {operand}; Binary: {lhs, rhs}; Call and List: the arguments;
  /// Index: {base, index}; Slice: {base, start, end}.
  std::vector<ExprPtr> operands;
  /// Call: per argument, its name ("" when positional) and the name's
  /// location.
  std::vector<std::string> argNames;
  std::vector<llvm::SMLoc> argNameLocs;

  /// The height of the tree rooted here (1 for a leaf); the parser bounds
  /// it, so that evaluating and destroying a tree never recurses deeply.
  unsigned height = 1;

  Expr(ExprKind kind, llvm::SMLoc loc) : kind(kind), loc(loc) {}
};

/// `name: [sizes]` in a signature.
struct Argument {
  std::string name;
  llvm::SMLoc loc;
  std::vector<ExprPtr> shape;
  llvm::SMLoc shapeLoc;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using StmtList = std::vector<StmtPtr>;

/// A mixer, a layer, or a map (`fn`) declared inside a layer.
struct FunctionDecl {
  enum class Kind { Mixer, Layer, Map };
  Kind kind;
  std::string name;
  llvm::SMLoc loc;
  std::vector<Argument> arguments;
  std::vector<ExprPtr> resultShape;
  llvm::SMLoc resultLoc;
  StmtList body;
  /// The file that declares it (for messages).
  std::string file;
};

enum class DecayFlag { Default, Decay, NoDecay };

enum class StmtKind {
  Config, // config name = default
  Param,  // param name: type
  Let,    // let name = value
  Assign, // name = value
  Map,    // fn name(args) -> [shape] { ... }
  For,    // for i in lo..hi { ... }
  If,     // if cond { ... } else { ... }
  Assert, // assert cond, "message"
  Return, // return value
};

struct Stmt {
  StmtKind kind;
  llvm::SMLoc loc;
  std::string name;
  llvm::SMLoc nameLoc;
  /// Config: the default (may be null); Let/Assign/Return: the value;
  /// For: the lower bound; If/Assert: the condition.
  ExprPtr value;
  /// For: the upper bound.
  ExprPtr upper;
  /// Param: either a shape and an initialiser (`[d, N] = s4d_real`) ...
  std::vector<ExprPtr> paramShape;
  bool hasParamShape = false;
  ExprPtr paramInit;
  /// ... or a composite (`linear(D, d)`, `householder(r = 2)`).
  ExprPtr paramComposite;
  DecayFlag decay = DecayFlag::Default;
  /// Param: `frozen`, not trained (a buffer of the runtime's).
  bool frozen = false;
  llvm::SMLoc frozenLoc;
  /// Map: the declaration.
  std::unique_ptr<FunctionDecl> map;
  /// For, If: the bodies.
  StmtList body;
  StmtList elseBody;
  /// Assert: the message.
  std::string message;
};

/// `model name { key = value ... }`.
struct ModelDecl {
  std::string name;
  llvm::SMLoc loc;
  struct Field {
    std::string key;
    llvm::SMLoc loc;
    ExprPtr value;
  };
  std::vector<Field> fields;
};

struct ImportDecl {
  std::string path;
  llvm::SMLoc loc;
};

/// One parsed file.
struct SourceFile {
  std::string path;
  unsigned bufferId = 0;
  std::vector<ImportDecl> imports;
  std::vector<std::unique_ptr<FunctionDecl>> functions;
  std::vector<std::unique_ptr<ModelDecl>> models;
};

} // namespace mlir::fp::frontend

#endif // FP_FRONTEND_AST_H
