//===- HostEmitter.h - Host C++ for compiled model libraries ----*- C++ -*-===//
//
// Emits the host C++ translation unit of a model library from the lowered
// fp IR: one forward per layer over the kernels of fp/Runtime/Kernels/
// Host.h, the entry points of the model ABI and the manifest. The emitter
// reads the IR and never changes it.
//
//===----------------------------------------------------------------------===//

#ifndef FP_CODEGEN_HOSTEMITTER_H
#define FP_CODEGEN_HOSTEMITTER_H

#include "fp/Codegen/KernelEmitter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::fp::codegen {

/// What an emitted library records about its origin and contents.
struct LibraryInfo {
  std::string generator = "fpc 0.1.0";
  /// The DSL file compiled, as given on the command line.
  std::string source;
  /// Targets compiled into the library ("cpu", "cuda").
  SmallVector<std::string> targets = {"cpu"};
  /// Element types every forward and backward is instantiated for ("f32",
  /// "f64", "bf16"), in this order.
  SmallVector<std::string> dtypes = {"f32", "f64", "bf16"};
  /// Whether the CUDA unit computes e^x in single precision with CUDA's
  /// expf (Common.h) rather than the host's polynomial (`fpc
  /// --no-cuda-expf`, which defines FP_DEVICE_HOST_EXP in the unit).
  bool cudaExpf = true;
  /// What the layers' kernels run as compiled: "fused" (scans inside the
  /// fused kernels), "split" (`--no-fuse-scans`) or "unfused" (`--no-fuse`).
  std::string schedule = "fused";
  /// The same layers compiled with their scans out of the fused kernels
  /// (`--no-fuse-scans`), or null. With the "cuda" target the library holds
  /// them as each layer's second CUDA schedule, which a call takes where the
  /// fused one would run its samples in chunks (HostEntry.h, SplitSchedule).
  ModuleOp splitModule = nullptr;
};

/// The element types a library can be compiled for, in manifest spelling.
ArrayRef<StringRef> knownDTypes();

/// Writes the host translation unit of `module` to `os`: the forward of
/// every layer when `info.targets` has "cpu", and always the ABI entry
/// points, which call the CUDA unit's forwards when it has "cuda".
LogicalResult emitHostSource(ModuleOp module, const LibraryInfo &info,
                             raw_ostream &os);

/// Writes the CUDA translation unit of `module` to `os`: the forward of every
/// layer over the kernels of fp/Runtime/Kernels/Device.cuh. The forward body
/// is the host unit's, text for text, with the other kernel namespace.
LogicalResult emitDeviceSource(ModuleOp module, const LibraryInfo &info,
                               raw_ostream &os);

/// The macros that select the parts of the CUDA unit, one per element type
/// `info` lists (FP_CUDA_PART_F32 for "f32"), in knownDTypes() order. fpc
/// compiles the unit once per part, defining its macro, and each
/// compilation instantiates that type's entry points: the parts compile in
/// parallel and share no kernel, so nothing compiles twice. Compiled with
/// none of them defined, the unit instantiates every element type.
SmallVector<std::string> cudaParts(const LibraryInfo &info);

/// Registers the `--fp-to-host` and `--fp-to-cuda` translations.
void registerHostTranslation();

} // namespace mlir::fp::codegen

#endif // FP_CODEGEN_HOSTEMITTER_H
