//===- MLIRGenInternals.h - The elaborator, shared by its files -*- C++ -*-===//
//
// Private to the frontend: the compile-time values, the scopes and the
// Elaborator class that MLIRGen.cpp and the files beside it implement, one
// concern a file:
//
//   MLIRGen.cpp       the entry points, the models, values in messages;
//   Declarations.cpp  mixers and layers: their registration, configurations
//                     and signatures;
//   Instances.cpp     layers, mixers and maps emitted as functions, calls of
//                     parameter modules;
//   Statements.cpp    statements, unrolled and decided while elaborating;
//   Parameters.cpp    `param` declarations and their initialisers;
//   Expressions.cpp   expressions, and the helpers that emit tensor ops;
//   Builtins.cpp      the built-in functions, dispatched from one table;
//   FixedPoint.cpp    fixed_point, the solver loop at the heart of a layer.
//
//===----------------------------------------------------------------------===//

// A private header of lib/: llvm-header-guard derives the guard it wants
// from the absolute path when the path has no include/ directory.
#ifndef FP_FRONTEND_LIB_MLIRGENINTERNALS_H // NOLINT(llvm-header-guard)
#define FP_FRONTEND_LIB_MLIRGENINTERNALS_H

#include "Loader.h"

#include "fp/Dialect/FpAttrs.h"
#include "fp/Frontend/AST.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::fp::frontend {

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
  /// Not trained (fp.param's `frozen`): a buffer of the runtime's.
  bool frozen = false;
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
  enum class Kind {
    Linear,
    WNLinear,
    LayerNorm,
    RMSNorm,
    CausalConv,
    Orthogonal,
    Mixer
  };
  Kind kind;
  std::string name;
  int64_t in = 0, out = 0;
  double eps = 1e-5;
  std::shared_ptr<ParamSpec> weight, gain, bias;
  /// Orthogonal: the frozen base the exponential multiplies.
  std::shared_ptr<ParamSpec> base;
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

/// `[a, b]`, for messages.
std::string formatShape(ArrayRef<int64_t> shape);
/// What a value is, for messages.
std::string describe(const Val &v);

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

  //===--- Declarations (Declarations.cpp) --------------------------------===//

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

  //===--- Instances (Instances.cpp) --------------------------------------===//

  func::FuncOp instantiateLayer(const InstanceInfo &instance,
                                std::optional<int64_t> inputSize,
                                llvm::SMLoc useLoc);
  Val callMixer(ModuleInfo &module, ArrayRef<Val> args, llvm::SMLoc l);
  Val callMap(const Val &map, ArrayRef<Val> args, llvm::SMLoc l);
  Val callModule(ModuleInfo &module, const Expr &call);
  Val capture(const Val &v);
  /// A frozen copy of every name visible from `s` (a map's environment).
  Scope *snapshot(Scope &s);

  //===--- Statements (Statements.cpp, Parameters.cpp) --------------------===//

  void execBody(const StmtList &block, Scope &scope, bool topLevel);
  void execStmt(const Stmt &stmt, Scope &scope, bool topLevel, bool isLast);
  void declareParam(const Stmt &stmt, Scope &scope);
  void declareParamImpl(const Stmt &stmt, Scope &scope);
  std::optional<InitAttr> evalInit(const Expr &expr);
  void define(Scope &scope, StringRef name, llvm::SMLoc l, Val value,
              Binding::Role role);

  //===--- Expressions (Expressions.cpp) ----------------------------------===//

  Val eval(const Expr &expr);
  Val evalName(const Expr &expr);
  /// The visible name or declaration closest to `name` (for "did you
  /// mean"), or "".
  std::string closestName(StringRef name);
  Val evalUnary(const Expr &expr);
  Val evalBinary(const Expr &expr);
  Val evalCall(const Expr &expr);
  Val evalIndex(const Expr &expr);
  Val evalSlice(const Expr &expr);

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

  //===--- Emission helpers (Expressions.cpp) -----------------------------===//

  Val materialise(const Val &v);
  Value getParam(const ParamSpec &spec);
  Value splat(double value, const Val &like, Location l);
  Val elementwise(TokenKind op, Val lhs, Val rhs, llvm::SMLoc l);
  Val broadcastTo(const Val &v, const Val &like, llvm::SMLoc l);
  Val reshape(const Val &v, ArrayRef<int64_t> shape, Location l);
  /// Elements [start, end) of the last dimension of a tensor (itself for
  /// the whole range).
  Val slice(const Val &v, int64_t start, int64_t end, Location l);

  //===--- Built-in functions (Builtins.cpp, FixedPoint.cpp) --------------===//

  /// A call of a built-in function, dispatched by name from the table in
  /// Builtins.cpp, which also binds its arguments (bindArgs).
  Val evalBuiltin(const Expr &expr);

  /// The handler of one builtin: the call, and its arguments in the order of
  /// the builtin's parameter names (null where an optional one is omitted).
  using BuiltinHandler = Val (Elaborator::*)(const Expr &expr,
                                             ArrayRef<const Expr *> a);
  /// A row of the table of builtins.
  struct BuiltinInfo;
  /// The builtin called `name`, or null.
  static const BuiltinInfo *lookupBuiltin(StringRef name);

  // Elementwise.
  Val builtinSilu(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinSigmoid(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinSoftplus(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinExp(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinTanh(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinSqrt(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinLog(const Expr &expr, ArrayRef<const Expr *> a);
  // Normalisations.
  Val builtinL2Norm(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinLayerNorm(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinRMSNorm(const Expr &expr, ArrayRef<const Expr *> a);
  // Time.
  Val builtinShift(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinScan(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinSelectiveScan(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinSsdScan(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinCausalConv(const Expr &expr, ArrayRef<const Expr *> a);
  // Linear algebra.
  Val builtinLinear(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinWNLinear(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinDot(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinSum(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinMax(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinMin(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinMatmul(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinMatvec(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinTranspose(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinTriu(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinTril(const Expr &expr, ArrayRef<const Expr *> a);
  /// A parameter tensor of shape [n, n] for `what`, or a located error.
  std::optional<Val> evalSquareMatrix(const Expr &expr, StringRef what);
  Val builtinMatrixExp(const Expr &expr, ArrayRef<const Expr *> a);
  /// Parameter-level linear algebra on static matrices (Builtins.cpp).
  Value transposeMatrix(Value x, Location l);
  Value lowerTriangle(Value x, Location l);
  Value productOfMatrices(Value lhs, Value rhs, bool transposeLhs,
                          bool transposeRhs, Location l);
  Val builtinReshape(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinConcat(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinFill(const Expr &expr, ArrayRef<const Expr *> a);
  Val evalFixedPoint(const Expr &expr, ArrayRef<const Expr *> a);
  // Configuration arithmetic.
  Val builtinCeilDiv(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinFloorDiv(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinISqrt(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinDivisorLe(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinIsPow2(const Expr &expr, ArrayRef<const Expr *> a);
  Val builtinFloat(const Expr &expr, ArrayRef<const Expr *> a);

  // What builtins of a kind share. evalMathBuiltin folds a number with
  // `fold`, for the builtins that compute on numbers too, and emits
  // `create`'s op on a tensor.
  Val evalMathBuiltin(const Expr &expr, ArrayRef<const Expr *> a,
                      function_ref<Val(double)> fold,
                      function_ref<Value(Location, Value)> create);
  Val evalNormBuiltin(const Expr &expr, ArrayRef<const Expr *> a,
                      bool layerNorm);
  Val evalLinearBuiltin(const Expr &expr, ArrayRef<const Expr *> a,
                        bool weightNorm);
  Val evalSumBuiltin(const Expr &expr, ArrayRef<const Expr *> a, bool dot);
  Val evalExtremumBuiltin(const Expr &expr, ArrayRef<const Expr *> a,
                          bool isMax);
  Val evalDivisionBuiltin(const Expr &expr, ArrayRef<const Expr *> a,
                          bool floor);

  //===--- State ----------------------------------------------------------===//

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

} // namespace mlir::fp::frontend

#endif // FP_FRONTEND_LIB_MLIRGENINTERNALS_H
