//===- ModelLibrary.cpp - Load a compiled model.so --------------*- C++ -*-===//
//
// Opens a model library with dlopen() and checks it step by step, each step
// with its own message: the file exists, it is whole (an ELF file cut short
// would fault inside dlopen() or later), it is a loadable shared library, it
// exports fp_model_abi_version, the version matches FP_MODEL_ABI_VERSION, the
// manifest parses and agrees with the symbol, and every entry point the
// manifest names resolves. The handle is owned from the moment dlopen()
// succeeds, so a failure at any later step closes the library again.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/ModelLibrary.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>
#include <vector>

#include <dlfcn.h>
#include <elf.h>
#include <sys/stat.h>

using namespace fp::rt;

namespace {

/// The pending dlerror() text, or a placeholder when there is none.
std::string takeDlError() {
  const char *text = ::dlerror();
  return text ? text : "unknown dynamic loader error";
}

/// Resolves `name` in `handle` as a function pointer of type `Fn`, or null.
template <typename Fn> Fn lookupSymbol(void *handle, const char *name) {
  ::dlerror();
  return reinterpret_cast<Fn>(::dlsym(handle, name));
}

/// The "(layer 'L', forward)" part of a missing entry-point message.
std::string entryPointContext(const LayerInfo &layer, const char *role) {
  return "(layer '" + layer.name + "', " + role + ")";
}

/// Why an ELF file of `size` bytes at `path` cannot be mapped whole, or ""
/// when every part the loader maps lies within it (or it is no 64-bit ELF
/// file, which dlopen() then reports). The loader maps the file's segments
/// by their offsets; a segment past the end of a truncated file is mapped
/// all the same and faults (SIGBUS) when first touched, so a library cut
/// short (a copy interrupted, a full disk) must be refused before dlopen().
std::string truncation(const std::string &path, uint64_t size) {
  std::ifstream file(path, std::ios::binary);
  Elf64_Ehdr header{};
  if (!file.read(reinterpret_cast<char *>(&header), sizeof(header)))
    return std::memcmp(header.e_ident, ELFMAG, SELFMAG) == 0 &&
                   file.gcount() >= SELFMAG
               ? "its ELF header is cut short"
               : "";
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64)
    return "";
  auto ends = [&](uint64_t offset, uint64_t count, uint64_t entry) {
    return offset + count * entry;
  };
  if (ends(header.e_phoff, header.e_phnum, header.e_phentsize) > size)
    return "its program headers lie past its end";
  if (header.e_shnum != 0 &&
      ends(header.e_shoff, header.e_shnum, header.e_shentsize) > size)
    return "its section headers lie past its end";
  if (header.e_phentsize != sizeof(Elf64_Phdr))
    return "";
  std::vector<Elf64_Phdr> segments(header.e_phnum);
  file.seekg(static_cast<std::streamoff>(header.e_phoff));
  if (!file.read(
          reinterpret_cast<char *>(segments.data()),
          static_cast<std::streamsize>(segments.size() * sizeof(Elf64_Phdr))))
    return "its program headers cannot be read";
  for (const Elf64_Phdr &segment : segments)
    if (segment.p_type == PT_LOAD && segment.p_offset + segment.p_filesz > size)
      return "a segment lies past its end";
  return "";
}

} // namespace

ModelLibrary ModelLibrary::open(const std::string &path) {
  const std::string quoted = "'" + path + "'";

  // Check the file first: dlopen()'s message for a missing file is cluttered,
  // and a name without a '/' would make it search the library path.
  struct stat status;
  if (::stat(path.c_str(), &status) != 0) {
    int error = errno;
    if (error == ENOENT || error == ENOTDIR)
      throw LoadError("cannot load model library " + quoted +
                      ": no such file; check the path or build the library "
                      "with fpc");
    throw LoadError("cannot load model library " + quoted + ": " +
                    std::strerror(error));
  }
  if (S_ISDIR(status.st_mode))
    throw LoadError("cannot load model library " + quoted +
                    ": it is a directory; pass the model .so file itself");

  if (std::string problem =
          truncation(path, static_cast<uint64_t>(status.st_size));
      !problem.empty())
    throw LoadError("cannot load model library " + quoted +
                    ": it is truncated or damaged (" + problem + ", at " +
                    std::to_string(status.st_size) +
                    " bytes); rebuild it with fpc");

  const std::string dlPath =
      path.find('/') == std::string::npos ? "./" + path : path;
  ::dlerror();
  void *handle = ::dlopen(dlPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    // glibc prefixes errors about the file itself with its name; errors about
    // a dependency name the dependency instead.
    std::string reason = takeDlError();
    std::string prefix = dlPath + ": ";
    bool aboutFile = reason.rfind(prefix, 0) == 0;
    if (aboutFile)
      reason.erase(0, prefix.size());
    const char *hint = "; pass a model library built by fpc";
    if (!aboutFile)
      hint = "; install the missing dependency or add its directory to "
             "LD_LIBRARY_PATH";
    else if (reason.find("undefined symbol") != std::string::npos)
      hint = "; rebuild it with fpc against the libraries installed here";
    throw LoadError(quoted + " is not a loadable shared library: " + reason +
                    hint);
  }

  // From here on `library` owns the handle and closes it if we throw.
  ModelLibrary library;
  library.libPath = path;
  library.handle = handle;

  auto abiVersionFn =
      lookupSymbol<fp_abi_version_fn>(handle, FP_SYMBOL_ABI_VERSION);
  if (!abiVersionFn)
    throw LoadError(quoted + " is not an fpc model library (no symbol '" +
                    FP_SYMBOL_ABI_VERSION +
                    "'); pass a model library built by fpc");
  uint32_t abiVersion = abiVersionFn();
  if (abiVersion != FP_MODEL_ABI_VERSION)
    throw LoadError(quoted + " was built for model ABI version " +
                    std::to_string(abiVersion) +
                    ", but this runtime speaks version " +
                    std::to_string(FP_MODEL_ABI_VERSION) +
                    "; recompile it with a matching fpc");

  auto requireSymbol = [&](const char *name) {
    void *symbol = lookupSymbol<void *>(handle, name);
    if (!symbol)
      throw LoadError(quoted + " lacks symbol '" + name +
                      "' required by model ABI version " +
                      std::to_string(FP_MODEL_ABI_VERSION) +
                      "; recompile it with fpc");
    return symbol;
  };

  auto manifestFn =
      reinterpret_cast<fp_manifest_fn>(requireSymbol(FP_SYMBOL_MANIFEST));
  auto invalidManifest = [&](const std::string &what) {
    return LoadError(quoted + " has an invalid manifest: " + what +
                     "; recompile it with fpc");
  };
  const char *manifestText = manifestFn();
  if (!manifestText)
    throw invalidManifest(std::string(FP_SYMBOL_MANIFEST) + "() returned NULL");
  // The compiled code holds the sizes of the manifest it was built with; an
  // edited manifest would have the runtime allocate for other ones.
  auto checksumFn = reinterpret_cast<fp_manifest_checksum_fn>(
      requireSymbol(FP_SYMBOL_MANIFEST_CHECKSUM));
  if (checksumFn() != fp_manifest_checksum(manifestText))
    throw invalidManifest(
        "it does not match the checksum compiled with it (the file was "
        "edited or damaged)");
  try {
    library.libManifest = parseManifest(manifestText);
  } catch (const ManifestError &error) {
    throw invalidManifest(error.what());
  }
  if (library.libManifest.abiVersion != abiVersion)
    throw invalidManifest("field 'abi_version' is " +
                          std::to_string(library.libManifest.abiVersion) +
                          ", but " + FP_SYMBOL_ABI_VERSION + "() returns " +
                          std::to_string(abiVersion));

  library.lastErrorFn =
      reinterpret_cast<fp_last_error_fn>(requireSymbol(FP_SYMBOL_LAST_ERROR));

  for (const LayerInfo &layer : library.libManifest.layers) {
    auto resolve = [&](const std::string &name, const char *role) {
      void *symbol = lookupSymbol<void *>(handle, name.c_str());
      if (!symbol)
        throw LoadError(quoted + " lacks entry point '" + name + "' " +
                        entryPointContext(layer, role) +
                        " named in its manifest; recompile it with fpc");
      return symbol;
    };
    LayerEntryPoints entryPoints;
    entryPoints.bufferSizes = reinterpret_cast<fp_buffer_sizes_fn>(
        resolve(layer.entryPoints.bufferSizes, "buffer_sizes"));
    entryPoints.forward = reinterpret_cast<fp_forward_fn>(
        resolve(layer.entryPoints.forward, "forward"));
    entryPoints.backward = reinterpret_cast<fp_backward_fn>(
        resolve(layer.entryPoints.backward, "backward"));
    if (!layer.entryPoints.schedule.empty())
      entryPoints.schedule = reinterpret_cast<fp_schedule_fn>(
          resolve(layer.entryPoints.schedule, "schedule"));
    if (layer.hasChunkedForward())
      entryPoints.forwardChunk = reinterpret_cast<fp_forward_chunk_fn>(
          resolve(layer.entryPoints.forwardChunk, "forward_chunk"));
    library.layerEntryPoints.push_back(entryPoints);
  }
  return library;
}

ModelLibrary::ModelLibrary(ModelLibrary &&other) noexcept
    : libPath(std::move(other.libPath)),
      handle(std::exchange(other.handle, nullptr)),
      libManifest(std::move(other.libManifest)),
      layerEntryPoints(std::move(other.layerEntryPoints)),
      lastErrorFn(std::exchange(other.lastErrorFn, nullptr)) {
  other.layerEntryPoints.clear();
}

ModelLibrary &ModelLibrary::operator=(ModelLibrary &&other) noexcept {
  if (this != &other) {
    ModelLibrary moved(std::move(other));
    std::swap(libPath, moved.libPath);
    std::swap(handle, moved.handle);
    std::swap(libManifest, moved.libManifest);
    std::swap(layerEntryPoints, moved.layerEntryPoints);
    std::swap(lastErrorFn, moved.lastErrorFn);
  } // `moved` now holds our old library and closes it.
  return *this;
}

ModelLibrary::~ModelLibrary() {
  if (handle)
    ::dlclose(handle);
}

const LayerEntryPoints &ModelLibrary::entryPoints(size_t index) const {
  if (index >= layerEntryPoints.size())
    throw std::out_of_range("model library '" + libPath + "' has " +
                            std::to_string(layerEntryPoints.size()) +
                            " layers, no layer " + std::to_string(index));
  return layerEntryPoints[index];
}

const LayerEntryPoints &ModelLibrary::entryPoints(std::string_view name) const {
  for (size_t i = 0, e = libManifest.layers.size(); i != e; ++i)
    if (libManifest.layers[i].name == name)
      return layerEntryPoints[i];
  throw std::out_of_range("model library '" + libPath + "' has no layer '" +
                          std::string(name) + "'");
}

std::string ModelLibrary::lastError() const {
  if (!lastErrorFn)
    return {};
  const char *text = lastErrorFn();
  return text ? text : "";
}
