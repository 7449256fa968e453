//===- FpTypes.td - fp dialect types -----------------------*- tablegen -*-===//
//
// Types of the fp dialect. Tensors of upstream MLIR carry the data; the only
// type of our own is the handle of a solver's state, which the lowered
// fixed-point loop threads through its bookkeeping ops.
//
//===----------------------------------------------------------------------===//

#ifndef FP_DIALECT_FPTYPES_TD
#define FP_DIALECT_FPTYPES_TD

include "fp/Dialect/FpDialect.td"
include "mlir/IR/AttrTypeBase.td"

class FP_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<FP_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def FP_SolverType : FP_Type<"Solver", "solver"> {
  let summary = "the state of one fixed-point solve";
  let description = [{
    A handle to the per-sample state of the solver rule of docs/spec.md §3: the
    residual of the current step ρ, the best residual so far ρ*, the step
    size η and the patience π, with the step counter and the continue rule.
    It lives where the data is (host memory for the host target, device
    memory for CUDA). Created by `fp.solver_init`; read and updated by the
    other `fp.solver_*` ops, which `fp-lower-fixed-point` produces.

    ```mlir
    %s = fp.solver_init %y0 solver <tolerance = 0.1, ...> backward <one_step>
        : tensor<?x?x64xf32>
    ```
  }];
}

#endif // FP_DIALECT_FPTYPES_TD
