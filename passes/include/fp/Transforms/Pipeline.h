//===- Pipeline.h - The fp compilation pipeline -----------------*- C++ -*-===//
//
// The pipeline from the frontend's IR to the IR the emitters take, written
// once as stage functions. `fp-opt --fp-pipeline` and `fpc` both call
// buildFpPipeline, so the former reproduces the latter exactly.
//
//===----------------------------------------------------------------------===//

#ifndef FP_TRANSFORMS_PIPELINE_H
#define FP_TRANSFORMS_PIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::fp {

struct FpPipelineOptions : public PassPipelineOptions<FpPipelineOptions> {
  PassOptions::Option<bool> hoist{
      *this, "hoist",
      llvm::cl::desc("move iteration-invariant work out of fixed-point loops"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> fuse{
      *this, "fuse",
      llvm::cl::desc("merge the GEMMs of one input in fixed-point bodies and "
                     "group per-token work and scans into fp.kernel ops"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> fuseScans{
      *this, "fuse-scans",
      llvm::cl::desc("with fuse: fuse each forward scan with the per-token "
                     "work around it (one kernel per sample); without, that "
                     "work runs in per-token kernels and the scan in a kernel "
                     "of its own, parallel over samples and channels"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> transposeScanA{
      *this, "transpose-scan-a",
      llvm::cl::desc("with fuse-scans: fused selective scans read their "
                     "state matrix transposed (fp-transpose-scan-a)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> backward{
      *this, "backward",
      llvm::cl::desc("derive every layer's backward (fp-derive-backward)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> saveProducts{
      *this, "save-products",
      llvm::cl::desc("with backward: the training forward also saves the "
                     "token-wise linear products the backward reads, which "
                     "the backward then does not recompute"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> chunked{
      *this, "chunked",
      llvm::cl::desc("derive every layer's chunked, stateful form "
                     "(fp-derive-chunked)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> stageInputs{
      *this, "stage-inputs",
      llvm::cl::desc("kernels run in time order read each token's input rows "
                     "from copies made a token ahead"),
      llvm::cl::init(true)};
};

/// Inlines mixers and maps, drops the inlined functions, canonicalises and
/// removes common subexpressions: one function per layer remains.
void addFrontendCleanup(OpPassManager &pm);

/// Hoists iteration-invariant work out of fixed-point loops.
void addHoisting(OpPassManager &pm);

/// Derives every layer's backward function; with `saveProducts` the
/// forward saves its token-wise linear products for it.
void addBackwardDerivation(OpPassManager &pm, bool saveProducts = false);

/// Splits the linear maps outside fixed-point loops whose partial products
/// the hoisting computed already (fp-reuse-products).
void addProductReuse(OpPassManager &pm);

/// Merges the linear maps of one input in fixed-point bodies into one GEMM,
/// then groups per-token chains and mixers, and with `fuseScans` the scans
/// among them, into kernels, whose selective scans then read their state
/// matrix transposed with `transposeScanA`.
void addFusion(OpPassManager &pm, bool fuseScans = true,
               bool transposeScanA = true);

/// Lowers fixed-point loops to scf.while with explicit solver steps.
void addLoopLowering(OpPassManager &pm);

/// Plans the workspace of every layer.
void addBufferPlanning(OpPassManager &pm);

/// Schedules every fused kernel (fp-schedule-kernels): the last step before
/// emission.
void addKernelScheduling(OpPassManager &pm, bool stageInputs);

/// The whole pipeline fpc runs before emission.
void buildFpPipeline(OpPassManager &pm, const FpPipelineOptions &options);

/// Registers `fp-pipeline` with the pass registry.
void registerFpPipeline();

} // namespace mlir::fp

#endif // FP_TRANSFORMS_PIPELINE_H
