//===- FpInterfaces.td - fp dialect op interfaces ----------*- tablegen -*-===//
//
// The differentiation interface: each differentiable op gives its
// vector-Jacobian product (VJP) rule, which fp-derive-backward composes into
// a layer's backward function.
//
//===----------------------------------------------------------------------===//

#ifndef FP_DIALECT_FPINTERFACES_TD
#define FP_DIALECT_FPINTERFACES_TD

include "mlir/IR/OpBase.td"

def FP_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::mlir::fp";
  let description = [{
    An op with a vector-Jacobian product rule. Reverse-mode differentiation
    visits ops in reverse order; for each it calls `buildVJP` with one
    cotangent per result (null where the result has no incoming gradient)
    and receives one cotangent per operand (null where the operand gets no
    gradient: non-float operands, or operands the op is constant in).

    The rule builds its ops with `builder` at the current insertion point and
    gives them locations fused from the op's own location, so errors in the
    backward point at the forward source. It may read the op's operands and
    results (the forward values are available in the backward).
  }];

  let methods = [
    InterfaceMethod<[{
        Whether the op's result depends differentiably on operand `index`.
      }],
      "bool", "isDifferentiableOperand", (ins "unsigned":$index), [{}],
      /*defaultImplementation=*/[{
        ::mlir::Type type = $_op->getOperand(index).getType();
        return ::mlir::isa<::mlir::FloatType>(
            ::mlir::getElementTypeOrSelf(type));
      }]>,
    InterfaceMethod<[{
        Build the VJP: given `resultCotangents` (one per result, null when a
        result receives no gradient), append one cotangent per operand to
        `operandCotangents` (null for operands that receive none).
      }],
      "::mlir::LogicalResult", "buildVJP",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultCotangents,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandCotangents)>
  ];
}

#endif // FP_DIALECT_FPINTERFACES_TD
