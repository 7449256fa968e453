//===- TextDocuments.h - The documents of a text file, streamed -*- C++ -*-===//
//
// How `fp-train --task lm` and `fp-tokenize` read text: a file's documents,
// one at a time, so that a file larger than memory streams through. A file
// holds
//
//   * one document (the whole file), or, with a separator, the parts between
//     lines that hold exactly the separator (for example "%" in fortune
//     files);
//   * with a name ending in ".jsonl", one JSON object a line whose "text"
//     field is a document (what Hugging Face's `Dataset.to_json` writes, for
//     example of FineWeb).
//
// Empty documents are left out. Each document is then wrapped as
// `EOS ids EOS` (docs/spec.md §7.5) by appendDocumentIds().
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TASKS_TEXTDOCUMENTS_H
#define FP_RUNTIME_TASKS_TEXTDOCUMENTS_H

#include "fp/Runtime/Tasks/BpeTokenizer.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fp::rt {

/// The documents of one text file, read in order.
class TextDocuments {
public:
  /// Opens `path`. Throws DataError naming it: not a regular file, cannot be
  /// opened, or a separator given for JSON lines.
  TextDocuments(std::filesystem::path path, std::string separator);

  /// Whether `path` is read as JSON lines (its name ends in ".jsonl").
  static bool isJsonLines(const std::filesystem::path &path);

  /// Reads the next non-empty document into `document`; false at the end of
  /// the file. Throws DataError naming the file, and the line for JSON
  /// lines: a read error, a line that is not a JSON object with a string
  /// "text".
  bool next(std::string &document);

  /// Bytes of the file read so far.
  uint64_t bytesRead() const { return consumed; }
  const std::filesystem::path &path() const { return file; }

private:
  bool nextWhole(std::string &document);
  bool nextSeparated(std::string &document);
  bool nextJsonLine(std::string &document);
  /// The next line without its '\n' into `line`; false at the end.
  /// `newline` says whether a '\n' ended it.
  bool readLine(std::string &line, bool &newline);

  std::filesystem::path file;
  std::string separator;
  bool jsonLines = false;
  std::ifstream in;
  bool done = false;
  uint64_t consumed = 0;
  int64_t lineNumber = 0;
  std::string line;
};

/// Appends `EOS ids EOS` for `document` to `ids`: its bytes (the byte-level
/// tokenizer, EOS kByteEos) where `bpe` is null, else its BPE ids (EOS the
/// tokenizer's), with `cache` when given.
void appendDocumentIds(std::string_view document, const BpeTokenizer *bpe,
                       BpeTokenizer::Cache *cache, std::vector<int64_t> &ids);

} // namespace fp::rt

#endif // FP_RUNTIME_TASKS_TEXTDOCUMENTS_H
