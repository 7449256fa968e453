//===- MLIRGen.cpp - From .fp source to the fp dialect --------------------===//
//
// Part of fpc. Elaboration: every size in a .fp program depends on the
// configuration a mixer or layer is instantiated with, so names, kinds and
// shapes are checked while the program is elaborated into the fp dialect,
// one instance at a time (docs/dsl.md §5). Configuration values are
// evaluated at compile time; `for` and `if` are unrolled and decided then.
//
// The elaborator is split by concern over the files MLIRGenInternals.h
// lists; this one holds the entry points and the models.
//
//===----------------------------------------------------------------------===//

#include "fp/Frontend/MLIRGen.h"

#include "MLIRGenInternals.h"

#include "fp/Dialect/FpDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace mlir::fp;
using namespace mlir::fp::frontend;

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

std::string mlir::fp::frontend::formatShape(ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (auto [i, size] : llvm::enumerate(shape)) {
    if (i)
      text += ", ";
    text += std::to_string(size);
  }
  return text + "]";
}

std::string mlir::fp::frontend::describe(const Val &v) {
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
  switch (options.elementType) {
  case ElementType::F32:
    elementType = Float32Type::get(context);
    break;
  case ElementType::F64:
    elementType = Float64Type::get(context);
    break;
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

llvm::cl::ValuesClass mlir::fp::frontend::getElementTypeOptionValues() {
  return llvm::cl::values(clEnumValN(ElementType::F32, "f32", "32-bit floats"),
                          clEnumValN(ElementType::F64, "f64", "64-bit floats"));
}

void mlir::fp::frontend::registerImportFpTranslation() {
  static llvm::cl::list<std::string> includeDirs(
      "fp-include", llvm::cl::desc("Directory searched by .fp imports"),
      llvm::cl::value_desc("dir"));
  static llvm::cl::opt<ElementType> elementType(
      "fp-element-type", llvm::cl::desc("Element type of .fp tensors"),
      llvm::cl::init(ElementType::F32), getElementTypeOptionValues());
  static TranslateToMLIRRegistration importFp(
      "import-fp", "translate .fp source to the fp dialect",
      [](llvm::SourceMgr &sourceMgr,
         MLIRContext *context) -> OwningOpRef<Operation *> {
        FrontendOptions options;
        options.includeDirs.assign(includeDirs.begin(), includeDirs.end());
        options.elementType = elementType;
        return importFpSource(sourceMgr, context, options);
      },
      registerFrontendDialects);
}
