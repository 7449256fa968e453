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
    * `fp-schedule-kernels` records each `fp.kernel`'s schedule, the
      decisions of the code that computes a token, in discardable
      attributes, and places `fp.barrier` ops in the body. On the kernel
      (elements; scratch and state of the arithmetic type, stage buffers of
      the element type): `fp.scratch_size` per token, `fp.state_size` of
      scan state per sample, of which `fp.register_state` a CUDA thread
      keeps in registers, `fp.stage_size` per stage buffer and
      `fp.stage_offset` of the two buffers in scratch, `fp.staged_inputs`
      (`[argument, offset]` pairs) the inputs read from a stage buffer, and
      `fp.carry_size` per chunk where the kernel runs in chunks. On a body
      op: `fp.slot` (its result's offset in scratch), `fp.out` (the kernel
      result it is computed into), `fp.temp` (`[offset, size]` of scratch it
      uses while it runs), `fp.chain` (the element loop it is part of),
      `fp.uniform` (a scalar every thread computes for itself), `fp.staged`
      (a shift read from the stage buffer at that offset), `fp.state_offset`
      and `fp.registers` (a scan's state), `fp.carry_offset` (a scan's carry
      in a chunk's), and `fp.summary` (a dictionary: the op runs in the
      summary pass, with that pass's `slot`, `chain` and `temp`). A
      scheduled kernel is verified: every slot, temporary, staged row and
      state lies within its space.
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

    /// The kernel schedule (see the dialect description).
    static constexpr ::llvm::StringLiteral getScratchSizeAttrName() {
      return ::llvm::StringLiteral("fp.scratch_size");
    }
    static constexpr ::llvm::StringLiteral getStateSizeAttrName() {
      return ::llvm::StringLiteral("fp.state_size");
    }
    static constexpr ::llvm::StringLiteral getRegisterStateAttrName() {
      return ::llvm::StringLiteral("fp.register_state");
    }
    static constexpr ::llvm::StringLiteral getStageSizeAttrName() {
      return ::llvm::StringLiteral("fp.stage_size");
    }
    static constexpr ::llvm::StringLiteral getStageOffsetAttrName() {
      return ::llvm::StringLiteral("fp.stage_offset");
    }
    static constexpr ::llvm::StringLiteral getStagedInputsAttrName() {
      return ::llvm::StringLiteral("fp.staged_inputs");
    }
    static constexpr ::llvm::StringLiteral getCarrySizeAttrName() {
      return ::llvm::StringLiteral("fp.carry_size");
    }
    static constexpr ::llvm::StringLiteral getSlotAttrName() {
      return ::llvm::StringLiteral("fp.slot");
    }
    static constexpr ::llvm::StringLiteral getOutAttrName() {
      return ::llvm::StringLiteral("fp.out");
    }
    static constexpr ::llvm::StringLiteral getTempAttrName() {
      return ::llvm::StringLiteral("fp.temp");
    }
    static constexpr ::llvm::StringLiteral getChainAttrName() {
      return ::llvm::StringLiteral("fp.chain");
    }
    static constexpr ::llvm::StringLiteral getUniformAttrName() {
      return ::llvm::StringLiteral("fp.uniform");
    }
    static constexpr ::llvm::StringLiteral getStagedAttrName() {
      return ::llvm::StringLiteral("fp.staged");
    }
    static constexpr ::llvm::StringLiteral getStateOffsetAttrName() {
      return ::llvm::StringLiteral("fp.state_offset");
    }
    static constexpr ::llvm::StringLiteral getRegistersAttrName() {
      return ::llvm::StringLiteral("fp.registers");
    }
    static constexpr ::llvm::StringLiteral getCarryOffsetAttrName() {
      return ::llvm::StringLiteral("fp.carry_offset");
    }
    static constexpr ::llvm::StringLiteral getSummaryAttrName() {
      return ::llvm::StringLiteral("fp.summary");
    }
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

class FP_Op<string mnemonic, list<Trait> traits = []>
    : Op<FP_Dialect, mnemonic, traits>;

#endif // FP_DIALECT_FPDIALECT_TD
