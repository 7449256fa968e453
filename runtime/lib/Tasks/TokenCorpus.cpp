//===- TokenCorpus.cpp - Token streams for language modelling ---*- C++ -*-===//
//
// Token files are mapped read-only and checked once, id by id, against the
// vocabulary, so that a batch never carries an id the embedding lacks.
// Training order: a keyed Feistel permutation of the block indices per epoch
// (with cycle walking onto [0, blocks)), computed per index, so nothing of
// size blocks is stored and any step's batch is found directly.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Tasks/TokenCorpus.h"
#include "fp/Runtime/Tasks/TextDocuments.h"

#include "DataFiles.h"
#include "Random.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fp::rt {

using detail::quoted;
using detail::requireRegularFile;

namespace {

/// llm.c's token file header: 256 little-endian int32 values.
constexpr size_t kHeaderBytes = 256 * 4;
constexpr int32_t kMagicU16 = 20240520, kVersionU16 = 1;
constexpr int32_t kMagicU32 = 20240801, kVersionU32 = 7;

int32_t readInt32(const unsigned char *bytes) {
  uint32_t value = uint32_t(bytes[0]) | uint32_t(bytes[1]) << 8 |
                   uint32_t(bytes[2]) << 16 | uint32_t(bytes[3]) << 24;
  return int32_t(value);
}

} // namespace

void detail::requireRegularFile(const std::filesystem::path &path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error))
    throw DataError(fmt::format("{}: {}", quoted(path),
                                std::filesystem::exists(path, error)
                                    ? "not a regular file"
                                    : "no such file"));
}

std::string detail::quoted(const std::filesystem::path &path) {
  return "'" + path.string() + "'";
}

std::string detail::readWholeFile(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw DataError(
        fmt::format("{}: cannot open: {}", quoted(path), std::strerror(errno)));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad())
    throw DataError(fmt::format("{}: cannot read", quoted(path)));
  return std::move(buffer).str();
}

std::shared_ptr<const TokenCorpus>
TokenCorpus::open(const std::filesystem::path &path,
                  const CorpusOptions &options) {
  bool tokens = options.format == CorpusOptions::Format::Tokens ||
                (options.format == CorpusOptions::Format::Auto &&
                 path.extension() == ".bin");
  if (!tokens)
    return openText({path}, options);
  requireRegularFile(path);
  std::shared_ptr<TokenCorpus> corpus(new TokenCorpus());
  corpus->file = path;
  corpus->shownName = quoted(path);
  corpus->readTokenFile(options);
  if (corpus->count == 0)
    throw DataError(fmt::format("{}: holds no tokens", quoted(path)));
  return corpus;
}

std::shared_ptr<const TokenCorpus>
TokenCorpus::openText(const std::vector<std::filesystem::path> &paths,
                      const CorpusOptions &options) {
  if (paths.empty())
    throw DataError("no text file given");
  std::shared_ptr<TokenCorpus> corpus(new TokenCorpus());
  corpus->file = paths.front();
  corpus->shownName =
      paths.size() == 1
          ? quoted(paths.front())
          : fmt::format("{} and {} more file{}", quoted(paths.front()),
                        paths.size() - 1, paths.size() == 2 ? "" : "s");
  const BpeTokenizer *bpe = options.tokenizer.get();
  corpus->isByteLevel = !bpe;
  corpus->vocab = bpe ? bpe->vocabSize() : kByteVocabSize;
  corpus->width = 2;
  if (corpus->vocab > int64_t(std::numeric_limits<uint16_t>::max()) + 1)
    throw DataError(fmt::format(
        "{}: the vocabulary of {} has {} ids; text read here is tokenised "
        "into 16-bit ids, so at most 65536 (fp-tokenize writes it as 32-bit "
        "ids)",
        corpus->shownName, quoted(bpe->vocabularyFile()), corpus->vocab));
  int64_t documents = 0;
  for (const std::filesystem::path &path : paths) {
    const size_t before = corpus->owned.size();
    int64_t read = corpus->readText(path, options);
    if (read == 0)
      throw DataError(fmt::format("{}: holds no text", quoted(path)));
    documents += read;
    if (options.onTextFile)
      options.onTextFile(path, read, int64_t(corpus->owned.size() - before));
  }
  corpus->ids = reinterpret_cast<const unsigned char *>(corpus->owned.data());
  corpus->count = int64_t(corpus->owned.size());
  corpus->documentCount = documents;
  corpus->what = fmt::format(
      "text, {} ({} document{}{})",
      bpe ? fmt::format("GPT-2 BPE of {}", quoted(bpe->directory()))
          : std::string("byte-level"),
      documents, documents == 1 ? "" : "s",
      paths.size() == 1 ? std::string()
                        : fmt::format(" in {} files", paths.size()));
  return corpus;
}

void TokenCorpus::readTokenFile(const CorpusOptions &options) {
  if (options.vocabSize <= 0)
    throw DataError(
        fmt::format("{}: a token file needs its vocabulary size (--vocab-size)",
                    quoted(file)));
  vocab = options.vocabSize;
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw DataError(
        fmt::format("{}: cannot open: {}", quoted(file), std::strerror(errno)));
  struct stat info = {};
  if (::fstat(fd, &info) != 0) {
    int saved = errno;
    ::close(fd);
    throw DataError(fmt::format("{}: cannot read its size: {}", quoted(file),
                                std::strerror(saved)));
  }
  mappingBytes = size_t(info.st_size);
  if (mappingBytes > 0) {
    mapping = ::mmap(nullptr, mappingBytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping == MAP_FAILED) {
      int saved = errno;
      mapping = nullptr;
      ::close(fd);
      throw DataError(fmt::format("{}: cannot map: {}", quoted(file),
                                  std::strerror(saved)));
    }
  }
  ::close(fd);
  const auto *bytes = static_cast<const unsigned char *>(mapping);

  size_t offset = 0;
  width = options.tokenBytes;
  std::string layout = "bare";
  if (mappingBytes >= kHeaderBytes) {
    int32_t magic = readInt32(bytes), version = readInt32(bytes + 4);
    if (magic == kMagicU16 || magic == kMagicU32) {
      int32_t wantVersion = magic == kMagicU16 ? kVersionU16 : kVersionU32;
      if (version != wantVersion)
        throw DataError(fmt::format(
            "{}: llm.c header with magic {} has version {}, expected {}",
            quoted(file), magic, version, wantVersion));
      width = magic == kMagicU16 ? 2 : 4;
      int64_t declared = readInt32(bytes + 8);
      uint64_t body = mappingBytes - kHeaderBytes;
      if (declared < 0 || uint64_t(declared) * uint64_t(width) != body)
        throw DataError(fmt::format(
            "{}: the header declares {} tokens of {} bytes, but {} bytes "
            "follow it",
            quoted(file), declared, width, body));
      offset = kHeaderBytes;
      layout = "llm.c header";
    }
  }
  if (width != 2 && width != 4)
    throw DataError(fmt::format("{}: {} bytes per token; expected 2 or 4",
                                quoted(file), width));
  if ((mappingBytes - offset) % size_t(width) != 0)
    throw DataError(
        fmt::format("{}: {} bytes is not a whole number of {}-byte tokens",
                    quoted(file), mappingBytes - offset, width));
  if (options.byteIds && vocab != kByteVocabSize)
    throw DataError(fmt::format("{}: byte-level ids have a vocabulary of {}, "
                                "not {}",
                                quoted(file), kByteVocabSize, vocab));
  isByteLevel = options.byteIds;
  ids = bytes ? bytes + offset : nullptr;
  count = int64_t((mappingBytes - offset) / size_t(width));
  for (int64_t i = 0; i < count; ++i)
    if (at(i) >= vocab)
      throw DataError(fmt::format(
          "{}: token {} (at index {}) is not below the vocabulary size {}",
          quoted(file), at(i), i, vocab));
  what = fmt::format("token file ({}, uint{}{})", layout, 8 * width,
                     isByteLevel ? ", byte-level ids" : "");
}

int64_t TokenCorpus::readText(const std::filesystem::path &path,
                              const CorpusOptions &options) {
  TextDocuments documents(path, options.documentSeparator);
  const BpeTokenizer *bpe = options.tokenizer.get();
  BpeTokenizer::Cache cache;
  std::string document;
  std::vector<int64_t> pieces;
  int64_t count = 0;
  while (documents.next(document)) {
    pieces.clear();
    appendDocumentIds(document, bpe, &cache, pieces);
    for (int64_t id : pieces)
      owned.push_back(uint16_t(id));
    ++count;
  }
  return count;
}

TokenCorpus::~TokenCorpus() {
  if (mapping)
    ::munmap(mapping, mappingBytes);
}

int64_t TokenCorpus::at(int64_t index) const {
  const unsigned char *p = ids + size_t(index) * size_t(width);
  if (width == 2)
    return int64_t(uint32_t(p[0]) | uint32_t(p[1]) << 8);
  return int64_t(uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
                 uint32_t(p[3]) << 24);
}

torch::Tensor TokenCorpus::slice(int64_t begin, int64_t length) const {
  if (begin < 0 || length < 0 || begin + length > count)
    throw std::out_of_range(
        fmt::format("TokenCorpus::slice: [{}, {}) outside [0, {})", begin,
                    begin + length, count));
  torch::Tensor out = torch::empty({length}, torch::kLong);
  int64_t *data = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < length; ++i)
    data[i] = at(begin + i);
  return out;
}

//===----------------------------------------------------------------------===//
// CorpusSplit
//===----------------------------------------------------------------------===//

CorpusSplit CorpusSplit::whole(std::shared_ptr<const TokenCorpus> corpus) {
  CorpusSplit split;
  split.end = corpus->size();
  split.name = corpus->name();
  split.corpus = std::move(corpus);
  return split;
}

int64_t CorpusSplit::heldOut(int64_t total, double fraction) {
  if (!(fraction > 0 && fraction < 1))
    throw std::invalid_argument(fmt::format(
        "the validation fraction must be in (0, 1), got {}", fraction));
  return std::min<int64_t>(total,
                           std::llround(std::ceil(fraction * double(total))));
}

std::pair<CorpusSplit, CorpusSplit>
CorpusSplit::holdOut(const std::shared_ptr<const TokenCorpus> &corpus,
                     double fraction) {
  const int64_t total = corpus->size();
  const int64_t held = heldOut(total, fraction);
  CorpusSplit train{corpus, 0, total - held,
                    fmt::format("the training split of {}", corpus->name())};
  CorpusSplit validation{corpus, total - held, total,
                         fmt::format("the validation split of {} (its last "
                                     "{:g} %)",
                                     corpus->name(), 100 * fraction)};
  return {std::move(train), std::move(validation)};
}

//===----------------------------------------------------------------------===//
// TokenDirectoryMeta
//===----------------------------------------------------------------------===//

const char *TokenDirectoryMeta::name(Tokenizer tokenizer) {
  switch (tokenizer) {
  case Tokenizer::ByteLevel:
    return "byte-level";
  case Tokenizer::Gpt2Bpe:
    return "gpt2-bpe";
  case Tokenizer::Unknown:
    break;
  }
  return "unknown";
}

std::optional<TokenDirectoryMeta>
TokenDirectoryMeta::read(const std::filesystem::path &directory) {
  const std::filesystem::path path = directory / kFileName;
  std::error_code error;
  if (!std::filesystem::exists(path, error))
    return std::nullopt;
  nlohmann::json json = nlohmann::json::parse(detail::readWholeFile(path),
                                              nullptr, /*allow_exceptions=*/
                                              false);
  if (json.is_discarded() || !json.is_object())
    throw DataError(fmt::format("{}: not a JSON object", quoted(path)));
  auto problem = [&](const char *key, const char *expected) -> DataError {
    return DataError(
        fmt::format("{}: \"{}\" must be {}", quoted(path), key, expected));
  };
  // An integer field at least `smallest`; `fallback` when absent.
  auto integer = [&](const char *key, int64_t smallest,
                     int64_t fallback) -> int64_t {
    auto it = json.find(key);
    if (it == json.end())
      return fallback;
    if (!it->is_number_integer() || it->get<int64_t>() < smallest)
      throw problem(key, smallest == 1 ? "a positive integer"
                                       : "a non-negative integer");
    return it->get<int64_t>();
  };
  auto text = [&](const char *key) -> std::string {
    auto it = json.find(key);
    if (it == json.end())
      return {};
    if (!it->is_string())
      throw problem(key, "a string");
    return it->get<std::string>();
  };

  TokenDirectoryMeta meta;
  if (!json.contains("vocab_size"))
    throw DataError(fmt::format(
        "{}: has no \"vocab_size\" (the number of ids the tokenizer has)",
        quoted(path)));
  meta.vocabSize = integer("vocab_size", 1, 0);
  const int64_t width = integer("token_bytes", 1, 2);
  if (width != 2 && width != 4)
    throw problem("token_bytes", "2 or 4");
  meta.tokenBytes = int(width);
  const std::string tokenizer = text("tokenizer");
  if (tokenizer == name(Tokenizer::ByteLevel))
    meta.tokenizer = Tokenizer::ByteLevel;
  else if (tokenizer == name(Tokenizer::Gpt2Bpe))
    meta.tokenizer = Tokenizer::Gpt2Bpe;
  else if (!tokenizer.empty() && tokenizer != name(Tokenizer::Unknown))
    throw problem("tokenizer", R"("byte-level", "gpt2-bpe" or "unknown")");
  if (meta.tokenizer == Tokenizer::ByteLevel &&
      meta.vocabSize != kByteVocabSize)
    throw DataError(fmt::format("{}: byte-level ids have a vocabulary of {}, "
                                "but \"vocab_size\" is {}",
                                quoted(path), kByteVocabSize, meta.vocabSize));
  meta.trainTokens = integer("train_tokens", 0, -1);
  meta.validationTokens = integer("val_tokens", 0, -1);
  meta.documents = integer("documents", 0, -1);
  meta.tokenizerDirectory = text("tokenizer_dir");
  meta.documentSeparator = text("doc_sep");
  if (auto it = json.find("sources"); it != json.end()) {
    if (!it->is_array())
      throw problem("sources", "a list of file names");
    for (const nlohmann::json &source : *it) {
      if (!source.is_string())
        throw problem("sources", "a list of file names");
      meta.sources.push_back(source.get<std::string>());
    }
  }
  return meta;
}

std::string TokenDirectoryMeta::toJson() const {
  nlohmann::ordered_json json;
  json["vocab_size"] = vocabSize;
  json["token_bytes"] = tokenBytes;
  json["layout"] = "bare little-endian ids (nanoGPT's train.bin, val.bin)";
  json["tokenizer"] = name(tokenizer);
  if (!tokenizerDirectory.empty())
    json["tokenizer_dir"] = tokenizerDirectory;
  if (trainTokens >= 0)
    json["train_tokens"] = trainTokens;
  if (validationTokens >= 0)
    json["val_tokens"] = validationTokens;
  if (documents >= 0)
    json["documents"] = documents;
  if (!sources.empty())
    json["sources"] = sources;
  if (!documentSeparator.empty())
    json["doc_sep"] = documentSeparator;
  return json.dump(2) + "\n";
}

//===----------------------------------------------------------------------===//
// BlockSampler
//===----------------------------------------------------------------------===//

BlockSampler::BlockSampler(CorpusSplit split, int64_t context)
    : range(std::move(split)), contextLength(context) {
  if (context < 1)
    throw std::invalid_argument("the context length must be at least 1");
  numBlocks = range.size() / (context + 1);
  if (numBlocks == 0)
    throw DataError(fmt::format(
        "{}: {} tokens hold no block of context {} + 1; use a shorter "
        "context or more data",
        range.name, range.size(), context));
}

std::pair<torch::Tensor, torch::Tensor>
BlockSampler::block(int64_t index) const {
  torch::Tensor ids = range.corpus->slice(
      range.begin + index * (contextLength + 1), contextLength + 1);
  return {ids.narrow(0, 0, contextLength), ids.narrow(0, 1, contextLength)};
}

std::pair<torch::Tensor, torch::Tensor>
BlockSampler::spreadBlocks(int64_t count) const {
  const int64_t rows = std::min(count, numBlocks);
  torch::Tensor inputs = torch::empty({rows, contextLength}, torch::kLong);
  torch::Tensor targets = torch::empty({rows, contextLength}, torch::kLong);
  for (int64_t row = 0; row < rows; ++row) {
    auto [in, out] = block(row * numBlocks / rows);
    inputs[row].copy_(in);
    targets[row].copy_(out);
  }
  return {inputs, targets};
}

int64_t BlockSampler::trainBlock(uint64_t seed, int64_t step, int64_t batchSize,
                                 int64_t row) const {
  const uint64_t position =
      uint64_t(step) * uint64_t(batchSize) + uint64_t(row);
  const uint64_t n = uint64_t(numBlocks);
  const uint64_t epoch = position / n, index = position % n;
  if (n == 1)
    return 0;
  // A balanced Feistel network on 2·half bits covering [0, n), walked until
  // it lands inside: a bijection of [0, n) keyed by (seed, epoch).
  int bits = 0;
  while ((uint64_t(1) << bits) < n)
    ++bits;
  const int half = (bits + 1) / 2;
  const uint64_t mask = (uint64_t(1) << half) - 1;
  uint64_t x = index;
  do {
    uint64_t left = x >> half, right = x & mask;
    for (uint64_t round = 0; round < 4; ++round) {
      detail::SequenceRng key(seed, detail::StreamDomain::Train, epoch,
                              (round << 40) ^ right);
      uint64_t next = left ^ (key.next() & mask);
      left = right;
      right = next;
    }
    x = (left << half) | right;
  } while (x >= n);
  return int64_t(x);
}

} // namespace fp::rt
