//===- ModelLibrary.h - Load a compiled model.so ----------------*- C++ -*-===//
//
// ModelLibrary owns one dlopen()ed model library. Opening it checks that the
// file is an fpc model library speaking this runtime's ABI version, parses
// and validates its manifest, and resolves every entry point the manifest
// names, so that a successfully opened library can be called without further
// checks. Every failure is reported as a LoadError whose one-line message
// names the file and says what to do.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_MODELLIBRARY_H
#define FP_RUNTIME_MODELLIBRARY_H

#include "fp/Runtime/Manifest.h"
#include "fp/Runtime/ModelABI.h"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace fp::rt {

/// Thrown by ModelLibrary::open() when a library cannot be used.
class LoadError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The resolved entry points of one layer of a model library.
struct LayerEntryPoints {
  fp_buffer_sizes_fn bufferSizes = nullptr;
  fp_forward_fn forward = nullptr;
  fp_backward_fn backward = nullptr;
  /// Null where the library exports none.
  fp_schedule_fn schedule = nullptr;
  /// Null where the library has no chunked forward for the layer.
  fp_forward_chunk_fn forwardChunk = nullptr;
};

/// A loaded model library. Movable, not copyable; the library is dlclose()d
/// when the owning object is destroyed, which invalidates every function
/// pointer obtained from it.
class ModelLibrary {
public:
  /// Loads the model library at `path` (RTLD_NOW | RTLD_LOCAL). A path
  /// without a '/' is taken relative to the working directory, not searched
  /// for on the library path. Throws LoadError when the file is missing, is
  /// not a shared library, is not an fpc model library, was built for another
  /// ABI version, has an invalid manifest, or lacks an entry point.
  static ModelLibrary open(const std::string &path);

  ModelLibrary(ModelLibrary &&other) noexcept;
  ModelLibrary &operator=(ModelLibrary &&other) noexcept;
  ModelLibrary(const ModelLibrary &) = delete;
  ModelLibrary &operator=(const ModelLibrary &) = delete;
  ~ModelLibrary();

  /// The path the library was opened with.
  const std::string &path() const { return libPath; }
  /// The validated manifest.
  const Manifest &manifest() const { return libManifest; }

  /// The number of layer definitions, i.e. manifest().layers.size().
  size_t numLayers() const { return layerEntryPoints.size(); }
  /// The entry points of the layer at `index` in manifest().layers. Throws
  /// std::out_of_range for an index past the end.
  const LayerEntryPoints &entryPoints(size_t index) const;
  /// The entry points of the layer called `name`. Throws std::out_of_range
  /// when the manifest has no such layer.
  const LayerEntryPoints &entryPoints(std::string_view name) const;

  /// The message the library recorded for the calling thread's last failed
  /// call (fp_model_last_error()), or an empty string when there is none.
  std::string lastError() const;

private:
  ModelLibrary() = default;

  std::string libPath;
  void *handle = nullptr;
  Manifest libManifest;
  std::vector<LayerEntryPoints> layerEntryPoints;
  fp_last_error_fn lastErrorFn = nullptr;
};

} // namespace fp::rt

#endif // FP_RUNTIME_MODELLIBRARY_H
