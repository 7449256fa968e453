//===- FpOps.td - fp dialect operations --------------------*- tablegen -*-===//
//
// Operations of the fp dialect: the fixed-point loop, parameters, the
// time-coupling ops (shift, scans, causal convolution) and the per-token
// primitives channel mixers and FP-RNN layers are written with.
//
//===----------------------------------------------------------------------===//

#ifndef FP_DIALECT_FPOPS_TD
#define FP_DIALECT_FPOPS_TD

include "fp/Dialect/FpDialect.td"
include "fp/Dialect/FpAttrs.td"
include "fp/Dialect/FpInterfaces.td"
include "fp/Dialect/FpTypes.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/Traits.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/LoopLikeInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def FP_FloatTensor : RankedTensorOf<[AnyFloat]>;

class FP_FloatTensorOfRank<list<int> ranks>
    : RankedTensorOf<[AnyFloat], [HasAnyRankOfPred<ranks>]>;

def FP_Vector : FP_FloatTensorOfRank<[1]>;
def FP_Matrix : FP_FloatTensorOfRank<[2]>;

/// A statically shaped float matrix (a parameter or its gradient).
def FP_StaticMatrix : Type<
    And<[FP_Matrix.predicate,
         CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).hasStaticShape()">]>,
    "statically shaped float matrix", "::mlir::RankedTensorType">;

/// A ranked float tensor with at least one dimension.
def FP_FeatureTensor : Type<
    And<[FP_FloatTensor.predicate,
         CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).getRank() >= 1">]>,
    "ranked float tensor of rank >= 1", "::mlir::RankedTensorType">;

/// An activation: (batch, time, features...).
def FP_TokenTensor : Type<
    And<[FP_FloatTensor.predicate,
         CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).getRank() >= 2">]>,
    "ranked float tensor of rank >= 2 (batch, time, features...)",
    "::mlir::RankedTensorType">;

/// An activation with exactly one feature dimension: (batch, time, channels).
def FP_ChannelTensor : FP_FloatTensorOfRank<[3]>;

def FP_StaticFloatTensor : Type<
    And<[FP_FloatTensor.predicate,
         CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).hasStaticShape()">]>,
    "statically shaped float tensor", "::mlir::RankedTensorType">;

def FP_IterationCounts : 1DTensorOf<[I32]>;

//===----------------------------------------------------------------------===//
// Fixed-point loop
//===----------------------------------------------------------------------===//

def FP_FixedPointOp : FP_Op<"fixed_point", [
    AutomaticAllocationScope,
    RecursiveMemoryEffects,
    SingleBlockImplicitTerminator<"::mlir::fp::YieldOp">,
    DeclareOpInterfaceMethods<RegionBranchOpInterface,
        ["getEntrySuccessorOperands"]>,
    DeclareOpInterfaceMethods<LoopLikeOpInterface,
        ["getRegionIterArgs", "getYieldedValuesMutable", "getLoopResults"]>
    ]> {
  let summary = "iterate a map to its fixed point";
  let description = [{
    Computes a fixed point `y* = f(y*)` of the map `f` given by the body, by
    relaxed iteration from the initial values, under the solver rule of the
    reference implementation (docs/spec.md §3). The body receives the current
    iterates as block arguments and yields `f` of them; values defined above
    the op are captured and are constant across iterations.

    Each iterate is an activation whose dimension 0 is the batch; the solver
    is per sample. One step, for every sample `b`:

    ```
    f_y = body(y)
    ρ_b = max over tokens t of ‖y[b,t] − f_y[b,t]‖∞ / (‖f_y[b,t]‖∞ + 1e-8)
    y   ← η_b·f_y + (1 − η_b)·y
    ```

    with ρ the maximum over all iterates. The solver keeps the best residual
    so far per sample, decays η_b by `relax_decay` after `relax_patience`
    steps without improvement, and continues while the `quantile` (1 in
    evaluation) of the best residuals is at least `tolerance`, some η_b is at
    least 1e-3, and the step count is below the cap (`max_iter_train` or
    `max_iter_eval`). At least one step is taken.

    Results: the relaxed iterates at exit (the fixed point; not `f` of it)
    and, per sample, the number of solver steps plus one, counting the one
    differentiable application of the body that the layer makes at the fixed
    point (docs/spec.md §3.6). `docs/dialect.md` describes the semantics in
    full.

    The `backward` attribute selects how `fp-derive-backward` differentiates
    through the fixed point.

    ```mlir
    %y, %iters = fp.fixed_point (%it = %zero) : tensor<?x?x64xf32>
        solver <tolerance = 0.1, quantile = 0.75,
                max_iter_train = 100, max_iter_eval = 1000,
                            relax_start = 0.99, relax_decay = 0.9, relax_patience = 15>
        backward <one_step> {
      %s = fp.shift %it by 1 : tensor<?x?x64xf32>
      ...
      fp.yield %next : tensor<?x?x64xf32>
    }
    ```
  }];

  let arguments = (ins Variadic<FP_TokenTensor>:$inits,
                       FP_SolverAttr:$solver,
                       FP_BackwardAttr:$backward);
  let results = (outs Variadic<FP_TokenTensor>:$fixed_points,
                      FP_IterationCounts:$iterations);
  let regions = (region SizedRegion<1>:$body);

  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::mlir::ValueRange":$inits,
                   "::mlir::fp::SolverAttr":$solver,
                   "::mlir::fp::BackwardAttr":$backward,
                   CArg<"::llvm::function_ref<void(::mlir::OpBuilder &, "
                        "::mlir::Location, ::mlir::ValueRange)>",
                        "nullptr">:$bodyBuilder)>
  ];

  let extraClassDeclaration = [{
    /// The iteration-count result type for iterates `inits`:
    /// `tensor<Bxi32>` with `B` the batch size of the first iterate.
    static ::mlir::RankedTensorType
    getIterationCountsType(::mlir::MLIRContext *context,
                           ::mlir::TypeRange iterateTypes);

    ::mlir::Block *getBodyBlock() { return &getBody().front(); }
    YieldOp getYield();
    unsigned getNumIterates() { return getInits().size(); }
  }];
}

def FP_YieldOp : FP_Op<"yield", [
    Pure, ReturnLike, Terminator,
    ParentOneOf<["FixedPointOp", "KernelOp"]>]> {
  let summary = "yield the next iterates of a fixed-point body, or the "
                "results of a kernel";
  let description = [{
    Terminates the body of `fp.fixed_point`, yielding `f(y)` for each
    iterate `y`, in the order of the iteration arguments; or the body of
    `fp.kernel`, yielding its results in order.

    ```mlir
    fp.yield %next : tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Variadic<FP_TokenTensor>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins), [{ /* nothing to build */ }]>];
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

def FP_KernelOp : FP_Op<"kernel", [
    IsolatedFromAbove, RecursiveMemoryEffects,
    SingleBlockImplicitTerminator<"::mlir::fp::YieldOp">]> {
  let summary = "a group of per-token operations run as one kernel";
  let description = [{
    Marks operations that codegen runs as one kernel: for every token
    `(b, t)` the body computes its results at that token from the inputs at
    that token (per-token inputs, whose leading dimensions are batch and
    time) and from uniform inputs (parameters and constants, without batch
    or time dimensions), so that intermediate values never leave the
    kernel's scratch memory. Produced by `fp-fuse-mix-scan`; its meaning is
    that of its body inlined, with the block arguments bound to the inputs.

    A body may contain forward `fp.scan` and `fp.selective_scan` ops: their
    recurrence runs along time inside the kernel, so that the mixer that
    produces a scan's inputs and the epilogue that consumes its outputs are
    fused with it. Such a kernel runs token by token in time order within
    each sample; one without a scan runs its tokens in any order.

    A body may read an input at another token of the same sample with
    `fp.shift` of that input (a block argument): the token at `t` reads row
    `t − offset` of the input, or zeros outside the sample, with no shifted
    copy of the input in memory.

    The op is isolated from above: everything the body reads is an input,
    or a constant built in the body (`arith.constant`, and `tensor.splat`
    of a constant scalar to a per-token shape whose extents are
    `tensor.dim` of a per-token input).

    ```mlir
    %r = fp.kernel (%a = %x, %g = %gain)
        : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32> {
      %s = fp.silu %a : tensor<?x?x64xf32>
      %n = fp.rms_norm %s, %g eps 1.0e-05 : tensor<?x?x64xf32>, tensor<64xf32>
      fp.yield %n : tensor<?x?x64xf32>
    }
    ```
  }];

  let arguments = (ins Variadic<FP_FloatTensor>:$inputs);
  let results = (outs Variadic<FP_TokenTensor>:$results);
  let regions = (region SizedRegion<1>:$body);

  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;

  let extraClassDeclaration = [{
    ::mlir::Block *getBodyBlock() { return &getBody().front(); }
    YieldOp getYield();
    /// Whether the body runs a recurrence along time (an fp.scan or
    /// fp.selective_scan).
    bool isSequential();
    /// Verifies the schedule of fp-schedule-kernels, where it has one.
    ::mlir::LogicalResult verifySchedule();
  }];
}

def FP_BarrierOp : FP_Op<"barrier", [HasParent<"KernelOp">]> {
  let summary = "a synchronisation of the team that computes a kernel's token";
  let description = [{
    Placed in an `fp.kernel` body by `fp-schedule-kernels`: the threads that
    compute a token together (a CUDA block, a host thread team) wait for
    each other here, so that what any of them wrote before is what every one
    of them reads after. The schedule places one where an op may touch an
    element that another thread touched since the last barrier, one of the
    two a write. `call` marks a barrier of the token's full computation,
    `summary` one of a chunked kernel's summary pass, which runs only the
    ops the scans read; a barrier may be both. One right before the
    terminator orders the body against the copies of results not computed
    in place.

    ```mlir
    %a = arith.mulf %x, %y {fp.slot = 0 : i64} : tensor<?x?x64xf32>
    fp.barrier call summary
    %b = fp.rms_norm %a, %g eps 1.0e-05 {fp.slot = 64 : i64}
        : tensor<?x?x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins UnitAttr:$call, UnitAttr:$summary);
  let assemblyFormat = "(`call` $call^)? (`summary` $summary^)? attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// The lowered solver
//===----------------------------------------------------------------------===//

def FP_SolverInitOp : FP_Op<"solver_init", [
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "create the state of a fixed-point solve";
  let description = [{
    Allocates and initialises the per-sample state of the solver rule of
    docs/spec.md §3 for a batch of iterates like `batch_like` (only its batch
    size is read): ρ* = +∞, η = `relax_start`, π = `relax_patience`, no steps
    taken. The settings are those of the `fp.fixed_point` it was lowered
    from; runtime overrides (training or evaluation, a different cap or
    tolerance, a fixed step count) apply when the state is created.
    `backward` keeps that loop's adjoint mode for the library's manifest.

    ```mlir
    %s = fp.solver_init %y0 solver <tolerance = 0.1, quantile = 0.75,
        max_iter_train = 100, max_iter_eval = 1000, relax_start = 0.99,
        relax_decay = 0.9, relax_patience = 15> backward <one_step>
        : tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins FP_TokenTensor:$batch_like, FP_SolverAttr:$solver,
                       FP_BackwardAttr:$backward);
  let results = (outs Res<FP_SolverType, "", [MemAlloc, MemWrite]>:$state);
  let assemblyFormat = [{
    $batch_like `solver` $solver `backward` $backward attr-dict `:`
    type($batch_like)
  }];
}

def FP_SolverContinueOp : FP_Op<"solver_continue"> {
  let summary = "the continue rule of a fixed-point solve";
  let description = [{
    True before the first step; afterwards true while the quantile (1 in
    evaluation) of the per-sample best residuals ρ* is at least the
    tolerance, some step size η is at least 1e-3, and fewer steps than the
    cap were taken (docs/spec.md §3.3). The test runs where the state lives: on
    the CUDA target the device evaluates it, and the host only learns its value
    without waiting for each step (a lowered loop may queue steps ahead;
    steps queued after the device decided to stop change nothing).

    ```mlir
    %go = fp.solver_continue %s
    ```
  }];
  let arguments = (ins Arg<FP_SolverType, "", [MemRead]>:$state);
  let results = (outs I1:$result);
  let assemblyFormat = "$state attr-dict";
}

def FP_SolverRelaxOp : FP_Op<"solver_relax", [
    AllTypesMatch<["current", "next", "result"]>]> {
  let summary = "residual and relaxation of one iterate";
  let description = [{
    For the current iterate `y` and the body's value `f(y)`, per sample `b`:
    accumulates the residual
    `ρ_b ← max(ρ_b, max over tokens t of ‖y[b,t] − f(y)[b,t]‖∞ /
    (‖f(y)[b,t]‖∞ + 1e-8))` into the state and returns the relaxed iterate
    `η_b·f(y) + (1 − η_b)·y`. Once the solve has stopped, it returns `y`
    unchanged. A loop with several iterates relaxes each with the same η;
    ρ is their maximum. The buffer planner runs it in place.

    ```mlir
    %y1 = fp.solver_relax %s, %y, %fy : tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Arg<FP_SolverType, "", [MemRead, MemWrite]>:$state,
                       FP_TokenTensor:$current, FP_TokenTensor:$next);
  let results = (outs FP_TokenTensor:$result);
  let assemblyFormat = [{
    $state `,` $current `,` $next attr-dict `:` type($result)
  }];
}

def FP_SolverUpdateOp : FP_Op<"solver_update"> {
  let summary = "the bookkeeping that ends one solver step";
  let description = [{
    Per sample: ρ* ← min(ρ*, ρ); the patience π resets on improvement and
    counts down otherwise; when it reaches 0, η ← `relax_decay`·η and π
    resets (docs/spec.md §3.2). Then the step counter advances, ρ is cleared for
    the next step, and the continue rule is evaluated for `fp.solver_continue`.

    ```mlir
    fp.solver_update %s
    ```
  }];
  let arguments = (ins Arg<FP_SolverType, "", [MemRead, MemWrite]>:$state);
  let assemblyFormat = "$state attr-dict";
}

def FP_SolverIterationsOp : FP_Op<"solver_iterations"> {
  let summary = "per-sample iteration counts of a finished solve";
  let description = [{
    The steps taken plus one, for every sample (docs/spec.md §3.6: the one
    differentiable application of the body at the fixed point counts); the
    `iterations` result of the `fp.fixed_point` the solve was lowered from.

    ```mlir
    %iters = fp.solver_iterations %s : tensor<?xi32>
    ```
  }];
  let arguments = (ins Arg<FP_SolverType, "", [MemRead]>:$state);
  let results = (outs FP_IterationCounts:$iterations);
  let assemblyFormat = "$state attr-dict `:` type($iterations)";
}

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

def FP_ParamOp : FP_Op<"param", [Pure]> {
  let summary = "a parameter of the enclosing layer";
  let description = [{
    The value of the layer parameter `name`: a statically shaped tensor the
    runtime creates with initialiser `init`, passes to every call, and
    updates during training. `decay` marks parameters in the weight-decay
    group of the optimiser. A `frozen` parameter is not trained: the runtime
    holds it as a buffer (saved, loaded and broadcast with the parameters,
    never given to the optimiser) and the derived backward computes no
    gradient for it, as PyTorch's `base` of an orthogonal parametrisation.
    Parameters are constant within a call.

    ```mlir
    %w = fp.param "in_proj" init <fan_in_uniform> decay : tensor<256x128xf32>
    %a = fp.param "A_log" init <s4d_real> : tensor<256x16xf32>
    %q = fp.param "weight.base" init <orthogonal> frozen : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, FP_InitAttr:$init,
                       UnitAttr:$decay, UnitAttr:$frozen);
  let results = (outs FP_StaticFloatTensor:$result);
  let assemblyFormat = [{
    $name `init` $init (`decay` $decay^)? (`frozen` $frozen^)? attr-dict `:`
    type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear maps and weight normalisation
//===----------------------------------------------------------------------===//

def FP_WeightNormOp : FP_Op<"weight_norm", [
    Pure, DeclareOpInterfaceMethods<FP_DifferentiableOpInterface>, AllTypesMatch<["weight", "result"]>]> {
  let summary = "the effective weight of a weight-normalised linear map";
  let description = [{
    `result[i, :] = gain[i] · weight[i, :] / ‖weight[i, :]‖₂`: each output row
    rescaled to norm `gain[i]` (no epsilon, as PyTorch's `weight_norm`).

    ```mlir
    %w = fp.weight_norm %v, %g : tensor<32x256xf32>, tensor<32xf32>
    ```
  }];
  let arguments = (ins FP_Matrix:$weight, FP_Vector:$gain);
  let results = (outs FP_Matrix:$result);
  let assemblyFormat = [{
    $weight `,` $gain attr-dict `:` type($weight) `,` type($gain)
  }];
  let hasVerifier = 1;
}

def FP_LinearOp : FP_Op<"linear", [
    Pure, AttrSizedOperandSegments, DeclareOpInterfaceMethods<FP_DifferentiableOpInterface>]> {
  let summary = "per-token linear map, optionally weight-normalised";
  let description = [{
    `result[..., o] = Σ_i W[o, i] · input[..., i] + bias[o]` over the last
    dimension, with `weight` of shape `out × in` (PyTorch's layout). With
    `gain`, the map is weight-normalised: `W = fp.weight_norm(weight, gain)`.

    ```mlir
    %xz = fp.linear %u, %w : (tensor<?x?x128xf32>, tensor<512x128xf32>)
                              -> tensor<?x?x512xf32>
    %a = fp.linear %p, %v gain %g bias %b
        : (tensor<?x?x512xf32>, tensor<2x512xf32>, tensor<2xf32>,
           tensor<2xf32>) -> tensor<?x?x2xf32>
    ```
  }];
  let arguments = (ins FP_FeatureTensor:$input, FP_Matrix:$weight,
                       Optional<FP_Vector>:$gain, Optional<FP_Vector>:$bias);
  let results = (outs FP_FeatureTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`gain` $gain^)? (`bias` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Time-coupling ops
//===----------------------------------------------------------------------===//

def FP_ShiftOp : FP_Op<"shift", [
    Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<FP_DifferentiableOpInterface>]> {
  let summary = "shift an activation along time, filling with zeros";
  let description = [{
    `result[b, t] = input[b, t − offset]` where `0 ≤ t − offset < T`, and 0
    elsewhere. `offset = 1` is the causal shift `ȳ` of the reference
    (`ȳ_0 = 0`); `offset = -1` is its adjoint.

    ```mlir
    %ybar = fp.shift %y by 1 : tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins FP_TokenTensor:$input, I64Attr:$offset);
  let results = (outs FP_TokenTensor:$result);
  let assemblyFormat = "$input `by` $offset attr-dict `:` type($input)";
}

def FP_ScanOp : FP_Op<"scan", [
    Pure, DeclareOpInterfaceMethods<FP_DifferentiableOpInterface>, AllTypesMatch<["coeff", "input", "result"]>]> {
  let summary = "diagonal first-order linear recurrence over time";
  let description = [{
    `h_t = coeff_t ⊙ h_{t−1} + input_t` along dimension 1 (time), from
    `h_{−1} = 0`, independently for every batch entry and feature element
    (channels, and a state dimension when there is one). With `reverse`,
    the recurrence runs backward in time: `h_t = coeff_t ⊙ h_{t+1} + input_t`
    from `h_T = 0` — the adjoint of the forward scan is a reverse scan with
    the coefficients shifted by −1.

    ```mlir
    %h = fp.scan %lambda, %u : tensor<?x?x256xf32>
    %g = fp.scan reverse %c, %dh : tensor<?x?x256xf32>
    ```
  }];
  let arguments = (ins FP_TokenTensor:$coeff, FP_TokenTensor:$input,
                       UnitAttr:$reverse);
  let results = (outs FP_TokenTensor:$result);
  let assemblyFormat = [{
    (`reverse` $reverse^)? $coeff `,` $input attr-dict `:` type($result)
  }];
}

def FP_SelectiveScanOp : FP_Op<"selective_scan", [
    Pure, DeclareOpInterfaceMethods<FP_DifferentiableOpInterface>, AllTypesMatch<["u", "delta", "result"]>,
    AllTypesMatch<["B", "C"]>]> {
  let summary = "Mamba-1 selective scan with state expansion";
  let description = [{
    The discretised state-space recurrence of Mamba-1 (docs/spec.md §1.4), with
    state `S_t ∈ R^{d×N}` from `S_{−1} = 0`, for every batch entry:

    ```
    S_t[i, n] = exp(delta_t[i] · A[i, n]) · S_{t−1}[i, n]
              + delta_t[i] · B_t[n] · u_t[i]
    result_t[i] = Σ_n C_t[n] · S_t[i, n] + D[i] · u_t[i]
    ```

    `delta` is the step size after its softplus (`Δ > 0`); `A` is the
    (negative) state matrix, `B` and `C` are shared across the `d` channels,
    and the optional `skip` term `D` multiplies the scan input.

    ```mlir
    %s = fp.selective_scan %u, %dt, %A, %B, %C skip %D
        : tensor<?x?x64xf32>, tensor<64x16xf32>, tensor<?x?x16xf32>,
          tensor<64xf32>
    ```
  }];
  let arguments = (ins FP_ChannelTensor:$u, FP_ChannelTensor:$delta,
                       FP_Matrix:$A, FP_ChannelTensor:$B, FP_ChannelTensor:$C,
                       Optional<FP_Vector>:$D);
  let results = (outs FP_ChannelTensor:$result);
  let assemblyFormat = [{
    $u `,` $delta `,` $A `,` $B `,` $C (`skip` $D^)? attr-dict `:`
    type($u) `,` type($A) `,` type($B) (`,` type($D)^)?
  }];
  let hasVerifier = 1;
}

def FP_CausalConvOp : FP_Op<"causal_conv", [
    Pure, DeclareOpInterfaceMethods<FP_DifferentiableOpInterface>, AllTypesMatch<["input", "result"]>]> {
  let summary = "depthwise causal convolution over time";
  let description = [{
    `result[b, t, c] = bias[c] + Σ_{k<K} weight[c, k] · input[b, t−K+1+k, c]`
    with zero left padding: `weight[:, K−1]` multiplies the current token.

    ```mlir
    %x = fp.causal_conv %xr, %w bias %b
        : tensor<?x?x256xf32>, tensor<256x4xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins FP_ChannelTensor:$input, FP_Matrix:$weight,
                       Optional<FP_Vector>:$bias);
  let results = (outs FP_ChannelTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? attr-dict `:`
    type($input) `,` type($weight) (`,` type($bias)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Chunked forms of the time-coupling ops
//===----------------------------------------------------------------------===//

// A chunk of a sequence continues the tokens before it: each op that couples
// tokens reads a `state` those tokens left and returns the state `next` the
// chunk leaves for the one after it. fp-derive-chunked rewrites a layer's
// time-coupling ops into these forms (docs/streaming.md); with a zero state,
// each computes what its plain form does. The states are per sample: their
// dimension 0 is the batch.

def FP_ChunkShiftOp : FP_Op<"chunk_shift", [
    Pure, AllTypesMatch<["input", "result"]>, AllTypesMatch<["state", "next"]>]> {
  let summary = "fp.shift of a chunk, continuing its sequence";
  let description = [{
    `result[b, t] = input[b, t − offset]` for `t ≥ offset`, and
    `state[b, t]` for `t < offset`: `state` holds the `offset` rows before
    the chunk, oldest first. `next` holds the last `offset` rows of the
    sequence `state` then `input`, the state of the next chunk.

    ```mlir
    %ybar, %next = fp.chunk_shift %y by 1 from %s
        : tensor<?x?x64xf32>, tensor<?x1x64xf32>
    ```
  }];
  let arguments = (ins FP_TokenTensor:$input, FP_TokenTensor:$state,
                       I64Attr:$offset);
  let results = (outs FP_TokenTensor:$result, FP_TokenTensor:$next);
  let assemblyFormat = [{
    $input `by` $offset `from` $state attr-dict `:` type($input) `,`
    type($state)
  }];
  let hasVerifier = 1;
}

def FP_ChunkScanOp : FP_Op<"chunk_scan", [
    Pure, AllTypesMatch<["coeff", "input", "result"]>,
    AllTypesMatch<["state", "next"]>]> {
  let summary = "fp.scan of a chunk, from a carried state";
  let description = [{
    `h_t = coeff_t ⊙ h_{t−1} + input_t` forward in time from
    `h_{−1} = state[:, 0]`; `next[:, 0] = h_{T−1}`. The state is one token's
    row: `(batch, 1, features...)`.

    ```mlir
    %h, %next = fp.chunk_scan %lambda, %u from %s
        : tensor<?x?x256xf32>, tensor<?x1x256xf32>
    ```
  }];
  let arguments = (ins FP_TokenTensor:$coeff, FP_TokenTensor:$input,
                       FP_TokenTensor:$state);
  let results = (outs FP_TokenTensor:$result, FP_TokenTensor:$next);
  let assemblyFormat = [{
    $coeff `,` $input `from` $state attr-dict `:` type($result) `,`
    type($state)
  }];
  let hasVerifier = 1;
}

def FP_ChunkSelectiveScanOp : FP_Op<"chunk_selective_scan", [
    Pure, AllTypesMatch<["u", "delta", "result"]>, AllTypesMatch<["B", "C"]>,
    AllTypesMatch<["state", "next"]>]> {
  let summary = "fp.selective_scan of a chunk, from a carried state";
  let description = [{
    fp.selective_scan from `S_{−1} = state` (`(batch, d, N)`, the state
    matrix of every sample) rather than zero; `next` is `S_{T−1}`.

    ```mlir
    %s, %next = fp.chunk_selective_scan %u, %dt, %A, %B, %C from %h skip %D
        : tensor<?x?x64xf32>, tensor<64x16xf32>, tensor<?x?x16xf32>,
          tensor<?x64x16xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins FP_ChannelTensor:$u, FP_ChannelTensor:$delta,
                       FP_Matrix:$A, FP_ChannelTensor:$B, FP_ChannelTensor:$C,
                       FP_ChannelTensor:$state, Optional<FP_Vector>:$D);
  let results = (outs FP_ChannelTensor:$result, FP_ChannelTensor:$next);
  let assemblyFormat = [{
    $u `,` $delta `,` $A `,` $B `,` $C `from` $state (`skip` $D^)? attr-dict
    `:` type($u) `,` type($A) `,` type($B) `,` type($state) (`,` type($D)^)?
  }];
  let hasVerifier = 1;
}

def FP_ChunkCausalConvOp : FP_Op<"chunk_causal_conv", [
    Pure, AllTypesMatch<["input", "result"]>, AllTypesMatch<["state", "next"]>]> {
  let summary = "fp.causal_conv of a chunk, continuing its sequence";
  let description = [{
    fp.causal_conv of the sequence `state` then `input`, at the chunk's
    tokens: `state` holds the `K − 1` input rows before the chunk, oldest
    first, where fp.causal_conv pads with zeros; `next` holds the last
    `K − 1` rows of that sequence.

    ```mlir
    %x, %next = fp.chunk_causal_conv %xr, %w from %tail bias %b
        : tensor<?x?x256xf32>, tensor<256x4xf32>, tensor<?x3x256xf32>,
          tensor<256xf32>
    ```
  }];
  let arguments = (ins FP_ChannelTensor:$input, FP_Matrix:$weight,
                       FP_ChannelTensor:$state, Optional<FP_Vector>:$bias);
  let results = (outs FP_ChannelTensor:$result, FP_ChannelTensor:$next);
  let assemblyFormat = [{
    $input `,` $weight `from` $state (`bias` $bias^)? attr-dict `:`
    type($input) `,` type($weight) `,` type($state) (`,` type($bias)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalisations
//===----------------------------------------------------------------------===//

def FP_L2NormOp : FP_Op<"l2norm", [
    Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<FP_DifferentiableOpInterface>]> {
  let summary = "L2-normalise along the last dimension";
  let description = [{
    `result = input / max(‖input‖₂, eps)` over the last dimension (PyTorch's
    `F.normalize`: a clamp, not `+ eps`).

    ```mlir
    %b = fp.l2norm %braw eps 1.000000e-05 : tensor<?x?x16xf32>
    ```
  }];
  let arguments = (ins FP_FeatureTensor:$input, F64Attr:$eps);
  let results = (outs FP_FeatureTensor:$result);
  let assemblyFormat = "$input `eps` $eps attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def FP_LayerNormOp : FP_Op<"layer_norm", [
    Pure, DeclareOpInterfaceMethods<FP_DifferentiableOpInterface>, AllTypesMatch<["input", "result"]>,
    AllTypesMatch<["weight", "bias"]>]> {
  let summary = "LayerNorm over the last dimension";
  let description = [{
    `result = (input − mean) / sqrt(var + eps) · weight + bias` over the last
    dimension, with the biased variance.

    ```mlir
    %y = fp.layer_norm %s, %gamma, %beta eps 1.000000e-05
        : tensor<?x?x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins FP_FeatureTensor:$input, FP_Vector:$weight,
                       FP_Vector:$bias, F64Attr:$eps);
  let results = (outs FP_FeatureTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias `eps` $eps attr-dict `:`
    type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

def FP_RMSNormOp : FP_Op<"rms_norm", [
    Pure, DeclareOpInterfaceMethods<FP_DifferentiableOpInterface>, AllTypesMatch<["input", "result"]>]> {
  let summary = "RMSNorm over the last dimension";
  let description = [{
    `result = input / sqrt(mean(input²) + eps) · weight` over the last
    dimension.

    ```mlir
    %h = fp.rms_norm %r, %w eps 1.000000e-05
        : tensor<?x?x128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins FP_FeatureTensor:$input, FP_Vector:$weight,
                       F64Attr:$eps);
  let results = (outs FP_FeatureTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `eps` $eps attr-dict `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise activations
//===----------------------------------------------------------------------===//

class FP_ActivationOp<string mnemonic, string formula, string name>
    : FP_Op<mnemonic, [Pure, Elementwise, SameOperandsAndResultType,
                       DeclareOpInterfaceMethods<FP_DifferentiableOpInterface>]> {
  let summary = "elementwise " # name;
  let description = "`result = " # formula # "`, elementwise.\n\n"
      # "```mlir\n%r = fp." # mnemonic # " %x : tensor<?x?x64xf32>\n```";
  let arguments = (ins FP_FloatTensor:$input);
  let results = (outs FP_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def FP_SiluOp : FP_ActivationOp<"silu", "x · σ(x)", "SiLU">;
def FP_SigmoidOp : FP_ActivationOp<"sigmoid", "1 / (1 + e^(−x))",
                                   "logistic sigmoid">;
def FP_SoftplusOp : FP_ActivationOp<"softplus",
    "log(1 + e^x), and x itself for x > 20 (as Mamba's kernel)", "softplus">;

//===----------------------------------------------------------------------===//
// Shape and layout
//===----------------------------------------------------------------------===//

def FP_BroadcastOp : FP_Op<"broadcast", [
    Pure, DeclareOpInterfaceMethods<FP_DifferentiableOpInterface>,
    OptionalTypesMatchWith<"the result has the type of 'like'", "result",
                           "like", "$_self">]> {
  let summary = "broadcast a tensor to the shape of another";
  let description = [{
    Replicates `input` to the result's shape: that of `like` (only its shape
    is read), or, without `like`, the result type, which is then static (a
    parameter-level tensor). `dims` lists, in increasing order, the result
    dimension that each input dimension maps to; every other result
    dimension is broadcast.

    ```mlir
    // D[i] for every token: (64) -> (B, T, 64)
    %db = fp.broadcast %d, %x dims [2] : tensor<64xf32>, tensor<?x?x64xf32>
    // α[b, t] for every channel: (B, T) -> (B, T, 64)
    %ab = fp.broadcast %a, %x dims [0, 1] : tensor<?x?xf32>, tensor<?x?x64xf32>
    // a head's decay for each of its channels and states: (4) -> (4, 16, 8)
    %ah = fp.broadcast %a dims [0] : tensor<4xf32>, tensor<4x16x8xf32>
    ```
  }];
  let arguments = (ins FP_FloatTensor:$input, Optional<FP_FloatTensor>:$like,
                       DenseI64ArrayAttr:$dims);
  let results = (outs FP_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`,` $like^)? `dims` $dims attr-dict `:` type($input) `,`
    type($result)
  }];
  let hasVerifier = 1;
}

class FP_ReductionOp<string mnemonic, string what, string example,
                     list<Trait> traits = []>
    : FP_Op<mnemonic, !listconcat([Pure], traits)> {
  let summary = what # " over some dimensions";
  let description = [{
    Reduces `input` over the dimensions `dims` (increasing), which are
    removed from the result.
  }] # example;
  let arguments = (ins FP_FeatureTensor:$input, DenseI64ArrayAttr:$dims);
  let results = (outs FP_FloatTensor:$result);
  let assemblyFormat = [{
    $input `dims` $dims attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def FP_ReduceSumOp : FP_ReductionOp<"reduce_sum", "sum", [{
    A per-token dot product is an `arith.mulf` followed by a sum over the
    last dimension.

    ```mlir
    %dot = fp.reduce_sum %uv dims [2] : tensor<?x?x64xf32> -> tensor<?x?xf32>
    ```
  }], [DeclareOpInterfaceMethods<FP_DifferentiableOpInterface>]>;

def FP_ReduceMaxOp : FP_ReductionOp<"reduce_max", "maximum", [{
    The largest row norm of per-token matrices, for example (the block
    normalisation of the Monarch mixer, docs/spec.md §2.4):

    ```mlir
    %m = fp.reduce_max %norms dims [3] : tensor<?x?x8x4xf32> -> tensor<?x?x8xf32>
    ```
  }], [DeclareOpInterfaceMethods<FP_DifferentiableOpInterface>]>;

def FP_SliceOp : FP_Op<"slice", [Pure, DeclareOpInterfaceMethods<FP_DifferentiableOpInterface>]> {
  let summary = "a contiguous range of the last dimension";
  let description = [{
    `result[..., j] = input[..., start + j]` for `0 ≤ j < end − start`.

    ```mlir
    %dt = fp.slice %xdbl[0 : 8] : tensor<?x?x40xf32> -> tensor<?x?x8xf32>
    ```
  }];
  let arguments = (ins FP_FeatureTensor:$input, I64Attr:$start, I64Attr:$end);
  let results = (outs FP_FeatureTensor:$result);
  let assemblyFormat = [{
    $input `[` $start `:` $end `]` attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether every reader reads the result where it lies in the input,
    /// each row `start` elements into the input's row, so that it is not
    /// materialised: as an operand of an unnormalised fp.linear or of an
    /// fp.weight_grad (GEMMs), as the input of an fp.transpose read only
    /// as fp.linear's weight (which the GEMM reads as it lies), as the input
    /// of fp.causal_conv or fp.causal_conv_grad, or as an fp.kernel input
    /// that the body reads a row at a time (a per-token input of one row
    /// per token that is never shifted, or a uniform input of one row). The
    /// input's last dimension is static.
    bool isReadInPlace();
  }];
}

def FP_ConcatOp : FP_Op<"concat", [Pure, DeclareOpInterfaceMethods<FP_DifferentiableOpInterface>]> {
  let summary = "concatenate along the last dimension";
  let description = [{
    Joins the inputs along their last dimension; all other dimensions agree.

    ```mlir
    %p = fp.concat %x, %ybar : tensor<?x?x64xf32>, tensor<?x?x64xf32>
                              -> tensor<?x?x128xf32>
    ```
  }];
  let arguments = (ins Variadic<FP_FeatureTensor>:$inputs);
  let results = (outs FP_FeatureTensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def FP_ReshapeOp : FP_Op<"reshape", [Pure, DeclareOpInterfaceMethods<FP_DifferentiableOpInterface>]> {
  let summary = "reshape the static trailing dimensions";
  let description = [{
    Reinterprets the static trailing dimensions of `input` in row-major order.
    The leading dimensions up to the last dynamic one are kept unchanged, and
    the remaining (static) dimensions must hold as many elements in the
    result as in the input.

    ```mlir
    %m = fp.reshape %v : tensor<?x?x64xf32> -> tensor<?x?x8x8xf32>
    ```
  }];
  let arguments = (ins FP_FloatTensor:$input);
  let results = (outs FP_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def FP_MatmulOp : FP_Op<"matmul", [Pure, DeclareOpInterfaceMethods<FP_DifferentiableOpInterface>]> {
  let summary = "batched product of small per-token matrices";
  let description = [{
    `result[..., i, j] = Σ_k L[..., i, k] · R[..., k, j]` where `L` is `lhs`
    or, with `transpose_lhs`, its transpose over the last two dimensions
    (likewise `R`). Leading dimensions are batch dimensions and agree.

    ```mlir
    // S = L Lᵀ per token
    %s = fp.matmul %l, %l {transpose_rhs}
        : tensor<?x?x8x8xf32>, tensor<?x?x8x8xf32> -> tensor<?x?x8x8xf32>
    ```
  }];
  let arguments = (ins FP_TokenTensor:$lhs, FP_TokenTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs FP_TokenTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def FP_TriuOp : FP_Op<"triu", [Pure, DeclareOpInterfaceMethods<FP_DifferentiableOpInterface>]> {
  let summary = "unpack a vector into an upper-triangular matrix";
  let description = [{
    Fills an `m × m` upper-triangular matrix, row-major over the upper
    triangle (row `i` ascending, column `j ≥ i` ascending), from the
    `m(m+1)/2` entries of the last dimension; zeros below the diagonal. The
    Cholesky-structured factors of the Kronecker mixer (docs/spec.md §2.3).

    ```mlir
    %l = fp.triu %theta : tensor<?x?x36xf32> -> tensor<?x?x8x8xf32>
    ```
  }];
  let arguments = (ins FP_FeatureTensor:$input);
  let results = (outs FP_TokenTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def FP_MatrixExpOp : FP_Op<"matrix_exp", [
    Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<FP_DifferentiableOpInterface>]> {
  let summary = "the exponential of a square matrix";
  let description = [{
    `result = exp(input) = Σ_k inputᵏ / k!` for a statically shaped square
    matrix: a parameter-level value (the nonselective mixer's
    `base · exp(L − Lᵀ)`, docs/spec.md §2.4), computed once per call. The
    kernels scale by `2⁻ˢ` until the 1-norm is at most 1, sum the Taylor
    series to the element type's precision and square `s` times. Its
    cotangent is the Fréchet derivative at the transpose applied to the
    result's cotangent `G`, the upper-right block of
    `exp([[inputᵀ, G], [0, inputᵀ]])` (Najfeld and Havel, 1995).

    ```mlir
    %e = fp.matrix_exp %a : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins FP_StaticMatrix:$input);
  let results = (outs FP_StaticMatrix:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//
//
// Ops that appear in derived backward functions (fp-derive-backward): the
// adjoints that no composition of forward ops expresses efficiently.

def FP_TransposeOp : FP_Op<"transpose", [
    Pure, DeclareOpInterfaceMethods<FP_DifferentiableOpInterface>]> {
  let summary = "transpose a matrix";
  let description = [{
    `result[j, i] = input[i, j]`. The backward of `fp.linear` maps the
    gradient with the transposed weight. A transpose that is read only as
    the weight of `fp.linear`s is not materialised: buffer planning gives it
    its input's storage and codegen runs those GEMMs on the input as it
    lies.

    ```mlir
    %wt = fp.transpose %w : tensor<32x64xf32> -> tensor<64x32xf32>
    ```
  }];
  let arguments = (ins FP_StaticMatrix:$input);
  let results = (outs FP_StaticMatrix:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let extraClassDeclaration = [{
    /// Whether every use of the result is as the weight of an unnormalised
    /// fp.linear (and it is not materialised).
    bool isReadOnlyAsLinearWeight();
  }];
}

def FP_WeightGradOp : FP_Op<"weight_grad", [Pure]> {
  let summary = "gradient of a linear map's weight, summed over tokens";
  let description = [{
    `result[o, i] = Σ over all leading indices of grad[..., o] · input[..., i]`:
    for `fp.linear` with input `x` and output cotangent `g`, the cotangent of
    its weight is `fp.weight_grad %g, %x` (a GEMM over the tokens).

    ```mlir
    %dw = fp.weight_grad %g, %x
        : tensor<?x?x32xf32>, tensor<?x?x64xf32> -> tensor<32x64xf32>
    ```
  }];
  let arguments = (ins FP_FeatureTensor:$grad, FP_FeatureTensor:$input);
  let results = (outs FP_StaticMatrix:$result);
  let assemblyFormat = [{
    $grad `,` $input attr-dict `:` type($grad) `,` type($input) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def FP_TriuPackOp : FP_Op<"triu_pack", [
    Pure, DeclareOpInterfaceMethods<FP_DifferentiableOpInterface>]> {
  let summary = "pack the upper triangle of matrices into a vector";
  let description = [{
    The adjoint of `fp.triu`: the `m(m+1)/2` entries on and above the
    diagonal of each `m × m` matrix, row-major over the upper triangle; the
    entries below the diagonal are dropped.

    ```mlir
    %g = fp.triu_pack %dl : tensor<?x?x8x8xf32> -> tensor<?x?x36xf32>
    ```
  }];
  let arguments = (ins FP_TokenTensor:$input);
  let results = (outs FP_FeatureTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def FP_L2NormGradOp : FP_Op<"l2norm_grad", [
    Pure, SameOperandsAndResultType]> {
  let summary = "vector-Jacobian product of fp.l2norm";
  let description = [{
    For `y = x / max(‖x‖₂, eps)` over the last dimension and the cotangent
    `g` of `y`: `(g − y·⟨y, g⟩) / ‖x‖₂` where `‖x‖₂ > eps`, and `g / eps`
    where the clamp is active (PyTorch's `F.normalize`).

    ```mlir
    %dx = fp.l2norm_grad %x, %g eps 1.000000e-05 : tensor<?x?x16xf32>
    ```
  }];
  let arguments = (ins FP_FeatureTensor:$input, FP_FeatureTensor:$grad,
                       F64Attr:$eps);
  let results = (outs FP_FeatureTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad `eps` $eps attr-dict `:` type($input)
  }];
}

def FP_WeightNormGradOp : FP_Op<"weight_norm_grad", [
    Pure, AllTypesMatch<["weight", "grad", "dweight"]>,
    AllTypesMatch<["gain", "dgain"]>]> {
  let summary = "vector-Jacobian product of fp.weight_norm";
  let description = [{
    For `w[i, :] = gain[i] · v[i, :] / n_i` with `n_i = ‖v[i, :]‖₂` and the
    cotangent `G` of `w`, per row: `dgain[i] = ⟨G_i, v_i⟩ / n_i` and
    `dweight[i, :] = (gain[i] / n_i) · (G_i − v_i · ⟨G_i, v_i⟩ / n_i²)`;
    one pass over a row computes both sums.

    ```mlir
    %dv, %dg = fp.weight_norm_grad %v, %g grad %dw
        : tensor<32x256xf32>, tensor<32xf32>
    ```
  }];
  let arguments = (ins FP_Matrix:$weight, FP_Vector:$gain, FP_Matrix:$grad);
  let results = (outs FP_Matrix:$dweight, FP_Vector:$dgain);
  let assemblyFormat = [{
    $weight `,` $gain `grad` $grad attr-dict `:` type($weight) `,` type($gain)
  }];
  let hasVerifier = 1;
}

def FP_SelectiveScanGradOp : FP_Op<"selective_scan_grad", [
    Pure, AllTypesMatch<["u", "delta", "grad", "du", "ddelta"]>,
    AllTypesMatch<["B", "C", "dB", "dC"]>, AllTypesMatch<["A", "dA"]>]> {
  let summary = "vector-Jacobian product of the recurrence of fp.selective_scan";
  let description = [{
    Given the operands of an `fp.selective_scan` without its skip term and
    the cotangent `grad` of its result, the cotangents of every operand: per
    token for `u`, `delta`, `B` and `C`, summed over batch and time for `A`.
    The states are recomputed forward and the adjoint state runs backward
    in time. (The skip term `D ⊙ u` is differentiated around it.)

    ```mlir
    %du, %ddt, %dA, %dB, %dC = fp.selective_scan_grad %u, %dt, %A, %B, %C
        grad %g : tensor<?x?x64xf32>, tensor<64x16xf32>, tensor<?x?x16xf32>
    ```
  }];
  let arguments = (ins FP_ChannelTensor:$u, FP_ChannelTensor:$delta,
                       FP_Matrix:$A, FP_ChannelTensor:$B, FP_ChannelTensor:$C,
                       FP_ChannelTensor:$grad);
  let results = (outs FP_ChannelTensor:$du, FP_ChannelTensor:$ddelta,
                      FP_Matrix:$dA, FP_ChannelTensor:$dB,
                      FP_ChannelTensor:$dC);
  let assemblyFormat = [{
    $u `,` $delta `,` $A `,` $B `,` $C `grad` $grad attr-dict `:` type($u)
    `,` type($A) `,` type($B)
  }];
  let hasVerifier = 1;
}

def FP_ReduceMaxGradOp : FP_Op<"reduce_max_grad", [
    Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "vector-Jacobian product of fp.reduce_max";
  let description = [{
    Routes the cotangent `grad` of `fp.reduce_max %input dims [...]` to the
    first position (in row-major order over `dims`) that attains each
    maximum, as `torch.max(dim)` does; every other entry is zero.

    ```mlir
    %dn = fp.reduce_max_grad %norms, %g dims [3]
        : tensor<?x?x8x4xf32>, tensor<?x?x8xf32>
    ```
  }];
  let arguments = (ins FP_FeatureTensor:$input, FP_FloatTensor:$grad,
                       DenseI64ArrayAttr:$dims);
  let results = (outs FP_FeatureTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad `dims` $dims attr-dict `:` type($input) `,` type($grad)
  }];
  let hasVerifier = 1;
}

def FP_CausalConvGradOp : FP_Op<"causal_conv_grad", [
    Pure, AllTypesMatch<["input", "grad", "dinput"]>,
    AllTypesMatch<["weight", "dweight"]>]> {
  let summary = "vector-Jacobian product of fp.causal_conv";
  let description = [{
    For `fp.causal_conv` with `input` and `weight` and the cotangent `grad`
    of its result: `dinput[b, s, c] = Σ_k weight[c, k] · grad[b, s+K−1−k, c]`
    (the same taps run backward in time, zero past the end), and
    `dweight[c, k] = Σ_{b,t} grad[b, t, c] · input[b, t−K+1+k, c]`. The
    bias's cotangent is the sum of `grad` over batch and time.

    ```mlir
    %dx, %dw = fp.causal_conv_grad %x, %w grad %g
        : tensor<?x?x256xf32>, tensor<256x4xf32>
    ```
  }];
  let arguments = (ins FP_ChannelTensor:$input, FP_Matrix:$weight,
                       FP_ChannelTensor:$grad);
  let results = (outs FP_ChannelTensor:$dinput, FP_Matrix:$dweight);
  let assemblyFormat = [{
    $input `,` $weight `grad` $grad attr-dict `:` type($input) `,`
    type($weight)
  }];
  let hasVerifier = 1;
}

#endif // FP_DIALECT_FPOPS_TD
