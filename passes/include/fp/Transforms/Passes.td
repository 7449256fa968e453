//===- Passes.td - fp transformation passes ----------------*- tablegen -*-===//
//
// The passes of the fp pipeline (docs/overview.md, "Life of a model"). Each
// runs alone in fp-opt; `fp-pipeline` (Pipeline.h) composes them in the order
// fpc uses.
//
//===----------------------------------------------------------------------===//

#ifndef FP_TRANSFORMS_PASSES_TD
#define FP_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FpHoistInvariants : Pass<"fp-hoist-invariants", "func::FuncOp"> {
  let summary = "move iteration-invariant work out of fp.fixed_point";
  let description = [{
    Makes the work that does not depend on the iterate run once per call
    instead of once per solver step:

    - A weight-normalised `fp.linear` (with `gain`) becomes an explicit
      `fp.weight_norm` feeding a plain `fp.linear`, so the effective weight
      is computed once.
    - A linear map of a concatenation inside a fixed-point body whose
      operands are partly defined outside it, `W [x; ȳ]`, is split by
      column blocks into `W_x x + W_y ȳ` (the bias goes with the invariant
      part), so the `x` half can leave the loop. A linear map of a sum
      with one invariant term, `W (x + ȳ)`, becomes `W x + W ȳ` in the
      same way, and one of a difference, `W (x − y)`, `W x − W y` (the
      bias with the left term).
    - Every operation of a fixed-point body whose operands are all defined
      outside it is then hoisted (loop-invariant code motion through the
      op's `LoopLikeOpInterface`), innermost loops first.

    ```mlir
    // before: one GEMM of width 2d per step
    %r = fp.fixed_point (%y = %y0) : tensor<?x?x64xf32> ... {
      %ybar = fp.shift %y by 1 : tensor<?x?x64xf32>
      %p = fp.concat %x, %ybar : ... -> tensor<?x?x128xf32>
      %u = fp.linear %p, %w : ...
      ...
    }
    // after: W_x x before the loop, W_y ȳ inside
    ```

    The splits change the order of floating-point summation of the linear
    map (two partial products instead of one), which is within rounding.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::fp::FPDialect"];
  let options = [
    Option<"splitConcat", "split-concat", "bool", /*default=*/"true",
           "split linear maps of partly invariant concatenations, sums "
           "and differences">,
  ];
}

def FpDeriveChunked : Pass<"fp-derive-chunked", "ModuleOp"> {
  let summary = "derive the chunked, stateful form of every layer";
  let description = [{
    For every layer function `@L` (`fp.layer`) with ops that couple tokens
    (`fp.shift`, `fp.scan`, `fp.selective_scan`, `fp.causal_conv`), creates
    `@L.chunk`: the layer run on a chunk of each sequence from the state the
    tokens before it left, returning the state it leaves.

    ```mlir
    func.func @L.chunk(%x: tensor<?x?xDxf32>,
                       %s0: tensor<?x1x128xf32> {fp.state = "L.f.shift"}, ...)
        -> (tensor<?x?xDxf32>, tensor<?xi32>, tensor<?x1x128xf32>, ...)
        attributes {fp.chunk_of = @L}
    ```

    Each such op becomes its chunked form (`fp.chunk_shift`, ...), reading
    a new argument and adding its next state to the results; a function
    calling one gets a chunked copy `@f.chunk` with the callee's states, so
    every state is an argument and a result of `@L.chunk`, named by the
    function and op it belongs to (`fp.state`). A call of a map in an
    `fp.fixed_point` body shares the states of the call after the loop that
    applies the same map to the loop's fixed points (`ŷ = f(y*)`): every
    iteration starts from the chunk's initial state, and the chunk leaves
    the state of that application; the body's next states are dropped. A
    layer that returns the fixed point itself gets one more application of
    the map after the loop, for the state alone.

    Anti-causal ops (a negative shift, a reverse scan) and an op coupling
    tokens directly in a fixed-point body (not in a map it calls) are
    errors. Run before the inliner.
  }];
  let dependentDialects = ["::mlir::fp::FPDialect",
                           "::mlir::func::FuncDialect"];
}

def FpDeriveBackward : Pass<"fp-derive-backward", "ModuleOp"> {
  let summary = "derive the backward function of every layer";
  let description = [{
    For every layer function `@L` (`fp.layer`), appends the values its
    backward needs to its results (marked `fp.saved`: the fixed points of
    its `fp.fixed_point` loops) and creates `@L_backward`:

    ```mlir
    func.func @L_backward(%x: tensor<?x?xDxf32>, %ystar: tensor<...>,
                          %dy: tensor<?x?xDxf32>)
        -> (tensor<?x?xDxf32>, tensor<...>, ...)
        attributes {fp.backward_of = @L, fp.param_gradients = ["w", ...]}
    ```

    Its arguments are the forward's input, the saved values in order and
    the cotangent of the layer's output; its results are the cotangent of
    the input and one gradient per parameter (in the order of first
    appearance, named by `fp.param_gradients`). The body recomputes what the
    forward computed outside its loops from the input and the saved values,
    then runs reverse-mode differentiation op by op through
    `DifferentiableOpInterface`, accumulating cotangents of values used
    more than once.

    The adjoint of a fixed-point loop follows its `backward` mode. With
    `one_step` (the reference's, docs/spec.md §4) the fixed point is a constant:
    the gradient is that of the layer's own application of the map at the
    fixed point, and no cotangent flows into the loop. `truncated(k)`
    recomputes k − 1 further applications of the map from the saved fixed
    point and differentiates through them. `neumann(k)` turns the cotangent
    ḡ reaching the fixed point into `Σ_{j<k} (J_yᵀ)^j ḡ` and `implicit(tol)`
    into the solution of `w = ḡ + J_yᵀ w`, an `fp.fixed_point` in the
    backward; either then flows into the map's other inputs and parameters
    through one more VJP of the map at the fixed point.

    An op with float operands that receive a cotangent but without a
    vector-Jacobian rule is an error located at the op (so at the DSL
    source). Run it after `fp-hoist-invariants` (weight normalisation must
    be explicit) and before fusion.

    With `save-products`, the products of the layer's linear maps over
    tokens that the backward would recompute (`fp.linear` outside the
    loops, on values the backward recomputes as the forward computed them)
    are saved too, after the fixed points and in forward order: the
    backward reads them instead of running their GEMMs again, at the cost
    of their memory in every training forward's saved buffer.
  }];
  let dependentDialects = ["::mlir::fp::FPDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
  let options = [
    Option<"saveProducts", "save-products", "bool", /*default=*/"false",
           "also save the token-wise linear products the backward reads">,
  ];
}

def FpNarrowToSlices : Pass<"fp-narrow-to-slices", "func::FuncOp"> {
  let summary = "compute only the columns that slices read";
  let description = [{
    Outside fixed-point bodies, moves each `fp.slice` towards the values it
    reads, so that a value only the slice reads is computed on the slice's
    columns alone:

    - a slice of an elementwise op (arith, math, `fp.silu`, `fp.sigmoid`,
      `fp.softplus`) whose result only the slice reads becomes the op of
      its operands' slices;
    - a slice of `fp.linear %x, (fp.transpose %w) bias %b` that only the
      slice reads multiplies by the slice of %w's columns (the transposed
      weight's rows), with the slice of the bias;
    - a slice within one input of an `fp.concat` is a slice of that input;
      a slice of a splat is a splat; a slice of a slice is one slice, and a
      slice of all columns is its input.

    The derived backward needs it: a linear map of a concatenation,
    `W [x; ȳ]`, has the adjoint `[dx; dȳ] = du W`, a GEMM whose output
    columns for ȳ the one-step gradient never reads (ȳ is the fixed point,
    not differentiated). At FP-Mamba's Householder and Kronecker mixers
    that is half of the backward's largest `dx` GEMM; after this pass the
    GEMM computes `dx = du W[:, x's columns]`, reading those columns of W
    where they lie (`fp.slice` read in place).

    ```mlir
    // before
    %wt = fp.transpose %w : tensor<64x128xf32> -> tensor<128x64xf32>
    %d = fp.linear %du, %wt : (tensor<?x?x64xf32>, tensor<128x64xf32>) -> tensor<?x?x128xf32>
    %s = arith.addf %d, %e : tensor<?x?x128xf32>
    %dx = fp.slice %s[0 : 64] : tensor<?x?x128xf32> -> tensor<?x?x64xf32>
    // after
    %wx = fp.slice %w[0 : 64] : tensor<64x128xf32> -> tensor<64x64xf32>
    %wxt = fp.transpose %wx : tensor<64x64xf32> -> tensor<64x64xf32>
    %dx0 = fp.linear %du, %wxt : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
    %ex = fp.slice %e[0 : 64] : tensor<?x?x128xf32> -> tensor<?x?x64xf32>
    %dx = arith.addf %dx0, %ex : tensor<?x?x64xf32>
    ```

    Every element still computed is the same sum of the same products, so
    results change by rounding at most (a narrower GEMM may block its sums
    differently).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::fp::FPDialect",
                           "::mlir::tensor::TensorDialect"];
}

def FpReuseProducts : Pass<"fp-reuse-products", "func::FuncOp"> {
  let summary = "split linear maps whose partial products are already "
                "computed";
  let description = [{
    Outside every fixed-point body, a plain linear map (no gain) of a
    concatenation, `W [x; ȳ] + b`, of which some column block's product is
    already computed earlier in the same block, `W_x x + b`, becomes that
    product plus the products of the other blocks, `W_y ȳ`; a linear map of
    a sum, `W (x + ȳ) + b`, with `W x + b` already computed, becomes
    `W x + b + W ȳ`. The bias goes with the first reused product, as
    `fp-hoist-invariants` splits them; weights and biases match when they
    are the same value or what CSE would merge.

    This is the layer's step after the solve, `f(y*)` (the step the
    gradient flows through): it applies the loop's body once more, whose
    invariant products `fp-hoist-invariants` moved before the loop, and
    without this pass it would recompute them, at FP-Mamba's Householder
    and Kronecker mixers half of its largest GEMM.

    ```mlir
    // before: %xw = W_x x was hoisted out of the loop; the step after it
    // multiplies [x; ȳ] by W in full
    %p = fp.concat %x, %ybar : ... -> tensor<?x?x128xf32>
    %u = fp.linear %p, %w : ...
    // after
    %wy = fp.slice %w[64 : 128] : ...
    %yw = fp.linear %ybar, %wy : ...
    %u = arith.addf %xw, %yw : ...
    ```

    `fp-pipeline` runs it after the backward is derived, so a derived
    backward, which recomputes the step from the saved fixed point and has
    no hoisted product to reuse, keeps one GEMM for it and one for each of
    its adjoints. The result changes only by the order of summation of the
    split map, which the loop's body uses already.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::fp::FPDialect"];
}

def FpMergeLinears : Pass<"fp-merge-linears", "func::FuncOp"> {
  let summary = "one GEMM for the linear maps of one input in a fixed-point "
                "body, and after it";
  let description = [{
    Inside a fixed-point body, plain linear maps (no gain) of the same input
    whose weights (and biases) are defined outside the loop become one
    linear map with the weights stacked by rows, followed by one
    `fp.slice` per original result. The stacked weight is built once,
    before the loop, by flattening each `[out_i, in]` weight, concatenating
    and reshaping to `[Σ out_i, in]`; when some members have a bias, the
    biases (zeros for the others) are concatenated the same way. Members
    are the linear maps of one block, so nested bodies merge separately.

    ```mlir
    // before: three GEMMs per step, each reading %ybar
    %u = fp.linear %ybar, %w0 : (...) -> tensor<?x?x64xf32>
    %g = fp.linear %ybar, %w1 : (...) -> tensor<?x?x1xf32>
    %bc = fp.linear %ybar, %w2 : (...) -> tensor<?x?x32xf32>
    // after: %w = [%w0; %w1; %w2] before the loop, one GEMM per step
    %all = fp.linear %ybar, %w : (...) -> tensor<?x?x97xf32>
    %u = fp.slice %all[0 : 64] : ...
    %g = fp.slice %all[64 : 65] : ...
    %bc = fp.slice %all[65 : 97] : ...
    ```

    After a loop, in the loop's block, the plain linear maps of one input
    whose weights and biases are those of a group merged in the loop, in
    the same order, become one linear map of the stacked weight and bias
    built for the loop, and slices: the layer's step after the solve (which
    `fp-reuse-products` leaves with the loop's maps of ȳ) is one GEMM, as a
    step of the loop is. Weights match when CSE would merge them.

    The stacked weight's rows are padded with zero rows to a multiple of
    `row-multiple` (8 by default), and its bias with zeros: the merged
    GEMM's result rows then start 16-byte aligned in bf16 and 32-byte
    aligned in f32, which GEMM libraries need for their vectorised
    kernels (cuBLAS falls back to element-wise loads and stores for an odd
    leading dimension such as FP-Mamba's 1024 + 1 + 32 = 1057). No slice
    reads the padding's columns.

    The slices are per-token ops, so `fp-fuse-mix-scan` folds them into the
    kernels that read them. Each output element is the same dot product as
    before; only the library's blocking of the larger product may change
    the order of its summation.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::fp::FPDialect"];
  let options = [
    Option<"rowMultiple", "row-multiple", "int64_t", /*default=*/"8",
           "pad the stacked weight with zero rows to a multiple of this">,
  ];
}

def FpFuseMixScan : Pass<"fp-fuse-mix-scan", "func::FuncOp"> {
  let summary = "group per-token chains, mixers and scans into fp.kernel ops";
  let description = [{
    Groups the operations that compute each token from that token alone —
    elementwise math, activations, norms over features, slices,
    concatenations, broadcasts and reductions within a token, the small
    per-token matrix products of the structured mixers — together with the
    forward scans they feed and the epilogues that read the scans, into
    `fp.kernel` ops, so that codegen runs each group as one kernel and its
    intermediate values stay in the kernel's scratch memory. Linear maps
    (GEMMs), time shifts, convolutions and reverse scans stay outside, as
    library calls or kernels of their own.

    Groups grow along data edges: an operation joins (and merges) the
    groups of the operands it reads, as long as the result stays convex —
    no path leaves a group through an outside operation and comes back —
    with every other group treated as one node, so that the kernels can be
    ordered. Operations that depend on a kernel's results but sat between
    its members move after it. Groups of a single operation are left alone.
    Every block is grouped separately, fixed-point bodies included, and
    derived backward functions (`fp.backward_of`) like any other.

    A time shift that a kernel reads then moves into it: the kernel reads
    the shift's input at another token (`fp.shift` of a block argument),
    and no shifted copy is written. A linear map without a bias whose
    input is a shift and whose result only kernels read first commutes
    with it (`W shift(y) = shift(W y)`), so the FP-Mamba step's GEMM maps
    `y` and its kernel reads the product one token back; a bias would not
    commute (the first token would read the bias instead of zero).

    Last, the splat constants a kernel reads are built in its body rather
    than read as inputs: a splat of a constant scalar to a per-token shape
    (the zeros of a slice's adjoint, a norm's constants in a derived
    backward), with the batch and time extents of another per-token input,
    and a uniform splat constant of at most 256 elements. Each would
    otherwise be a buffer filled by a launch of its own (batch × time rows
    for a per-token splat) and read back per token.

    ```mlir
    // before: four kernels, three intermediate buffers
    %a = arith.subf %x, %y : tensor<?x?x64xf32>
    %s = fp.silu %u : tensor<?x?x64xf32>
    %n = fp.l2norm %s eps 1.0e-05 : tensor<?x?x64xf32>
    %m = arith.mulf %n, %a : tensor<?x?x64xf32>
    // after
    %m = fp.kernel (%a0 = %x, %a1 = %y, %a2 = %u) : (...) -> tensor<?x?x64xf32> {
      ...
      fp.yield %m : tensor<?x?x64xf32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::fp::FPDialect"];
  let options = [
    Option<"fuseScans", "scans", "bool", /*default=*/"true",
           "fuse forward scans with the per-token work around them">,
  ];
}

def FpTransposeScanA : Pass<"fp-transpose-scan-a", "func::FuncOp"> {
  let summary = "give fused selective scans their state matrix transposed";
  let description = [{
    A selective scan in an `fp.kernel` reads its state matrix `A`
    (channels × N, a uniform input) at every token, and the kernel's threads
    run along channels: on a GPU a warp reading one column of `A` touches a
    row of it per thread. This pass gives such a kernel `Aᵀ` (N × channels)
    as its input instead, computed once where `A` is defined (outside the
    fixed-point loop once `A` is hoisted), and transposes it back inside
    the body, where codegen reads the input as it lies: the scan reads
    `Aᵀ[n, c]`, contiguous along channels. A kernel input is rewritten only
    when every use of it is as a selective scan's `A`. The IR keeps its
    meaning: the body's `fp.transpose` undoes the outer one.

    ```mlir
    // before
    %r = fp.kernel (%a = %A, ...) : (tensor<64x16xf32>, ...) -> ... {
      %s = fp.selective_scan %u, %dt, %a, %b, %c ...
    }
    // after
    %At = fp.transpose %A : tensor<64x16xf32> -> tensor<16x64xf32>
    %r = fp.kernel (%at = %At, ...) : (tensor<16x64xf32>, ...) -> ... {
      %a = fp.transpose %at : tensor<16x64xf32> -> tensor<64x16xf32>
      %s = fp.selective_scan %u, %dt, %a, %b, %c ...
    }
    ```
  }];
  let dependentDialects = ["::mlir::fp::FPDialect"];
}

def FpScheduleKernels : Pass<"fp-schedule-kernels", "func::FuncOp"> {
  let summary = "decide how a team of threads computes each fp.kernel token";
  let description = [{
    Records each `fp.kernel`'s schedule in the IR (the attributes listed in
    the dialect description) and places `fp.barrier` ops in its body; the
    kernel emitter prints the body as scheduled and decides nothing. The
    decisions, for the team of threads (a CUDA block, a host thread team)
    that computes one token:

    - *Chains* (`fp.chain`): consecutive ops of one element count that
      compute element i from element i of their operands, or from values
      computed before them, run as one loop over elements in which each
      thread computes the elements it owns, with no barrier between them;
      a value only its chain reads lives in a register.
    - *Uniform scalars* (`fp.uniform`): ops of one element that only chains
      and other such ops read, computed by every thread for itself.
    - *Scratch* (`fp.slot`, `fp.temp`, `fp.out`): a linear scan over
      lifetimes in body order; a value the kernel yields is computed into
      its result.
    - *Scan state* (`fp.state_offset`, `fp.registers`): on CUDA a selective
      scan whose state fits keeps it in registers (last in `state`).
    - *Staged inputs* (`fp.staged_inputs`, `fp.staged`): in a kernel run in
      time order, input rows and input shifts are copied a token ahead into
      a stage buffer while both buffers fit in 96 KiB of f32 scratch, and
      unless the scans keep more than 64 values a thread in registers.
    - *Chunks* (`fp.summary`, `fp.carry_offset`, `fp.carry_size`): where no
      scan reads another's result and every selective scan's A is a uniform
      input, the ops the scans read form a summary pass with slots and
      chains of its own.
    - *Barriers* (`fp.barrier`): before an op that may touch an element
      another thread touched since the last barrier, one of the two a
      write; element loops own their elements, so chains that read what
      the chain before wrote, element by element, need none.

    ```mlir
    %r = fp.kernel (%a = %x, %g = %gain) : ... {fp.scratch_size = 128 : i64,
        fp.state_size = 0 : i64, fp.register_state = 0 : i64,
        fp.stage_size = 0 : i64} {
      %s = fp.silu %a {fp.slot = 0 : i64} : tensor<?x?x64xf32>
      fp.barrier call
      %n = fp.rms_norm %s, %g eps 1.0e-05 {fp.out = 0 : i64} : ...
      fp.yield %n : tensor<?x?x64xf32>
    }
    ```
  }];
  let options = [
    Option<"stageInputs", "stage-inputs", "bool", /*default=*/"true",
           "kernels run in time order read each token's input rows from "
           "copies made a token ahead (Fused.h, \"Staged inputs\")">,
  ];
  let dependentDialects = ["::mlir::fp::FPDialect"];
}

def FpLowerFixedPoint : Pass<"fp-lower-fixed-point", "func::FuncOp"> {
  let summary = "lower fp.fixed_point to an scf.while with explicit solver "
                "steps";
  let description = [{
    Rewrites every `fp.fixed_point` into the solver of docs/spec.md §3 as an
    explicit loop: `fp.solver_init` creates the per-sample state where the data
    is, an `scf.while` whose condition is `fp.solver_continue` runs the body,
    and each step ends with `fp.solver_relax` for every iterate (residual
    and relaxation in one pass over the data) and one `fp.solver_update`
    (best residual, patience, step-size decay, and the continue rule for the
    next step). The iteration counts come from `fp.solver_iterations`.

    ```mlir
    %y, %n = fp.fixed_point (%it = %y0) : tensor<?x?x64xf32>
        solver <...> backward <one_step> {
      %f = ...
      fp.yield %f : tensor<?x?x64xf32>
    }
    ```

    becomes

    ```mlir
    %solver = fp.solver_init %y0 solver <...> backward <one_step>
        : tensor<?x?x64xf32>
    %y = scf.while (%it = %y0) : (tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
      %go = fp.solver_continue %solver
      scf.condition(%go) %it : tensor<?x?x64xf32>
    } do {
    ^bb0(%it: tensor<?x?x64xf32>):
      %f = ...
      %next = fp.solver_relax %solver, %it, %f : tensor<?x?x64xf32>
      fp.solver_update %solver
      scf.yield %next : tensor<?x?x64xf32>
    }
    %n = fp.solver_iterations %solver : tensor<?xi32>
    ```

    Nothing in the loop needs the host: on the CUDA target the continue
    rule is decided on the device and the host queues steps ahead of it.
    Nested loops are lowered inside out.
  }];
  let dependentDialects = ["::mlir::fp::FPDialect",
                           "::mlir::scf::SCFDialect"];
}

def FpPlanBuffers : Pass<"fp-plan-buffers", "func::FuncOp"> {
  let summary = "plan one workspace per layer";
  let description = [{
    Gives every tensor a layer function (`fp.layer`) or its backward
    computes a buffer of one
    workspace, by a linear scan over lifetimes: a buffer is reused once the
    last reader of its value has run, where a value defined before a
    lowered fixed-point loop (`scf.while`, from `fp-lower-fixed-point`) and
    read inside it lives until the loop ends (every iteration reads it
    again) and an iterate lives to the end of its loop. An iterate, the
    loop's result and the `fp.solver_relax` that updates it share one
    buffer: the relaxation runs in place. Buffers are shared only by values with the
    same dependence on batch and length; reshapes and loop results share
    their source's buffer; parameters and the layer input are not in the
    workspace; an `fp.kernel`'s intermediate values live in the kernel's own
    scratch memory.

    Two ops are not materialised, and their source lives as long as their
    readers: an `fp.transpose` read only as the weight of `fp.linear` (the
    GEMM reads the weight as it lies, transposing the other way), and an
    `fp.slice` whose every reader reads it where it lies in its source
    (`SliceOp::isReadInPlace`: an operand of `fp.linear` or
    `fp.weight_grad`, which the GEMM reads with the source's row stride, or
    of such an `fp.transpose`; the input of `fp.causal_conv` or
    `fp.causal_conv_grad`, read at that stride too; or an `fp.kernel` input
    read a row at a time). So the columns of `in_proj`'s output that are x
    (or, in Mamba, the convolution's input), the parts of `x_proj`'s output,
    the mixer weight's x block and, in a derived backward, the columns of a
    weight that `fp-narrow-to-slices` gave a `dx` GEMM are never copied.

    The results the caller provides memory for are computed there rather
    than copied out: the layer's output (a backward's input cotangent) and
    each result a forward saves for its backward (`fp.saved`). The value
    each of them is (the root of its reshapes, or the iterate of a loop it
    is the result of) gets a buffer that holds nothing else, marked with the
    result's index (`result = 0`); the emitters point that buffer at the
    caller's. A backward's parameter gradients are accumulated into the
    caller's and keep their copy, as does a result returned a second time
    or one that is not computed by the layer (its input, a parameter).

    The plan is recorded for the emitters in discardable attributes:

    ```mlir
    func.func @layer(...) attributes {fp.layer,
        fp.workspace = [{elements = 64 : i64, per_batch, per_step}, ...]} {
      %x = fp.linear %u, %w {fp.slots = array<i64: 0>} : ...
      %r = scf.while (%y = %y0) : ... attributes {fp.iterate_slots = array<i64: 1>}
    ```

    Derived backward functions (`fp.backward_of`) are planned like layers;
    other functions are left alone. A layer with an `fp.fixed_point` that is
    not lowered, or a loop whose iterates are not updated by
    `fp.solver_relax` as the last reader, is an error.
  }];
}

#endif // FP_TRANSFORMS_PASSES_TD
