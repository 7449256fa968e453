//===- DataFiles.h - What the readers of data files share -------*- C++ -*-===//
//
// Private to lib/Tasks: a path as messages quote it, a check that it is a
// file, and a whole file read into memory, each problem a DataError naming
// the file.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_LIB_TASKS_DATAFILES_H // NOLINT(llvm-header-guard)
#define FP_RUNTIME_LIB_TASKS_DATAFILES_H

#include <filesystem>
#include <string>

namespace fp::rt::detail {

/// `path` as messages quote it: 'path'.
std::string quoted(const std::filesystem::path &path);

/// Throws DataError naming `path` when it is not a regular file ("no such
/// file", "not a regular file").
void requireRegularFile(const std::filesystem::path &path);

/// The bytes of `path`. Throws DataError naming it when it cannot be opened
/// or read.
std::string readWholeFile(const std::filesystem::path &path);

} // namespace fp::rt::detail

#endif // FP_RUNTIME_LIB_TASKS_DATAFILES_H
