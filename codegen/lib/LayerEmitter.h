//===- LayerEmitter.h - One layer's forward or backward ---------*- C++ -*-===//
//
// The emitter of one layer function's body, shared by the host and the CUDA
// translation units (HostEmitter.cpp): a template on the element type `Real`
// that calls the target's kernels (the `kernels::` namespace alias) op by
// op. Private to codegen/lib.
//
//===----------------------------------------------------------------------===//

// A private header of lib/: llvm-header-guard derives the guard it wants
// from the absolute path when the path has no include/ directory.
#ifndef FP_CODEGEN_LIB_LAYEREMITTER_H // NOLINT(llvm-header-guard)
#define FP_CODEGEN_LIB_LAYEREMITTER_H

#include "fp/Codegen/CodeWriter.h"
#include "fp/Codegen/KernelEmitter.h"
#include "fp/Codegen/LayerPlan.h"
#include "fp/Dialect/FpOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::fp::codegen {

/// The kernels' function objects one translation unit defines, by their
/// text. Kernels that would be written alike are one function object,
/// compiled once: the forward's step after the solve repeats its loop's
/// kernel, the chunked forward and the split schedule repeat many of the
/// fused schedule's kernels, and the split schedule's backward is mostly
/// the fused one's.
class KernelDefinitions {
public:
  /// The qualified name of the function object defined as `text` (its
  /// definition without its name), or null.
  const std::string *find(StringRef text) const {
    auto it = byText.find(text);
    return it == byText.end() ? nullptr : &it->second;
  }
  void add(StringRef text, std::string qualifiedName) {
    byText.try_emplace(text, std::move(qualifiedName));
  }

private:
  llvm::StringMap<std::string> byText;
};

/// Emits the forward, or the derived backward, of one layer.
class LayerEmitter {
public:
  /// `scope` is the namespace the function is emitted in ("layer_x::cuda"),
  /// where `definitions` records the kernels it defines.
  LayerEmitter(CodeWriter &w, const LayerPlan &plan,
               KernelDefinitions &definitions, StringRef scope)
      : w(w), plan(plan), definitions(definitions), scope(scope) {}

  /// Emits `template <typename Real> <signature> { ... }`.
  LogicalResult emitFunction(StringRef signature);

  /// After emitFunction, on CUDA: emits `template <typename Real> int64_t
  /// sampleChunks(int64_t B, int64_t T)`, the most chunks of a sample's
  /// tokens any of the function's sample kernels needs to fill the device
  /// at a call shape (fp::cuda::sampleChunks).
  void emitSampleChunks();

private:
  CodeWriter &w;
  const LayerPlan &plan;
  KernelDefinitions &definitions;
  std::string scope;
  /// Expressions for index values (B, T or a number).
  llvm::DenseMap<Value, std::string> indices;
  /// Expressions for scalar float values.
  llvm::DenseMap<Value, std::string> scalars;
  /// The emitted function object of every fp.kernel.
  llvm::DenseMap<Operation *, KernelLaunch> kernels;
  int64_t nextId = 0;
  /// The C++ object of the layer's solver (LayerPlan allows one).
  std::string solverName;

  std::string name(Value value) const;
  const Shape &shape(Value value) const { return plan.shape(value); }
  std::string rows(Value value) const {
    return shape(value).product(0, shape(value).rank() - 1);
  }
  int64_t width(Value value) const { return shape(value).extents.back().size; }
  std::string uniqueName(StringRef stem) {
    return (stem + llvm::Twine(nextId++)).str();
  }
  std::string shapeLiteral(const Shape &s) const;

  LogicalResult emitKernel(KernelOp kernel, StringRef name);
  LogicalResult emitBlock(Block &block);
  LogicalResult emitOp(Operation *op);
  // The printers of emitOp, one per op kind.
  LogicalResult print(LinearOp linear);
  LogicalResult print(WeightNormOp norm);
  LogicalResult print(WeightNormGradOp grad);
  LogicalResult print(SliceOp slice);
  LogicalResult print(ConcatOp concat);
  LogicalResult print(BroadcastOp broadcast);
  LogicalResult print(ReduceSumOp reduce);
  LogicalResult print(ReduceMaxOp reduce);
  LogicalResult print(ShiftOp shift);
  LogicalResult print(ScanOp scan);
  LogicalResult print(SelectiveScanOp scan);
  LogicalResult print(CausalConvOp conv);
  LogicalResult print(ChunkShiftOp shift);
  LogicalResult print(ChunkScanOp scan);
  LogicalResult print(ChunkSelectiveScanOp scan);
  LogicalResult print(ChunkCausalConvOp conv);
  LogicalResult print(L2NormOp norm);
  LogicalResult print(LayerNormOp norm);
  LogicalResult print(RMSNormOp norm);
  LogicalResult print(MatmulOp matmul);
  LogicalResult print(TriuOp triu);
  LogicalResult print(MatrixExpOp exp);
  LogicalResult print(tensor::SplatOp splat);
  LogicalResult print(KernelOp kernel);
  LogicalResult print(SolverInitOp init);
  LogicalResult print(SolverRelaxOp relax);
  LogicalResult print(SolverUpdateOp);
  LogicalResult print(SolverIterationsOp);
  LogicalResult print(TransposeOp transpose);
  LogicalResult print(WeightGradOp grad);
  LogicalResult print(TriuPackOp pack);
  LogicalResult print(L2NormGradOp grad);
  LogicalResult print(ReduceMaxGradOp grad);
  LogicalResult print(SelectiveScanGradOp grad);
  LogicalResult print(CausalConvGradOp grad);
  LogicalResult emitElementwise(Operation *op);
  LogicalResult emitConstant(arith::ConstantOp op);
  LogicalResult emitLoop(scf::WhileOp loop);
  LogicalResult emitReduce(Operation *op, Value input, ArrayRef<int64_t> dims,
                           bool isSum);
  LogicalResult emitReturn(func::ReturnOp ret);
};

} // namespace mlir::fp::codegen

#endif // FP_CODEGEN_LIB_LAYEREMITTER_H
