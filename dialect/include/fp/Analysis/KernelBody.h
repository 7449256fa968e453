//===- KernelBody.h - What an fp.kernel's body ops are ----------*- C++ -*-===//
//
// Structural queries on the body of an fp.kernel that the kernel schedule
// (fp-schedule-kernels) and the kernel emitter both ask: the shape a token
// sees, which ops are views of their input, which compute no tensor, and
// where a selective scan keeps its state on CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef FP_ANALYSIS_KERNELBODY_H
#define FP_ANALYSIS_KERNELBODY_H

#include "fp/Dialect/FpOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Support/LLVM.h"

#include <optional>

namespace mlir::fp {

/// Threads of the block that computes a fused kernel's token on CUDA
/// (fp::cuda::kTeamSize), and the most selective-scan state values one of
/// them keeps in registers: 4 channels of 16 states at 1024 channels, 6 at
/// 1536. A larger state stays in memory.
constexpr int64_t kDeviceTeamSize = 256;
constexpr int64_t kMaxScanRegisters = 128;

/// Members of a CUDA block's group (a warp), and the passes over a row's
/// elements up to which fp::fused::forEachRow gives the row to one group
/// (fp::fused::kShortRowPasses): a row op on a longer single row is
/// computed by the whole team, each member its own elements.
constexpr int64_t kDeviceGroupSize = 32;
constexpr int64_t kShortRowPasses = 4;

/// The part of a tensor type one token sees: the dimensions after batch and
/// time for per-token values, all of them for uniform ones.
struct TokenShape {
  SmallVector<int64_t> dims;
  bool perToken = false;

  explicit TokenShape(Type type);
  int64_t rank() const { return dims.size(); }
  int64_t elements() const;
  int64_t width() const { return dims.empty() ? 1 : dims.back(); }
  int64_t rows() const { return elements() / std::max<int64_t>(width(), 1); }
};

/// Whether a selective scan's state lives in registers on CUDA.
bool scanStateInRegisters(SelectiveScanOp scan);

/// Whether `scan` reads its state matrix transposed: its A is the
/// fp.transpose of a kernel input holding Aᵀ (fp-transpose-scan-a), which
/// the scan reads as it lies.
bool readsTransposedMatrix(SelectiveScanOp scan);

/// Whether `op` is a view of its input, with its input's storage: a
/// reshape, a slice of one row computed in the body (a slice of a kernel
/// input is copied, so that an element loop reads every input at its own
/// element), or the transpose of Aᵀ that selective scans read as it lies.
bool isView(Operation *op);

/// The value whose storage `value` uses: itself, or the source of the views
/// it is reached through.
Value storageRoot(Value value);

/// Whether `op` computes no tensor: the extents and scalars a body's splats
/// are built from (tensor.dim, arith.constant), which get no storage and
/// emit nothing of their own.
bool computesNoTensor(Operation *op);

/// Whether `op` is same-shape elementwise arithmetic (arith, math, and
/// fp.silu, fp.sigmoid, fp.softplus) that a kernel computes element by
/// element.
bool isElementwise(Operation *op);

/// The value of a float constant or of a splat dense float constant: the
/// literal it was written as (`fp.literal`, exact in f64) where it has one.
std::optional<double> splatLiteral(arith::ConstantOp op);

/// Whether `op` sums a value of one row (fp.reduce_sum over its last
/// dimension) into one element.
bool isRowSumToScalar(Operation *op);

/// The scratch `op` uses while it runs: for a matrix product with a
/// transposed right operand, fp::fused::stagingSize's room for a padded
/// copy of it, k × (n rounded up to odd) per matrix, as many matrices as
/// fit in 64 × 65 elements (a 64 × 64 operand's padded copy).
int64_t temporaryElements(Operation *op);

} // namespace mlir::fp

#endif // FP_ANALYSIS_KERNELBODY_H
