//===- BpeTokenizer.h - GPT-2's byte-level BPE from user files --*- C++ -*-===//
//
// GPT-2's tokenizer: text split by GPT-2's pre-tokenizer pattern
//
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// and each piece's UTF-8 bytes merged by byte-pair encoding. The vocabulary
// and the merges come from files the user supplies (none ships with fpc):
// a directory holding Hugging Face's `vocab.json` and `merges.txt`, or
// OpenAI's `encoder.json` and `vocab.bpe` (the same formats). The end of
// text token `<|endoftext|>` must be in the vocabulary; it is the EOS that
// joins documents.
//
// Encoding is lossless for any bytes: a byte that is not part of valid UTF-8
// is a character of its own, in none of the pattern's classes. \s is
// Unicode's White_Space, \p{L} and \p{N} are the general categories L* and
// N* of the Unicode version UnicodeClasses.inc names.
//
// Every problem with the files is a DataError naming the file, and the line
// where there is one.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TASKS_BPETOKENIZER_H
#define FP_RUNTIME_TASKS_BPETOKENIZER_H

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fp::rt {

/// GPT-2's byte-level BPE over a vocabulary and merges read from files;
/// immutable once read and safe to share between threads.
class BpeTokenizer {
public:
  /// Reads the vocabulary and merges in `directory`. Throws DataError.
  static std::shared_ptr<const BpeTokenizer>
  open(const std::filesystem::path &directory);

  /// `text` cut by GPT-2's pre-tokenizer pattern into the pieces that are
  /// encoded each on its own; together they are `text`.
  static std::vector<std::string_view> split(std::string_view text);

  /// Pieces encoded before, kept by one caller (a thread's): text repeats
  /// its words. Emptied when it holds kLimit pieces, so it stays small.
  class Cache {
  public:
    static constexpr size_t kLimit = size_t(1) << 18;

  private:
    friend class BpeTokenizer;
    std::unordered_map<std::string, std::vector<int64_t>> pieces;
  };

  /// The ids of `text`, appended to `ids`; `cache` keeps its pieces' ids
  /// for the next call.
  void encode(std::string_view text, std::vector<int64_t> &ids,
              Cache &cache) const;
  void encode(std::string_view text, std::vector<int64_t> &ids) const {
    Cache cache;
    encode(text, ids, cache);
  }
  std::vector<int64_t> encode(std::string_view text) const {
    std::vector<int64_t> ids;
    encode(text, ids);
    return ids;
  }
  /// The bytes `id` stands for (`<|endoftext|>` for the EOS); empty for an
  /// id no token has.
  const std::string &bytes(int64_t id) const;

  /// One more than the largest id.
  int64_t vocabSize() const { return int64_t(tokens.size()); }
  int64_t eos() const { return eosId; }
  /// The directory read and the files in it, for messages and logs.
  const std::filesystem::path &directory() const { return dir; }
  const std::filesystem::path &vocabularyFile() const { return vocabFile; }
  const std::filesystem::path &mergesFile() const { return mergeFile; }
  /// Merges read.
  int64_t merges() const { return int64_t(mergeRanks.size()); }

private:
  BpeTokenizer() = default;
  void readVocabulary();
  void readMerges();
  /// The ids of one pre-tokenized piece, appended to `ids`.
  void encodePiece(std::string_view piece, std::vector<int64_t> &ids,
                   Cache &cache) const;

  std::filesystem::path dir, vocabFile, mergeFile;
  /// Each id's bytes; the vocabulary's keys are byte strings written in
  /// GPT-2's printable alphabet, stored here as the bytes they stand for.
  std::vector<std::string> tokens;
  /// The id of each token's bytes (the EOS's left out: text never makes
  /// it), and of each single byte.
  std::unordered_map<std::string, int64_t> idOfBytes;
  int64_t byteIds[256] = {};
  int64_t eosId = -1;
  /// A merge's rank and the id it makes, by its ids' pair (left << 32 |
  /// right).
  struct Merge {
    int64_t rank, id;
  };
  std::unordered_map<uint64_t, Merge> mergeRanks;
};

} // namespace fp::rt

#endif // FP_RUNTIME_TASKS_BPETOKENIZER_H
