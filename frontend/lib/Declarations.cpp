//===- Declarations.cpp - Mixers and layers, declared ---------------------===//
//
// Part of fpc. Mixers and layers are declared once and instantiated many
// times: declare() registers them and checks the signature rules that need no
// configuration; each instance then binds its configurations (bindConfigs) and
// the sizes of its signature (bindSignature) in the scope its body runs in.
//
//===----------------------------------------------------------------------===//

#include "MLIRGenInternals.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::fp;
using namespace mlir::fp::frontend;

LogicalResult Elaborator::declare(const LoadedSources &sources) {
  llvm::StringSet<> builtinComposites = {"linear", "wn_linear", "layer_norm",
                                         "rms_norm", "causal_conv"};
  for (const auto &file : sources.files) {
    for (const auto &decl : file->functions) {
      if (builtinComposites.contains(decl->name)) {
        emitError(decl->loc)
            << "'" << decl->name << "' is a built-in parameter module";
        continue;
      }
      auto [it, inserted] = functions.try_emplace(decl->name, decl.get());
      if (!inserted) {
        InFlightDiagnostic diag = emitError(decl->loc);
        diag << "redefinition of '" << decl->name << "'";
        diag.attachNote(loc(it->second->loc)) << "previous definition here";
        continue;
      }
      // Signature rules that need no configuration.
      if (decl->kind == FunctionDecl::Kind::Mixer) {
        if (decl->arguments.size() != 2)
          emitError(decl->loc)
              << "a mixer takes two arguments, its parameter input and the "
                 "vector it mixes ('(p: [m], v: [d])'), got "
              << decl->arguments.size();
        else if (decl->arguments[1].shape.size() != 1 ||
                 decl->resultShape.size() != 1)
          emitError(decl->resultLoc)
              << "a mixer maps a vector to a vector of the same width "
                 "('(p: [m], v: [d]) -> [d]')";
      } else if (decl->kind == FunctionDecl::Kind::Layer) {
        if (decl->arguments.size() != 1 || decl->arguments[0].shape.size() != 1)
          emitError(decl->loc) << "a layer takes one argument, the "
                                  "activation of width d_model ('(u: [D])')";
        if (decl->resultShape.size() != 1)
          emitError(decl->resultLoc)
              << "a layer returns an activation of width d_model ('-> [D]')";
      }
      for (const Argument &arg : decl->arguments)
        if (arg.shape.empty() && decl->kind != FunctionDecl::Kind::Map)
          emitError(arg.shapeLoc)
              << "argument '" << arg.name << "' needs at least one dimension";
    }
  }
  return success(numErrors == 0);
}

SmallVector<const Stmt *> Elaborator::getConfigs(const FunctionDecl &decl) {
  SmallVector<const Stmt *> configs;
  for (const StmtPtr &stmt : decl.body)
    if (stmt->kind == StmtKind::Config)
      configs.push_back(stmt.get());
  return configs;
}

std::string Elaborator::uniqueSymbol(StringRef base) {
  std::string name = base.str();
  for (unsigned i = 1; symbols.contains(name); ++i)
    name = (base + "_" + Twine(i)).str();
  symbols.insert(name);
  return name;
}

Val Elaborator::makeInstance(const FunctionDecl &decl, const Expr *call,
                             llvm::SMLoc l) {
  auto instance = std::make_shared<InstanceInfo>();
  instance->decl = &decl;
  instance->loc = l;
  if (call) {
    SmallVector<const Stmt *> configs = getConfigs(decl);
    llvm::StringSet<> seen;
    for (auto [i, arg] : llvm::enumerate(call->operands)) {
      const std::string &name = call->argNames[i];
      llvm::SMLoc argLoc = call->argNameLocs[i];
      if (name.empty())
        return fail(arg->loc, "configuration of '" + decl.name +
                                  "' is passed by name ('name = value')");
      if (!seen.insert(name).second)
        return fail(argLoc, "configuration '" + name + "' given twice");
      if (llvm::none_of(configs,
                        [&](const Stmt *c) { return c->name == name; })) {
        std::string known;
        for (const Stmt *c : configs)
          known += (known.empty() ? "" : ", ") + c->name;
        return fail(argLoc, "'" + decl.name + "' has no configuration '" +
                                name + "'" +
                                (known.empty() ? std::string(" (it has none)")
                                               : "; it has: " + known));
      }
      Val value = eval(*arg);
      if (value.isError())
        return value;
      instance->overrides.push_back(
          {name, argLoc, std::make_shared<Val>(std::move(value))});
    }
  }
  Val result;
  result.kind = Val::Kind::Instance;
  result.instance = std::move(instance);
  return result;
}

LogicalResult Elaborator::bindConfigs(const FunctionDecl &decl,
                                      const InstanceInfo &instance,
                                      Scope &scope, llvm::SMLoc useLoc) {
  unsigned errors = numErrors;
  for (const Stmt *config : getConfigs(decl)) {
    const InstanceInfo::Override *given = nullptr;
    for (const auto &o : instance.overrides)
      if (o.name == config->name)
        given = &o;
    auto existing = scope.names.find(config->name);
    if (existing != scope.names.end()) {
      InFlightDiagnostic diag = emitError(config->nameLoc);
      if (existing->second.role == Binding::Role::Config) {
        diag << "configuration '" << config->name << "' is declared twice";
        diag.attachNote(loc(existing->second.loc))
            << "previous declaration here";
      } else {
        diag << "configuration '" << config->name
             << "' is already bound by the signature";
      }
      continue;
    }
    std::optional<Val> fallback;
    if (config->value) {
      // Configuration values are computed at compile time, outside any
      // function.
      FuncCtx configCtx;
      configCtx.decl = &decl;
      FuncCtx *savedCtx = ctx;
      Scope *saved = this->scope;
      ctx = &configCtx;
      this->scope = &scope;
      fallback = eval(*config->value);
      this->scope = saved;
      ctx = savedCtx;
      if (fallback->isError())
        continue;
    }
    Val value;
    if (!given) {
      if (!fallback) {
        emitError(useLoc) << "'" << decl.name << "' needs a value for "
                          << "configuration '" << config->name << "'";
        continue;
      }
      value = *fallback;
    } else {
      value = *given->value;
      if (fallback) {
        bool ok = fallback->kind == value.kind;
        if (fallback->kind == Val::Kind::Float &&
            value.kind == Val::Kind::Int) {
          value = Val::ofFloat(static_cast<double>(value.intValue));
          ok = true;
        }
        if (ok && value.kind == Val::Kind::Instance &&
            value.instance->decl->kind != fallback->instance->decl->kind)
          ok = false;
        if (!ok) {
          emitError(given->loc)
              << "configuration '" << config->name << "' of '" << decl.name
              << "' expects " << describe(*fallback) << " or alike, got "
              << describe(value);
          continue;
        }
      }
    }
    if (value.kind == Val::Kind::Tensor || value.kind == Val::Kind::Param ||
        value.kind == Val::Kind::Module || value.kind == Val::Kind::Map) {
      emitError(given ? given->loc : config->loc)
          << "configuration '" << config->name
          << "' must be a number, a boolean, or a mixer or layer; got "
          << describe(value);
      continue;
    }
    scope.names[config->name] = {value, config->nameLoc, Binding::Role::Config};
  }
  return success(errors == numErrors);
}

LogicalResult Elaborator::bindSignature(
    const FunctionDecl &decl, ArrayRef<ArrayRef<int64_t>> actual, Scope &scope,
    llvm::SMLoc useLoc, SmallVectorImpl<SmallVector<int64_t>> &argShapes,
    SmallVector<int64_t> &resultShape, bool configsBound) {
  unsigned errors = numErrors;
  SmallVector<const Stmt *> configs = getConfigs(decl);
  auto isConfig = [&](StringRef name) {
    return llvm::any_of(configs,
                        [&](const Stmt *c) { return c->name == name; });
  };
  if (!configsBound) {
    // First pass: bind the bare names that are not configurations.
    for (auto [i, arg] : llvm::enumerate(decl.arguments)) {
      if (i >= actual.size() || actual[i].size() != arg.shape.size())
        continue;
      for (auto [j, dim] : llvm::enumerate(arg.shape)) {
        if (dim->kind != ExprKind::Name || isConfig(dim->name))
          continue;
        Binding *existing = scope.lookup(dim->name);
        if (existing && existing->role == Binding::Role::Size) {
          if (existing->value.intValue != actual[i][j])
            emitError(useLoc)
                << "'" << decl.name << "' needs '" << dim->name
                << "' to agree between its arguments: "
                << existing->value.intValue << " vs " << actual[i][j];
          continue;
        }
        scope.names[dim->name] = {Val::ofInt(actual[i][j]), dim->loc,
                                  Binding::Role::Size};
      }
    }
    return success(errors == numErrors);
  }
  // Second pass, after the configurations: evaluate every dimension.
  Scope *saved = this->scope;
  this->scope = &scope;
  for (auto [i, arg] : llvm::enumerate(decl.arguments)) {
    SmallVector<int64_t> shape;
    for (const ExprPtr &dim : arg.shape) {
      std::optional<int64_t> size = evalSize(*dim, "a dimension");
      shape.push_back(size.value_or(-1));
    }
    if (i < actual.size() && !llvm::is_contained(shape, -1) &&
        ArrayRef<int64_t>(shape) != actual[i])
      emitError(useLoc) << "argument '" << arg.name << "' of '" << decl.name
                        << "' has shape " << formatShape(shape)
                        << " but is given " << formatShape(actual[i]);
    argShapes.push_back(std::move(shape));
  }
  for (const ExprPtr &dim : decl.resultShape)
    resultShape.push_back(evalSize(*dim, "a dimension").value_or(-1));
  this->scope = saved;
  return success(errors == numErrors);
}

bool Elaborator::checkShape(ArrayRef<int64_t> shape, llvm::SMLoc l) {
  int64_t elements = 1;
  for (int64_t size : shape) {
    if (size < 1 || size > kMaxDim) {
      emitError(l) << "dimension " << size << " out of range [1, " << kMaxDim
                   << "]";
      return false;
    }
    elements *= size;
    if (elements > kMaxElements) {
      emitError(l) << "shape " << formatShape(shape) << " has more than "
                   << kMaxElements << " elements";
      return false;
    }
  }
  return true;
}
