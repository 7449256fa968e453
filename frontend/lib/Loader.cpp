//===- Loader.cpp - A .fp file and its imports ----------------------------===//
//
// Part of fpc.
//
//===----------------------------------------------------------------------===//

#include "Loader.h"

#include "fp/Frontend/Parser.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::fp::frontend;

namespace {

/// More nested imports than this are refused (a runaway generated chain).
constexpr unsigned kMaxImportDepth = 64;

class Loader {
public:
  Loader(const SourceLocator &locator, ArrayRef<std::string> includeDirs,
         LoadedSources &sources)
      : locator(locator), includeDirs(includeDirs), sources(sources) {}

  LogicalResult load(unsigned bufferId, StringRef canonicalPath);

private:
  /// The file `import` names, searched next to `importer` and then in the
  /// include directories; empty if none exists.
  std::string resolve(StringRef importer, StringRef path) const;

  const SourceLocator &locator;
  ArrayRef<std::string> includeDirs;
  LoadedSources &sources;
  /// Canonical paths of the files being loaded, outermost first.
  std::vector<std::string> stack;
  llvm::StringMap<bool> loaded;
};

} // namespace

static std::string canonicalise(StringRef path) {
  SmallString<256> real;
  if (llvm::sys::fs::real_path(path, real))
    return path.str();
  return std::string(real.str());
}

std::string Loader::resolve(StringRef importer, StringRef path) const {
  SmallVector<std::string> candidates;
  if (llvm::sys::path::is_absolute(path)) {
    candidates.push_back(path.str());
  } else {
    SmallString<256> local(llvm::sys::path::parent_path(importer));
    llvm::sys::path::append(local, path);
    candidates.push_back(std::string(local.str()));
    for (const std::string &dir : includeDirs) {
      SmallString<256> candidate(dir);
      llvm::sys::path::append(candidate, path);
      candidates.push_back(std::string(candidate.str()));
    }
  }
  for (const std::string &candidate : candidates)
    if (llvm::sys::fs::is_regular_file(candidate))
      return candidate;
  return {};
}

LogicalResult Loader::load(unsigned bufferId, StringRef canonicalPath) {
  auto file = std::make_unique<SourceFile>();
  LogicalResult result = parseSourceFile(locator, bufferId, *file);
  SourceFile &parsed = *file;
  sources.files.push_back(std::move(file));
  loaded[canonicalPath] = true;
  stack.push_back(canonicalPath.str());

  llvm::SourceMgr &sourceMgr = locator.getSourceMgr();
  for (const ImportDecl &import : parsed.imports) {
    std::string found = resolve(parsed.path, import.path);
    if (found.empty()) {
      auto diag = locator.emitError(import.loc)
                  << "cannot find imported file '" << import.path
                  << "' (searched next to '" << parsed.path << "'";
      for (const std::string &dir : includeDirs)
        diag << ", in '" << dir << "'";
      diag << ")";
      result = failure();
      continue;
    }
    std::string canonical = canonicalise(found);
    if (llvm::is_contained(stack, canonical)) {
      auto diag = locator.emitError(import.loc) << "import cycle: ";
      auto begin = llvm::find(stack, canonical);
      for (auto it = begin; it != stack.end(); ++it)
        diag << llvm::sys::path::filename(*it) << " -> ";
      diag << llvm::sys::path::filename(canonical);
      result = failure();
      continue;
    }
    if (loaded.count(canonical))
      continue;
    if (stack.size() >= kMaxImportDepth) {
      locator.emitError(import.loc)
          << "imports nested deeper than " << kMaxImportDepth << " files";
      result = failure();
      continue;
    }
    auto buffer = llvm::MemoryBuffer::getFile(found, /*IsText=*/true);
    if (!buffer) {
      locator.emitError(import.loc) << "cannot read imported file '" << found
                                    << "': " << buffer.getError().message();
      result = failure();
      continue;
    }
    unsigned importedId =
        sourceMgr.AddNewSourceBuffer(std::move(*buffer), import.loc);
    if (failed(load(importedId, canonical)))
      result = failure();
  }
  stack.pop_back();
  return result;
}

LogicalResult mlir::fp::frontend::loadSources(const SourceLocator &locator,
                                              unsigned mainBufferId,
                                              ArrayRef<std::string> includeDirs,
                                              LoadedSources &sources) {
  StringRef mainPath = locator.getSourceMgr()
                           .getMemoryBuffer(mainBufferId)
                           ->getBufferIdentifier();
  return Loader(locator, includeDirs, sources)
      .load(mainBufferId, canonicalise(mainPath));
}
