//===- FpAttrs.td - fp dialect attributes and enums --------*- tablegen -*-===//
//
// Typed attributes of the fp dialect: parameter initialisers, the solver
// settings of `fp.fixed_point` and its backward (adjoint) mode.
//
//===----------------------------------------------------------------------===//

#ifndef FP_DIALECT_FPATTRS_TD
#define FP_DIALECT_FPATTRS_TD

include "fp/Dialect/FpDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

/// A 64-bit float parameter, printed in shortest round-trippable form.
class FP_F64ParamBase : AttrParameter<"::llvm::APFloat", "a 64-bit float"> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
    ::llvm::APFloat value(0.0);
    if ($_parser.parseFloat(::llvm::APFloat::IEEEdouble(), value))
      return ::mlir::failure();
    return value;
  }() }];
  let printer = [{ ::mlir::fp::printShortestFloat($_printer,
                                                  $_self.convertToDouble()) }];
  let comparator = [{ $_lhs.bitwiseIsEqual($_rhs) }];
}

def FP_F64Param : FP_F64ParamBase;

/// An optional 64-bit float parameter, omitted from the output at its default.
class FP_DefaultF64Param<string value> : FP_F64ParamBase {
  let defaultValue = value;
}

/// An optional list of 64-bit floats, printed comma-separated.
def FP_F64ListParam
    : OptionalParameter<"::mlir::DenseF64ArrayAttr", "a list of floats"> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::mlir::DenseF64ArrayAttr> {
    ::llvm::SmallVector<double> values;
    if ($_parser.parseCommaSeparatedList([&]() {
          return $_parser.parseFloat(values.emplace_back());
        }))
      return ::mlir::failure();
    return ::mlir::DenseF64ArrayAttr::get($_parser.getContext(), values);
  }() }];
  let printer = [{
    ::llvm::interleaveComma($_self.asArrayRef(), $_printer, [&](double v) {
      ::mlir::fp::printShortestFloat($_printer, v);
    })
  }];
}

class FP_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<FP_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

//===----------------------------------------------------------------------===//
// Parameter initialisers
//===----------------------------------------------------------------------===//

def FP_InitKind : I32EnumAttr<"InitKind", "parameter initialiser", [
    I32EnumAttrCase<"Zeros", 0, "zeros">,
    I32EnumAttrCase<"Ones", 1, "ones">,
    I32EnumAttrCase<"Constant", 2, "constant">,
    I32EnumAttrCase<"Uniform", 3, "uniform">,
    I32EnumAttrCase<"Normal", 4, "normal">,
    I32EnumAttrCase<"FanInUniform", 5, "fan_in_uniform">,
    I32EnumAttrCase<"S4DReal", 6, "s4d_real">,
    I32EnumAttrCase<"DtBias", 7, "dt_bias">,
    I32EnumAttrCase<"RowNorm", 8, "row_norm">,
    I32EnumAttrCase<"LogUniform", 9, "log_uniform">,
    I32EnumAttrCase<"Eye", 10, "eye">,
    I32EnumAttrCase<"Orthogonal", 11, "orthogonal">
  ]> {
  let cppNamespace = "::mlir::fp";
  let genSpecializedAttr = 0;
}

def FP_InitAttr : FP_Attr<"Init", "init"> {
  let summary = "how a parameter is initialised";
  let description = [{
    The initialiser of an `fp.param`, applied by the runtime when it creates
    a model's parameters (docs/spec.md §1.2, §6). `args` are the kind's numbers;
    `of` names another parameter of the same layer.

    | kind | args | values |
    |---|---|---|
    | `zeros`, `ones` | — | 0, 1 |
    | `constant` | `c` | `c` |
    | `uniform` | `lo, hi` | `U(lo, hi)` |
    | `normal` | `mean, std` | `N(mean, std²)` |
    | `fan_in_uniform` | optional `scale` | `U(±1/√in)·scale`, `in` = last dim (PyTorch Linear) |
    | `s4d_real` | — | `log(n+1)` along the last dim (Mamba's `A_log`) |
    | `dt_bias` | `dt_min, dt_max, floor` | `softplus⁻¹(clamp(exp(U(log dt_min, log dt_max)), floor))` |
    | `log_uniform` | `lo, hi` | `log U(lo, hi)` (Mamba-2's `A_log`), `0 < lo < hi` |
    | `eye` | `c` | `c` on the diagonal of a square matrix, 0 elsewhere |
    | `orthogonal` | — | the `Q` of `QR = W` for a square `W` drawn as `fan_in_uniform`, `R`'s diagonal made positive (PyTorch's `orthogonal` parametrisation of a default `Linear`) |
    | `row_norm` | — | `‖V_i‖₂` of the rows of parameter `of` (weight-norm gain) |

    Example: `#fp.init<fan_in_uniform>`, `#fp.init<dt_bias(1.0e-03, 1.0e-01, 1.0e-04)>`,
    `#fp.init<row_norm of "V">`.
  }];
  let parameters = (ins
    EnumParameter<FP_InitKind>:$kind,
    FP_F64ListParam:$args,
    OptionalParameter<"::mlir::StringAttr">:$of);
  let assemblyFormat = [{
    `<` $kind (`(` $args^ `)`)? (`of` $of^)? `>`
  }];
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Solver settings
//===----------------------------------------------------------------------===//

def FP_SolverAttr : FP_Attr<"Solver", "solver"> {
  let summary = "settings of the fixed-point solver";
  let description = [{
    The solver rule of docs/spec.md §3, per `fp.fixed_point`:

    * `tolerance` τ: stop once the `quantile` of the per-sample best relative
      residuals is below τ;
    * `quantile` q: in training; evaluation always uses q = 1;
    * `max_iter_train`, `max_iter_eval`: iteration caps;
    * `relax_start` η₀, `relax_decay` γ, `relax_patience` P: the relaxation
      `y ← η f(y) + (1 − η) y`, with η decayed ×γ per sample after P steps
      without improvement.

    Example (the reference FP-Mamba defaults):
    `#fp.solver<tolerance = 0.1, quantile = 0.75, max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99, relax_decay = 0.9, relax_patience = 15>`
  }];
  let parameters = (ins
    FP_F64Param:$tolerance,
    FP_F64Param:$quantile,
    "int64_t":$max_iter_train,
    "int64_t":$max_iter_eval,
    FP_F64Param:$relax_start,
    FP_F64Param:$relax_decay,
    "int64_t":$relax_patience);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "double":$tolerance, "double":$quantile,
                     "int64_t":$maxIterTrain, "int64_t":$maxIterEval,
                     "double":$relaxStart, "double":$relaxDecay,
                     "int64_t":$relaxPatience), [{
      return $_get($_ctxt, ::llvm::APFloat(tolerance), ::llvm::APFloat(quantile),
                   maxIterTrain, maxIterEval, ::llvm::APFloat(relaxStart),
                   ::llvm::APFloat(relaxDecay), relaxPatience);
    }]>
  ];
  let extraClassDeclaration = [{
    /// The FP-Mamba defaults of the reference implementation
    /// (docs/spec.md §3.4).
    static SolverAttr getReferenceDefaults(::mlir::MLIRContext *context);
  }];
}

//===----------------------------------------------------------------------===//
// Backward mode
//===----------------------------------------------------------------------===//

def FP_BackwardMode : I32EnumAttr<"BackwardMode",
    "how the gradient of a fixed point is computed", [
    I32EnumAttrCase<"OneStep", 0, "one_step">,
    I32EnumAttrCase<"Truncated", 1, "truncated">,
    I32EnumAttrCase<"Neumann", 2, "neumann">,
    I32EnumAttrCase<"Implicit", 3, "implicit">
  ]> {
  let cppNamespace = "::mlir::fp";
  let genSpecializedAttr = 0;
}

def FP_BackwardAttr : FP_Attr<"Backward", "backward"> {
  let summary = "adjoint mode of a fixed-point loop";
  let description = [{
    * `one_step`: the reference's gradient, the VJP of one application of
      the body at the fixed point `y*`, with `y*` held constant
      (docs/spec.md §4);
    * `truncated(k)`: backpropagate through `k` chained applications;
    * `neumann(k)`: `k` terms of the Neumann series of `(I − J_yᵀ)⁻¹`;
    * `implicit(tol)`: solve the adjoint fixed point `g = ḡ + J_yᵀ g` to
      relative tolerance `tol`.

    Examples: `#fp.backward<one_step>`, `#fp.backward<truncated, steps = 4>`,
    `#fp.backward<implicit, tolerance = 1.0e-06>`.
  }];
  let parameters = (ins
    EnumParameter<FP_BackwardMode>:$mode,
    DefaultValuedParameter<"int64_t", "0">:$steps,
    FP_DefaultF64Param<"::llvm::APFloat(0.0)">:$tolerance);
  let assemblyFormat = [{
    `<` $mode (`,` struct($steps, $tolerance)^)? `>`
  }];
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "BackwardMode":$mode, CArg<"int64_t", "0">:$steps,
                     CArg<"double", "0.0">:$tolerance), [{
      return $_get($_ctxt, mode, steps, ::llvm::APFloat(tolerance));
    }]>
  ];
}

#endif // FP_DIALECT_FPATTRS_TD
