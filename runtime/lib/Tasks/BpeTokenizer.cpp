//===- BpeTokenizer.cpp - GPT-2's byte-level BPE from files -----*- C++ -*-===//
//
// The vocabulary's keys are byte strings in GPT-2's printable alphabet: bytes
// '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for themselves as code points,
// and the other 68 bytes, in ascending order, for U+0100 onwards. They are
// read back into bytes once, so encoding works on bytes and ids alone: a
// piece starts as its bytes' ids, and the adjacent pair of lowest merge rank
// is merged, every occurrence left to right, until no pair has a rank.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Tasks/BpeTokenizer.h"

#include "fp/Runtime/Tasks/TokenCorpus.h"

#include "DataFiles.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <sstream>

namespace fp::rt {

using detail::quoted;
using detail::readWholeFile;

namespace {

struct CodeRange {
  char32_t first, last;
};
#include "UnicodeClasses.inc"

template <size_t N> bool inRanges(const CodeRange (&ranges)[N], char32_t c) {
  const CodeRange *end = ranges + N;
  const CodeRange *it = std::upper_bound(
      ranges, end, c,
      [](char32_t code, const CodeRange &range) { return code < range.first; });
  return it != ranges && c <= (it - 1)->last;
}

/// Unicode's White_Space property.
bool isWhiteSpace(char32_t c) {
  return (c >= 0x9 && c <= 0xD) || c == 0x20 || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/// The pre-tokenizer's classes of a character.
enum class Class : uint8_t { Letter, Number, Space, Other };

/// A character of the text: a code point of valid UTF-8, or one byte that
/// is not (in no class but Other).
struct Char {
  size_t begin;
  uint8_t length;
  Class kind;
  char32_t code;
};

Class classify(char32_t c) {
  if (inRanges(kLetterRanges, c))
    return Class::Letter;
  if (inRanges(kNumberRanges, c))
    return Class::Number;
  if (isWhiteSpace(c))
    return Class::Space;
  return Class::Other;
}

/// `text` as characters. A byte that starts no valid UTF-8 sequence
/// (overlong, surrogate, past U+10FFFF or cut short) is a character alone.
std::vector<Char> characters(std::string_view text) {
  std::vector<Char> chars;
  chars.reserve(text.size());
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  for (size_t i = 0; i < text.size();) {
    unsigned char lead = byte(i);
    int length = lead < 0x80           ? 1
                 : (lead >> 5) == 0x6  ? 2
                 : (lead >> 4) == 0xE  ? 3
                 : (lead >> 3) == 0x1E ? 4
                                       : 0;
    char32_t code = length == 1   ? lead
                    : length == 2 ? lead & 0x1F
                    : length == 3 ? lead & 0x0F
                                  : lead & 0x07;
    bool valid = length > 0 && i + length <= text.size();
    for (int k = 1; valid && k < length; ++k) {
      valid = (byte(i + k) & 0xC0) == 0x80;
      code = code << 6 | (byte(i + k) & 0x3F);
    }
    static constexpr char32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (valid)
      valid = code >= kSmallest[length] && code <= 0x10FFFF &&
              !(code >= 0xD800 && code <= 0xDFFF);
    if (!valid) {
      chars.push_back({i, 1, Class::Other, lead});
      ++i;
      continue;
    }
    chars.push_back({i, uint8_t(length), classify(code), code});
    i += length;
  }
  return chars;
}

/// The character GPT-2's alphabet writes for each byte.
struct ByteAlphabet {
  char32_t of[256];
  ByteAlphabet() {
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
                       (b >= 0xAE && b <= 0xFF);
      of[b] = printable ? char32_t(b) : next++;
    }
  }
  /// The byte `c` stands for, or -1.
  int byteOf(char32_t c) const {
    if (c < 0x100)
      return of[c] == c ? int(c) : -1;
    for (int b = 0; b < 256; ++b)
      if (of[b] == c)
        return b;
    return -1;
  }
};

const ByteAlphabet &alphabet() {
  static const ByteAlphabet instance;
  return instance;
}

/// A vocabulary key as the bytes it stands for; false when a character is
/// not in GPT-2's alphabet.
bool keyBytes(std::string_view key, std::string &bytes) {
  bytes.clear();
  for (const Char &c : characters(key)) {
    int b = c.length == 1 && c.kind == Class::Other && c.code >= 0x80
                ? -1 // a byte of no valid UTF-8
                : alphabet().byteOf(c.code);
    if (b < 0)
      return false;
    bytes.push_back(char(b));
  }
  return true;
}

constexpr uint64_t pairKey(int64_t left, int64_t right) {
  return uint64_t(left) << 32 | uint64_t(right);
}

} // namespace

std::shared_ptr<const BpeTokenizer>
BpeTokenizer::open(const std::filesystem::path &directory) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(directory, error))
    throw DataError(fmt::format(
        "{}: {}", quoted(directory),
        fs::exists(directory, error)
            ? "not a directory (the tokenizer is a directory holding "
              "vocab.json and merges.txt, or encoder.json and vocab.bpe)"
            : "no such directory"));
  std::shared_ptr<BpeTokenizer> tokenizer(new BpeTokenizer());
  tokenizer->dir = directory;
  for (auto [vocab, merges] : {std::pair{"vocab.json", "merges.txt"},
                               std::pair{"encoder.json", "vocab.bpe"}}) {
    if (fs::is_regular_file(directory / vocab, error)) {
      tokenizer->vocabFile = directory / vocab;
      tokenizer->mergeFile = directory / merges;
      break;
    }
  }
  if (tokenizer->vocabFile.empty())
    throw DataError(
        fmt::format("{}: holds neither vocab.json (with merges.txt) nor "
                    "encoder.json (with vocab.bpe)",
                    quoted(directory)));
  if (!fs::is_regular_file(tokenizer->mergeFile, error))
    throw DataError(fmt::format("{}: no such file (the merges that go with {})",
                                quoted(tokenizer->mergeFile),
                                quoted(tokenizer->vocabFile)));
  tokenizer->readVocabulary();
  tokenizer->readMerges();
  return tokenizer;
}

void BpeTokenizer::readVocabulary() {
  const std::string where = quoted(vocabFile);
  nlohmann::json vocabulary;
  try {
    vocabulary = nlohmann::json::parse(readWholeFile(vocabFile));
  } catch (const nlohmann::json::exception &e) {
    throw DataError(fmt::format("{}: not JSON: {}", where, e.what()));
  }
  if (!vocabulary.is_object() || vocabulary.empty())
    throw DataError(fmt::format(
        "{}: not a JSON object of token -> id (GPT-2's vocabulary)", where));
  constexpr int64_t kMaxId = std::numeric_limits<int32_t>::max();
  std::string bytes;
  for (const auto &[key, value] : vocabulary.items()) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
        value.get<int64_t>() > kMaxId)
      throw DataError(fmt::format("{}: token '{}' has id {}, not an id", where,
                                  key, value.dump()));
    int64_t id = value.get<int64_t>();
    if (key.empty())
      throw DataError(
          fmt::format("{}: id {} is given to the empty token", where, id));
    if (!keyBytes(key, bytes))
      throw DataError(fmt::format(
          "{}: token '{}' (id {}) has a character outside GPT-2's byte "
          "alphabet",
          where, key, id));
    if (id >= int64_t(tokens.size()))
      tokens.resize(size_t(id) + 1);
    if (!tokens[size_t(id)].empty())
      throw DataError(
          fmt::format("{}: id {} is given to two tokens", where, id));
    tokens[size_t(id)] = bytes;
    if (key == "<|endoftext|>")
      eosId = id;
    else
      idOfBytes.emplace(bytes, id);
  }
  for (int b = 0; b < 256; ++b) {
    auto it = idOfBytes.find(std::string(1, char(b)));
    if (it == idOfBytes.end())
      throw DataError(fmt::format(
          "{}: no token for byte 0x{:02X}, so not every text can be encoded",
          where, b));
    byteIds[b] = it->second;
  }
  if (eosId < 0)
    throw DataError(fmt::format(
        "{}: no <|endoftext|> token, the EOS that joins documents", where));
}

void BpeTokenizer::readMerges() {
  const std::string where = quoted(mergeFile);
  std::istringstream in(readWholeFile(mergeFile));
  std::string line, leftBytes, rightBytes;
  int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.empty() || (number == 1 && line.rfind("#version", 0) == 0))
      continue;
    size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos)
      throw DataError(fmt::format(
          "{}:{}: '{}' is not a merge (two tokens and one space between)",
          where, number, line));
    std::string_view left(line.data(), space);
    std::string_view right(line.data() + space + 1, line.size() - space - 1);
    auto idOf = [&](std::string_view key, std::string &bytes) {
      auto it = keyBytes(key, bytes) ? idOfBytes.find(bytes) : idOfBytes.end();
      if (it == idOfBytes.end())
        throw DataError(fmt::format("{}:{}: '{}' is not in the vocabulary {}",
                                    where, number, key, quoted(vocabFile)));
      return it->second;
    };
    int64_t leftId = idOf(left, leftBytes), rightId = idOf(right, rightBytes);
    auto merged = idOfBytes.find(leftBytes + rightBytes);
    if (merged == idOfBytes.end())
      throw DataError(fmt::format(
          "{}:{}: '{}{}', what '{}' makes, is not in the vocabulary {}", where,
          number, left, right, line, quoted(vocabFile)));
    // A pair merged twice keeps its first (lowest) rank, as GPT-2's ranks do.
    mergeRanks.emplace(pairKey(leftId, rightId),
                       Merge{int64_t(mergeRanks.size()), merged->second});
  }
}

const std::string &BpeTokenizer::bytes(int64_t id) const {
  static const std::string none;
  return id >= 0 && id < vocabSize() ? tokens[size_t(id)] : none;
}

void BpeTokenizer::encodePiece(std::string_view piece,
                               std::vector<int64_t> &out, Cache &cache) const {
  std::string key(piece);
  if (auto it = cache.pieces.find(key); it != cache.pieces.end()) {
    out.insert(out.end(), it->second.begin(), it->second.end());
    return;
  }
  std::vector<int64_t> word;
  word.reserve(piece.size());
  for (char c : piece)
    word.push_back(byteIds[static_cast<unsigned char>(c)]);
  std::vector<int64_t> merged;
  while (word.size() > 1) {
    const Merge *best = nullptr;
    uint64_t bestPair = 0;
    for (size_t k = 0; k + 1 < word.size(); ++k) {
      auto it = mergeRanks.find(pairKey(word[k], word[k + 1]));
      if (it != mergeRanks.end() && (!best || it->second.rank < best->rank)) {
        best = &it->second;
        bestPair = it->first;
      }
    }
    if (!best)
      break;
    merged.clear();
    for (size_t k = 0; k < word.size(); ++k) {
      if (k + 1 < word.size() && pairKey(word[k], word[k + 1]) == bestPair) {
        merged.push_back(best->id);
        ++k;
      } else {
        merged.push_back(word[k]);
      }
    }
    word.swap(merged);
  }
  out.insert(out.end(), word.begin(), word.end());
  if (cache.pieces.size() >= Cache::kLimit)
    cache.pieces.clear();
  cache.pieces.emplace(std::move(key), std::move(word));
}

std::vector<std::string_view> BpeTokenizer::split(std::string_view text) {
  const std::vector<Char> chars = characters(text);
  const size_t n = chars.size();
  std::vector<std::string_view> pieces;
  auto kind = [&](size_t i) { return chars[i].kind; };
  auto ascii = [&](size_t i, char c) {
    return i < n && chars[i].code == char32_t(c) && chars[i].length == 1;
  };
  auto emit = [&](size_t first, size_t end) {
    size_t begin = chars[first].begin;
    size_t stop = end < n ? chars[end].begin : text.size();
    pieces.push_back(text.substr(begin, stop - begin));
  };
  for (size_t i = 0; i < n;) {
    // 's|'t|'re|'ve|'m|'ll|'d
    if (ascii(i, '\'')) {
      size_t end = 0;
      if (ascii(i + 1, 's') || ascii(i + 1, 't') || ascii(i + 1, 'm') ||
          ascii(i + 1, 'd'))
        end = i + 2;
      else if ((ascii(i + 1, 'r') && ascii(i + 2, 'e')) ||
               (ascii(i + 1, 'v') && ascii(i + 2, 'e')) ||
               (ascii(i + 1, 'l') && ascii(i + 2, 'l')))
        end = i + 3;
      if (end) {
        emit(i, end);
        i = end;
        continue;
      }
    }
    // ` ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+`: a run of one class, after
    // at most one space.
    size_t j =
        ascii(i, ' ') && i + 1 < n && kind(i + 1) != Class::Space ? i + 1 : i;
    if (kind(j) != Class::Space) {
      size_t end = j;
      while (end < n && kind(end) == kind(j))
        ++end;
      emit(i, end);
      i = end;
      continue;
    }
    // `\s+(?!\S)|\s+`: white space up to the end, or all but its last
    // character, which goes with what follows; one character alone.
    size_t end = i;
    while (end < n && kind(end) == Class::Space)
      ++end;
    if (end < n && end - i >= 2)
      --end;
    emit(i, end);
    i = end;
  }
  return pieces;
}

void BpeTokenizer::encode(std::string_view text, std::vector<int64_t> &out,
                          Cache &cache) const {
  for (std::string_view piece : split(text))
    encodePiece(piece, out, cache);
}

} // namespace fp::rt
