//===- Statements.cpp - Statements, run while elaborating -----------------===//
//
// Part of fpc. Statements run while the program is elaborated: `for` is
// unrolled and `if` decided on compile-time values, within a budget of
// statements (kMaxStatements) so that no program can run away.
//
//===----------------------------------------------------------------------===//

#include "MLIRGenInternals.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"

using namespace mlir;
using namespace mlir::fp;
using namespace mlir::fp::frontend;

void Elaborator::define(Scope &s, StringRef name, llvm::SMLoc l, Val value,
                        Binding::Role role) {
  auto it = s.names.find(name);
  if (it != s.names.end()) {
    InFlightDiagnostic diag = emitError(l);
    diag << "'" << name << "' is already defined";
    diag.attachNote(loc(it->second.loc)) << "previous definition here";
    return;
  }
  s.names[name] = {std::move(value), l, role};
}

void Elaborator::execBody(const StmtList &block, Scope &s, bool topLevel) {
  bool seenOther = false;
  for (auto [i, stmt] : llvm::enumerate(block)) {
    if (!spendBudget(stmt->loc))
      return;
    if (ctx->aborted)
      return;
    if (ctx->result) {
      emitError(stmt->loc) << "statement after 'return'";
      return;
    }
    if (stmt->kind == StmtKind::Config) {
      // Configurations are bound before the body runs (bindConfigs).
      if (!topLevel || ctx->decl->kind == FunctionDecl::Kind::Map)
        emitError(stmt->loc)
            << "'config' belongs at the top of a mixer or layer";
      else if (seenOther)
        emitError(stmt->loc) << "'config' must come before other statements";
      continue;
    }
    seenOther = true;
    execStmt(*stmt, s, topLevel, i + 1 == block.size());
  }
}

void Elaborator::execStmt(const Stmt &stmt, Scope &s, bool topLevel,
                          bool isLast) {
  Scope *saved = scope;
  scope = &s;
  llvm::scope_exit restore([&] { scope = saved; });
  switch (stmt.kind) {
  case StmtKind::Config:
    return;
  case StmtKind::Param:
    declareParam(stmt, s);
    return;
  case StmtKind::Let: {
    Val value = eval(*stmt.value);
    if (value.kind == Val::Kind::Tensor && value.value)
      if (Operation *op = value.value.getDefiningOp())
        if (op->getLoc() == loc(stmt.value->loc) &&
            op->getParentOfType<func::FuncOp>() == ctx->func)
          op->setLoc(
              NameLoc::get(builder.getStringAttr(stmt.name), op->getLoc()));
    define(s, stmt.name, stmt.nameLoc, std::move(value), Binding::Role::Local);
    return;
  }
  case StmtKind::Assign: {
    Scope *where = nullptr;
    Binding *binding = s.lookup(stmt.name, &where);
    if (binding && where->owner != ctx) {
      emitError(stmt.nameLoc) << "cannot assign to '" << stmt.name
                              << "' here: a map reads the layer's names but "
                                 "does not change them";
      return;
    }
    if (!binding) {
      emitError(stmt.nameLoc) << "assignment to undefined name '" << stmt.name
                              << "'; define it with 'let'";
      return;
    }
    if (binding->role != Binding::Role::Local) {
      emitError(stmt.nameLoc) << "cannot assign to '" << stmt.name
                              << "': only 'let' names can change";
      return;
    }
    Val value = eval(*stmt.value);
    if (value.isError() || binding->value.isError()) {
      binding->value = Val::error();
      return;
    }
    const Val &old = binding->value;
    bool sameKind =
        old.kind == value.kind || (old.isNumber() && value.isNumber());
    if (!sameKind ||
        (old.kind == Val::Kind::Tensor && old.activation != value.activation)) {
      emitError(stmt.loc) << "'" << stmt.name << "' holds " << describe(old)
                          << "; cannot assign " << describe(value);
      return;
    }
    binding->value = std::move(value);
    return;
  }
  case StmtKind::Map: {
    if (ctx->decl->kind != FunctionDecl::Kind::Layer || !topLevel) {
      emitError(stmt.loc) << "maps ('fn') are declared at the top level of "
                             "a layer";
      return;
    }
    Val map;
    map.kind = Val::Kind::Map;
    map.map = stmt.map.get();
    // A map sees the layer's names as they are where it is defined.
    map.closure = snapshot(s);
    map.closure->names[stmt.name] = {map, stmt.nameLoc, Binding::Role::Map};
    define(s, stmt.name, stmt.nameLoc, std::move(map), Binding::Role::Map);
    return;
  }
  case StmtKind::For: {
    std::optional<int64_t> lo = evalInt(*stmt.value, "a loop bound");
    std::optional<int64_t> hi = evalInt(*stmt.upper, "a loop bound");
    if (!lo || !hi)
      return;
    int64_t trips = 0;
    if (__builtin_sub_overflow(*hi, *lo, &trips) || trips > kMaxLoopTrips) {
      emitError(stmt.loc) << "loop from " << *lo << " to " << *hi
                          << " has more than " << kMaxLoopTrips
                          << " iterations, the most that are unrolled";
      return;
    }
    for (int64_t i = *lo; i < *hi; ++i) {
      if (!spendBudget(stmt.loc))
        return;
      Scope body(&s);
      body.names[stmt.name] = {Val::ofInt(i), stmt.nameLoc,
                               Binding::Role::LoopVar};
      unsigned errors = numErrors;
      execBody(stmt.body, body, /*topLevel=*/false);
      if (numErrors != errors || ctx->result)
        return;
    }
    return;
  }
  case StmtKind::If: {
    std::optional<bool> cond = evalBool(*stmt.value, "an 'if' condition");
    if (!cond)
      return;
    Scope body(&s);
    execBody(*cond ? stmt.body : stmt.elseBody, body, /*topLevel=*/false);
    return;
  }
  case StmtKind::Assert: {
    std::optional<bool> cond = evalBool(*stmt.value, "an assertion");
    if (cond && !*cond) {
      emitError(stmt.loc) << "assertion failed in '" << ctx->decl->name
                          << "': " << stmt.message;
      ctx->aborted = true;
    }
    return;
  }
  case StmtKind::Return: {
    if (!topLevel || !isLast) {
      emitError(stmt.loc) << "'return' must be the last statement of a "
                             "mixer, layer or map";
      return;
    }
    // An invalid value was reported where it arose; the caller sees the
    // error count and drops the function.
    ctx->result = materialise(eval(*stmt.value));
    return;
  }
  }
}
