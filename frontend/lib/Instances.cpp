//===- Instances.cpp - Layers, mixers and maps as functions ---------------===//
//
// Part of fpc. Every layer instance becomes a function; so does every mixer
// instance (for the one input width its parameters fit) and every map of a
// layer instance, emitted where it is first called. The layer values a map
// reads are passed to it as extra arguments (capture).
//
//===----------------------------------------------------------------------===//

#include "MLIRGenInternals.h"

#include "fp/Dialect/FpOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::fp;
using namespace mlir::fp::frontend;

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
  case ModuleInfo::Kind::Orthogonal: {
    // W = base · exp(L − Lᵀ); the product and everything before it is
    // parameter-level, computed once per call.
    Value lower = lowerTriangle(getParam(*mod.weight), l);
    Value skew =
        arith::SubFOp::create(builder, l, lower, transposeMatrix(lower, l));
    Value exp = MatrixExpOp::create(builder, l, skew.getType(), skew);
    Value w = productOfMatrices(getParam(*mod.base), exp, false, false, l);
    return Val::ofTensor(LinearOp::create(builder, l, activationType(x.shape),
                                          x.value, w, Value(), Value()),
                         true, x.shape);
  }
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
