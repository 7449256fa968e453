//===- Parameters.cpp - Parameter declarations ----------------------------===//
//
// Part of fpc. `param` declarations: a tensor and its initialiser, or a
// parameter module (linear, wn_linear, layer_norm, rms_norm, causal_conv,
// orthogonal or a mixer) whose tensors are named after it. Each name is claimed
// once in a layer instance, its maps and its mixers.
//
//===----------------------------------------------------------------------===//

#include "MLIRGenInternals.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fp;
using namespace mlir::fp::frontend;

static bool isInitialiser(StringRef name) {
  return llvm::is_contained({"zeros", "ones", "constant", "uniform", "normal",
                             "fan_in_uniform", "s4d_real", "dt_bias",
                             "log_uniform", "eye", "orthogonal"},
                            name);
}

std::optional<InitAttr> Elaborator::evalInit(const Expr &expr) {
  if (expr.kind != ExprKind::Name && expr.kind != ExprKind::Call) {
    emitError(expr.loc) << "expected an initialiser (zeros, ones, "
                           "constant(c), uniform(lo, hi), normal(mean, std), "
                           "fan_in_uniform, s4d_real, dt_bias(min, max, "
                           "floor), log_uniform(lo, hi), eye(c), "
                           "orthogonal)";
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
          .Case("log_uniform", InitKind::LogUniform)
          .Case("eye", InitKind::Eye)
          .Case("orthogonal", InitKind::Orthogonal)
          .Default(std::nullopt);
  if (!kind) {
    emitError(expr.loc) << "unknown initialiser '" << expr.name
                        << "'; expected zeros, ones, constant, uniform, "
                           "normal, fan_in_uniform, s4d_real, dt_bias, "
                           "log_uniform, eye or orthogonal";
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
    if (!init)
      return;
    InitKind kind = init->getKind();
    if ((kind == InitKind::Eye || kind == InitKind::Orthogonal) &&
        (shape.size() != 2 || shape[0] != shape[1])) {
      emitError(stmt.paramInit->loc)
          << "initialiser '" << stringifyInitKind(kind)
          << "' needs a square matrix, got shape " << formatShape(shape);
      return;
    }
    if (!claim(fullName))
      return;
    Val v;
    v.kind = Val::Kind::Param;
    v.param = makeSpec(fullName, shape, *init, stmt.decay == DecayFlag::Decay);
    v.param->frozen = stmt.frozen;
    define(s, stmt.name, stmt.nameLoc, std::move(v), Binding::Role::Param);
    return;
  }
  if (stmt.frozen) {
    emitError(stmt.frozenLoc) << "'frozen' applies to tensor parameters "
                                 "('param name: [shape] = init frozen')";
    return;
  }

  const Expr &type = *stmt.paramComposite;
  if (type.kind != ExprKind::Name && type.kind != ExprKind::Call) {
    emitError(type.loc) << "expected a parameter type: '[shape] = init', "
                           "linear(in, out), wn_linear(in, out), "
                           "layer_norm(d), rms_norm(d), causal_conv(d, k), "
                           "orthogonal(n) or a mixer";
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
  } else if (type.name == "orthogonal" && !s.lookup(type.name)) {
    // PyTorch's orthogonal parametrisation of a square Linear: W = base ·
    // exp(L − Lᵀ), L the lower triangle of `original`.
    SmallVector<const Expr *> args;
    if (type.kind != ExprKind::Call) {
      emitError(type.loc) << "'orthogonal' needs its size: orthogonal(n)";
      return;
    }
    if (failed(bindArgs(type, {"n"}, 1, args)))
      return;
    std::optional<int64_t> n = evalSize(*args[0], "a matrix size");
    if (!n || !checkShape({*n, *n}, type.loc))
      return;
    if (stmt.decay == DecayFlag::Decay) {
      emitError(stmt.loc) << "an orthogonal map's parameters are not in the "
                             "weight-decay group";
      return;
    }
    mod->kind = ModuleInfo::Kind::Orthogonal;
    mod->in = mod->out = *n;
    std::string original = fullName + ".original", base = fullName + ".base";
    if (!claim(original) || !claim(base))
      return;
    mod->weight = makeSpec(original, {*n, *n},
                           InitAttr::get(builder.getContext(), InitKind::Eye,
                                         builder.getDenseF64ArrayAttr({-1.0}),
                                         StringAttr()),
                           false);
    mod->base =
        makeSpec(base, {*n, *n},
                 InitAttr::get(builder.getContext(), InitKind::Orthogonal,
                               DenseF64ArrayAttr(), StringAttr()),
                 false);
    mod->base->frozen = true;
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
                             "layer_norm, rms_norm, causal_conv, orthogonal "
                             "or a mixer; got "
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
