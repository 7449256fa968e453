//===- LayerPlan.h - Shapes, parameters and buffers of a layer --*- C++ -*-===//
//
// The analysis both emitters share. For one layer function of the lowered
// IR it resolves every tensor's shape in terms of the call's batch B and
// length T, lists the layer's parameters in manifest order, finds its
// fixed-point loop, and reads the workspace that fp-plan-buffers planned
// (fp.workspace, fp.slots, fp.iterate_slots), checking that every buffer
// holds its values. It never mutates the IR; what it cannot handle it
// reports with a located "cannot emit" error.
//
//===----------------------------------------------------------------------===//

#ifndef FP_CODEGEN_LAYERPLAN_H
#define FP_CODEGEN_LAYERPLAN_H

#include "fp/Dialect/FpOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::fp::codegen {

/// One extent of a resolved shape: a static size, the batch B or the
/// sequence length T.
struct Extent {
  enum Kind { Static, Batch, Steps } kind = Static;
  int64_t size = 0;

  static Extent fixed(int64_t size) { return {Static, size}; }
  bool operator==(const Extent &other) const {
    return kind == other.kind && (kind != Static || size == other.size);
  }
};

/// A resolved shape: B and T appear only as the leading extents.
struct Shape {
  llvm::SmallVector<Extent, 4> extents;

  int64_t rank() const { return extents.size(); }
  bool perBatch() const;
  bool perStep() const;
  /// The product of the static extents.
  int64_t staticElements() const;
  /// The product of extents [from, to) as a C++ expression over B and T.
  std::string product(int64_t from, int64_t to) const;
  std::string numElements() const { return product(0, rank()); }
  /// Elements per token: the product of the extents after B and T.
  std::string tokenSize() const;
};

/// A layer parameter as the manifest lists it.
struct ParamInfo {
  std::string name;
  /// The first fp.param of this name (an op handle: mutable so that a
  /// const plan can still query it).
  mutable ParamOp op;
  llvm::SmallVector<int64_t> shape;
};

/// Where a value's data lives.
struct Storage {
  enum Kind {
    Input,      ///< the layer input
    Param,      ///< params[index]
    Buffer,     ///< workspace slot `index`
    Alias,      ///< the storage of `aliasOf` (fp.reshape, loop values)
    View,       ///< each row `index` elements into the row of `aliasOf`,
                ///< whose row stride it keeps (an fp.slice read in place)
    Iterations, ///< per-sample counts of a solve; no data
    Saved,      ///< a backward's saved value `index` (the forward's
                ///< fp.saved result of that rank)
    GradOutput, ///< a backward's cotangent of the layer output
    StateIn     ///< a chunked forward's state_in[index]
  } kind = Buffer;
  int64_t index = -1;
  Value aliasOf;
};

/// A workspace slot: `elements` scalars per (B if perBatch) per (T if
/// perStep). A slot with `result >= 0` holds only the function's result of
/// that index, in the caller's memory for it: the output (a backward's
/// input cotangent) for result 0, which then takes no workspace, and the
/// `saved` area for a saved result when the call has one.
struct BufferSlot {
  int64_t elements = 0;
  bool perBatch = false;
  bool perStep = false;
  int64_t result = -1;
};

/// The plan of one layer function.
class LayerPlan {
public:
  /// Analyses `layer`; emits located errors and fails on IR the emitters
  /// cannot handle.
  static FailureOr<LayerPlan> build(func::FuncOp layer);
  /// Analyses the backward function of the layer planned as `forward`.
  static FailureOr<LayerPlan> buildBackward(func::FuncOp backward,
                                            const LayerPlan &forward);
  /// Analyses the chunked form (fp-derive-chunked) of the layer planned as
  /// `forward`.
  static FailureOr<LayerPlan> buildChunk(func::FuncOp chunk,
                                         const LayerPlan &forward);

  /// Op handles are mutable so that const plans can query them.
  mutable func::FuncOp layer;
  llvm::SmallVector<ParamInfo> params;
  llvm::SmallVector<BufferSlot> slots;
  /// The solver of the layer's fixed-point loop (lowered by
  /// fp-lower-fixed-point), if it has one.
  mutable SolverInitOp solver;
  /// That loop.
  mutable scf::WhileOp loop;
  /// The values the forward saves for the backward (its results marked
  /// fp.saved), in order, with their buffers in the `saved` area.
  llvm::SmallVector<BufferSlot> saved;
  /// For a backward function (fp.backward_of): the parameter index (in the
  /// forward's order) of each result after the input's cotangent.
  llvm::SmallVector<int64_t> gradientParams;
  bool isBackward = false;
  /// For a chunked forward: each state's name (fp.state) and shape; the
  /// states are its arguments after the input and its last results.
  struct State {
    std::string name;
    Shape shape;
  };
  llvm::SmallVector<State> states;
  bool isChunk = false;
  /// The plan of the layer's derived backward, if it has one.
  std::shared_ptr<LayerPlan> backward;
  /// The plan of the layer's chunked form, if it has one.
  std::shared_ptr<LayerPlan> chunk;
  int64_t dModel = 0;

  const Shape &shape(Value value) const { return shapes.find(value)->second; }
  /// The storage of `value` after following aliases.
  const Storage &storage(Value value) const;
  /// The elements between the starts of consecutive rows (last-dimension
  /// vectors) of `value`: its width, or for a view its input's.
  int64_t rowStride(Value value) const;
  /// The parameter index of an fp.param.
  int64_t paramIndex(ParamOp op) const;
  /// The position in `saved` of the forward's result `index`, which must be
  /// marked fp.saved.
  int64_t savedIndex(unsigned result) const;
  /// The C++ name of the layer's solver settings in emitted code.
  const char *solverSettingsName() const {
    return isBackward ? "kBackwardSolver"
           : isChunk  ? "kChunkSolver"
                      : "kSolver";
  }
  /// Whether function result `index` is computed in the caller's memory (in
  /// a slot whose `result` it is) rather than copied there.
  bool computedInPlace(unsigned result) const;

private:
  llvm::DenseMap<Value, Shape> shapes;
  llvm::DenseMap<Value, Storage> storages;
  llvm::StringMap<int64_t> paramIndices;

  LogicalResult resolveShapes();
  LogicalResult assignStorage();
  LogicalResult collectParams();
};

/// Plans every layer function (those carrying `fp.layer`) of `module`, in
/// order; fails when there is none or one cannot be emitted.
FailureOr<std::vector<LayerPlan>> planLayers(ModuleOp module);

/// The fp.solver_relax that `update` ends a step with in one launch: the
/// op right before it, when that relaxes an iterate of the same solver.
/// Null when the update is a launch of its own.
SolverRelaxOp relaxEndingStep(SolverUpdateOp update);
/// Whether `relax` and the fp.solver_update after it are one launch.
bool endsStep(SolverRelaxOp relax);

} // namespace mlir::fp::codegen

#endif // FP_CODEGEN_LAYERPLAN_H
