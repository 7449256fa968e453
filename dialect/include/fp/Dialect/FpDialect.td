//===- FpDialect.td - The fp dialect definition ------------*- tablegen -*-===//
//
// The `fp` dialect describes Fixed-Point RNN layers at tensor level: the
// fixed-point loop, the diagonal scans, and the per-token primitives that
// channel mixers and FP-Mamba layers are written with.
//
//===----------------------------------------------------------------------===//

#ifndef FP_DIALECT_FPDIALECT_TD
#define FP_DIALECT_FPDIALECT_TD

include "mlir/IR/OpBase.td"

def FP_Dialect : Dialect {
  let name = "fp";
  let cppNamespace = "::mlir::fp";
  let summary = "Fixed-Point RNN layers at tensor level";
  let description = [{
    The `fp` dialect models Fixed-Point RNNs (Movahedi et al., NeurIPS 2025):
    a dense linear RNN obtained as the fixed point of a cheap diagonal one,
    iterating "channel mixer, then diagonal scan" until the output stops
    changing.

    Conventions shared by every op:

    * Activations are ranked tensors whose first two dimensions are the
      *token* dimensions, batch `B` and time `T` (usually dynamic, `?`); the
      remaining dimensions are *feature* dimensions and are static.
      `tensor<?x?x1024xf32>` is one vector of 1024 channels per token.
    * Parameters (`fp.param`) have only feature dimensions, all static.
    * Per-token ops (`fp.linear`, norms, `fp.slice`, `fp.matmul`, ...) act
      independently at every `(b, t)`; only `fp.shift`, `fp.scan`,
      `fp.selective_scan` and `fp.causal_conv` couple time steps.
    * Same-shape elementwise arithmetic uses upstream `arith` and `math` ops
      on tensors; `fp.broadcast` makes broadcasts explicit.
    * `fp.fixed_point` is the loop: its body computes one application of the
      fixed-point map `f`, and the op iterates it under the solver rule of the
      reference implementation. `fp-lower-fixed-point` rewrites it into an
      `scf.while` whose steps are explicit: `fp.solver_init` creates the
      solver's state, `fp.solver_continue` tests the continue rule,
      `fp.solver_relax` measures the residual and relaxes each iterate, and
      `fp.solver_update` does the per-sample bookkeeping.
    * A scalar `arith.constant` written as a DSL literal may carry
      `fp.literal`, the literal as an `f64`: the tensor holds it rounded to the
      model's element type, and code instantiated for a wider type uses the
      value as written.
    * `fp-plan-buffers` records a layer's workspace in discardable
      attributes: `fp.workspace` on the layer function lists its buffers
      (`{elements, per_batch, per_step}`: scalars per token-free element,
      times B and T where flagged); `fp.slots` on an op gives the buffer of
      each result (−1: none; reshapes and loop results alias, parameters
      and the input are not in the workspace), and `fp.iterate_slots` on
      the lowered loop (`scf.while`) the buffers of its iterates, which
      `fp.solver_relax` updates in place. The emitters read them.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
    void registerTypes();

    /// The exact value of a scalar literal (see the dialect description).
    static constexpr ::llvm::StringLiteral getLiteralAttrName() {
      return ::llvm::StringLiteral("fp.literal");
    }
    /// The buffer plan (see the dialect description).
    static constexpr ::llvm::StringLiteral getWorkspaceAttrName() {
      return ::llvm::StringLiteral("fp.workspace");
    }
    static constexpr ::llvm::StringLiteral getSlotsAttrName() {
      return ::llvm::StringLiteral("fp.slots");
    }
    static constexpr ::llvm::StringLiteral getIterateSlotsAttrName() {
      return ::llvm::StringLiteral("fp.iterate_slots");
    }
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

class FP_Op<string mnemonic, list<Trait> traits = []>
    : Op<FP_Dialect, mnemonic, traits>;

#endif // FP_DIALECT_FPDIALECT_TD
