//===- MLIRGen.cpp - From .fp source to the fp dialect --------------------===//
//
// Part of fpc. Elaboration: every size in a .fp program depends on the
// configuration a mixer or layer is instantiated with, so names, kinds and
// shapes are checked while the program is elaborated into the fp dialect,
// one instance at a time (docs/dsl.md §5). Configuration values are
// evaluated at compile time; `for` and `if` are unrolled and decided then.
//
//===----------------------------------------------------------------------===//

#include "fp/Frontend/MLIRGen.h"

#include "Loader.h"

#include "fp/Dialect/FpDialect.h"
#include "fp/Dialect/FpOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"

#include <cmath>
#include <map>
#include <memory>
#include <optional>

using namespace mlir;
using namespace mlir::fp;
using namespace mlir::fp::frontend;

namespace {

//===----------------------------------------------------------------------===//
// Limits: programs beyond these are refused with a diagnostic, so that no
// input can exhaust memory or the stack.
//===----------------------------------------------------------------------===//

/// Largest size of one dimension.
constexpr int64_t kMaxDim = int64_t(1) << 24;
/// Largest number of elements of a parameter or of one token's features.
constexpr int64_t kMaxElements = int64_t(1) << 28;
/// Deepest chain of mixer instances inside mixer instances.
constexpr unsigned kMaxInstanceDepth = 16;
/// Most iterations of one `for` loop.
constexpr int64_t kMaxLoopTrips = 1 << 16;
/// Most statements elaborated in one run (unrolled loops included).
constexpr int64_t kMaxStatements = 1 << 20;

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

struct ParamSpec {
  std::string name;
  SmallVector<int64_t> shape;
  InitAttr init;
  bool decay = false;
  llvm::SMLoc loc;
};

/// A mixer or layer with configuration overrides: `householder(r = 2)`.
struct InstanceInfo {
  const FunctionDecl *decl = nullptr;
  struct Override {
    std::string name;
    llvm::SMLoc loc;
    std::shared_ptr<struct Val> value;
  };
  std::vector<Override> overrides;
  llvm::SMLoc loc;
};

/// A composite parameter: a linear map, a weight-normalised linear map or a
/// mixer instance, called like a function.
struct ModuleInfo {
  enum class Kind { Linear, WNLinear, LayerNorm, RMSNorm, CausalConv, Mixer };
  Kind kind;
  std::string name;
  int64_t in = 0, out = 0;
  double eps = 1e-5;
  std::shared_ptr<ParamSpec> weight, gain, bias;
  std::shared_ptr<InstanceInfo> mixer;
  /// Set when the mixer failed to elaborate (reported once).
  bool failed = false;
  /// Mixer functions already emitted, by argument shapes.
  std::map<std::string, func::FuncOp> functions;
  std::string prefix;
};

struct Scope;

struct Val {
  enum class Kind {
    Error,
    Int,
    Float,
    Bool,
    Tensor,
    Param,
    Instance,
    Module,
    Map
  };
  Kind kind = Kind::Error;
  int64_t intValue = 0;
  double floatValue = 0;
  bool boolValue = false;
  /// Tensor: the value, whether it is an activation (batch and time leading
  /// dimensions, dynamic) and its shape (per token for activations).
  Value value;
  bool activation = false;
  SmallVector<int64_t> shape;
  std::shared_ptr<ParamSpec> param;
  std::shared_ptr<InstanceInfo> instance;
  std::shared_ptr<ModuleInfo> module;
  const FunctionDecl *map = nullptr;
  Scope *closure = nullptr;

  static Val error() { return Val(); }
  static Val ofInt(int64_t v) {
    Val r;
    r.kind = Kind::Int;
    r.intValue = v;
    return r;
  }
  static Val ofFloat(double v) {
    Val r;
    r.kind = Kind::Float;
    r.floatValue = v;
    return r;
  }
  static Val ofBool(bool v) {
    Val r;
    r.kind = Kind::Bool;
    r.boolValue = v;
    return r;
  }
  static Val ofTensor(Value value, bool activation, ArrayRef<int64_t> shape) {
    Val r;
    r.kind = Kind::Tensor;
    r.value = value;
    r.activation = activation;
    r.shape.assign(shape.begin(), shape.end());
    return r;
  }

  bool isError() const { return kind == Kind::Error; }
  bool isNumber() const { return kind == Kind::Int || kind == Kind::Float; }
  bool isTensorLike() const {
    return kind == Kind::Tensor || kind == Kind::Param;
  }
  double asDouble() const {
    return kind == Kind::Int ? static_cast<double>(intValue) : floatValue;
  }
};

std::string formatShape(ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (auto [i, size] : llvm::enumerate(shape)) {
    if (i)
      text += ", ";
    text += std::to_string(size);
  }
  return text + "]";
}

/// What a value is, for messages.
std::string describe(const Val &v) {
  switch (v.kind) {
  case Val::Kind::Error:
    return "an invalid value";
  case Val::Kind::Int:
    return "the integer " + std::to_string(v.intValue);
  case Val::Kind::Float:
    return "a number";
  case Val::Kind::Bool:
    return "a boolean";
  case Val::Kind::Tensor:
    return (v.activation ? "an activation of shape " : "a tensor of shape ") +
           formatShape(v.shape);
  case Val::Kind::Param:
    return "the parameter '" + v.param->name + "' of shape " +
           formatShape(v.param->shape);
  case Val::Kind::Instance:
    return (v.instance->decl->kind == FunctionDecl::Kind::Mixer
                ? "the mixer '"
                : "the layer '") +
           v.instance->decl->name + "'";
  case Val::Kind::Module:
    return "the parameter module '" + v.module->name + "'";
  case Val::Kind::Map:
    return "the map '" + v.map->name + "'";
  }
  return "a value";
}

struct Binding {
  Val value;
  llvm::SMLoc loc;
  enum class Role { Local, Config, Size, LoopVar, Param, Map } role;
};

struct FuncCtx;

struct Scope {
  Scope *parent = nullptr;
  /// The function whose body this scope belongs to; a map's scopes see the
  /// layer's names but may not change them.
  const FuncCtx *owner = nullptr;
  llvm::StringMap<Binding> names;

  explicit Scope(Scope *parent, const FuncCtx *owner = nullptr)
      : parent(parent), owner(owner    ? owner
                              : parent ? parent->owner
                                       : nullptr) {}
  Binding *lookup(StringRef name, Scope **where = nullptr) {
    for (Scope *s = this; s; s = s->parent) {
      auto it = s->names.find(name);
      if (it != s->names.end()) {
        if (where)
          *where = s;
        return &it->second;
      }
    }
    return nullptr;
  }
};

/// The function being emitted: a layer, one of its maps, or a mixer.
struct FuncCtx {
  func::FuncOp func;
  const FunctionDecl *decl = nullptr;
  /// Prefix of the names of the parameters declared in it ("" or
  /// "mixer.").
  std::string paramPrefix;
  /// fp.param ops already materialised here, by name.
  llvm::StringMap<Value> params;
  Operation *lastParam = nullptr;
  /// Maps: the layer values it reads, passed as extra arguments.
  SmallVector<Value> captures;
  llvm::DenseMap<Value, Value> captureArgs;
  /// Set by a failed assertion: the rest of the body is not elaborated.
  bool aborted = false;
  /// Layers: the input, and the fixed point's iteration counts.
  Value input;
  unsigned numFixedPoints = 0;
  Value iterations;
  /// The returned value, once `return` ran.
  std::optional<Val> result;
  /// The parameter names declared in this layer instance (shared by its
  /// maps and mixers).
  llvm::StringMap<llvm::SMLoc> *layerParams = nullptr;
  /// The parameter names some function of this layer instance reads.
  llvm::StringSet<> *usedParams = nullptr;
  unsigned depth = 0;
};

//===----------------------------------------------------------------------===//
// The elaborator
//===----------------------------------------------------------------------===//

class Elaborator {
public:
  Elaborator(const SourceLocator &locator, ModuleOp module, Type elementType,
             const std::map<std::string, int64_t> &modelOverrides)
      : locator(locator), module(module), builder(module.getContext()),
        elementType(elementType), modelOverrides(modelOverrides) {}

  /// Registers the mixers and layers of every file; reports duplicates.
  LogicalResult declare(const LoadedSources &sources);
  /// Elaborates the main file's models, or its layers if it has none.
  LogicalResult elaborate(const SourceFile &main);

private:
  //===--- Diagnostics ----------------------------------------------------===//

  InFlightDiagnostic emitError(llvm::SMLoc loc) {
    ++numErrors;
    return locator.emitError(loc);
  }
  Val fail(llvm::SMLoc loc, const Twine &message) {
    emitError(loc) << message;
    return Val::error();
  }
  Location loc(llvm::SMLoc l) const { return locator.get(l); }
  /// Counts one elaborated statement; fails once past the budget.
  bool spendBudget(llvm::SMLoc l) {
    if (++statements <= kMaxStatements)
      return true;
    if (statements == kMaxStatements + 1)
      emitError(l) << "program unrolls to more than " << kMaxStatements
                   << " statements";
    return false;
  }

  //===--- Types ----------------------------------------------------------===//

  RankedTensorType activationType(ArrayRef<int64_t> shape) const {
    SmallVector<int64_t> dims = {ShapedType::kDynamic, ShapedType::kDynamic};
    dims.append(shape.begin(), shape.end());
    return RankedTensorType::get(dims, elementType);
  }
  RankedTensorType staticType(ArrayRef<int64_t> shape) const {
    return RankedTensorType::get(shape, elementType);
  }
  bool checkShape(ArrayRef<int64_t> shape, llvm::SMLoc l);

  //===--- Declarations and instances -------------------------------------===//

  const FunctionDecl *findFunction(StringRef name) const {
    auto it = functions.find(name);
    return it == functions.end() ? nullptr : it->second;
  }
  static SmallVector<const Stmt *> getConfigs(const FunctionDecl &decl);
  Val makeInstance(const FunctionDecl &decl, const Expr *call, llvm::SMLoc l);
  LogicalResult bindConfigs(const FunctionDecl &decl,
                            const InstanceInfo &instance, Scope &scope,
                            llvm::SMLoc useLoc);
  LogicalResult bindSignature(const FunctionDecl &decl,
                              ArrayRef<ArrayRef<int64_t>> actual, Scope &scope,
                              llvm::SMLoc useLoc,
                              SmallVectorImpl<SmallVector<int64_t>> &argShapes,
                              SmallVector<int64_t> &resultShape,
                              bool configsBound);
  std::string uniqueSymbol(StringRef base);

  func::FuncOp instantiateLayer(const InstanceInfo &instance,
                                std::optional<int64_t> inputSize,
                                llvm::SMLoc useLoc);
  Val callMixer(ModuleInfo &module, ArrayRef<Val> args, llvm::SMLoc l);
  Val callMap(const Val &map, ArrayRef<Val> args, llvm::SMLoc l);
  Val callModule(ModuleInfo &module, const Expr &call);

  //===--- Statements -----------------------------------------------------===//

  void execBody(const StmtList &block, Scope &scope, bool topLevel);
  void execStmt(const Stmt &stmt, Scope &scope, bool topLevel, bool isLast);
  void declareParam(const Stmt &stmt, Scope &scope);
  void declareParamImpl(const Stmt &stmt, Scope &scope);
  std::optional<InitAttr> evalInit(const Expr &expr);
  void define(Scope &scope, StringRef name, llvm::SMLoc l, Val value,
              Binding::Role role);

  //===--- Expressions ----------------------------------------------------===//

  Val eval(const Expr &expr);
  Val evalName(const Expr &expr);
  /// The visible name or declaration closest to `name` (for "did you
  /// mean"), or "".
  std::string closestName(StringRef name);
  Val evalUnary(const Expr &expr);
  Val evalBinary(const Expr &expr);
  Val evalCall(const Expr &expr);
  Val evalBuiltin(const Expr &expr);
  Val evalIndex(const Expr &expr);
  Val evalSlice(const Expr &expr);
  Val evalFixedPoint(const Expr &expr, ArrayRef<const Expr *> args);

  std::optional<int64_t> evalInt(const Expr &expr, StringRef what);
  std::optional<int64_t> evalSize(const Expr &expr, StringRef what);
  std::optional<double> evalFloat(const Expr &expr, StringRef what);
  std::optional<bool> evalBool(const Expr &expr, StringRef what);
  /// Evaluates to a tensor (materialising parameters); errors otherwise.
  std::optional<Val> evalTensor(const Expr &expr, StringRef what,
                                bool activation);
  std::optional<Val> evalStatic(const Expr &expr, StringRef what,
                                ArrayRef<int64_t> shape);

  /// Binds the arguments of a builtin call to its parameter names.
  LogicalResult bindArgs(const Expr &call, ArrayRef<StringRef> names,
                         unsigned required,
                         SmallVectorImpl<const Expr *> &bound);

  //===--- Emission helpers -----------------------------------------------===//

  Val materialise(const Val &v);
  Value getParam(const ParamSpec &spec);
  Value splat(double value, const Val &like, Location l);
  Val elementwise(TokenKind op, Val lhs, Val rhs, llvm::SMLoc l);
  Val broadcastTo(const Val &v, const Val &like, llvm::SMLoc l);
  Val reshape(const Val &v, ArrayRef<int64_t> shape, Location l);
  Val capture(const Val &v);
  /// A frozen copy of every name visible from `s` (a map's environment).
  Scope *snapshot(Scope &s);

  const SourceLocator &locator;
  ModuleOp module;
  OpBuilder builder;
  Type elementType;
  const std::map<std::string, int64_t> &modelOverrides;
  llvm::StringMap<const FunctionDecl *> functions;
  llvm::StringSet<> symbols;
  FuncCtx *ctx = nullptr;
  Scope *scope = nullptr;
  /// Maps being elaborated (to refuse recursion).
  llvm::SmallPtrSet<const FunctionDecl *, 4> activeMaps;
  /// Emitted maps of the current layer instance, with their captures.
  llvm::DenseMap<const FunctionDecl *,
                 std::pair<func::FuncOp, SmallVector<Value>>>
      emittedMaps;
  /// Maps of the current layer instance that failed to elaborate.
  llvm::SmallPtrSet<const FunctionDecl *, 4> failedMaps;
  /// Environments of maps, alive for the whole run.
  std::vector<std::unique_ptr<Scope>> snapshots;
  unsigned numErrors = 0;
  int64_t statements = 0;
};

} // namespace

//===----------------------------------------------------------------------===//
// Declarations
//===----------------------------------------------------------------------===//

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
    if (i < actual.size() && llvm::is_contained(shape, -1) == false &&
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

//===----------------------------------------------------------------------===//
// Instances
//===----------------------------------------------------------------------===//

func::FuncOp Elaborator::instantiateLayer(const InstanceInfo &instance,
                                          std::optional<int64_t> inputSize,
                                          llvm::SMLoc useLoc) {
  const FunctionDecl &decl = *instance.decl;
  if (decl.arguments.size() != 1 || decl.arguments[0].shape.size() != 1 ||
      decl.resultShape.size() != 1)
    return nullptr; // Reported by declare().
  Scope root(nullptr);
  // A model's d_model feeds the signature's size: a bare name binds to it,
  // and a configuration of that name takes it unless given explicitly.
  InstanceInfo withInput = instance;
  SmallVector<SmallVector<int64_t>> actualStorage;
  SmallVector<ArrayRef<int64_t>> actual;
  if (inputSize) {
    actualStorage.push_back({*inputSize});
    actual.push_back(actualStorage.back());
    const Expr &dim = *decl.arguments[0].shape[0];
    if (dim.kind == ExprKind::Name &&
        llvm::any_of(getConfigs(decl),
                     [&](const Stmt *c) { return c->name == dim.name; }) &&
        llvm::none_of(instance.overrides,
                      [&](const auto &o) { return o.name == dim.name; }))
      withInput.overrides.push_back(
          {dim.name, useLoc, std::make_shared<Val>(Val::ofInt(*inputSize))});
  }
  SmallVector<SmallVector<int64_t>> argShapes;
  SmallVector<int64_t> resultShape;
  if (failed(bindSignature(decl, actual, root, useLoc, argShapes, resultShape,
                           false)) ||
      failed(bindConfigs(decl, withInput, root, useLoc)) ||
      failed(bindSignature(decl, actual, root, useLoc, argShapes, resultShape,
                           true)))
    return nullptr;
  if (!checkShape(argShapes[0], decl.arguments[0].shapeLoc) ||
      !checkShape(resultShape, decl.resultLoc))
    return nullptr;
  if (argShapes[0] != resultShape) {
    emitError(decl.resultLoc)
        << "a layer returns an activation of its input's width "
        << formatShape(argShapes[0]) << ", got " << formatShape(resultShape);
    return nullptr;
  }

  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(module.getBody());
  auto inputType = activationType(argShapes[0]);
  auto countsType =
      RankedTensorType::get({ShapedType::kDynamic}, builder.getI32Type());
  auto func = func::FuncOp::create(
      builder, loc(decl.loc), uniqueSymbol(decl.name),
      builder.getFunctionType({inputType}, {inputType, countsType}));
  func->setAttr("fp.layer", builder.getUnitAttr());
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);

  llvm::StringMap<llvm::SMLoc> layerParams;
  llvm::StringSet<> usedParams;
  FuncCtx layerCtx;
  layerCtx.func = func;
  layerCtx.decl = &decl;
  layerCtx.input = entry->getArgument(0);
  layerCtx.layerParams = &layerParams;
  layerCtx.usedParams = &usedParams;
  FuncCtx *savedCtx = ctx;
  Scope *savedScope = scope;
  auto savedMaps = std::move(emittedMaps);
  emittedMaps.clear();
  auto savedFailedMaps = std::move(failedMaps);
  failedMaps.clear();
  root.owner = &layerCtx;
  ctx = &layerCtx;
  scope = &root;
  unsigned errors = numErrors;
  define(root, decl.arguments[0].name, decl.arguments[0].loc,
         Val::ofTensor(entry->getArgument(0), true, argShapes[0]),
         Binding::Role::Local);
  execBody(decl.body, root, /*topLevel=*/true);
  ctx = savedCtx;
  scope = savedScope;
  emittedMaps = std::move(savedMaps);
  failedMaps = std::move(savedFailedMaps);

  if (numErrors == errors) {
    if (!layerCtx.result)
      emitError(decl.loc) << "layer '" << decl.name
                          << "' does not return a value";
    else if (layerCtx.numFixedPoints != 1)
      emitError(decl.loc) << "layer '" << decl.name
                          << "' must contain exactly one fixed_point, "
                             "found "
                          << layerCtx.numFixedPoints;
  }
  if (numErrors != errors)
    return nullptr;
  const Val &out = *layerCtx.result;
  if (out.isError())
    return nullptr;
  if (!out.activation || out.shape != resultShape) {
    emitError(decl.resultLoc)
        << "layer '" << decl.name << "' returns " << describe(out)
        << ", declared " << formatShape(resultShape);
    return nullptr;
  }
  builder.setInsertionPointToEnd(entry);
  func::ReturnOp::create(builder, func.getLoc(),
                         ValueRange{out.value, layerCtx.iterations});
  // A parameter nothing reads would silently vanish from the layer.
  SmallVector<std::pair<llvm::SMLoc, std::string>> unused;
  for (const auto &entry : layerParams)
    if (!usedParams.contains(entry.getKey()))
      unused.push_back({entry.getValue(), entry.getKey().str()});
  llvm::sort(unused, [](const auto &a, const auto &b) {
    return a.first.getPointer() < b.first.getPointer() ||
           (a.first == b.first && a.second < b.second);
  });
  for (const auto &[where, name] : unused)
    mlir::emitWarning(loc(where))
        << "parameter '" << name << "' is never used; the layer will not "
        << "have it";
  return func;
}

Val Elaborator::callMixer(ModuleInfo &mod, ArrayRef<Val> args, llvm::SMLoc l) {
  const InstanceInfo &instance = *mod.mixer;
  const FunctionDecl &decl = *instance.decl;
  if (args.size() != 2)
    return fail(l, "mixer '" + mod.name + "' takes 2 arguments (p, v), got " +
                       Twine(args.size()));
  for (const Val &arg : args)
    if (!arg.activation || arg.shape.size() != 1)
      return fail(l, "mixer '" + mod.name +
                         "' takes two per-token vectors, got " + describe(arg));
  std::string key = formatShape(args[0].shape) + formatShape(args[1].shape);
  func::FuncOp func;
  auto it = mod.functions.find(key);
  if (it != mod.functions.end()) {
    func = it->second;
  } else if (mod.failed) {
    return Val::error();
  } else if (!mod.functions.empty()) {
    return fail(l, "mixer '" + mod.name + "' already serves inputs of shapes " +
                       mod.functions.begin()->first +
                       "; its parameters fit one input width, got " + key);
  } else {
    if (ctx->depth + 1 > kMaxInstanceDepth)
      return fail(l, "mixers nested deeper than " + Twine(kMaxInstanceDepth) +
                         " levels");
    Scope root(nullptr);
    SmallVector<ArrayRef<int64_t>> actual = {args[0].shape, args[1].shape};
    SmallVector<SmallVector<int64_t>> argShapes;
    SmallVector<int64_t> resultShape;
    if (failed(bindSignature(decl, actual, root, l, argShapes, resultShape,
                             false)) ||
        failed(bindConfigs(decl, instance, root, l)) ||
        failed(
            bindSignature(decl, actual, root, l, argShapes, resultShape, true)))
      return Val::error();
    if (resultShape != args[1].shape)
      return fail(decl.resultLoc, "mixer '" + decl.name +
                                      "' must return the width of 'v' " +
                                      formatShape(args[1].shape) +
                                      ", declared " + formatShape(resultShape));

    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToEnd(module.getBody());
    Type vType = activationType(args[1].shape);
    std::string symbolBase = ctx->func.getSymName().str() + "." + mod.name;
    func = func::FuncOp::create(
        builder, loc(decl.loc), uniqueSymbol(symbolBase),
        builder.getFunctionType({activationType(args[0].shape), vType},
                                {vType}));
    func.setPrivate();
    Block *entry = func.addEntryBlock();
    builder.setInsertionPointToStart(entry);

    FuncCtx mixerCtx;
    mixerCtx.func = func;
    mixerCtx.decl = &decl;
    mixerCtx.paramPrefix = mod.prefix;
    mixerCtx.layerParams = ctx->layerParams;
    mixerCtx.usedParams = ctx->usedParams;
    mixerCtx.depth = ctx->depth + 1;
    FuncCtx *savedCtx = ctx;
    Scope *savedScope = scope;
    root.owner = &mixerCtx;
    ctx = &mixerCtx;
    scope = &root;
    unsigned errors = numErrors;
    for (unsigned i = 0; i < 2; ++i)
      define(root, decl.arguments[i].name, decl.arguments[i].loc,
             Val::ofTensor(entry->getArgument(i), true, args[i].shape),
             Binding::Role::Local);
    execBody(decl.body, root, /*topLevel=*/true);
    ctx = savedCtx;
    scope = savedScope;
    if (numErrors != errors ||
        (mixerCtx.result && mixerCtx.result->isError())) {
      mod.failed = true;
      func.erase();
      return Val::error();
    }
    if (!mixerCtx.result)
      return fail(decl.loc,
                  "mixer '" + decl.name + "' does not return a value");
    const Val &out = *mixerCtx.result;
    if (!out.activation || out.shape != args[1].shape)
      return fail(decl.resultLoc, "mixer '" + decl.name + "' returns " +
                                      describe(out) + ", declared " +
                                      formatShape(resultShape));
    builder.setInsertionPointToEnd(entry);
    func::ReturnOp::create(builder, func.getLoc(), ValueRange{out.value});
    mod.functions[key] = func;
  }
  auto call = func::CallOp::create(builder, loc(l), func,
                                   ValueRange{args[0].value, args[1].value});
  return Val::ofTensor(call.getResult(0), true, args[1].shape);
}

Val Elaborator::callMap(const Val &map, ArrayRef<Val> args, llvm::SMLoc l) {
  const FunctionDecl &decl = *map.map;
  if (args.size() != decl.arguments.size())
    return fail(l, "map '" + decl.name + "' takes " +
                       Twine(decl.arguments.size()) + " argument(s), got " +
                       Twine(args.size()));
  // The argument shapes are evaluated in the map's defining scope.
  SmallVector<SmallVector<int64_t>> shapes;
  {
    Scope *saved = scope;
    scope = map.closure;
    for (const Argument &arg : decl.arguments) {
      SmallVector<int64_t> shape;
      for (const ExprPtr &dim : arg.shape)
        shape.push_back(evalSize(*dim, "a dimension").value_or(-1));
      shapes.push_back(std::move(shape));
    }
    SmallVector<int64_t> resultShape;
    for (const ExprPtr &dim : decl.resultShape)
      resultShape.push_back(evalSize(*dim, "a dimension").value_or(-1));
    shapes.push_back(std::move(resultShape));
    scope = saved;
  }
  for (const SmallVector<int64_t> &shape : shapes)
    if (llvm::is_contained(shape, -1))
      return Val::error(); // A size that failed, already reported.
  if (failedMaps.contains(&decl))
    return Val::error();
  for (auto [i, arg] : llvm::enumerate(args)) {
    if (arg.isError())
      return arg;
    if (!arg.activation || arg.shape != shapes[i])
      return fail(l, "argument '" + decl.arguments[i].name + "' of map '" +
                         decl.name + "' is declared " + formatShape(shapes[i]) +
                         " (an activation), got " + describe(arg));
  }
  if (activeMaps.contains(&decl))
    return fail(l, "map '" + decl.name + "' calls itself");

  auto it = emittedMaps.find(&decl);
  if (it == emittedMaps.end()) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToEnd(module.getBody());
    SmallVector<Type> argTypes;
    for (unsigned i = 0; i < args.size(); ++i)
      argTypes.push_back(activationType(shapes[i]));
    Type resultType = activationType(shapes.back());
    FuncCtx *layerCtx = ctx;
    auto func = func::FuncOp::create(
        builder, loc(decl.loc),
        uniqueSymbol(layerCtx->func.getSymName().str() + "." + decl.name),
        builder.getFunctionType(argTypes, {resultType}));
    func.setPrivate();
    Block *entry = func.addEntryBlock();
    builder.setInsertionPointToStart(entry);

    FuncCtx mapCtx;
    mapCtx.func = func;
    mapCtx.decl = &decl;
    mapCtx.paramPrefix = layerCtx->paramPrefix;
    mapCtx.layerParams = layerCtx->layerParams;
    mapCtx.usedParams = layerCtx->usedParams;
    mapCtx.depth = layerCtx->depth;
    Scope root(map.closure, &mapCtx);
    FuncCtx *savedCtx = ctx;
    Scope *savedScope = scope;
    ctx = &mapCtx;
    scope = &root;
    activeMaps.insert(&decl);
    unsigned errors = numErrors;
    for (auto [i, arg] : llvm::enumerate(decl.arguments))
      define(root, arg.name, arg.loc,
             Val::ofTensor(entry->getArgument(i), true, shapes[i]),
             Binding::Role::Local);
    execBody(decl.body, root, /*topLevel=*/true);
    activeMaps.erase(&decl);
    ctx = savedCtx;
    scope = savedScope;
    if (numErrors != errors || (mapCtx.result && mapCtx.result->isError())) {
      // Report a failing map once, not at every call.
      failedMaps.insert(&decl);
      func.erase();
      return Val::error();
    }
    if (!mapCtx.result)
      return fail(decl.loc, "map '" + decl.name + "' does not return a value");
    const Val &out = *mapCtx.result;
    if (!out.activation || out.shape != shapes.back())
      return fail(decl.resultLoc, "map '" + decl.name + "' returns " +
                                      describe(out) + ", declared " +
                                      formatShape(shapes.back()));
    builder.setInsertionPointToEnd(entry);
    func::ReturnOp::create(builder, func.getLoc(), ValueRange{out.value});
    SmallVector<Type> allArgs(entry->getArgumentTypes());
    func.setType(builder.getFunctionType(allArgs, {resultType}));
    it = emittedMaps.try_emplace(&decl, std::make_pair(func, mapCtx.captures))
             .first;
  }
  auto [func, captures] = it->second;
  SmallVector<Value> operands;
  for (const Val &arg : args)
    operands.push_back(arg.value);
  // The layer values the map reads, passed in (through the calling map's
  // own arguments when one map calls another).
  for (Value outer : captures) {
    Val value;
    value.kind = Val::Kind::Tensor;
    value.value = outer;
    operands.push_back(capture(value).value);
  }
  auto call = func::CallOp::create(builder, loc(l), func, operands);
  return Val::ofTensor(call.getResult(0), true, shapes.back());
}

Val Elaborator::capture(const Val &v) {
  if (v.kind != Val::Kind::Tensor || !v.value)
    return v;
  Region *region = Value(v.value).getParentRegion();
  auto owner = region ? region->getParentOfType<func::FuncOp>() : nullptr;
  if (!owner && region)
    owner = dyn_cast<func::FuncOp>(region->getParentOp());
  if (owner == ctx->func)
    return v;
  // A value of the layer read inside one of its maps: pass it in.
  auto it = ctx->captureArgs.find(v.value);
  Value arg;
  if (it != ctx->captureArgs.end()) {
    arg = it->second;
  } else {
    Block &entry = ctx->func.getBody().front();
    arg = entry.addArgument(v.value.getType(), v.value.getLoc());
    ctx->captureArgs[v.value] = arg;
    ctx->captures.push_back(v.value);
  }
  Val result = v;
  result.value = arg;
  return result;
}

Scope *Elaborator::snapshot(Scope &s) {
  auto frozen = std::make_unique<Scope>(nullptr, s.owner);
  for (Scope *level = &s; level; level = level->parent)
    for (const auto &entry : level->names)
      frozen->names.try_emplace(entry.getKey(), entry.getValue());
  snapshots.push_back(std::move(frozen));
  return snapshots.back().get();
}

Val Elaborator::callModule(ModuleInfo &mod, const Expr &call) {
  for (const std::string &name : call.argNames)
    if (!name.empty())
      return fail(call.loc, "'" + mod.name + "' takes no named arguments");
  SmallVector<Val> args;
  for (const ExprPtr &arg : call.operands) {
    Val v = materialise(eval(*arg));
    if (v.isError())
      return v;
    args.push_back(std::move(v));
  }
  if (mod.kind == ModuleInfo::Kind::Mixer)
    return callMixer(mod, args, call.loc);
  if (args.size() != 1)
    return fail(call.loc, "'" + mod.name + "' takes 1 argument, got " +
                              Twine(args.size()));
  const Val &x = args[0];
  if (x.kind != Val::Kind::Tensor || !x.activation || x.shape.empty() ||
      x.shape.back() != mod.in ||
      (mod.kind == ModuleInfo::Kind::CausalConv && x.shape.size() != 1))
    return fail(call.operands[0]->loc,
                "'" + mod.name + "' maps vectors of width " + Twine(mod.in) +
                    ", got " + describe(x));
  Location l = loc(call.loc);
  switch (mod.kind) {
  case ModuleInfo::Kind::LayerNorm:
    return Val::ofTensor(LayerNormOp::create(builder, l, x.value,
                                             getParam(*mod.weight),
                                             getParam(*mod.bias),
                                             builder.getF64FloatAttr(mod.eps)),
                         true, x.shape);
  case ModuleInfo::Kind::RMSNorm:
    return Val::ofTensor(RMSNormOp::create(builder, l, x.value,
                                           getParam(*mod.weight),
                                           builder.getF64FloatAttr(mod.eps)),
                         true, x.shape);
  case ModuleInfo::Kind::CausalConv:
    return Val::ofTensor(
        CausalConvOp::create(builder, l, x.value, getParam(*mod.weight),
                             mod.bias ? getParam(*mod.bias) : Value()),
        true, x.shape);
  default:
    break;
  }
  SmallVector<int64_t> shape = x.shape;
  shape.back() = mod.out;
  Value gain = mod.gain ? getParam(*mod.gain) : Value();
  Value bias = mod.bias ? getParam(*mod.bias) : Value();
  auto op = LinearOp::create(builder, l, activationType(shape), x.value,
                             getParam(*mod.weight), gain, bias);
  return Val::ofTensor(op, true, shape);
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

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
  auto restore = llvm::make_scope_exit([&] { scope = saved; });
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

static bool isInitialiser(StringRef name) {
  return llvm::is_contained({"zeros", "ones", "constant", "uniform", "normal",
                             "fan_in_uniform", "s4d_real", "dt_bias"},
                            name);
}

std::optional<InitAttr> Elaborator::evalInit(const Expr &expr) {
  if (expr.kind != ExprKind::Name && expr.kind != ExprKind::Call) {
    emitError(expr.loc) << "expected an initialiser (zeros, ones, "
                           "constant(c), uniform(lo, hi), normal(mean, std), "
                           "fan_in_uniform, s4d_real, dt_bias(min, max, "
                           "floor))";
    return std::nullopt;
  }
  std::optional<InitKind> kind =
      llvm::StringSwitch<std::optional<InitKind>>(expr.name)
          .Case("zeros", InitKind::Zeros)
          .Case("ones", InitKind::Ones)
          .Case("constant", InitKind::Constant)
          .Case("uniform", InitKind::Uniform)
          .Case("normal", InitKind::Normal)
          .Case("fan_in_uniform", InitKind::FanInUniform)
          .Case("s4d_real", InitKind::S4DReal)
          .Case("dt_bias", InitKind::DtBias)
          .Default(std::nullopt);
  if (!kind) {
    emitError(expr.loc) << "unknown initialiser '" << expr.name
                        << "'; expected zeros, ones, constant, uniform, "
                           "normal, fan_in_uniform, s4d_real or dt_bias";
    return std::nullopt;
  }
  SmallVector<double> args;
  for (auto [i, arg] : llvm::enumerate(expr.operands)) {
    if (!expr.argNames[i].empty()) {
      emitError(expr.argNameLocs[i]) << "initialiser arguments are "
                                        "positional";
      return std::nullopt;
    }
    std::optional<double> v = evalFloat(*arg, "an initialiser argument");
    if (!v)
      return std::nullopt;
    args.push_back(*v);
  }
  auto argsAttr =
      args.empty() ? DenseF64ArrayAttr() : builder.getDenseF64ArrayAttr(args);
  auto emit = [&] {
    ++numErrors;
    return locator.emitError(expr.loc);
  };
  if (failed(InitAttr::verify(emit, *kind, argsAttr, StringAttr())))
    return std::nullopt;
  return InitAttr::get(builder.getContext(), *kind, argsAttr, StringAttr());
}

void Elaborator::declareParam(const Stmt &stmt, Scope &s) {
  unsigned errors = numErrors;
  declareParamImpl(stmt, s);
  // Keep the name defined so that its uses do not report it again.
  if (numErrors != errors && !s.names.count(stmt.name))
    s.names[stmt.name] = {Val::error(), stmt.nameLoc, Binding::Role::Param};
}

void Elaborator::declareParamImpl(const Stmt &stmt, Scope &s) {
  auto fullName = ctx->paramPrefix + stmt.name;
  auto claim = [&](const std::string &name) {
    auto [it, inserted] = ctx->layerParams->try_emplace(name, stmt.nameLoc);
    if (!inserted) {
      InFlightDiagnostic diag = emitError(stmt.nameLoc);
      diag << "parameter '" << name << "' is already declared";
      diag.attachNote(loc(it->second)) << "previous declaration here";
    }
    return inserted;
  };
  auto makeSpec = [&](const std::string &name, ArrayRef<int64_t> shape,
                      InitAttr init, bool decay) {
    auto spec = std::make_shared<ParamSpec>();
    spec->name = name;
    spec->shape.assign(shape.begin(), shape.end());
    spec->init = init;
    spec->decay = decay;
    spec->loc = stmt.nameLoc;
    return spec;
  };

  if (stmt.hasParamShape) {
    SmallVector<int64_t> shape;
    for (const ExprPtr &dim : stmt.paramShape) {
      std::optional<int64_t> size = evalSize(*dim, "a parameter dimension");
      if (!size)
        return;
      shape.push_back(*size);
    }
    if (shape.empty()) {
      emitError(stmt.loc) << "a parameter needs at least one dimension";
      return;
    }
    if (!checkShape(shape, stmt.loc))
      return;
    std::optional<InitAttr> init = evalInit(*stmt.paramInit);
    if (!init || !claim(fullName))
      return;
    Val v;
    v.kind = Val::Kind::Param;
    v.param = makeSpec(fullName, shape, *init, stmt.decay == DecayFlag::Decay);
    define(s, stmt.name, stmt.nameLoc, std::move(v), Binding::Role::Param);
    return;
  }

  const Expr &type = *stmt.paramComposite;
  if (type.kind != ExprKind::Name && type.kind != ExprKind::Call) {
    emitError(type.loc) << "expected a parameter type: '[shape] = init', "
                           "linear(in, out), wn_linear(in, out), "
                           "layer_norm(d), rms_norm(d), causal_conv(d, k) or "
                           "a mixer";
    return;
  }
  auto mod = std::make_shared<ModuleInfo>();
  mod->name = stmt.name;
  mod->prefix = fullName + ".";
  InitAttr zeros = InitAttr::get(builder.getContext(), InitKind::Zeros,
                                 DenseF64ArrayAttr(), StringAttr());
  if (type.name == "linear" || type.name == "wn_linear") {
    bool weightNorm = type.name == "wn_linear";
    SmallVector<const Expr *> args;
    SmallVector<StringRef> names = {"in", "out", "bias"};
    if (!weightNorm)
      names.push_back("weight");
    if (type.kind != ExprKind::Call) {
      emitError(type.loc) << "'" << type.name
                          << "' needs its sizes: " << type.name << "(in, out)";
      return;
    }
    if (failed(bindArgs(type, names, 2, args)))
      return;
    std::optional<int64_t> in = evalSize(*args[0], "an input width");
    std::optional<int64_t> out = evalSize(*args[1], "an output width");
    if (!in || !out || !checkShape({*out, *in}, type.loc))
      return;
    mod->kind =
        weightNorm ? ModuleInfo::Kind::WNLinear : ModuleInfo::Kind::Linear;
    mod->in = *in;
    mod->out = *out;
    bool decay = stmt.decay != DecayFlag::NoDecay;
    bool biasDecay = stmt.decay == DecayFlag::Decay;
    InitAttr fanIn = InitAttr::get(builder.getContext(), InitKind::FanInUniform,
                                   DenseF64ArrayAttr(), StringAttr());
    InitAttr weightInit = fanIn;
    if (!weightNorm && args[3]) {
      std::optional<InitAttr> init = evalInit(*args[3]);
      if (!init)
        return;
      weightInit = *init;
    }
    std::optional<InitAttr> biasInit;
    if (args[2]) {
      // `bias = <initialiser>`, or a boolean (zeros when true).
      const Expr &b = *args[2];
      if ((b.kind == ExprKind::Name || b.kind == ExprKind::Call) &&
          isInitialiser(b.name) && !s.lookup(b.name)) {
        biasInit = evalInit(b);
        if (!biasInit)
          return;
      } else {
        std::optional<bool> withBias =
            evalBool(b, "bias (a boolean or an initialiser)");
        if (!withBias)
          return;
        if (*withBias)
          biasInit = zeros;
      }
    }
    if (weightNorm) {
      std::string v = fullName + ".weight_v", g = fullName + ".weight_g";
      if (!claim(v) || !claim(g))
        return;
      mod->weight = makeSpec(v, {*out, *in}, fanIn, decay);
      mod->gain =
          makeSpec(g, {*out},
                   InitAttr::get(builder.getContext(), InitKind::RowNorm,
                                 DenseF64ArrayAttr(), builder.getStringAttr(v)),
                   decay);
    } else {
      std::string w = fullName + ".weight";
      if (!claim(w))
        return;
      mod->weight = makeSpec(w, {*out, *in}, weightInit, decay);
    }
    if (biasInit) {
      std::string b = fullName + ".bias";
      if (!claim(b))
        return;
      mod->bias = makeSpec(b, {*out}, *biasInit, biasDecay);
    }
  } else if (type.name == "layer_norm" || type.name == "rms_norm") {
    bool layerNorm = type.name == "layer_norm";
    SmallVector<const Expr *> args;
    if (type.kind != ExprKind::Call) {
      emitError(type.loc) << "'" << type.name
                          << "' needs its width: " << type.name << "(d)";
      return;
    }
    if (failed(bindArgs(type, {"width", "eps"}, 1, args)))
      return;
    std::optional<int64_t> width = evalSize(*args[0], "a width");
    std::optional<double> eps =
        args[1] ? evalFloat(*args[1], "eps") : std::optional<double>(1e-5);
    if (!width || !eps)
      return;
    if (!(*eps > 0)) {
      emitError(args[1]->loc) << "eps must be positive";
      return;
    }
    mod->kind =
        layerNorm ? ModuleInfo::Kind::LayerNorm : ModuleInfo::Kind::RMSNorm;
    mod->in = mod->out = *width;
    mod->eps = *eps;
    bool decay = stmt.decay == DecayFlag::Decay;
    std::string w = fullName + ".weight";
    if (!claim(w))
      return;
    mod->weight = makeSpec(w, {*width},
                           InitAttr::get(builder.getContext(), InitKind::Ones,
                                         DenseF64ArrayAttr(), StringAttr()),
                           decay);
    if (layerNorm) {
      std::string b = fullName + ".bias";
      if (!claim(b))
        return;
      mod->bias = makeSpec(b, {*width}, zeros, decay);
    }
  } else if (type.name == "causal_conv") {
    SmallVector<const Expr *> args;
    if (type.kind != ExprKind::Call) {
      emitError(type.loc) << "'causal_conv' needs its sizes: "
                             "causal_conv(channels, width)";
      return;
    }
    if (failed(bindArgs(type, {"channels", "width", "bias"}, 2, args)))
      return;
    std::optional<int64_t> channels = evalSize(*args[0], "a channel count");
    std::optional<int64_t> width = evalSize(*args[1], "a kernel width");
    std::optional<bool> withBias =
        args[2] ? evalBool(*args[2], "bias") : std::optional<bool>(true);
    if (!channels || !width || !withBias ||
        !checkShape({*channels, *width}, type.loc))
      return;
    mod->kind = ModuleInfo::Kind::CausalConv;
    mod->in = mod->out = *channels;
    // The default depthwise Conv1d initialisation: U(±1/√width).
    double bound = 1.0 / std::sqrt(static_cast<double>(*width));
    InitAttr init = InitAttr::get(builder.getContext(), InitKind::Uniform,
                                  builder.getDenseF64ArrayAttr({-bound, bound}),
                                  StringAttr());
    bool decay = stmt.decay == DecayFlag::Decay;
    std::string w = fullName + ".weight";
    if (!claim(w))
      return;
    mod->weight = makeSpec(w, {*channels, *width}, init, decay);
    if (*withBias) {
      std::string b = fullName + ".bias";
      if (!claim(b))
        return;
      mod->bias = makeSpec(b, {*channels}, init, decay);
    }
  } else {
    // A mixer: by name, by configuration, or with overrides.
    Val instance;
    Binding *binding =
        type.kind == ExprKind::Name ? s.lookup(type.name) : nullptr;
    if (binding) {
      instance = binding->value;
    } else if (const FunctionDecl *decl = findFunction(type.name)) {
      instance = makeInstance(
          *decl, type.kind == ExprKind::Call ? &type : nullptr, type.loc);
    } else {
      emitError(type.loc) << "unknown parameter type '" << type.name << "'";
      return;
    }
    if (instance.isError())
      return;
    if (instance.kind != Val::Kind::Instance ||
        instance.instance->decl->kind != FunctionDecl::Kind::Mixer) {
      emitError(type.loc) << "a parameter module must be linear, wn_linear, "
                             "layer_norm, rms_norm, causal_conv or a mixer; "
                             "got "
                          << describe(instance);
      return;
    }
    if (stmt.decay != DecayFlag::Default) {
      emitError(stmt.loc) << "a mixer's parameters set their own weight decay";
      return;
    }
    mod->kind = ModuleInfo::Kind::Mixer;
    mod->mixer = instance.instance;
  }
  Val v;
  v.kind = Val::Kind::Module;
  v.module = std::move(mod);
  define(s, stmt.name, stmt.nameLoc, std::move(v), Binding::Role::Param);
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

Val Elaborator::eval(const Expr &expr) {
  switch (expr.kind) {
  case ExprKind::Integer:
    return Val::ofInt(expr.intValue);
  case ExprKind::Float:
    return Val::ofFloat(expr.floatValue);
  case ExprKind::Bool:
    return Val::ofBool(expr.boolValue);
  case ExprKind::Name:
    return evalName(expr);
  case ExprKind::Unary:
    return evalUnary(expr);
  case ExprKind::Binary:
    return evalBinary(expr);
  case ExprKind::Call:
    return evalCall(expr);
  case ExprKind::Index:
    return evalIndex(expr);
  case ExprKind::Slice:
    return evalSlice(expr);
  case ExprKind::List:
    return fail(expr.loc, "a list '[...]' is only allowed as the shape of "
                          "reshape");
  }
  return Val::error();
}

Val Elaborator::evalName(const Expr &expr) {
  if (Binding *binding = scope->lookup(expr.name))
    return capture(binding->value);
  if (const FunctionDecl *decl = findFunction(expr.name))
    return makeInstance(*decl, nullptr, expr.loc);
  auto diag = emitError(expr.loc) << "undefined name '" << expr.name << "'";
  std::string best = closestName(expr.name);
  if (!best.empty())
    diag << "; did you mean '" << best << "'?";
  return Val::error();
}

std::string Elaborator::closestName(StringRef name) {
  std::string best;
  unsigned bestDistance = 3;
  auto consider = [&](StringRef candidate) {
    unsigned distance = name.edit_distance(candidate);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate.str();
    }
  };
  for (Scope *s = scope; s; s = s->parent)
    for (const auto &entry : s->names)
      consider(entry.getKey());
  for (const auto &entry : functions)
    consider(entry.getKey());
  return best;
}

std::optional<int64_t> Elaborator::evalInt(const Expr &expr, StringRef what) {
  Val v = eval(expr);
  if (v.isError())
    return std::nullopt;
  if (v.kind != Val::Kind::Int) {
    emitError(expr.loc) << "expected an integer for " << what << ", got "
                        << describe(v);
    return std::nullopt;
  }
  return v.intValue;
}

std::optional<int64_t> Elaborator::evalSize(const Expr &expr, StringRef what) {
  std::optional<int64_t> v = evalInt(expr, what);
  if (!v)
    return std::nullopt;
  if (*v < 1 || *v > kMaxDim) {
    emitError(expr.loc) << what << " must lie in [1, " << kMaxDim << "], got "
                        << *v;
    return std::nullopt;
  }
  return v;
}

std::optional<double> Elaborator::evalFloat(const Expr &expr, StringRef what) {
  Val v = eval(expr);
  if (v.isError())
    return std::nullopt;
  if (!v.isNumber()) {
    emitError(expr.loc) << "expected a number for " << what << ", got "
                        << describe(v);
    return std::nullopt;
  }
  return v.asDouble();
}

std::optional<bool> Elaborator::evalBool(const Expr &expr, StringRef what) {
  Val v = eval(expr);
  if (v.isError())
    return std::nullopt;
  if (v.kind != Val::Kind::Bool) {
    emitError(expr.loc) << "expected a boolean for " << what << ", got "
                        << describe(v);
    return std::nullopt;
  }
  return v.boolValue;
}

std::optional<Val> Elaborator::evalTensor(const Expr &expr, StringRef what,
                                          bool activation) {
  Val v = materialise(eval(expr));
  if (v.isError())
    return std::nullopt;
  if (v.kind != Val::Kind::Tensor || v.activation != activation) {
    emitError(expr.loc) << "expected "
                        << (activation ? "an activation"
                                       : "a "
                                         "parameter tensor")
                        << " for " << what << ", got " << describe(v);
    return std::nullopt;
  }
  return v;
}

std::optional<Val> Elaborator::evalStatic(const Expr &expr, StringRef what,
                                          ArrayRef<int64_t> shape) {
  std::optional<Val> v = evalTensor(expr, what, /*activation=*/false);
  if (!v)
    return std::nullopt;
  if (ArrayRef<int64_t>(v->shape) != shape) {
    emitError(expr.loc) << what << " must have shape " << formatShape(shape)
                        << ", got " << formatShape(v->shape);
    return std::nullopt;
  }
  return v;
}

Val Elaborator::evalUnary(const Expr &expr) {
  Val v = materialise(eval(*expr.operands[0]));
  if (v.isError())
    return v;
  if (expr.op == TokenKind::bang) {
    if (v.kind != Val::Kind::Bool)
      return fail(expr.loc, "'!' expects a boolean, got " + describe(v));
    return Val::ofBool(!v.boolValue);
  }
  switch (v.kind) {
  case Val::Kind::Int:
    if (v.intValue == INT64_MIN)
      return fail(expr.loc, "integer overflow");
    return Val::ofInt(-v.intValue);
  case Val::Kind::Float:
    return Val::ofFloat(-v.floatValue);
  case Val::Kind::Tensor: {
    auto op = arith::NegFOp::create(builder, loc(expr.loc), v.value);
    Val r = v;
    r.value = op;
    return r;
  }
  default:
    return fail(expr.loc,
                "'-' expects a number or a tensor, got " + describe(v));
  }
}

Val Elaborator::evalBinary(const Expr &expr) {
  TokenKind op = expr.op;
  if (op == TokenKind::ampAmp || op == TokenKind::pipePipe) {
    std::optional<bool> lhs = evalBool(*expr.operands[0], "a logical operand");
    if (!lhs)
      return Val::error();
    // Short-circuit, so `d % r == 0 && d / r > 1` is safe.
    if ((op == TokenKind::ampAmp) != *lhs)
      return Val::ofBool(*lhs);
    std::optional<bool> rhs = evalBool(*expr.operands[1], "a logical operand");
    return rhs ? Val::ofBool(*rhs) : Val::error();
  }
  Val lhs = materialise(eval(*expr.operands[0]));
  Val rhs = materialise(eval(*expr.operands[1]));
  if (lhs.isError() || rhs.isError())
    return Val::error();
  StringRef spelling = getTokenSpelling(op);

  if (lhs.kind == Val::Kind::Bool && rhs.kind == Val::Kind::Bool &&
      (op == TokenKind::equalEqual || op == TokenKind::bangEqual))
    return Val::ofBool((lhs.boolValue == rhs.boolValue) ==
                       (op == TokenKind::equalEqual));

  if (lhs.isNumber() && rhs.isNumber()) {
    bool ints = lhs.kind == Val::Kind::Int && rhs.kind == Val::Kind::Int;
    int64_t a = lhs.intValue, b = rhs.intValue, r = 0;
    double x = lhs.asDouble(), y = rhs.asDouble();
    switch (op) {
    case TokenKind::equalEqual:
      return Val::ofBool(ints ? a == b : x == y);
    case TokenKind::bangEqual:
      return Val::ofBool(ints ? a != b : x != y);
    case TokenKind::less:
      return Val::ofBool(ints ? a < b : x < y);
    case TokenKind::lessEqual:
      return Val::ofBool(ints ? a <= b : x <= y);
    case TokenKind::greater:
      return Val::ofBool(ints ? a > b : x > y);
    case TokenKind::greaterEqual:
      return Val::ofBool(ints ? a >= b : x >= y);
    case TokenKind::plus:
      if (!ints)
        return Val::ofFloat(x + y);
      if (__builtin_add_overflow(a, b, &r))
        return fail(expr.loc, "integer overflow in '+'");
      return Val::ofInt(r);
    case TokenKind::minus:
      if (!ints)
        return Val::ofFloat(x - y);
      if (__builtin_sub_overflow(a, b, &r))
        return fail(expr.loc, "integer overflow in '-'");
      return Val::ofInt(r);
    case TokenKind::star:
      if (!ints)
        return Val::ofFloat(x * y);
      if (__builtin_mul_overflow(a, b, &r))
        return fail(expr.loc, "integer overflow in '*'");
      return Val::ofInt(r);
    case TokenKind::slash:
      if (!ints) {
        if (y == 0)
          return fail(expr.loc, "division by zero");
        return Val::ofFloat(x / y);
      }
      if (b == 0)
        return fail(expr.loc, "division by zero");
      if (a % b != 0)
        return fail(expr.loc, Twine(a) + " / " + Twine(b) +
                                  " is not an integer; use floor_div or "
                                  "ceil_div, or a float operand");
      if (a == INT64_MIN && b == -1)
        return fail(expr.loc, "integer overflow in '/'");
      return Val::ofInt(a / b);
    case TokenKind::percent:
      if (!ints)
        return fail(expr.loc, "'%' expects integers");
      if (b == 0)
        return fail(expr.loc, "division by zero");
      if (a == INT64_MIN && b == -1)
        return Val::ofInt(0);
      return Val::ofInt(a % b);
    default:
      break;
    }
  }
  bool arithmetic = op == TokenKind::plus || op == TokenKind::minus ||
                    op == TokenKind::star || op == TokenKind::slash;
  if (arithmetic && (lhs.kind == Val::Kind::Tensor || lhs.isNumber()) &&
      (rhs.kind == Val::Kind::Tensor || rhs.isNumber()))
    return elementwise(op, lhs, rhs, expr.loc);
  return fail(expr.loc, "'" + spelling + "' cannot combine " + describe(lhs) +
                            " and " + describe(rhs));
}

Val Elaborator::elementwise(TokenKind op, Val lhs, Val rhs, llvm::SMLoc l) {
  Location location = loc(l);
  if (lhs.isNumber())
    lhs = Val::ofTensor(splat(lhs.asDouble(), rhs, location), rhs.activation,
                        rhs.shape);
  else if (rhs.isNumber())
    rhs = Val::ofTensor(splat(rhs.asDouble(), lhs, location), lhs.activation,
                        lhs.shape);
  // Make both operands the same shape (docs/dsl.md §3.3).
  auto isPrefix = [](ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
    return a.size() < b.size() && b.take_front(a.size()) == a;
  };
  auto isSuffix = [](ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
    return a.size() <= b.size() && b.take_back(a.size()) == a;
  };
  if (lhs.activation != rhs.activation) {
    Val &act = lhs.activation ? lhs : rhs;
    Val &stat = lhs.activation ? rhs : lhs;
    if (!isSuffix(stat.shape, act.shape))
      return fail(
          l, "cannot broadcast a tensor of shape " + formatShape(stat.shape) +
                 " over an activation of shape " + formatShape(act.shape) +
                 " (its shape must end the activation's)");
    stat = broadcastTo(stat, act, l);
  } else if (lhs.shape != rhs.shape) {
    if (lhs.activation && isPrefix(lhs.shape, rhs.shape))
      lhs = broadcastTo(lhs, rhs, l);
    else if (lhs.activation && isPrefix(rhs.shape, lhs.shape))
      rhs = broadcastTo(rhs, lhs, l);
    else
      return fail(l, "shape mismatch in '" + getTokenSpelling(op) +
                         "': " + formatShape(lhs.shape) + " vs " +
                         formatShape(rhs.shape));
  }
  Value result;
  switch (op) {
  case TokenKind::plus:
    result = arith::AddFOp::create(builder, location, lhs.value, rhs.value);
    break;
  case TokenKind::minus:
    result = arith::SubFOp::create(builder, location, lhs.value, rhs.value);
    break;
  case TokenKind::star:
    result = arith::MulFOp::create(builder, location, lhs.value, rhs.value);
    break;
  default:
    result = arith::DivFOp::create(builder, location, lhs.value, rhs.value);
    break;
  }
  return Val::ofTensor(result, lhs.activation, lhs.shape);
}

Val Elaborator::broadcastTo(const Val &v, const Val &like, llvm::SMLoc l) {
  SmallVector<int64_t> dims;
  int64_t rank = like.shape.size() + (like.activation ? 2 : 0);
  int64_t inputRank = v.shape.size() + (v.activation ? 2 : 0);
  if (v.activation) {
    // Leading alignment: batch, time, then the shorter feature shape.
    for (int64_t i = 0; i < inputRank; ++i)
      dims.push_back(i);
  } else {
    // Trailing alignment: a parameter shared by every token.
    for (int64_t i = rank - inputRank; i < rank; ++i)
      dims.push_back(i);
  }
  auto op = BroadcastOp::create(builder, loc(l), like.value.getType(), v.value,
                                like.value, builder.getDenseI64ArrayAttr(dims));
  return Val::ofTensor(op, like.activation, like.shape);
}

Value Elaborator::splat(double value, const Val &like, Location l) {
  auto scalarType = RankedTensorType::get({}, elementType);
  auto attr = DenseElementsAttr::get(
      scalarType, builder.getFloatAttr(elementType, value).getValue());
  auto constant = arith::ConstantOp::create(builder, l, scalarType, attr);
  // The tensor holds the literal rounded to the model's element type; a
  // library instantiated for a wider type needs the value as written.
  if (!elementType.isF64())
    constant->setAttr(FPDialect::getLiteralAttrName(),
                      builder.getF64FloatAttr(value));
  Value scalar = constant;
  return BroadcastOp::create(builder, l, like.value.getType(), scalar,
                             like.value, builder.getDenseI64ArrayAttr({}));
}

Val Elaborator::reshape(const Val &v, ArrayRef<int64_t> shape, Location l) {
  Type type =
      v.activation ? Type(activationType(shape)) : Type(staticType(shape));
  auto op = ReshapeOp::create(builder, l, type, v.value);
  return Val::ofTensor(op, v.activation, shape);
}

Val Elaborator::materialise(const Val &v) {
  if (v.kind != Val::Kind::Param)
    return v;
  return Val::ofTensor(getParam(*v.param), false, v.param->shape);
}

Value Elaborator::getParam(const ParamSpec &spec) {
  auto it = ctx->params.find(spec.name);
  if (it != ctx->params.end())
    return it->second;
  OpBuilder::InsertionGuard guard(builder);
  Block &entry = ctx->func.getBody().front();
  if (ctx->lastParam)
    builder.setInsertionPointAfter(ctx->lastParam);
  else
    builder.setInsertionPointToStart(&entry);
  auto op = ParamOp::create(
      builder, NameLoc::get(builder.getStringAttr(spec.name), loc(spec.loc)),
      staticType(spec.shape), builder.getStringAttr(spec.name), spec.init,
      spec.decay ? builder.getUnitAttr() : UnitAttr());
  ctx->lastParam = op;
  ctx->params[spec.name] = op;
  ctx->usedParams->insert(spec.name);
  return op;
}

Val Elaborator::evalIndex(const Expr &expr) {
  Val base = materialise(eval(*expr.operands[0]));
  if (base.isError())
    return base;
  std::optional<int64_t> index = evalInt(*expr.operands[1], "an index");
  if (!index)
    return Val::error();
  if (base.kind != Val::Kind::Tensor || !base.activation ||
      base.shape.size() != 1)
    return fail(expr.loc, "indexing 'x[i]' takes a per-token vector, got " +
                              describe(base) +
                              "; slice with 'x[a : b]' instead");
  if (*index < 0 || *index >= base.shape[0])
    return fail(expr.operands[1]->loc, "index " + Twine(*index) +
                                           " out of range [0, " +
                                           Twine(base.shape[0]) + ")");
  Location l = loc(expr.loc);
  Val element = base;
  if (base.shape[0] != 1)
    element = Val::ofTensor(SliceOp::create(builder, l, activationType({1}),
                                            base.value, *index, *index + 1),
                            true, {1});
  return reshape(element, {}, l);
}

Val Elaborator::evalSlice(const Expr &expr) {
  Val base = materialise(eval(*expr.operands[0]));
  if (base.isError())
    return base;
  std::optional<int64_t> start = evalInt(*expr.operands[1], "a slice bound");
  std::optional<int64_t> end = evalInt(*expr.operands[2], "a slice bound");
  if (!start || !end)
    return Val::error();
  if (base.kind != Val::Kind::Tensor || base.shape.empty())
    return fail(expr.loc, "slicing 'x[a : b]' takes a tensor with at least "
                          "one feature dimension, got " +
                              describe(base));
  int64_t size = base.shape.back();
  if (*start < 0 || *start >= *end || *end > size)
    return fail(expr.loc, "slice [" + Twine(*start) + " : " + Twine(*end) +
                              "] out of range for a last dimension of " +
                              Twine(size));
  // The whole range is the value itself.
  if (*start == 0 && *end == size)
    return base;
  SmallVector<int64_t> shape = base.shape;
  shape.back() = *end - *start;
  Type type =
      base.activation ? Type(activationType(shape)) : Type(staticType(shape));
  auto op =
      SliceOp::create(builder, loc(expr.loc), type, base.value, *start, *end);
  return Val::ofTensor(op, base.activation, shape);
}

Val Elaborator::evalCall(const Expr &expr) {
  if (Binding *binding = scope->lookup(expr.name)) {
    Val callee = binding->value;
    if (callee.isError())
      return callee;
    if (callee.kind == Val::Kind::Module)
      return callModule(*callee.module, expr);
    if (callee.kind == Val::Kind::Map) {
      SmallVector<Val> args;
      for (auto [i, arg] : llvm::enumerate(expr.operands)) {
        if (!expr.argNames[i].empty())
          return fail(expr.argNameLocs[i], "maps take no named arguments");
        args.push_back(materialise(eval(*arg)));
        if (args.back().isError())
          return Val::error();
      }
      return callMap(callee, args, expr.loc);
    }
    return fail(expr.loc, "'" + expr.name + "' is " + describe(callee) +
                              ", which cannot be called");
  }
  if (const FunctionDecl *decl = findFunction(expr.name))
    return makeInstance(*decl, &expr, expr.loc);
  return evalBuiltin(expr);
}

LogicalResult Elaborator::bindArgs(const Expr &call, ArrayRef<StringRef> names,
                                   unsigned required,
                                   SmallVectorImpl<const Expr *> &bound) {
  bound.assign(names.size(), nullptr);
  unsigned position = 0;
  for (auto [i, arg] : llvm::enumerate(call.operands)) {
    const std::string &name = call.argNames[i];
    unsigned slot;
    if (name.empty()) {
      slot = position++;
      if (slot >= names.size()) {
        emitError(arg->loc) << "'" << call.name << "' takes at most "
                            << names.size() << " argument(s)";
        return failure();
      }
    } else {
      auto it = llvm::find(names, name);
      if (it == names.end()) {
        auto diag = emitError(call.argNameLocs[i])
                    << "'" << call.name << "' has no argument '" << name
                    << "'; it takes:";
        for (StringRef n : names)
          diag << " " << n;
        return failure();
      }
      slot = it - names.begin();
    }
    if (bound[slot]) {
      emitError(call.argNameLocs[i]) << "argument '" << names[slot] << "' of '"
                                     << call.name << "' given twice";
      return failure();
    }
    bound[slot] = arg.get();
  }
  for (unsigned i = 0; i < required; ++i) {
    if (!bound[i]) {
      emitError(call.loc) << "'" << call.name << "' needs argument '"
                          << names[i] << "'";
      return failure();
    }
  }
  return success();
}

namespace {
enum class Builtin {
  Unknown,
  // Elementwise.
  Silu,
  Sigmoid,
  Softplus,
  Exp,
  Tanh,
  Sqrt,
  Log,
  // Normalisations.
  L2Norm,
  LayerNorm,
  RMSNorm,
  // Time.
  Shift,
  Scan,
  SelectiveScan,
  CausalConv,
  // Linear algebra.
  Linear,
  WNLinear,
  Dot,
  Sum,
  Max,
  Min,
  Matmul,
  Matvec,
  Transpose,
  Triu,
  Reshape,
  Concat,
  Fill,
  FixedPoint,
  // Configuration arithmetic.
  CeilDiv,
  FloorDiv,
  ISqrt,
  DivisorLe,
  IsPow2,
  ToFloat,
};
} // namespace

Val Elaborator::evalBuiltin(const Expr &expr) {
  Builtin builtin = llvm::StringSwitch<Builtin>(expr.name)
                        .Case("silu", Builtin::Silu)
                        .Case("sigmoid", Builtin::Sigmoid)
                        .Case("softplus", Builtin::Softplus)
                        .Case("exp", Builtin::Exp)
                        .Case("tanh", Builtin::Tanh)
                        .Case("sqrt", Builtin::Sqrt)
                        .Case("log", Builtin::Log)
                        .Case("l2norm", Builtin::L2Norm)
                        .Case("layer_norm", Builtin::LayerNorm)
                        .Case("rms_norm", Builtin::RMSNorm)
                        .Case("shift", Builtin::Shift)
                        .Case("scan", Builtin::Scan)
                        .Case("selective_scan", Builtin::SelectiveScan)
                        .Case("causal_conv", Builtin::CausalConv)
                        .Case("linear", Builtin::Linear)
                        .Case("wn_linear", Builtin::WNLinear)
                        .Case("dot", Builtin::Dot)
                        .Case("sum", Builtin::Sum)
                        .Case("max", Builtin::Max)
                        .Case("min", Builtin::Min)
                        .Case("matmul", Builtin::Matmul)
                        .Case("matvec", Builtin::Matvec)
                        .Case("t", Builtin::Transpose)
                        .Case("triu", Builtin::Triu)
                        .Case("reshape", Builtin::Reshape)
                        .Case("concat", Builtin::Concat)
                        .Case("fill", Builtin::Fill)
                        .Case("fixed_point", Builtin::FixedPoint)
                        .Case("ceil_div", Builtin::CeilDiv)
                        .Case("floor_div", Builtin::FloorDiv)
                        .Case("isqrt", Builtin::ISqrt)
                        .Case("divisor_le", Builtin::DivisorLe)
                        .Case("is_pow2", Builtin::IsPow2)
                        .Case("float", Builtin::ToFloat)
                        .Default(Builtin::Unknown);
  Location l = loc(expr.loc);
  SmallVector<const Expr *> a;

  // Outside a function body (configurations, model fields) only
  // compile-time arithmetic is possible.
  bool compileTime = llvm::is_contained(
      {Builtin::Exp, Builtin::Tanh, Builtin::Sqrt, Builtin::Log, Builtin::Max,
       Builtin::Min, Builtin::CeilDiv, Builtin::FloorDiv, Builtin::ISqrt,
       Builtin::DivisorLe, Builtin::IsPow2, Builtin::ToFloat, Builtin::Unknown},
      builtin);
  if (!ctx->func && !compileTime)
    return fail(expr.loc, "'" + expr.name +
                              "' computes a tensor; a configuration value is "
                              "a number, a boolean, or a mixer or layer");

  switch (builtin) {
  case Builtin::Unknown: {
    auto diag = emitError(expr.loc) << "unknown function '" << expr.name << "'";
    std::string best = closestName(expr.name);
    if (!best.empty())
      diag << "; did you mean '" << best << "'?";
    return Val::error();
  }

  case Builtin::Silu:
  case Builtin::Sigmoid:
  case Builtin::Softplus:
  case Builtin::Exp:
  case Builtin::Tanh:
  case Builtin::Sqrt:
  case Builtin::Log: {
    if (failed(bindArgs(expr, {"x"}, 1, a)))
      return Val::error();
    Val x = materialise(eval(*a[0]));
    if (x.isError())
      return x;
    if (x.isNumber()) {
      double v = x.asDouble();
      switch (builtin) {
      case Builtin::Exp:
        return Val::ofFloat(std::exp(v));
      case Builtin::Sqrt:
        if (v < 0)
          return fail(expr.loc, "sqrt of a negative number");
        return Val::ofFloat(std::sqrt(v));
      case Builtin::Log:
        if (v <= 0)
          return fail(expr.loc, "log of a non-positive number");
        return Val::ofFloat(std::log(v));
      case Builtin::Tanh:
        return Val::ofFloat(std::tanh(v));
      default:
        break;
      }
    }
    if (x.kind != Val::Kind::Tensor)
      return fail(a[0]->loc,
                  "'" + expr.name + "' expects a tensor, got " + describe(x));
    Value r;
    switch (builtin) {
    case Builtin::Silu:
      r = SiluOp::create(builder, l, x.value);
      break;
    case Builtin::Sigmoid:
      r = SigmoidOp::create(builder, l, x.value);
      break;
    case Builtin::Softplus:
      r = SoftplusOp::create(builder, l, x.value);
      break;
    case Builtin::Exp:
      r = math::ExpOp::create(builder, l, x.value);
      break;
    case Builtin::Tanh:
      r = math::TanhOp::create(builder, l, x.value);
      break;
    case Builtin::Sqrt:
      r = math::SqrtOp::create(builder, l, x.value);
      break;
    default:
      r = math::LogOp::create(builder, l, x.value);
      break;
    }
    Val result = x;
    result.value = r;
    return result;
  }

  case Builtin::L2Norm: {
    if (failed(bindArgs(expr, {"x", "eps"}, 1, a)))
      return Val::error();
    Val x = materialise(eval(*a[0]));
    if (x.isError())
      return x;
    std::optional<double> eps =
        a[1] ? evalFloat(*a[1], "eps") : std::optional<double>(1e-5);
    if (!eps)
      return Val::error();
    if (x.kind != Val::Kind::Tensor || x.shape.empty())
      return fail(a[0]->loc, "'l2norm' expects a tensor with at least one "
                             "feature dimension, got " +
                                 describe(x));
    auto op =
        L2NormOp::create(builder, l, x.value, builder.getF64FloatAttr(*eps));
    Val r = x;
    r.value = op;
    return r;
  }

  case Builtin::LayerNorm:
  case Builtin::RMSNorm: {
    bool layerNorm = builtin == Builtin::LayerNorm;
    SmallVector<StringRef> names = {"x", "weight"};
    if (layerNorm)
      names.push_back("bias");
    names.push_back("eps");
    if (failed(bindArgs(expr, names, layerNorm ? 3 : 2, a)))
      return Val::error();
    std::optional<Val> x = evalTensor(*a[0], "the normalised input", true);
    if (!x)
      return Val::error();
    if (x->shape.empty())
      return fail(a[0]->loc, "'" + expr.name + "' needs a feature dimension");
    SmallVector<int64_t> width = {x->shape.back()};
    std::optional<Val> w = evalStatic(*a[1], "the weight", width);
    std::optional<Val> b;
    if (layerNorm)
      b = evalStatic(*a[2], "the bias", width);
    const Expr *epsExpr = a[layerNorm ? 3 : 2];
    std::optional<double> eps =
        epsExpr ? evalFloat(*epsExpr, "eps") : std::optional<double>(1e-5);
    if (!w || (layerNorm && !b) || !eps)
      return Val::error();
    Value r = layerNorm
                  ? Value(LayerNormOp::create(builder, l, x->value, w->value,
                                              b->value,
                                              builder.getF64FloatAttr(*eps)))
                  : Value(RMSNormOp::create(builder, l, x->value, w->value,
                                            builder.getF64FloatAttr(*eps)));
    return Val::ofTensor(r, true, x->shape);
  }

  case Builtin::Shift: {
    if (failed(bindArgs(expr, {"x", "by"}, 1, a)))
      return Val::error();
    std::optional<Val> x = evalTensor(*a[0], "the shifted activation", true);
    std::optional<int64_t> by =
        a[1] ? evalInt(*a[1], "the shift") : std::optional<int64_t>(1);
    if (!x || !by)
      return Val::error();
    auto op =
        ShiftOp::create(builder, l, x->value, builder.getI64IntegerAttr(*by));
    return Val::ofTensor(op, true, x->shape);
  }

  case Builtin::Scan: {
    if (failed(bindArgs(expr, {"coeff", "input", "reverse"}, 2, a)))
      return Val::error();
    std::optional<Val> c = evalTensor(*a[0], "the scan coefficient", true);
    std::optional<Val> u = evalTensor(*a[1], "the scan input", true);
    std::optional<bool> reverse =
        a[2] ? evalBool(*a[2], "reverse") : std::optional<bool>(false);
    if (!c || !u || !reverse)
      return Val::error();
    if (c->shape != u->shape)
      return fail(expr.loc, "scan coefficient " + formatShape(c->shape) +
                                " and input " + formatShape(u->shape) +
                                " must have the same shape");
    auto op = ScanOp::create(builder, l, c->value, u->value,
                             *reverse ? builder.getUnitAttr() : UnitAttr());
    return Val::ofTensor(op, true, u->shape);
  }

  case Builtin::SelectiveScan: {
    if (failed(bindArgs(expr, {"u", "delta", "A", "B", "C", "D"}, 5, a)))
      return Val::error();
    std::optional<Val> u = evalTensor(*a[0], "the scan input u", true);
    if (!u)
      return Val::error();
    if (u->shape.size() != 1)
      return fail(a[0]->loc, "selective_scan's input must be a per-token "
                             "vector, got shape " +
                                 formatShape(u->shape));
    int64_t d = u->shape[0];
    std::optional<Val> delta = evalTensor(*a[1], "the step delta", true);
    std::optional<Val> aMat = evalTensor(*a[2], "the state matrix A", false);
    std::optional<Val> b = evalTensor(*a[3], "B", true);
    std::optional<Val> c = evalTensor(*a[4], "C", true);
    if (!delta || !aMat || !b || !c)
      return Val::error();
    if (delta->shape != u->shape)
      return fail(a[1]->loc, "delta must have the shape of u " +
                                 formatShape(u->shape) + ", got " +
                                 formatShape(delta->shape));
    if (aMat->shape.size() != 2 || aMat->shape[0] != d)
      return fail(a[2]->loc, "A must have shape [" + Twine(d) + ", N], got " +
                                 formatShape(aMat->shape));
    int64_t n = aMat->shape[1];
    if (b->shape != ArrayRef<int64_t>{n} || c->shape != ArrayRef<int64_t>{n})
      return fail(expr.loc, "B and C must have shape [" + Twine(n) +
                                "] (A's state size), got " +
                                formatShape(b->shape) + " and " +
                                formatShape(c->shape));
    Value skip;
    if (a[5]) {
      std::optional<Val> dSkip = evalStatic(*a[5], "the skip D", {d});
      if (!dSkip)
        return Val::error();
      skip = dSkip->value;
    }
    auto op = SelectiveScanOp::create(builder, l, u->value, delta->value,
                                      aMat->value, b->value, c->value, skip);
    return Val::ofTensor(op, true, u->shape);
  }

  case Builtin::CausalConv: {
    if (failed(bindArgs(expr, {"x", "weight", "bias"}, 2, a)))
      return Val::error();
    std::optional<Val> x = evalTensor(*a[0], "the convolved activation", true);
    if (!x)
      return Val::error();
    if (x->shape.size() != 1)
      return fail(a[0]->loc, "causal_conv's input must be a per-token "
                             "vector, got shape " +
                                 formatShape(x->shape));
    std::optional<Val> w = evalTensor(*a[1], "the kernel", false);
    if (!w)
      return Val::error();
    if (w->shape.size() != 2 || w->shape[0] != x->shape[0])
      return fail(a[1]->loc, "the kernel must have shape [" +
                                 Twine(x->shape[0]) + ", K], got " +
                                 formatShape(w->shape));
    Value bias;
    if (a[2]) {
      std::optional<Val> b = evalStatic(*a[2], "the bias", {x->shape[0]});
      if (!b)
        return Val::error();
      bias = b->value;
    }
    auto op = CausalConvOp::create(builder, l, x->value, w->value, bias);
    return Val::ofTensor(op, true, x->shape);
  }

  case Builtin::Linear:
  case Builtin::WNLinear: {
    bool weightNorm = builtin == Builtin::WNLinear;
    SmallVector<StringRef> names = {"x", "weight"};
    if (weightNorm)
      names.push_back("gain");
    names.push_back("bias");
    if (failed(bindArgs(expr, names, weightNorm ? 3 : 2, a)))
      return Val::error();
    std::optional<Val> x = evalTensor(*a[0], "the input", true);
    std::optional<Val> w = evalTensor(*a[1], "the weight", false);
    if (!x || !w)
      return Val::error();
    if (x->shape.empty() || w->shape.size() != 2 ||
        w->shape[1] != x->shape.back())
      return fail(expr.loc, "a weight of shape [out, " +
                                Twine(x->shape.empty() ? 0 : x->shape.back()) +
                                "] is needed for an input of shape " +
                                formatShape(x->shape) + ", got " +
                                formatShape(w->shape));
    int64_t out = w->shape[0];
    Value gain, bias;
    if (weightNorm) {
      std::optional<Val> g = evalStatic(*a[2], "the gain", {out});
      if (!g)
        return Val::error();
      gain = g->value;
    }
    if (const Expr *b = a[weightNorm ? 3 : 2]) {
      std::optional<Val> bv = evalStatic(*b, "the bias", {out});
      if (!bv)
        return Val::error();
      bias = bv->value;
    }
    SmallVector<int64_t> shape = x->shape;
    shape.back() = out;
    auto op = LinearOp::create(builder, l, activationType(shape), x->value,
                               w->value, gain, bias);
    return Val::ofTensor(op, true, shape);
  }

  case Builtin::Dot:
  case Builtin::Sum: {
    bool dot = builtin == Builtin::Dot;
    if (failed(bindArgs(expr,
                        dot ? ArrayRef<StringRef>{"a", "b"}
                            : ArrayRef<StringRef>{"x"},
                        dot ? 2 : 1, a)))
      return Val::error();
    std::optional<Val> x = evalTensor(*a[0], "the operand", true);
    if (!x)
      return Val::error();
    Val product = *x;
    if (dot) {
      std::optional<Val> y = evalTensor(*a[1], "the operand", true);
      if (!y)
        return Val::error();
      if (x->shape != y->shape)
        return fail(expr.loc, "dot of shapes " + formatShape(x->shape) +
                                  " and " + formatShape(y->shape));
      product = elementwise(TokenKind::star, *x, *y, expr.loc);
    }
    if (product.isError())
      return product;
    if (product.shape.empty())
      return fail(expr.loc, "'" + expr.name + "' needs a feature dimension");
    SmallVector<int64_t> shape(ArrayRef<int64_t>(product.shape).drop_back());
    int64_t last = product.shape.size() + 1;
    auto op =
        ReduceSumOp::create(builder, l, activationType(shape), product.value,
                            builder.getDenseI64ArrayAttr({last}));
    return Val::ofTensor(op, true, shape);
  }

  case Builtin::Max:
  case Builtin::Min: {
    if (failed(bindArgs(expr, {"a", "b"}, 1, a)))
      return Val::error();
    Val x = materialise(eval(*a[0]));
    if (x.isError())
      return x;
    if (!a[1]) {
      if (builtin != Builtin::Max || x.kind != Val::Kind::Tensor ||
          !x.activation || x.shape.empty())
        return fail(expr.loc, "'" + expr.name +
                                  "' of one argument reduces the last "
                                  "dimension of an activation ('max' only)");
      SmallVector<int64_t> shape(ArrayRef<int64_t>(x.shape).drop_back());
      int64_t last = x.shape.size() + 1;
      auto op = ReduceMaxOp::create(builder, l, activationType(shape), x.value,
                                    builder.getDenseI64ArrayAttr({last}));
      return Val::ofTensor(op, true, shape);
    }
    Val y = materialise(eval(*a[1]));
    if (y.isError())
      return y;
    if (!x.isNumber() || !y.isNumber())
      return fail(expr.loc, "'" + expr.name +
                                "' of two arguments compares "
                                "numbers");
    bool isMax = builtin == Builtin::Max;
    if (x.kind == Val::Kind::Int && y.kind == Val::Kind::Int)
      return Val::ofInt(isMax ? std::max(x.intValue, y.intValue)
                              : std::min(x.intValue, y.intValue));
    return Val::ofFloat(isMax ? std::max(x.asDouble(), y.asDouble())
                              : std::min(x.asDouble(), y.asDouble()));
  }

  case Builtin::Transpose:
    return fail(expr.loc, "'t(x)' is only allowed as an operand of matmul");

  case Builtin::Matmul: {
    if (failed(bindArgs(expr, {"a", "b"}, 2, a)))
      return Val::error();
    std::optional<Val> ops[2];
    bool transposed[2] = {false, false};
    for (unsigned i = 0; i < 2; ++i) {
      const Expr *operand = a[i];
      if (operand->kind == ExprKind::Call && operand->name == "t" &&
          !scope->lookup("t")) {
        if (operand->operands.size() != 1 || !operand->argNames[0].empty())
          return fail(operand->loc, "'t' takes one argument");
        transposed[i] = true;
        operand = operand->operands[0].get();
      }
      ops[i] = evalTensor(*operand, "a matmul operand", true);
      if (!ops[i])
        return Val::error();
      if (ops[i]->shape.size() < 2)
        return fail(operand->loc, "matmul takes per-token matrices, got "
                                  "shape " +
                                      formatShape(ops[i]->shape));
    }
    ArrayRef<int64_t> lhs = ops[0]->shape, rhs = ops[1]->shape;
    if (lhs.drop_back(2) != rhs.drop_back(2))
      return fail(expr.loc, "matmul operands " + formatShape(lhs) + " and " +
                                formatShape(rhs) +
                                " differ in their leading dimensions");
    int64_t rows = transposed[0] ? lhs.back() : lhs[lhs.size() - 2];
    int64_t inner = transposed[0] ? lhs[lhs.size() - 2] : lhs.back();
    int64_t innerR = transposed[1] ? rhs.back() : rhs[rhs.size() - 2];
    int64_t cols = transposed[1] ? rhs[rhs.size() - 2] : rhs.back();
    if (inner != innerR)
      return fail(expr.loc, "matmul of " + Twine(rows) + "x" + Twine(inner) +
                                " by " + Twine(innerR) + "x" + Twine(cols));
    SmallVector<int64_t> shape(lhs.drop_back(2));
    shape.push_back(rows);
    shape.push_back(cols);
    auto op = MatmulOp::create(builder, l, activationType(shape), ops[0]->value,
                               ops[1]->value, transposed[0], transposed[1]);
    return Val::ofTensor(op, true, shape);
  }

  case Builtin::Matvec: {
    if (failed(bindArgs(expr, {"m", "v"}, 2, a)))
      return Val::error();
    std::optional<Val> m = evalTensor(*a[0], "the matrix", true);
    std::optional<Val> v = evalTensor(*a[1], "the vector", true);
    if (!m || !v)
      return Val::error();
    ArrayRef<int64_t> ms = m->shape, vs = v->shape;
    if (ms.size() < 2 || vs.size() != ms.size() - 1 ||
        vs.drop_back() != ms.drop_back(2) || vs.back() != ms.back())
      return fail(expr.loc, "matvec of a " + formatShape(ms) +
                                " matrix and a " + formatShape(vs) + " vector");
    SmallVector<int64_t> column(vs);
    column.push_back(1);
    Val col = reshape(*v, column, l);
    SmallVector<int64_t> shape(ms.drop_back());
    shape.push_back(1);
    auto op = MatmulOp::create(builder, l, activationType(shape), m->value,
                               col.value, false, false);
    SmallVector<int64_t> outShape(ms.drop_back());
    return reshape(Val::ofTensor(op, true, shape), outShape, l);
  }

  case Builtin::Triu: {
    if (failed(bindArgs(expr, {"x"}, 1, a)))
      return Val::error();
    std::optional<Val> x = evalTensor(*a[0], "the packed triangle", true);
    if (!x)
      return Val::error();
    if (x->shape.empty())
      return fail(a[0]->loc, "triu needs a feature dimension");
    int64_t packed = x->shape.back(), m = 0;
    while (m * (m + 1) / 2 < packed)
      ++m;
    if (m * (m + 1) / 2 != packed)
      return fail(a[0]->loc, "triu needs m(m+1)/2 entries for some m; " +
                                 Twine(packed) + " is not such a number");
    SmallVector<int64_t> shape(ArrayRef<int64_t>(x->shape).drop_back());
    shape.push_back(m);
    shape.push_back(m);
    auto op = TriuOp::create(builder, l, activationType(shape), x->value);
    return Val::ofTensor(op, true, shape);
  }

  case Builtin::Reshape: {
    if (failed(bindArgs(expr, {"x", "shape"}, 2, a)))
      return Val::error();
    Val x = materialise(eval(*a[0]));
    if (x.isError())
      return x;
    if (x.kind != Val::Kind::Tensor)
      return fail(a[0]->loc, "reshape expects a tensor, got " + describe(x));
    if (a[1]->kind != ExprKind::List)
      return fail(a[1]->loc, "reshape's shape is a list: [a, b]");
    SmallVector<int64_t> shape;
    for (const ExprPtr &dim : a[1]->operands) {
      std::optional<int64_t> size = evalSize(*dim, "a dimension");
      if (!size)
        return Val::error();
      shape.push_back(*size);
    }
    if ((shape.empty() && !x.activation) || !checkShape(shape, a[1]->loc))
      return shape.empty() ? fail(a[1]->loc, "a parameter tensor keeps at "
                                             "least one dimension")
                           : Val::error();
    int64_t from = 1, to = 1;
    for (int64_t s : x.shape)
      from *= s;
    for (int64_t s : shape)
      to *= s;
    if (from != to)
      return fail(expr.loc, "cannot reshape " + formatShape(x.shape) + " (" +
                                Twine(from) + " elements) to " +
                                formatShape(shape) + " (" + Twine(to) + ")");
    return reshape(x, shape, l);
  }

  case Builtin::Concat: {
    if (expr.operands.size() < 2)
      return fail(expr.loc, "concat joins at least two activations");
    SmallVector<Value> inputs;
    SmallVector<int64_t> shape;
    for (auto [i, arg] : llvm::enumerate(expr.operands)) {
      if (!expr.argNames[i].empty())
        return fail(expr.argNameLocs[i], "concat takes no named arguments");
      std::optional<Val> x = evalTensor(*arg, "a concat operand", true);
      if (!x)
        return Val::error();
      if (x->shape.empty())
        return fail(arg->loc, "concat needs a feature dimension");
      if (i == 0) {
        shape = x->shape;
      } else {
        if (ArrayRef<int64_t>(x->shape).drop_back() !=
            ArrayRef<int64_t>(shape).drop_back())
          return fail(arg->loc, "concat operands differ before their last "
                                "dimension: " +
                                    formatShape(shape) + " and " +
                                    formatShape(x->shape));
        shape.back() += x->shape.back();
      }
      inputs.push_back(x->value);
    }
    if (!checkShape(shape, expr.loc))
      return Val::error();
    auto op = ConcatOp::create(builder, l, activationType(shape), inputs);
    return Val::ofTensor(op, true, shape);
  }

  case Builtin::Fill: {
    if (failed(bindArgs(expr, {"value", "like"}, 2, a)))
      return Val::error();
    std::optional<double> value = evalFloat(*a[0], "the fill value");
    Val like = materialise(eval(*a[1]));
    if (!value || like.isError())
      return Val::error();
    if (like.kind != Val::Kind::Tensor)
      return fail(a[1]->loc,
                  "fill takes its shape from a tensor, got " + describe(like));
    return Val::ofTensor(splat(*value, like, l), like.activation, like.shape);
  }

  case Builtin::FixedPoint: {
    if (failed(bindArgs(expr,
                        {"map", "init", "tolerance", "quantile",
                         "max_iter_train", "max_iter_eval", "relax_start",
                         "relax_decay", "relax_patience", "backward"},
                        2, a)))
      return Val::error();
    return evalFixedPoint(expr, a);
  }

  case Builtin::CeilDiv:
  case Builtin::FloorDiv: {
    if (failed(bindArgs(expr, {"a", "b"}, 2, a)))
      return Val::error();
    std::optional<int64_t> x = evalInt(*a[0], "a dividend");
    std::optional<int64_t> y = evalInt(*a[1], "a divisor");
    if (!x || !y)
      return Val::error();
    if (*y <= 0 || *x < 0)
      return fail(expr.loc, "'" + expr.name +
                                "' takes a non-negative "
                                "dividend and a positive "
                                "divisor");
    return Val::ofInt(builtin == Builtin::FloorDiv ? *x / *y
                                                   : *x / *y + (*x % *y != 0));
  }

  case Builtin::ISqrt: {
    if (failed(bindArgs(expr, {"n"}, 1, a)))
      return Val::error();
    std::optional<int64_t> n = evalInt(*a[0], "isqrt's argument");
    if (!n)
      return Val::error();
    if (*n < 0)
      return fail(expr.loc, "isqrt of a negative number");
    int64_t r = static_cast<int64_t>(std::sqrt(static_cast<double>(*n)));
    // Correct the floating-point estimate without overflowing.
    while (r > 0 && r > *n / r)
      --r;
    while (r + 1 <= *n / (r + 1))
      ++r;
    return Val::ofInt(r);
  }

  case Builtin::DivisorLe: {
    if (failed(bindArgs(expr, {"n", "bound"}, 2, a)))
      return Val::error();
    std::optional<int64_t> n = evalInt(*a[0], "a number");
    std::optional<int64_t> bound = evalInt(*a[1], "a bound");
    if (!n || !bound)
      return Val::error();
    if (*n < 1 || *bound < 1 || *n > kMaxElements)
      return fail(expr.loc, "divisor_le takes positive arguments (n at most " +
                                Twine(kMaxElements) + ")");
    for (int64_t k = std::min(*n, *bound); k >= 1; --k)
      if (*n % k == 0)
        return Val::ofInt(k);
    return Val::ofInt(1);
  }

  case Builtin::IsPow2: {
    if (failed(bindArgs(expr, {"n"}, 1, a)))
      return Val::error();
    std::optional<int64_t> n = evalInt(*a[0], "a number");
    if (!n)
      return Val::error();
    return Val::ofBool(*n > 0 && (*n & (*n - 1)) == 0);
  }

  case Builtin::ToFloat: {
    if (failed(bindArgs(expr, {"x"}, 1, a)))
      return Val::error();
    std::optional<double> x = evalFloat(*a[0], "float's argument");
    return x ? Val::ofFloat(*x) : Val::error();
  }
  }
  return Val::error();
}

Val Elaborator::evalFixedPoint(const Expr &expr, ArrayRef<const Expr *> a) {
  if (ctx->decl->kind != FunctionDecl::Kind::Layer)
    return fail(expr.loc, "fixed_point belongs in a layer's body, not in a "
                          "mixer or map");
  ++ctx->numFixedPoints;
  Val map = eval(*a[0]);
  if (map.isError())
    return map;
  if (map.kind != Val::Kind::Map)
    return fail(a[0]->loc,
                "fixed_point iterates a map ('fn'), got " + describe(map));
  const FunctionDecl &decl = *map.map;
  if (decl.arguments.size() != 1)
    return fail(a[0]->loc, "fixed_point needs a map of one argument; '" +
                               decl.name + "' takes " +
                               Twine(decl.arguments.size()));

  // Solver settings: the reference FP-Mamba's unless given.
  SolverAttr defaults = SolverAttr::getReferenceDefaults(builder.getContext());
  double tolerance = defaults.getTolerance().convertToDouble();
  double quantile = defaults.getQuantile().convertToDouble();
  int64_t maxIterTrain = defaults.getMaxIterTrain();
  int64_t maxIterEval = defaults.getMaxIterEval();
  double relaxStart = defaults.getRelaxStart().convertToDouble();
  double relaxDecay = defaults.getRelaxDecay().convertToDouble();
  int64_t relaxPatience = defaults.getRelaxPatience();
  bool ok = true;
  auto setFloat = [&](const Expr *e, double &out) {
    if (!e)
      return;
    std::optional<double> v = evalFloat(*e, "a solver setting");
    ok &= v.has_value();
    if (v)
      out = *v;
  };
  auto setInt = [&](const Expr *e, int64_t &out) {
    if (!e)
      return;
    std::optional<int64_t> v = evalInt(*e, "a solver setting");
    ok &= v.has_value();
    if (v)
      out = *v;
  };
  setFloat(a[2], tolerance);
  setFloat(a[3], quantile);
  setInt(a[4], maxIterTrain);
  setInt(a[5], maxIterEval);
  setFloat(a[6], relaxStart);
  setFloat(a[7], relaxDecay);
  setInt(a[8], relaxPatience);
  if (!ok)
    return Val::error();
  auto emitAt = [&] {
    ++numErrors;
    return locator.emitError(expr.loc);
  };
  if (failed(SolverAttr::verify(emitAt, APFloat(tolerance), APFloat(quantile),
                                maxIterTrain, maxIterEval, APFloat(relaxStart),
                                APFloat(relaxDecay), relaxPatience)))
    return Val::error();
  auto solver =
      SolverAttr::get(builder.getContext(), tolerance, quantile, maxIterTrain,
                      maxIterEval, relaxStart, relaxDecay, relaxPatience);

  BackwardMode mode = BackwardMode::OneStep;
  int64_t steps = 0;
  double backwardTolerance = 0;
  if (const Expr *b = a[9]) {
    std::optional<BackwardMode> parsed;
    if (b->kind == ExprKind::Name || b->kind == ExprKind::Call)
      parsed = symbolizeBackwardMode(b->name);
    if (!parsed)
      return fail(b->loc, "unknown backward mode; expected one_step, "
                          "truncated(k), neumann(k) or implicit(tol)");
    mode = *parsed;
    bool takesSteps =
        mode == BackwardMode::Truncated || mode == BackwardMode::Neumann;
    bool takesTolerance = mode == BackwardMode::Implicit;
    unsigned wanted = takesSteps || takesTolerance ? 1 : 0;
    if (b->kind != ExprKind::Call ? wanted != 0 : b->operands.size() != wanted)
      return fail(b->loc, "backward mode '" + b->name + "' takes " +
                              (takesSteps ? "a step count: " + b->name + "(k)"
                               : takesTolerance ? "a tolerance: implicit(tol)"
                                                : std::string("no argument")));
    if (takesSteps) {
      std::optional<int64_t> k = evalInt(*b->operands[0], "a step count");
      if (!k)
        return Val::error();
      steps = *k;
    } else if (takesTolerance) {
      std::optional<double> tol = evalFloat(*b->operands[0], "a tolerance");
      if (!tol)
        return Val::error();
      backwardTolerance = *tol;
    }
    auto emitAtMode = [&] {
      ++numErrors;
      return locator.emitError(b->loc);
    };
    if (failed(BackwardAttr::verify(emitAtMode, mode, steps,
                                    APFloat(backwardTolerance))))
      return Val::error();
  }
  auto backward =
      BackwardAttr::get(builder.getContext(), mode, steps, backwardTolerance);

  // The iterate's shape, from the map's signature.
  SmallVector<int64_t> shape;
  {
    Scope *saved = scope;
    scope = map.closure;
    for (const ExprPtr &dim : decl.arguments[0].shape) {
      std::optional<int64_t> size = evalSize(*dim, "a dimension");
      if (!size) {
        scope = saved;
        return Val::error();
      }
      shape.push_back(*size);
    }
    scope = saved;
  }
  {
    Scope *saved = scope;
    scope = map.closure;
    SmallVector<int64_t> resultShape;
    for (const ExprPtr &dim : decl.resultShape)
      resultShape.push_back(evalSize(*dim, "a dimension").value_or(-1));
    scope = saved;
    if (resultShape != shape)
      return fail(a[0]->loc, "fixed_point needs a map from a shape to the "
                             "same shape; '" +
                                 decl.name + "' maps " + formatShape(shape) +
                                 " to " + formatShape(resultShape));
  }
  Location l = loc(expr.loc);
  Value init;
  Val initVal = materialise(eval(*a[1]));
  if (initVal.isError())
    return initVal;
  if (initVal.isNumber()) {
    // A constant initial iterate, shaped like the layer's input in batch
    // and time.
    Value scalar = arith::ConstantOp::create(
        builder, l, builder.getFloatAttr(elementType, initVal.asDouble()));
    SmallVector<Value> dynamicSizes;
    for (int64_t dim = 0; dim < 2; ++dim)
      dynamicSizes.push_back(
          tensor::DimOp::create(builder, l, ctx->input, dim));
    init = tensor::SplatOp::create(builder, l, scalar, activationType(shape),
                                   dynamicSizes);
  } else if (initVal.kind == Val::Kind::Tensor && initVal.activation &&
             initVal.shape == shape) {
    init = initVal.value;
  } else {
    return fail(a[1]->loc, "the initial iterate must be a number or an "
                           "activation of shape " +
                               formatShape(shape) + ", got " +
                               describe(initVal));
  }

  Val result = Val::error();
  unsigned errors = numErrors;
  auto op = FixedPointOp::create(
      builder, l, ValueRange{init}, solver, backward,
      [&](OpBuilder &b, Location bodyLoc, ValueRange iterates) {
        Val y = Val::ofTensor(iterates[0], true, shape);
        Val next = callMap(map, {y}, expr.loc);
        if (!next.isError())
          YieldOp::create(b, bodyLoc, ValueRange{next.value});
      });
  if (numErrors != errors) {
    op->erase();
    return Val::error();
  }
  ctx->iterations = op.getIterations();
  return Val::ofTensor(op.getFixedPoints()[0], true, shape);
}

//===----------------------------------------------------------------------===//
// Models
//===----------------------------------------------------------------------===//

LogicalResult Elaborator::elaborate(const SourceFile &main) {
  unsigned errors = numErrors;
  SmallVector<Attribute> models;
  FuncCtx topCtx;
  Scope top(nullptr);
  ctx = &topCtx;
  scope = &top;

  auto elaborateStandaloneLayers = [&] {
    for (const auto &decl : main.functions) {
      if (decl->kind != FunctionDecl::Kind::Layer)
        continue;
      InstanceInfo instance;
      instance.decl = decl.get();
      instance.loc = decl->loc;
      (void)instantiateLayer(instance, std::nullopt, decl->loc);
    }
  };
  if (main.models.empty() &&
      llvm::none_of(main.functions, [](const auto &decl) {
        return decl->kind == FunctionDecl::Kind::Layer;
      })) {
    llvm::SMLoc start =
        llvm::SMLoc::getFromPointer(locator.getSourceMgr()
                                        .getMemoryBuffer(main.bufferId)
                                        ->getBufferStart());
    emitError(start) << "'" << main.path
                     << "' declares no model or layer: nothing to compile "
                        "(a mixer is compiled where a layer uses it)";
  }
  if (main.models.empty())
    elaborateStandaloneLayers();

  llvm::StringMap<llvm::SMLoc> modelNames;
  for (const auto &model : main.models) {
    auto [previous, fresh] = modelNames.try_emplace(model->name, model->loc);
    if (!fresh) {
      InFlightDiagnostic diag = emitError(model->loc);
      diag << "redefinition of model '" << model->name << "'";
      diag.attachNote(loc(previous->second)) << "previous definition here";
      continue;
    }
    NamedAttrList fields;
    fields.append("name", builder.getStringAttr(model->name));
    std::optional<int64_t> dModel, nLayers = 1, padVocab = 8, vocab;
    std::optional<double> normEps = 1e-5;
    std::string norm = "rms_norm";
    bool tie = true;
    const Expr *layerExpr = nullptr;
    llvm::StringSet<> seen;
    bool ok = true;
    for (const ModelDecl::Field &field : model->fields) {
      if (!seen.insert(field.key).second) {
        emitError(field.loc) << "model field '" << field.key << "' given twice";
        ok = false;
        continue;
      }
      const Expr &value = *field.value;
      if (field.key == "d_model") {
        dModel = evalSize(value, "d_model");
        ok &= dModel.has_value();
      } else if (field.key == "n_layers") {
        nLayers = evalSize(value, "n_layers");
        ok &= nLayers.has_value();
      } else if (field.key == "vocab") {
        vocab = evalSize(value, "vocab");
        ok &= vocab.has_value();
      } else if (field.key == "pad_vocab_multiple") {
        padVocab = evalSize(value, "pad_vocab_multiple");
        ok &= padVocab.has_value();
      } else if (field.key == "norm_eps") {
        normEps = evalFloat(value, "norm_eps");
        ok &= normEps && *normEps > 0;
        if (normEps && !(*normEps > 0))
          emitError(value.loc) << "norm_eps must be positive";
      } else if (field.key == "tie_embeddings") {
        std::optional<bool> b = evalBool(value, "tie_embeddings");
        ok &= b.has_value();
        tie = b.value_or(true);
      } else if (field.key == "norm") {
        if (value.kind != ExprKind::Name ||
            (value.name != "rms_norm" && value.name != "layer_norm")) {
          emitError(value.loc) << "norm is rms_norm or layer_norm";
          ok = false;
        } else {
          norm = value.name;
        }
      } else if (field.key == "layer") {
        layerExpr = &value;
      } else {
        emitError(field.loc)
            << "unknown model field '" << field.key
            << "'; expected d_model, n_layers, layer, norm, norm_eps, vocab, "
               "pad_vocab_multiple or tie_embeddings";
        ok = false;
      }
    }
    for (const auto &[key, value] : modelOverrides) {
      if (key == "d_model")
        dModel = value;
      else if (key == "n_layers")
        nLayers = value;
      else if (key == "vocab")
        vocab = value;
      else if (key == "pad_vocab_multiple")
        padVocab = value;
    }
    if (!dModel && ok) {
      emitError(model->loc) << "model '" << model->name << "' needs 'd_model'";
      ok = false;
    }
    if (!layerExpr) {
      emitError(model->loc)
          << "model '" << model->name << "' needs 'layer = <layer>(...)'";
      ok = false;
    }
    if (!ok)
      continue;
    Val layer = eval(*layerExpr);
    if (layer.isError())
      continue;
    if (layer.kind != Val::Kind::Instance ||
        layer.instance->decl->kind != FunctionDecl::Kind::Layer) {
      emitError(layerExpr->loc)
          << "model layer must be a layer, got " << describe(layer);
      continue;
    }
    func::FuncOp func =
        instantiateLayer(*layer.instance, dModel, layerExpr->loc);
    if (!func)
      continue;
    fields.append("layer", FlatSymbolRefAttr::get(func.getSymNameAttr()));
    fields.append("d_model", builder.getI64IntegerAttr(*dModel));
    fields.append("n_layers", builder.getI64IntegerAttr(*nLayers));
    fields.append("norm", builder.getStringAttr(norm));
    fields.append("norm_eps", builder.getF64FloatAttr(*normEps));
    fields.append("pad_vocab_multiple", builder.getI64IntegerAttr(*padVocab));
    fields.append("tie_embeddings", builder.getBoolAttr(tie));
    if (vocab)
      fields.append("vocab", builder.getI64IntegerAttr(*vocab));
    models.push_back(fields.getDictionary(builder.getContext()));
  }
  if (!models.empty())
    module->setAttr("fp.models", builder.getArrayAttr(models));
  ctx = nullptr;
  scope = nullptr;
  return success(errors == numErrors);
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp>
mlir::fp::frontend::importFpSource(llvm::SourceMgr &sourceMgr,
                                   MLIRContext *context,
                                   const FrontendOptions &options) {
  context->loadDialect<FPDialect, arith::ArithDialect, func::FuncDialect,
                       math::MathDialect, tensor::TensorDialect>();
  SourceLocator locator(sourceMgr, context);
  unsigned mainId = sourceMgr.getMainFileID();
  Type elementType;
  if (options.elementType == "f32") {
    elementType = Float32Type::get(context);
  } else if (options.elementType == "f64") {
    elementType = Float64Type::get(context);
  } else {
    mlir::emitError(UnknownLoc::get(context))
        << "unknown element type '" << options.elementType
        << "'; expected f32 or f64";
    return nullptr;
  }

  for (const auto &[key, value] : options.modelOverrides) {
    if (key != "d_model" && key != "n_layers" && key != "vocab" &&
        key != "pad_vocab_multiple") {
      mlir::emitError(UnknownLoc::get(context))
          << "cannot override model field '" << key
          << "'; expected d_model, n_layers, vocab or pad_vocab_multiple";
      return nullptr;
    }
    if (value < 1 || value > (int64_t(1) << 24)) {
      mlir::emitError(UnknownLoc::get(context))
          << "model field '" << key << "' must be in [1, 2^24], got " << value;
      return nullptr;
    }
  }

  LoadedSources sources;
  if (failed(loadSources(locator, mainId, options.includeDirs, sources)))
    return nullptr;
  const SourceFile &main = *sources.files.front();
  auto fileLoc = FileLineColLoc::get(context, main.path, 1, 1);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  Elaborator elaborator(locator, *module, elementType, options.modelOverrides);
  if (failed(elaborator.declare(sources)) || failed(elaborator.elaborate(main)))
    return nullptr;
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

void mlir::fp::frontend::registerFrontendDialects(DialectRegistry &registry) {
  registry.insert<FPDialect, arith::ArithDialect, func::FuncDialect,
                  math::MathDialect, tensor::TensorDialect>();
}

void mlir::fp::frontend::registerImportFpTranslation() {
  static llvm::cl::list<std::string> includeDirs(
      "fp-include", llvm::cl::desc("Directory searched by .fp imports"),
      llvm::cl::value_desc("dir"));
  enum class ElementType { F32, F64 };
  static llvm::cl::opt<ElementType> elementType(
      "fp-element-type", llvm::cl::desc("Element type of .fp tensors"),
      llvm::cl::init(ElementType::F32),
      llvm::cl::values(clEnumValN(ElementType::F32, "f32", "32-bit floats"),
                       clEnumValN(ElementType::F64, "f64", "64-bit floats")));
  static TranslateToMLIRRegistration importFp(
      "import-fp", "translate .fp source to the fp dialect",
      [](llvm::SourceMgr &sourceMgr,
         MLIRContext *context) -> OwningOpRef<Operation *> {
        FrontendOptions options;
        options.includeDirs.assign(includeDirs.begin(), includeDirs.end());
        options.elementType = elementType == ElementType::F64 ? "f64" : "f32";
        return importFpSource(sourceMgr, context, options);
      },
      registerFrontendDialects);
}
