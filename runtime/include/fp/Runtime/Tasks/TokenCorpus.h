//===- TokenCorpus.h - Token streams for language modelling -----*- C++ -*-===//
//
// A corpus is one stream of token ids that language-model batches are cut
// from. It is read from
//
//   * a token file: flat little-endian uint16 or uint32 ids, either bare (the
//     layout of nanoGPT's train.bin / val.bin) or after llm.c's header of 256
//     int32 values (magic 20240520, version 1: uint16 ids; magic 20240801,
//     version 7: uint32 ids; then the token count). The file is memory-mapped.
//     A directory of train.bin and val.bin may hold a sidecar meta.json
//     (TokenDirectoryMeta, below) saying what the ids are; fp-tokenize
//     writes such directories from text.
//   * UTF-8 (or any) text, tokenised at load by the byte-level tokenizer
//     (ids 0-255 are bytes, 256 is EOS) or by GPT-2's BPE from files the
//     user supplies (BpeTokenizer.h). Documents (the whole file, the parts
//     between separator lines, or JSON lines' "text": TextDocuments.h) are
//     joined as `EOS text EOS`, as the reference wraps every document
//     (docs/spec.md §7.5).
//
// Every problem is a DataError naming the file: a missing or unreadable
// file, a size that is not a whole number of tokens, a header that does not
// match its size, a token id at or above the vocabulary, an empty corpus.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TASKS_TOKENCORPUS_H
#define FP_RUNTIME_TASKS_TOKENCORPUS_H

#include "fp/Runtime/Tasks/BpeTokenizer.h"

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fp::rt {

/// A problem with a data file; the message names the file.
class DataError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The byte-level tokenizer: bytes are their own ids, EOS follows them.
inline constexpr int64_t kByteEos = 256;
inline constexpr int64_t kByteVocabSize = 257;

/// The share of the data held out for validation when no validation file is
/// given: the end of the stream.
inline constexpr double kDefaultValidationFraction = 0.05;

/// How to read a corpus file.
struct CorpusOptions {
  enum class Format {
    /// A token file when the name ends in ".bin" (llm.c's header if it
    /// starts with one, else bare ids of `tokenBytes` bytes), else text.
    Auto,
    Tokens,
    Text,
  };
  Format format = Format::Auto;
  /// Bytes per id of a bare token file: 2 (uint16) or 4 (uint32). A file with
  /// llm.c's header says its own.
  int tokenBytes = 2;
  /// The vocabulary of a token file: every id must be below it. Text has
  /// its tokenizer's.
  int64_t vocabSize = 0;
  /// A token file of the byte-level tokenizer's ids (its directory's
  /// meta.json says so): the corpus is byteLevel(), of vocabulary 257.
  bool byteIds = false;
  /// Text: GPT-2's BPE; none: the byte-level tokenizer.
  std::shared_ptr<const BpeTokenizer> tokenizer;
  /// Text only: a line holding exactly this string ends a document (for
  /// example "%" in fortune files); empty: the whole file is one document.
  std::string documentSeparator;
  /// Text only: called after each file is tokenised, with its documents and
  /// ids (progress for long inputs).
  std::function<void(const std::filesystem::path &, int64_t documents,
                     int64_t ids)>
      onTextFile;
};

/// One stream of token ids, immutable once read; safe to share between
/// threads.
class TokenCorpus {
public:
  /// Reads `path` as `options` say. Throws DataError.
  static std::shared_ptr<const TokenCorpus>
  open(const std::filesystem::path &path, const CorpusOptions &options);
  /// Reads text files one after another into one stream, each file's
  /// documents as open() reads them. Throws DataError.
  static std::shared_ptr<const TokenCorpus>
  openText(const std::vector<std::filesystem::path> &paths,
           const CorpusOptions &options);

  /// Ids in the stream.
  int64_t size() const { return count; }
  int64_t vocabSize() const { return vocab; }
  /// What was read, for logs: "token file (llm.c header, uint16)",
  /// "text, byte-level (3 documents)", "text, GPT-2 BPE of 'dir' (3
  /// documents)".
  const std::string &description() const { return what; }
  /// The file read (the first, for several text files), and the name of all
  /// of them for messages: "'a.txt'" or "'a.txt' and 2 more files".
  const std::filesystem::path &path() const { return file; }
  const std::string &name() const { return shownName; }
  /// Whether the ids are bytes (text read by the byte-level tokenizer, or a
  /// token file of such ids).
  bool byteLevel() const { return isByteLevel; }
  /// The documents of text read; 0 for a token file.
  int64_t documents() const { return documentCount; }

  /// The id at `index` (0 <= index < size()).
  int64_t at(int64_t index) const;
  /// Ids [begin, begin + length) as an int64 tensor of shape [length].
  torch::Tensor slice(int64_t begin, int64_t length) const;

  ~TokenCorpus();
  TokenCorpus(const TokenCorpus &) = delete;
  TokenCorpus &operator=(const TokenCorpus &) = delete;

private:
  TokenCorpus() = default;
  void readTokenFile(const CorpusOptions &options);
  /// Appends the documents of `path` to `owned`; returns their count.
  int64_t readText(const std::filesystem::path &path,
                   const CorpusOptions &options);

  std::filesystem::path file;
  std::string shownName;
  bool isByteLevel = false;
  int64_t documentCount = 0;
  std::string what;
  int64_t vocab = 0, count = 0;
  int width = 2;
  /// The ids: into a mapping of the file (token files) or `owned` (text).
  const unsigned char *ids = nullptr;
  void *mapping = nullptr;
  size_t mappingBytes = 0;
  std::vector<uint16_t> owned;
};

/// A range [begin, end) of a corpus's ids and what to call it in messages
/// ("the training split of 'a.txt'").
struct CorpusSplit {
  std::shared_ptr<const TokenCorpus> corpus;
  int64_t begin = 0;
  int64_t end = 0;
  std::string name;

  /// All of `corpus`, called by its file name.
  static CorpusSplit whole(std::shared_ptr<const TokenCorpus> corpus);
  /// `corpus` as a training split and a validation split, the last
  /// heldOut(size, fraction) ids: what fp-train holds out when no
  /// validation file is given, and how fp-tokenize splits.
  static std::pair<CorpusSplit, CorpusSplit>
  holdOut(const std::shared_ptr<const TokenCorpus> &corpus, double fraction);
  /// The ids held out of a stream of `total`: ceil(fraction × total), at most
  /// `total` (0 < fraction < 1; throws std::invalid_argument otherwise).
  static int64_t heldOut(int64_t total, double fraction);
  int64_t size() const { return end - begin; }
};

/// The sidecar `meta.json` of a token directory (train.bin and val.bin):
/// what the ids are. fp-tokenize writes it with every field; one written by
/// hand needs only "vocab_size" (docs/tasks.md, "lm").
struct TokenDirectoryMeta {
  static constexpr const char *kFileName = "meta.json";
  /// The tokenizer that made the ids.
  enum class Tokenizer { Unknown, ByteLevel, Gpt2Bpe };

  /// Every id is below it.
  int64_t vocabSize = 0;
  /// Bytes per id of train.bin and val.bin (bare files): 2 or 4.
  int tokenBytes = 2;
  Tokenizer tokenizer = Tokenizer::Unknown;
  /// The ids in train.bin and val.bin; -1: not recorded.
  int64_t trainTokens = -1, validationTokens = -1;
  /// What fp-tokenize read, for people (fp-train does not use them): the
  /// tokenizer's directory, the text files, the document separator, the
  /// documents (-1: not recorded).
  std::string tokenizerDirectory;
  std::vector<std::string> sources;
  std::string documentSeparator;
  int64_t documents = -1;

  /// Reads `directory`/meta.json; nullopt when there is none. Throws
  /// DataError naming the file for JSON that is not an object, a field of
  /// the wrong type, or a value out of range.
  static std::optional<TokenDirectoryMeta>
  read(const std::filesystem::path &directory);
  /// The file's text: an indented JSON object.
  std::string toJson() const;
  /// "byte-level", "gpt2-bpe", "unknown": the "tokenizer" field's values.
  static const char *name(Tokenizer tokenizer);
};

/// How an LM batch is cut from a corpus split: non-overlapping blocks of
/// `context` + 1 ids (inputs are the first `context`, targets the last), the
/// split's tail that fills no block left out.
class BlockSampler {
public:
  /// Throws DataError when the split holds no whole block.
  BlockSampler(CorpusSplit split, int64_t context);
  BlockSampler(std::shared_ptr<const TokenCorpus> corpus, int64_t context)
      : BlockSampler(CorpusSplit::whole(std::move(corpus)), context) {}

  int64_t blocks() const { return numBlocks; }
  int64_t context() const { return contextLength; }
  const CorpusSplit &split() const { return range; }

  /// `count` blocks (at most blocks()) spread evenly over the split, in
  /// order, as a batch of inputs and targets [rows, context].
  std::pair<torch::Tensor, torch::Tensor> spreadBlocks(int64_t count) const;

  /// Block `index` (0 <= index < blocks()) as inputs and targets [context].
  std::pair<torch::Tensor, torch::Tensor> block(int64_t index) const;

  /// The block of training row `row` of `step` at `batchSize` rows per step:
  /// blocks are visited epoch by epoch, each epoch in an order shuffled by
  /// (seed, epoch), so a run sees every block once per epoch, and the
  /// answer is a pure function of its arguments (resumable exactly).
  int64_t trainBlock(uint64_t seed, int64_t step, int64_t batchSize,
                     int64_t row) const;

private:
  CorpusSplit range;
  int64_t contextLength, numBlocks;
};

} // namespace fp::rt

#endif // FP_RUNTIME_TASKS_TOKENCORPUS_H
