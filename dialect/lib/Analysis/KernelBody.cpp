//===- KernelBody.cpp - What an fp.kernel's body ops are ------------------===//
//
// Structural queries on kernel bodies shared by fp-schedule-kernels and the
// kernel emitter.
//
//===----------------------------------------------------------------------===//

#include "fp/Analysis/KernelBody.h"

#include "fp/Dialect/FpDialect.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::fp;

TokenShape::TokenShape(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  ArrayRef<int64_t> shape = tensor.getShape();
  perToken =
      tensor.getRank() >= 2 && tensor.isDynamicDim(0) && tensor.isDynamicDim(1);
  dims.assign(perToken ? shape.drop_front(2) : shape);
}

int64_t TokenShape::elements() const {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

bool mlir::fp::scanStateInRegisters(SelectiveScanOp scan) {
  TokenShape a(scan.getA().getType());
  int64_t channels = a.dims[0], stateSize = a.dims[1];
  int64_t perThread = (channels + kDeviceTeamSize - 1) / kDeviceTeamSize;
  return perThread * stateSize <= kMaxScanRegisters;
}

bool mlir::fp::readsTransposedMatrix(SelectiveScanOp scan) {
  auto transpose = scan.getA().getDefiningOp<TransposeOp>();
  return transpose && isa<BlockArgument>(transpose.getInput()) &&
         llvm::all_of(transpose->getUses(), [](OpOperand &use) {
           auto reader = dyn_cast<SelectiveScanOp>(use.getOwner());
           return reader && use.get() == reader.getA();
         });
}

/// Whether `slice` is a view of its input: a range of columns of a single
/// row, which lie consecutively in the row's storage, where that row is
/// computed in the body (scratch, or a result).
static bool isSliceView(SliceOp slice) {
  if (TokenShape(slice.getInput().getType()).rows() != 1)
    return false;
  Value source = slice.getInput();
  while (Operation *def = source.getDefiningOp()) {
    if (!isView(def))
      return true;
    source = def->getOperand(0);
  }
  return false;
}

bool mlir::fp::isView(Operation *op) {
  if (isa<ReshapeOp>(op))
    return true;
  if (auto slice = dyn_cast<SliceOp>(op))
    return isSliceView(slice);
  auto transpose = dyn_cast<TransposeOp>(op);
  return transpose && !transpose->use_empty() &&
         llvm::all_of(transpose->getUsers(), [](Operation *user) {
           auto scan = dyn_cast<SelectiveScanOp>(user);
           return scan && readsTransposedMatrix(scan);
         });
}

Value mlir::fp::storageRoot(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (!isView(def))
      break;
    value = def->getOperand(0);
  }
  return value;
}

bool mlir::fp::computesNoTensor(Operation *op) {
  return llvm::none_of(op->getResultTypes(),
                       [](Type type) { return isa<RankedTensorType>(type); });
}

bool mlir::fp::isElementwise(Operation *op) {
  return isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
             arith::MaximumFOp, arith::MinimumFOp, arith::NegFOp, math::ExpOp,
             math::LogOp, math::SqrtOp, math::TanhOp, math::AbsFOp, SiluOp,
             SigmoidOp, SoftplusOp>(op);
}

std::optional<double> mlir::fp::splatLiteral(arith::ConstantOp op) {
  std::optional<double> value;
  if (auto scalar = dyn_cast<FloatAttr>(op.getValue()))
    value = scalar.getValueAsDouble();
  else if (auto dense = dyn_cast<DenseFPElementsAttr>(op.getValue());
           dense && dense.isSplat())
    value = dense.getSplatValue<APFloat>().convertToDouble();
  if (!value)
    return std::nullopt;
  if (auto literal =
          op->getAttrOfType<FloatAttr>(FPDialect::getLiteralAttrName()))
    return literal.getValueAsDouble();
  return value;
}

bool mlir::fp::isRowSumToScalar(Operation *op) {
  auto reduce = dyn_cast<ReduceSumOp>(op);
  if (!reduce)
    return false;
  TokenShape in(reduce.getInput().getType());
  ArrayRef<int64_t> dims = reduce.getDims();
  return in.perToken && in.rank() >= 1 && in.rows() == 1 && dims.size() == 1 &&
         dims[0] == in.rank() + 1 &&
         TokenShape(reduce.getType()).elements() == 1;
}

int64_t mlir::fp::temporaryElements(Operation *op) {
  constexpr int64_t kMaxStagingElements = 64 * 65;
  auto matmul = dyn_cast<MatmulOp>(op);
  if (!matmul || !matmul.getTransposeRhs())
    return 0;
  TokenShape lhs(matmul.getLhs().getType()), rhs(matmul.getRhs().getType());
  if (lhs.rank() < 2 || rhs.rank() < 2)
    return 0;
  int64_t n = rhs.dims[rhs.rank() - 2], k = rhs.dims.back();
  int64_t batch = lhs.elements() / (lhs.dims[lhs.rank() - 2] * lhs.dims.back());
  int64_t one = k * (n | 1);
  return std::min(batch, kMaxStagingElements / one) * one;
}
